import type { Clock } from "../../util/clock.js";

export interface DeletionPolicy {
  /** Consecutive direct "not found" answers needed… */
  readonly deleteAfterChecks: number;
  /** …spread over at least this long. */
  readonly deleteAfterMs: number;
  readonly blastRadius: { readonly maxPercent: number; readonly maxNodes: number; readonly windowMs: number };
}

interface Strike {
  readonly uid: string;
  readonly firstMs: number;
  count: number;
}

/**
 * Evidence that a node's instance is gone: consecutive direct lookups that said "not found".
 * Only such answers add to it; a found instance clears it; errors, timeouts and suspect answers
 * leave it exactly as it was.
 */
export class NotFoundEvidence {
  private readonly strikes = new Map<string, Strike>();

  constructor(private readonly clock: Clock) {}

  /** Records one "not found" and returns whether the policy now considers the instance gone. */
  notFound(
    key: string,
    uid: string,
    policy: DeletionPolicy,
  ): { confirmed: boolean; count: number; sinceMs: number } {
    const now = this.clock.now();
    let s = this.strikes.get(key);
    if (s === undefined || s.uid !== uid) {
      s = { uid, firstMs: now, count: 0 };
      this.strikes.set(key, s);
    }
    s.count++;
    const sinceMs = now - s.firstMs;
    return {
      confirmed: s.count >= policy.deleteAfterChecks && sinceMs >= policy.deleteAfterMs,
      count: s.count,
      sinceMs,
    };
  }

  found(key: string): void {
    this.strikes.delete(key);
  }

  forget(key: string): void {
    this.strikes.delete(key);
  }

  forgetWhere(match: (key: string) => boolean): void {
    for (const k of [...this.strikes.keys()]) if (match(k)) this.strikes.delete(k);
  }
}

/**
 * The per-cluster blast-radius limit: within any window, at most
 * max(maxNodes, floor(maxPercent% of the cluster's nodes)) deletions. A cloud that suddenly
 * "loses" many instances is far more likely lying than right.
 */
export class DeletionBudget {
  private readonly deletions = new Map<string, number[]>();

  /**
   * `recorded`: deletions other hub replicas made in the cluster (from its lease), so a
   * takeover does not start with a full budget.
   */
  constructor(
    private readonly clock: Clock,
    private readonly recorded?: (cluster: string) => readonly number[],
  ) {}

  limit(nodeCount: number, policy: DeletionPolicy): number {
    return Math.max(
      policy.blastRadius.maxNodes,
      Math.floor((policy.blastRadius.maxPercent / 100) * nodeCount),
    );
  }

  private recent(cluster: string, policy: DeletionPolicy): number[] {
    const since = this.clock.now() - policy.blastRadius.windowMs;
    const list = (this.deletions.get(cluster) ?? []).filter((t) => t > since);
    this.deletions.set(cluster, list);
    return list;
  }

  /** Deletions within the window: this process's, or those recorded in the lease if more. */
  private count(cluster: string, policy: DeletionPolicy): number {
    const own = this.recent(cluster, policy).length;
    if (this.recorded === undefined) return own;
    const since = this.clock.now() - policy.blastRadius.windowMs;
    return Math.max(own, this.recorded(cluster).filter((t) => t > since).length);
  }

  /** Whether one more deletion fits; if so it is counted. */
  tryConsume(cluster: string, nodeCount: number, policy: DeletionPolicy): boolean {
    if (this.count(cluster, policy) >= this.limit(nodeCount, policy)) return false;
    const list = this.recent(cluster, policy);
    list.push(this.clock.now());
    return true;
  }

  /** An operator-confirmed deletion bypasses the limit but still counts. */
  consumeConfirmed(cluster: string, policy: DeletionPolicy): void {
    this.recent(cluster, policy).push(this.clock.now());
  }

  used(cluster: string, policy: DeletionPolicy): number {
    return this.count(cluster, policy);
  }
}
