import type { Clock, TimerHandle } from "../util/clock.js";
import type { InstanceCache } from "./instance-cache.js";
import type { InstanceMetadata, Instances } from "./provider.js";

export interface LookupBatchOptions {
  /** Lookups arriving within this window are considered together. */
  readonly windowMs: number;
  /** At least this many in one window are answered from one account-wide list… */
  readonly listThreshold: number;
  /** …at most this old (a join storm needs no second list). */
  readonly listMaxAgeMs: number;
}

export const DEFAULT_LOOKUP_BATCH: LookupBatchOptions = {
  windowMs: 10,
  listThreshold: 16,
  listMaxAgeMs: 5000,
};

interface Request {
  readonly by: "name" | "providerID";
  readonly key: string;
  resolve(meta: InstanceMetadata): void;
  reject(err: unknown): void;
}

/**
 * Instance lookups for node initialization, coalesced per account: when many nodes join at
 * once (a node pool scaling up, a fleet of clusters created together), one paged list of the
 * account answers all of them, instead of one call per node. Only what the list shows is
 * served from it; every miss is looked up directly, so "not found" always comes from a direct
 * lookup. A lone lookup goes straight to the cloud.
 */
export class InstanceLookups {
  private pending: Request[] = [];
  private timer: TimerHandle | undefined;
  servedFromList = 0;
  direct = 0;

  constructor(
    private readonly instances: Instances,
    private readonly cache: InstanceCache,
    private readonly clock: Clock,
    private readonly opts: LookupBatchOptions = DEFAULT_LOOKUP_BATCH,
  ) {}

  byName(name: string): Promise<InstanceMetadata> {
    return this.enqueue("name", name);
  }

  byProviderID(providerID: string): Promise<InstanceMetadata> {
    return this.enqueue("providerID", providerID);
  }

  private enqueue(by: Request["by"], key: string): Promise<InstanceMetadata> {
    return new Promise((resolve, reject) => {
      this.pending.push({ by, key, resolve, reject });
      this.timer ??= this.clock.setTimeout(() => void this.flush(), this.opts.windowMs);
    });
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    let rest = batch;
    if (batch.length >= this.opts.listThreshold) {
      // A failed list keeps the previous view; whatever it cannot answer goes direct.
      await this.cache.freshWithin(this.opts.listMaxAgeMs);
      rest = [];
      for (const r of batch) {
        const meta = r.by === "name" ? this.cache.getByName(r.key) : this.cache.get(r.key);
        if (meta !== undefined && meta.state !== "terminated") {
          this.servedFromList++;
          r.resolve(meta);
        } else rest.push(r);
      }
    }
    for (const r of rest) {
      this.direct++;
      const call = r.by === "name" ? this.instances.getByName(r.key) : this.instances.getByProviderID(r.key);
      call.then(r.resolve, r.reject);
    }
  }
}
