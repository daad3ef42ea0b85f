import type { ClusterEvent } from "@fleet-ccm/proto";
import { ObjectKind } from "@fleet-ccm/proto";
import type { FleetListener } from "../fleet/state.js";
import { needsInit } from "../reconcilers/node-init/predicates.js";
import { REASON_DELETING_NODE } from "../reconcilers/node-lifecycle/reconcile.js";

/** The last Event the hub published for one object (by uid: a recreated object starts afresh). */
export interface LastEvent {
  readonly uid: string;
  readonly type: string;
  readonly reason: string;
  readonly message: string;
  readonly atMs: number;
}

/** Per cluster: what the hub did and saw that its fleet state does not keep. */
export interface ClusterObservations {
  /** When the agent connected (synced) or disconnected last. */
  connectionChangedMs: number | undefined;
  connected: boolean;
  lastSnapshotMs: number | undefined;
  /** Nodes deleted by the lifecycle controller (DeletingNode Events published). */
  lifecycleDeletions: number;
  readonly deletedUids: Set<string>;
  readonly nodeEvents: Map<string, LastEvent>;
  /** By namespace/name. */
  readonly serviceEvents: Map<string, LastEvent>;
  /** Node name → when the hub first saw it waiting for initialization. */
  readonly waitingSince: Map<string, { readonly uid: string; readonly sinceMs: number }>;
}

/** Bounds memory per cluster: an Event for an object the view no longer has is dropped first. */
const MAX_EVENTS_PER_CLUSTER = 50_000;

/**
 * Records, for the fleet API, the Events the hub publishes (the last one per object: it carries
 * the reason a node waits or a load balancer fails) and the times fleet state does not keep.
 */
export class FleetObservations {
  private readonly clusters = new Map<string, ClusterObservations>();

  constructor(private readonly now: () => number) {}

  of(cluster: string): ClusterObservations | undefined {
    return this.clusters.get(cluster);
  }

  private state(cluster: string): ClusterObservations {
    let s = this.clusters.get(cluster);
    if (s === undefined) {
      s = {
        connectionChangedMs: undefined,
        connected: false,
        lastSnapshotMs: undefined,
        lifecycleDeletions: 0,
        deletedUids: new Set(),
        nodeEvents: new Map(),
        serviceEvents: new Map(),
        waitingSince: new Map(),
      };
      this.clusters.set(cluster, s);
    }
    return s;
  }

  /** Events the hub publishes to a cluster. */
  published(cluster: string, events: readonly ClusterEvent[]): void {
    if (events.length === 0) return;
    const s = this.state(cluster);
    const atMs = this.now();
    for (const e of events) {
      const last: LastEvent = { uid: e.uid, type: e.type, reason: e.reason, message: e.message, atMs };
      if (e.kind === ObjectKind.OBJECT_KIND_NODE) {
        // A republished deletion repeats its Event: count each node (uid) once.
        if (e.reason === REASON_DELETING_NODE && !s.deletedUids.has(e.uid)) {
          s.lifecycleDeletions++;
          s.deletedUids.add(e.uid);
          if (s.deletedUids.size > MAX_EVENTS_PER_CLUSTER) s.deletedUids.clear();
        }
        put(s.nodeEvents, e.name, last);
      } else if (e.kind === ObjectKind.OBJECT_KIND_SERVICE)
        put(s.serviceEvents, `${e.namespace}/${e.name}`, last);
    }
  }

  snapshotApplied(cluster: string): void {
    this.state(cluster).lastSnapshotMs = this.now();
  }

  /** Follows fleet state: connection changes and how long nodes have waited for initialization. */
  listener(): FleetListener {
    return {
      onNode: (cluster, name, change) => {
        const s = this.state(cluster);
        if (change.type === "delete") {
          s.waitingSince.delete(name);
          s.nodeEvents.delete(name);
          return;
        }
        const node = change.cur;
        const was = s.waitingSince.get(name);
        if (!needsInit(node)) s.waitingSince.delete(name);
        else if (was === undefined || was.uid !== node.uid)
          s.waitingSince.set(name, { uid: node.uid, sinceMs: this.now() });
      },
      onService: (cluster, key, change) => {
        if (change.type === "delete") this.clusters.get(cluster)?.serviceEvents.delete(key);
      },
      onSynced: (cluster) => {
        // A resync of a connected agent is no reconnection.
        const s = this.state(cluster);
        if (!s.connected) s.connectionChangedMs = this.now();
        s.connected = true;
      },
      onDisconnected: (cluster) => {
        const s = this.state(cluster);
        s.connectionChangedMs = this.now();
        s.connected = false;
      },
    };
  }

  removeCluster(cluster: string): void {
    this.clusters.delete(cluster);
  }

  /** Forgets every cluster not in `keep`. */
  retainClusters(keep: ReadonlyMap<string, unknown>): void {
    for (const name of [...this.clusters.keys()]) if (!keep.has(name)) this.clusters.delete(name);
  }
}

function put(map: Map<string, LastEvent>, key: string, e: LastEvent): void {
  map.delete(key);
  map.set(key, e);
  // Maps iterate in insertion order: the first key is the least recently updated.
  if (map.size > MAX_EVENTS_PER_CLUSTER) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
}
