import type { Node, PersistentVolume, Service } from "@fleet-ccm/proto";
import type { RefusalLimit } from "./validate.js";

/**
 * Where a change came from. A "delta" is what the agent's watch reported (a deletion it
 * observed is positive evidence); a "snapshot" change is the difference between two full
 * reports, and an object missing from a snapshot was not seen deleted.
 */
export type ChangeOrigin = "delta" | "snapshot";

export type ObjectChange<T> =
  | {
      readonly type: "upsert";
      readonly origin: ChangeOrigin;
      readonly old: Readonly<T> | undefined;
      readonly cur: Readonly<T>;
    }
  | { readonly type: "delete"; readonly origin: ChangeOrigin; readonly old: Readonly<T> };

export interface FleetListener {
  /** A node changed in a synced cluster (after a delta, or per node after a snapshot replaced the view). */
  onNode?(cluster: string, name: string, change: ObjectChange<Node>): void;
  onService?(cluster: string, key: string, change: ObjectChange<Service>): void;
  /** A PersistentVolume (of a disk type the cluster's provider asked for) changed, keyed by name. */
  onPersistentVolume?(cluster: string, name: string, change: ObjectChange<PersistentVolume>): void;
  /** A full snapshot was applied: the agent (re)connected or resynced. */
  onSynced?(cluster: string, view: ClusterView): void;
  onDisconnected?(cluster: string): void;
}

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export type ObjectKindName = "node" | "service" | "persistentVolume";

/** Cluster-scoped kinds are keyed by name, namespaced ones by namespace/name. */
export function objectKeyOf(kind: ObjectKindName, namespace: string, name: string): string {
  return kind === "service" ? serviceKey(namespace, name) : name;
}

/** The inverse of objectKeyOf. */
export function splitObjectKey(kind: ObjectKindName, key: string): { namespace: string; name: string } {
  if (kind !== "service") return { namespace: "", name: key };
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** An object the hub refused (over a limit or invalid): it stays out of the view. */
export interface Refusal {
  readonly kind: ObjectKindName;
  /** "" for nodes. */
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly limit: RefusalLimit;
  readonly message: string;
}

/** An object a snapshot dropped that the hub keeps in the view until the drop is confirmed. */
export interface Held {
  readonly kind: ObjectKindName;
  readonly key: string;
  readonly sinceMs: number;
}

/**
 * When a snapshot would remove more than max(maxObjects, maxPercent % of the cluster's nodes,
 * or Services) from the view at once, the removed objects are held: they stay in the view
 * until a snapshot at least confirmAfterMs later still lacks them, or the agent reports their
 * deletion.
 */
export interface SnapshotHoldPolicy {
  readonly maxObjects: number;
  readonly maxPercent: number;
  readonly confirmAfterMs: number;
}

/** What one replace() did with the objects the snapshot no longer lists. */
export interface ReplaceOutcome {
  /** Objects newly held (with the kind's total before the snapshot, for messages). */
  readonly held: readonly { readonly kind: ObjectKindName; readonly key: string; readonly uid: string }[];
  /** Held objects whose drop a later snapshot confirmed: removed now. */
  readonly confirmed: readonly { readonly kind: ObjectKindName; readonly key: string }[];
  /** Per kind: held objects the snapshot lists again. */
  readonly released: Readonly<Record<ObjectKindName, number>>;
  /** Per kind: objects removed from the view without holding (a small drop). */
  readonly removed: Readonly<Record<ObjectKindName, number>>;
  /** Per kind: objects dropped at once by this snapshot, and the view's count before it. */
  readonly dropped: Readonly<Record<ObjectKindName, { readonly count: number; readonly of: number }>>;
}

/** A read-only view of what one cluster last reported. */
export interface ClusterView {
  readonly cluster: string;
  /** True once a complete snapshot arrived; reconcilers act only on a synced view. */
  readonly synced: boolean;
  readonly connected: boolean;
  /** Every node the hub treats as present, held ones included. */
  readonly nodes: ReadonlyMap<string, Readonly<Node>>;
  /** Changes whenever `nodes` does: what is derived from the whole set is computed again only then. */
  readonly nodesVersion: number;
  readonly services: ReadonlyMap<string, Readonly<Service>>;
  /** PersistentVolumes backed by the provider's disks, by name (empty when it has no volumes). */
  readonly persistentVolumes: ReadonlyMap<string, Readonly<PersistentVolume>>;
  /** Objects a snapshot dropped, kept in nodes/services until the drop is confirmed (by key). */
  readonly held: ReadonlyMap<string, Held>;
  /** Objects the agent reported that the hub refused; not in nodes/services (by kind/key). */
  readonly refused: ReadonlyMap<string, Refusal>;
}

interface KindObject {
  node: Node;
  service: Service;
  persistentVolume: PersistentVolume;
}

function objectsOf<K extends ObjectKindName>(s: ClusterState, kind: K): Map<string, KindObject[K]> {
  const byKind: { [P in ObjectKindName]: Map<string, KindObject[P]> } = {
    node: s.nodes,
    service: s.services,
    persistentVolume: s.persistentVolumes,
  };
  return byKind[kind];
}

/** Tells a listener of one object's change, through the callback of its kind. */
function tell<K extends ObjectKindName>(
  l: FleetListener,
  kind: K,
  cluster: string,
  key: string,
  change: ObjectChange<KindObject[K]>,
): void {
  if (kind === "node") l.onNode?.(cluster, key, change as ObjectChange<Node>);
  else if (kind === "service") l.onService?.(cluster, key, change as ObjectChange<Service>);
  else l.onPersistentVolume?.(cluster, key, change as ObjectChange<PersistentVolume>);
}

/**
 * What a snapshot changed, told per object: deletions first, then every object whose version
 * changed (a held or refused object keeps its old version: nothing changed for reconcilers).
 */
function announce<K extends ObjectKindName>(
  l: FleetListener,
  kind: K,
  cluster: string,
  before: ReadonlyMap<string, KindObject[K]>,
  after: ReadonlyMap<string, KindObject[K]>,
): void {
  const listening = { node: l.onNode, service: l.onService, persistentVolume: l.onPersistentVolume }[kind];
  if (listening === undefined) return;
  for (const [key, old] of before)
    if (!after.has(key)) tell(l, kind, cluster, key, { type: "delete", origin: "snapshot", old });
  for (const [key, cur] of after) {
    const old = before.get(key);
    if (old !== cur) tell(l, kind, cluster, key, { type: "upsert", origin: "snapshot", old, cur });
  }
}

function heldKey(kind: ObjectKindName, key: string): string {
  return `${kind}/${key}`;
}

class ClusterState implements ClusterView {
  synced = false;
  connected = false;
  nodes = new Map<string, Node>();
  nodesVersion = 0;
  services = new Map<string, Service>();
  persistentVolumes = new Map<string, PersistentVolume>();
  held = new Map<string, Held>();
  refused = new Map<string, Refusal>();
  constructor(readonly cluster: string) {}
}

export interface FleetStateOptions {
  /** Without one, every drop is applied at once. */
  readonly hold?: SnapshotHoldPolicy;
  readonly now?: () => number;
}

/**
 * What every cluster last reported. Written only by the ingest side (gRPC
 * sessions); reconcilers read it and never mutate it.
 */
export class FleetState {
  private readonly clusters = new Map<string, ClusterState>();
  private readonly listeners: FleetListener[] = [];
  private readonly now: () => number;

  constructor(private readonly opts: FleetStateOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

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

  /**
   * Replaces the cluster's view with a snapshot, then tells listeners what changed. An object
   * the snapshot lacks is not evidence of its deletion: refused objects keep their last
   * accepted version, and a large drop is held (see SnapshotHoldPolicy).
   */
  replace(
    cluster: string,
    nodes: readonly Node[],
    services: readonly Service[],
    refused: readonly Refusal[] = [],
    persistentVolumes: readonly PersistentVolume[] = [],
  ): ReplaceOutcome {
    const s = this.state(cluster);
    const now = this.now();
    const refusedNow = new Map(refused.map((r) => [heldKey(r.kind, refusalKey(r)), r]));
    const heldBefore = s.held;
    s.held = new Map();
    const held: { kind: ObjectKindName; key: string; uid: string }[] = [];
    const confirmed: { kind: ObjectKindName; key: string }[] = [];
    const released = { node: 0, service: 0, persistentVolume: 0 };
    const removed = { node: 0, service: 0, persistentVolume: 0 };
    const dropped = {
      node: { count: 0, of: s.nodes.size },
      service: { count: 0, of: s.services.size },
      persistentVolume: { count: 0, of: s.persistentVolumes.size },
    };

    const plan = <T extends { uid: string }>(
      kind: ObjectKindName,
      old: Map<string, T>,
      incoming: Map<string, T>,
    ): Map<string, T> => {
      const fresh: [string, T][] = [];
      let stillHeld = 0;
      for (const [key, o] of old) {
        const hk = heldKey(kind, key);
        if (incoming.has(key)) {
          if (heldBefore.has(hk)) released[kind]++;
          continue;
        }
        if (refusedNow.has(hk)) {
          incoming.set(key, o);
          continue;
        }
        const before = heldBefore.get(hk);
        if (before === undefined) fresh.push([key, o]);
        else if (now - before.sinceMs >= (this.opts.hold?.confirmAfterMs ?? 0)) confirmed.push({ kind, key });
        else {
          stillHeld++;
          s.held.set(hk, before);
          incoming.set(key, o);
        }
      }
      dropped[kind].count = fresh.length;
      const policy = this.opts.hold;
      const limit =
        policy === undefined
          ? Number.POSITIVE_INFINITY
          : Math.max(policy.maxObjects, Math.floor((policy.maxPercent / 100) * old.size));
      if (fresh.length + stillHeld > limit)
        for (const [key, o] of fresh) {
          s.held.set(heldKey(kind, key), { kind, key, sinceMs: now });
          held.push({ kind, key, uid: o.uid });
          incoming.set(key, o);
        }
      else removed[kind] += fresh.length;
      return incoming;
    };

    const oldNodes = s.nodes;
    const oldServices = s.services;
    const oldVolumes = s.persistentVolumes;
    s.nodes = plan("node", oldNodes, new Map(nodes.map((n) => [n.name, n])));
    s.nodesVersion++;
    s.services = plan(
      "service",
      oldServices,
      new Map(services.map((v) => [serviceKey(v.namespace, v.name), v])),
    );
    s.persistentVolumes = plan(
      "persistentVolume",
      oldVolumes,
      new Map(persistentVolumes.map((v) => [v.name, v])),
    );
    s.refused = refusedNow;
    s.synced = true;
    for (const l of this.listeners) {
      announce(l, "node", cluster, oldNodes, s.nodes);
      announce(l, "service", cluster, oldServices, s.services);
      announce(l, "persistentVolume", cluster, oldVolumes, s.persistentVolumes);
      l.onSynced?.(cluster, s);
    }
    return { held, confirmed, released, removed, dropped };
  }

  /**
   * Records that the agent reported an object the hub refused. Its last accepted version, if
   * any, stays in the view: a refusal is no evidence of deletion. Returns whether the refusal
   * is new (another object, uid or reason than the one recorded); beyond `maxRecorded`
   * refusals per cluster new ones are not recorded (nor reported).
   */
  refuse(cluster: string, r: Refusal, maxRecorded = Number.POSITIVE_INFINITY): boolean {
    const s = this.state(cluster);
    const k = heldKey(r.kind, refusalKey(r));
    const before = s.refused.get(k);
    // Bounded memory: an agent cannot grow the hub by sending ever new invalid objects.
    if (before === undefined && s.refused.size >= maxRecorded) return false;
    s.refused.set(k, r);
    return before === undefined || before.uid !== r.uid || before.message !== r.message;
  }

  upsertNode(cluster: string, node: Node): void {
    this.upsert(cluster, "node", node.name, node);
  }

  /** The agent observed the node's deletion. */
  deleteNode(cluster: string, name: string): void {
    this.remove(cluster, "node", name);
  }

  upsertService(cluster: string, svc: Service): void {
    this.upsert(cluster, "service", serviceKey(svc.namespace, svc.name), svc);
  }

  /** The agent observed the Service's deletion. */
  deleteService(cluster: string, namespace: string, name: string): void {
    this.remove(cluster, "service", serviceKey(namespace, name));
  }

  upsertPersistentVolume(cluster: string, pv: PersistentVolume): void {
    this.upsert(cluster, "persistentVolume", pv.name, pv);
  }

  /** The agent observed the PersistentVolume's deletion. */
  deletePersistentVolume(cluster: string, name: string): void {
    this.remove(cluster, "persistentVolume", name);
  }

  /** A delta's object: it replaces the view's, ends any hold or refusal of it, and is told. */
  private upsert<K extends ObjectKindName>(cluster: string, kind: K, key: string, obj: KindObject[K]): void {
    const s = this.state(cluster);
    const objects = objectsOf(s, kind);
    const old = objects.get(key);
    objects.set(key, obj);
    if (kind === "node") s.nodesVersion++;
    this.unhold(s, kind, key);
    if (!s.synced) return;
    const change = { type: "upsert", origin: "delta", old, cur: obj } as const;
    for (const l of this.listeners) tell(l, kind, cluster, key, change);
  }

  /** Ends any hold or refusal of an object (both are rare: most reports skip the key string). */
  private unhold(s: ClusterState, kind: ObjectKindName, key: string): void {
    if (s.held.size === 0 && s.refused.size === 0) return;
    const hk = heldKey(kind, key);
    s.held.delete(hk);
    s.refused.delete(hk);
  }

  /** A deletion the agent observed: positive evidence, applied at once. */
  private remove(cluster: string, kind: ObjectKindName, key: string): void {
    const s = this.state(cluster);
    this.unhold(s, kind, key);
    const objects = objectsOf(s, kind);
    const old = objects.get(key);
    if (old === undefined) return;
    objects.delete(key);
    if (kind === "node") s.nodesVersion++;
    if (!s.synced) return;
    const change = { type: "delete", origin: "delta", old } as const;
    for (const l of this.listeners) tell(l, kind, cluster, key, change);
  }

  /** The oldest hold of a cluster started then (undefined: nothing held). */
  oldestHoldMs(cluster: string): number | undefined {
    let oldest: number | undefined;
    for (const h of this.clusters.get(cluster)?.held.values() ?? [])
      if (oldest === undefined || h.sinceMs < oldest) oldest = h.sinceMs;
    return oldest;
  }

  /** Forget a cluster removed from the configuration. */
  removeCluster(cluster: string): void {
    this.clusters.delete(cluster);
  }
}

export function refusalKey(r: Pick<Refusal, "kind" | "namespace" | "name">): string {
  return objectKeyOf(r.kind, r.namespace, r.name);
}
