/** Released CIDRs are forgotten after this long even if their route never showed up. */
const RELEASE_TTL_MS = 60 * 60_000;

interface Release {
  /** The instance the releasing node ran on, when its providerID was known. */
  readonly instanceID: string | undefined;
  readonly atMs: number;
}

interface Strike {
  readonly firstMs: number;
  count: number;
}

/**
 * What the route controller knows about owned routes that no node claims: which CIDRs this hub
 * saw released (a node's deletion reported by the agent, its deletionTimestamp, a change of its
 * podCIDRs or providerID), and, for routes nobody was seen releasing, how many consecutive
 * reconciles of a connected, synced view found them unclaimed, since when.
 */
export class RouteEvidence {
  private readonly released = new Map<string, Map<string, Release>>();
  private readonly strikes = new Map<string, Map<string, Strike>>();

  release(cluster: string, cidr: string, instanceID: string | undefined, nowMs: number): void {
    let m = this.released.get(cluster);
    if (m === undefined) {
      m = new Map();
      this.released.set(cluster, m);
    }
    m.set(cidr, { instanceID, atMs: nowMs });
  }

  /** Whether a release of this route's CIDR (from its target, when that was known) was observed. */
  wasReleased(cluster: string, cidr: string, targetInstanceID: string): boolean {
    const r = this.released.get(cluster)?.get(cidr);
    return r !== undefined && (r.instanceID === undefined || r.instanceID === targetInstanceID);
  }

  /**
   * Keeps releases only for CIDRs that still have an owned route and are not claimed again,
   * and not older than the TTL.
   */
  pruneReleases(cluster: string, keep: (cidr: string) => boolean, nowMs: number): void {
    const m = this.released.get(cluster);
    if (m === undefined) return;
    for (const [cidr, r] of m) if (!keep(cidr) || nowMs - r.atMs > RELEASE_TTL_MS) m.delete(cidr);
    if (m.size === 0) this.released.delete(cluster);
  }

  /** One more reconcile found this route unclaimed. */
  strike(cluster: string, routeKey: string, nowMs: number): { count: number; sinceMs: number } {
    let m = this.strikes.get(cluster);
    if (m === undefined) {
      m = new Map();
      this.strikes.set(cluster, m);
    }
    let s = m.get(routeKey);
    if (s === undefined) {
      s = { firstMs: nowMs, count: 0 };
      m.set(routeKey, s);
    }
    s.count++;
    return { count: s.count, sinceMs: nowMs - s.firstMs };
  }

  /** Strikes must be consecutive: a route not found unclaimed this time starts over. */
  keepStrikes(cluster: string, routeKeys: ReadonlySet<string>): void {
    const m = this.strikes.get(cluster);
    if (m === undefined) return;
    for (const k of m.keys()) if (!routeKeys.has(k)) m.delete(k);
    if (m.size === 0) this.strikes.delete(cluster);
  }

  /** The agent disconnected: what follows is a new view, so counting starts over. */
  resetStrikes(cluster: string): void {
    this.strikes.delete(cluster);
  }

  forgetCluster(cluster: string): void {
    this.released.delete(cluster);
    this.strikes.delete(cluster);
  }
}
