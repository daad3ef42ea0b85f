import type { Clock } from "../util/clock.js";
import { WindowBatch } from "../util/window-batch.js";
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

type Request =
  | {
      readonly by: "name";
      readonly key: string;
      readonly inScope: (meta: InstanceMetadata) => boolean;
      resolve(matches: readonly InstanceMetadata[]): void;
      reject(err: unknown): void;
    }
  | {
      readonly by: "providerID";
      readonly key: string;
      resolve(meta: InstanceMetadata): void;
      reject(err: unknown): void;
    };

/**
 * Instance lookups for node initialization, coalesced per account: when many nodes join at
 * once (a node pool scaling up, a fleet of clusters created together), one paged list of the
 * account answers all of them, instead of one call per node. Only what the list shows is
 * served from it; every miss is looked up directly, so "not found" always comes from a direct
 * lookup. A lone lookup goes straight to the cloud.
 */
export class InstanceLookups {
  private readonly window: WindowBatch<Request>;
  servedFromList = 0;
  direct = 0;

  constructor(
    private readonly instances: Instances,
    private readonly cache: InstanceCache,
    clock: Clock,
    private readonly opts: LookupBatchOptions = DEFAULT_LOOKUP_BATCH,
  ) {
    this.window = new WindowBatch(clock, opts.windowMs, (batch) => this.flush(batch));
  }

  /**
   * Every instance called `name`. The account-wide list answers only when it shows exactly one
   * live instance of that name inside the caller's scope (`inScope`); anything else (none,
   * several, only others') is asked directly, so an ambiguous or missing answer is never a
   * stale list's.
   */
  byName(name: string, inScope: (meta: InstanceMetadata) => boolean): Promise<readonly InstanceMetadata[]> {
    return new Promise((resolve, reject) => {
      this.window.add({ by: "name", key: name, inScope, resolve, reject });
    });
  }

  byProviderID(providerID: string): Promise<InstanceMetadata> {
    return new Promise((resolve, reject) => {
      this.window.add({ by: "providerID", key: providerID, resolve, reject });
    });
  }

  private async flush(batch: readonly Request[]): Promise<void> {
    const rest = batch.length >= this.opts.listThreshold ? await this.answerFromList(batch) : batch;
    for (const r of rest) {
      this.direct++;
      if (r.by === "name") this.instances.findByName(r.key).then(r.resolve, r.reject);
      else this.instances.getByProviderID(r.key).then(r.resolve, r.reject);
    }
  }

  /** Answers what the account-wide list shows; returns the rest. */
  private async answerFromList(batch: readonly Request[]): Promise<Request[]> {
    // A failed list keeps the previous view; whatever it cannot answer goes direct.
    await this.cache.freshWithin(this.opts.listMaxAgeMs);
    const rest: Request[] = [];
    for (const r of batch) {
      if (r.by === "name") {
        const matches = this.cache.getByName(r.key);
        if (matches.filter(r.inScope).length === 1) {
          this.servedFromList++;
          r.resolve(matches);
          continue;
        }
      } else {
        const meta = this.cache.get(r.key);
        if (meta !== undefined && meta.state !== "terminated") {
          this.servedFromList++;
          r.resolve(meta);
          continue;
        }
      }
      rest.push(r);
    }
    return rest;
  }
}
