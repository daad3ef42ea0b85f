import type { StoredLease } from "./lease-store.js";

/** One write of a cluster's lease, and when this replica first saw it (monotonic ms). */
export interface LeaseSighting {
  readonly revision: number;
  /** The holder's identity and renewal stamp: a bucket created again reuses revisions. */
  readonly stamp: string;
  readonly atMs: number;
}

/**
 * When this replica first saw each cluster's current lease write, on its own monotonic clock.
 * Sightings come from the bucket's watch, for every cluster and all the time, and from reads.
 * A holder sends a renewal before anyone can see it and stops acting TTL − margin after sending
 * it, so a write seen unchanged for a whole TTL since its first sighting here has ended for its
 * holder, whatever the wall clocks say; a replica that gets the cluster's agent late counts from
 * that first sighting, not from the agent's arrival.
 */
export class LeaseSightings {
  private readonly seen = new Map<string, LeaseSighting>();

  constructor(private readonly now: () => number) {}

  /** The lease as read or watched now; returns its first sighting here. */
  saw(cluster: string, lease: StoredLease): LeaseSighting {
    const stamp = stampOf(lease);
    const prev = this.seen.get(cluster);
    if (prev !== undefined && prev.revision === lease.revision && prev.stamp === stamp) return prev;
    // An older write arriving late (a read that raced the watch) never replaces a newer one.
    if (prev !== undefined && prev.revision > lease.revision)
      return { revision: lease.revision, stamp, atMs: this.now() };
    const s = { revision: lease.revision, stamp, atMs: this.now() };
    if (lease.value === null) this.seen.delete(cluster);
    else this.seen.set(cluster, s);
    return s;
  }

  /**
   * Our own write over `previous` that is no renewal (a handover request): the holder's last
   * renewal is still the one seen in `previous`, so the new write counts from that sighting.
   */
  inherit(cluster: string, lease: StoredLease, previous: LeaseSighting): LeaseSighting {
    const s = { revision: lease.revision, stamp: stampOf(lease), atMs: previous.atMs };
    this.seen.set(cluster, s);
    return s;
  }
}

/** Milliseconds until a write first seen at `s` has been unchanged for `ttlMs` (≤ 0: it has). */
export function expiresInMs(s: LeaseSighting, ttlMs: number, nowMs: number): number {
  return s.atMs + ttlMs - nowMs;
}

function stampOf(lease: StoredLease): string {
  const v = lease.value;
  return v === null ? "" : `${v.owner}/${v.incarnation}/${v.renewedAt}`;
}
