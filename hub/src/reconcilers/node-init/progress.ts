/**
 * How node-init is moving each cluster's nodes forward, for a new Service's first ensure, which
 * waits while its cluster's nodes keep being initialized (service/reconcile.ts waitForNodes).
 * The agent's report of a providerID comes a round trip after node-init published it: tens of
 * seconds later when the cluster's agent or API server is busy. The hub knows at publication
 * that the node is coming, and that it is still coming while the report has not arrived.
 */
export class NodeInitProgress {
  private readonly clusters = new Map<string, { lastPublishedMs: number; awaiting: Set<string> }>();

  /** Node-init published the node's providerID for the first time. */
  published(cluster: string, node: string, atMs: number): void {
    let c = this.clusters.get(cluster);
    if (c === undefined) {
      c = { lastPublishedMs: atMs, awaiting: new Set() };
      this.clusters.set(cluster, c);
    }
    c.lastPublishedMs = atMs;
    c.awaiting.add(node);
  }

  /** The node needs no more initialization (a report shows its providerID), or is gone. */
  settled(cluster: string, node: string): void {
    this.clusters.get(cluster)?.awaiting.delete(node);
  }

  /**
   * When the cluster's nodes last moved: now while a publication of the last `horizonMs` awaits
   * its report, else the latest first publication (undefined: none). A node whose report never
   * comes (its patch refused) counts only until `horizonMs` after the cluster's latest one.
   */
  movedAtMs(cluster: string, nowMs: number, horizonMs: number): number | undefined {
    const c = this.clusters.get(cluster);
    if (c === undefined) return undefined;
    return c.awaiting.size > 0 && nowMs - c.lastPublishedMs < horizonMs ? nowMs : c.lastPublishedMs;
  }

  forget(cluster: string): void {
    this.clusters.delete(cluster);
  }
}
