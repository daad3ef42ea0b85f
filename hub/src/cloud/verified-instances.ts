import type { Clock } from "../util/clock.js";
import { InstanceNotFoundError } from "./errors.js";
import type { InstanceCache } from "./instance-cache.js";
import type { InstanceMetadata } from "./provider.js";
import { type ClusterCloud, outOfScope } from "./scope.js";

export type Verdict =
  | { readonly ok: true; readonly instanceID: string }
  | { readonly ok: false; readonly reason: string };

interface Entry {
  readonly verdict: Verdict;
  /** Renewed in place when a record repeats the verdict: the periodic refresh re-records every node. */
  expiresAtMs: number;
}

function sameVerdict(a: Verdict, b: Verdict): boolean {
  return a.ok ? b.ok && a.instanceID === b.instanceID : !b.ok && a.reason === b.reason;
}

const OK_TTL_MS = 10 * 60_000;
const REFUSED_TTL_MS = 60_000;
/** Direct lookups in flight for one verifyAll. */
const LOOKUP_CONCURRENCY = 8;

/**
 * Which providerIDs a cluster may use. Agents are untrusted: before an instance serves as a
 * load balancer backend or a route target, its providerID must resolve, by a direct lookup, to
 * an instance inside the cluster's account, region, network and tags. Verdicts are cached
 * (node-init records what it already looked up), so this costs a cloud call only for
 * providerIDs nobody has checked recently.
 */
export class VerifiedInstances {
  private readonly entries = new Map<string, Entry>();

  /**
   * `onOutOfScope` hears of each providerID newly found outside the reporting cluster's scope
   * (another cluster's instance, or another account's): the hostile-cluster metric.
   */
  constructor(
    private readonly clock: Clock,
    private readonly onOutOfScope?: (cluster: string) => void,
  ) {}

  private key(cluster: string, providerID: string): string {
    return `${cluster}\u0000${providerID}`;
  }

  record(cluster: string, cloud: ClusterCloud, meta: InstanceMetadata): Verdict {
    const reason =
      meta.state === "terminated" ? `instance ${meta.instanceID} is terminated` : outOfScope(meta, cloud);
    const verdict: Verdict =
      reason === null ? { ok: true, instanceID: meta.instanceID } : { ok: false, reason };
    const k = this.key(cluster, meta.providerID);
    const before = this.entries.get(k);
    const wasRefused = before !== undefined && !before.verdict.ok && before.expiresAtMs > this.clock.now();
    if (!verdict.ok && meta.state !== "terminated" && !wasRefused) this.onOutOfScope?.(cluster);
    const expiresAtMs = this.clock.now() + (verdict.ok ? OK_TTL_MS : REFUSED_TTL_MS);
    if (before !== undefined && sameVerdict(before.verdict, verdict)) {
      before.expiresAtMs = expiresAtMs;
      return before.verdict;
    }
    this.entries.set(k, { verdict, expiresAtMs });
    return verdict;
  }

  /** Cached verdict, or a direct lookup. Cloud errors other than "not found" propagate (retry later). */
  async verify(cluster: string, providerID: string, cloud: ClusterCloud): Promise<Verdict> {
    const k = this.key(cluster, providerID);
    const hit = this.entries.get(k);
    if (hit !== undefined && hit.expiresAtMs > this.clock.now()) return hit.verdict;
    if (cloud.provider.instances.parseProviderID(providerID) === undefined)
      return this.remember(k, {
        ok: false,
        reason: `providerID ${providerID} is not in this cluster's cloud account`,
      });
    try {
      const meta = await cloud.provider.instances.getByProviderID(providerID);
      if (meta.providerID !== providerID)
        return this.remember(k, { ok: false, reason: `lookup of ${providerID} returned ${meta.providerID}` });
      return this.record(cluster, cloud, meta);
    } catch (err) {
      if (err instanceof InstanceNotFoundError)
        return this.remember(k, { ok: false, reason: `instance ${providerID} not found` });
      throw err;
    }
  }

  /**
   * Verdicts for many providerIDs at once: cached ones first, then the shared instance view
   * (one list for the whole account), then direct lookups for the rest, a few at a time. Any
   * cloud error fails the whole call: callers never act on a partial answer.
   */
  async verifyAll(
    cluster: string,
    providerIDs: readonly string[],
    cloud: ClusterCloud,
    view?: InstanceCache,
  ): Promise<Map<string, Verdict>> {
    const out = new Map<string, Verdict>();
    let misses: string[] = [];
    for (const id of providerIDs) {
      const hit = this.entries.get(this.key(cluster, id));
      if (hit !== undefined && hit.expiresAtMs > this.clock.now()) out.set(id, hit.verdict);
      else misses.push(id);
    }
    if (misses.length > 1 && view !== undefined) {
      await view.fresh();
      misses = misses.filter((id) => {
        const meta = view.get(id);
        if (meta === undefined) return true;
        out.set(id, this.record(cluster, cloud, meta));
        return false;
      });
    }
    for (let i = 0; i < misses.length; i += LOOKUP_CONCURRENCY) {
      const batch = misses.slice(i, i + LOOKUP_CONCURRENCY);
      const verdicts = await Promise.all(batch.map((id) => this.verify(cluster, id, cloud)));
      batch.forEach((id, j) => {
        out.set(id, verdicts[j] as Verdict);
      });
    }
    return out;
  }

  private remember(k: string, verdict: Verdict): Verdict {
    this.entries.set(k, { verdict, expiresAtMs: this.clock.now() + REFUSED_TTL_MS });
    return verdict;
  }

  forgetCluster(cluster: string): void {
    const prefix = `${cluster}\u0000`;
    for (const k of [...this.entries.keys()]) if (k.startsWith(prefix)) this.entries.delete(k);
  }
}
