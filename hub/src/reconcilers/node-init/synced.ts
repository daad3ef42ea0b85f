import type { Node } from "@fleet-ccm/proto";
import { LABEL_INSTANCE_TYPE, LABEL_REGION, LABEL_ZONE } from "../../k8s/well-known.js";

/**
 * A node this hub first sees already initialized (in a snapshot: after a hub restart or a
 * lease takeover) is taken as initialized by fleet-ccm, and owed its Synced Event, if it joined
 * within this long: the hub that initialized it may have died after the agent applied the
 * patch and before the Event was published. Nodes older than this were initialized long ago.
 */
export const RECENT_JOIN_MS = 15 * 60_000;

/** Whether a node shows what a cloud initialization writes: a providerID and the cloud's labels. */
export function looksCloudInitialized(node: Readonly<Node>): boolean {
  return (
    node.providerId !== "" &&
    (node.labels[LABEL_INSTANCE_TYPE] !== undefined ||
      node.labels[LABEL_ZONE] !== undefined ||
      node.labels[LABEL_REGION] !== undefined)
  );
}

/**
 * Which initialized nodes are owed their Synced Event (upstream emits it once per
 * initialization), besides those whose init patch this hub saw converge: nodes this hub saw
 * carrying the uninitialized taint, and nodes that joined recently and that this hub first saw
 * initialized in a snapshot. Each is owed it once per hub.
 */
export class SyncedEvidence {
  private readonly owed = new Map<string, Set<string>>();

  private set(cluster: string): Set<string> {
    let s = this.owed.get(cluster);
    if (s === undefined) {
      s = new Set();
      this.owed.set(cluster, s);
    }
    return s;
  }

  /** This hub saw the node tainted: once the taint is gone, it was initialized. */
  sawTainted(cluster: string, uid: string): void {
    this.set(cluster).add(uid);
  }

  /** First seen initialized in a snapshot: owed if it joined recently. */
  firstSeenInitialized(cluster: string, node: Readonly<Node>, nowMs: number): boolean {
    const created = node.creationTimestamp?.getTime();
    if (created === undefined || nowMs - created > RECENT_JOIN_MS || !looksCloudInitialized(node))
      return false;
    this.set(cluster).add(node.uid);
    return true;
  }

  owes(cluster: string, uid: string): boolean {
    return this.owed.get(cluster)?.has(uid) ?? false;
  }

  /** Whether the initialized `node` is owed its Synced Event; if so it is now paid. */
  take(cluster: string, node: Readonly<Node>): boolean {
    return this.forget(cluster, node.uid) && looksCloudInitialized(node);
  }

  forgetCluster(cluster: string): void {
    this.owed.delete(cluster);
  }

  forget(cluster: string, uid: string): boolean {
    const s = this.owed.get(cluster);
    if (s === undefined || !s.delete(uid)) return false;
    if (s.size === 0) this.owed.delete(cluster);
    return true;
  }
}
