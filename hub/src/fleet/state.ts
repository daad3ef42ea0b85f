import type { Node, Service } from "@fleet-ccm/proto";

export type ObjectChange<T> =
  | { readonly type: "upsert"; readonly old: Readonly<T> | undefined; readonly cur: Readonly<T> }
  | { readonly type: "delete"; readonly old: Readonly<T> };

export interface FleetListener {
  /** A node changed in a synced cluster (after a delta, or per node after a snapshot replaced the view). */
  onNode?(cluster: string, name: string, change: ObjectChange<Node>): void;
  onService?(cluster: string, key: string, change: ObjectChange<Service>): void;
  /** A full snapshot was applied: the agent (re)connected or resynced. */
  onSynced?(cluster: string, view: ClusterView): void;
  onDisconnected?(cluster: string): void;
}

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** A read-only view of what one cluster last reported. */
export interface ClusterView {
  readonly cluster: string;
  /** True once a complete snapshot arrived; reconcilers act only on a synced view. */
  readonly synced: boolean;
  readonly connected: boolean;
  readonly nodes: ReadonlyMap<string, Readonly<Node>>;
  readonly services: ReadonlyMap<string, Readonly<Service>>;
}

class ClusterState implements ClusterView {
  synced = false;
  connected = false;
  nodes = new Map<string, Node>();
  services = new Map<string, Service>();
  constructor(readonly cluster: string) {}
}

/**
 * What every cluster last reported. Written only by the ingest side (gRPC
 * sessions); reconcilers read it and never mutate it.
 */
export class FleetState {
  private readonly clusters = new Map<string, ClusterState>();
  private readonly listeners: FleetListener[] = [];

  subscribe(listener: FleetListener): void {
    this.listeners.push(listener);
  }

  view(cluster: string): ClusterView | undefined {
    return this.clusters.get(cluster);
  }

  clusterNames(): string[] {
    return [...this.clusters.keys()];
  }

  private state(cluster: string): ClusterState {
    let s = this.clusters.get(cluster);
    if (s === undefined) {
      s = new ClusterState(cluster);
      this.clusters.set(cluster, s);
    }
    return s;
  }

  setConnected(cluster: string, connected: boolean): void {
    const s = this.state(cluster);
    s.connected = connected;
    if (!connected) for (const l of this.listeners) l.onDisconnected?.(cluster);
  }

  /** Replaces the cluster's view wholesale, then tells listeners what changed. */
  replace(cluster: string, nodes: readonly Node[], services: readonly Service[]): void {
    const s = this.state(cluster);
    const oldNodes = s.nodes;
    const oldServices = s.services;
    s.nodes = new Map(nodes.map((n) => [n.name, n]));
    s.services = new Map(services.map((v) => [serviceKey(v.namespace, v.name), v]));
    s.synced = true;
    for (const l of this.listeners) {
      if (l.onNode) {
        for (const [name, old] of oldNodes)
          if (!s.nodes.has(name)) l.onNode(cluster, name, { type: "delete", old });
        for (const [name, cur] of s.nodes)
          l.onNode(cluster, name, { type: "upsert", old: oldNodes.get(name), cur });
      }
      if (l.onService) {
        for (const [key, old] of oldServices)
          if (!s.services.has(key)) l.onService(cluster, key, { type: "delete", old });
        for (const [key, cur] of s.services)
          l.onService(cluster, key, { type: "upsert", old: oldServices.get(key), cur });
      }
      l.onSynced?.(cluster, s);
    }
  }

  upsertNode(cluster: string, node: Node): void {
    const s = this.state(cluster);
    const old = s.nodes.get(node.name);
    s.nodes.set(node.name, node);
    if (s.synced)
      for (const l of this.listeners) l.onNode?.(cluster, node.name, { type: "upsert", old, cur: node });
  }

  deleteNode(cluster: string, name: string): void {
    const s = this.state(cluster);
    const old = s.nodes.get(name);
    if (old === undefined) return;
    s.nodes.delete(name);
    if (s.synced) for (const l of this.listeners) l.onNode?.(cluster, name, { type: "delete", old });
  }

  upsertService(cluster: string, svc: Service): void {
    const s = this.state(cluster);
    const key = serviceKey(svc.namespace, svc.name);
    const old = s.services.get(key);
    s.services.set(key, svc);
    if (s.synced)
      for (const l of this.listeners) l.onService?.(cluster, key, { type: "upsert", old, cur: svc });
  }

  deleteService(cluster: string, namespace: string, name: string): void {
    const s = this.state(cluster);
    const key = serviceKey(namespace, name);
    const old = s.services.get(key);
    if (old === undefined) return;
    s.services.delete(key);
    if (s.synced) for (const l of this.listeners) l.onService?.(cluster, key, { type: "delete", old });
  }

  /** Forget a cluster removed from the configuration. */
  removeCluster(cluster: string): void {
    this.clusters.delete(cluster);
  }
}
