import type { Clock } from "../util/clock.js";
import { WindowBatch } from "../util/window-batch.js";
import { DiskNotFoundError } from "./errors.js";
import type { DiskMetadata, Volumes } from "./provider.js";

interface Waiter {
  readonly id: string;
  resolve(disk: DiskMetadata | undefined): void;
  reject(err: unknown): void;
}

/**
 * Disk lookups coalesced per account, across its clusters: the ids asked for within one window
 * go to the cloud as `getMany` batches of at most `maxBatch` (500 PVs take 5 calls at 100 per
 * batch, not 500). An id a batch does not show is then read directly: only that direct answer
 * says "not found" (undefined), never a batch's silence.
 */
export class DiskLookups {
  private readonly window: WindowBatch<Waiter>;
  batches = 0;
  direct = 0;

  constructor(
    private readonly volumes: Volumes,
    clock: Clock,
    windowMs = 10,
  ) {
    this.window = new WindowBatch(clock, windowMs, (waiters) => this.flush(waiters));
  }

  /** The disk, or undefined if a direct read says the account has no such disk. */
  get(id: string): Promise<DiskMetadata | undefined> {
    return new Promise((resolve, reject) => this.window.add({ id, resolve, reject }));
  }

  private async flush(waiters: readonly Waiter[]): Promise<void> {
    const batch = new Map<string, Waiter[]>();
    for (const w of waiters) {
      const same = batch.get(w.id);
      if (same !== undefined) same.push(w);
      else batch.set(w.id, [w]);
    }
    const ids = [...batch.keys()];
    const answer = (id: string, f: (w: Waiter) => void) => {
      for (const w of batch.get(id) ?? []) f(w);
    };
    for (let i = 0; i < ids.length; i += this.volumes.maxBatch) {
      const chunk = ids.slice(i, i + this.volumes.maxBatch);
      let found: readonly DiskMetadata[];
      try {
        this.batches++;
        found = await this.volumes.getMany(chunk);
      } catch (err) {
        for (const id of chunk) answer(id, (w) => w.reject(err));
        continue;
      }
      const byId = new Map(found.map((d) => [d.id, d]));
      for (const id of chunk) {
        const disk = byId.get(id);
        if (disk !== undefined) answer(id, (w) => w.resolve(disk));
        else void this.readDirectly(id, (f) => answer(id, f));
      }
    }
  }

  private async readDirectly(id: string, answer: (f: (w: Waiter) => void) => void): Promise<void> {
    this.direct++;
    try {
      const disk = await this.volumes.get(id);
      answer((w) => w.resolve(disk));
    } catch (err) {
      if (err instanceof DiskNotFoundError) answer((w) => w.resolve(undefined));
      else answer((w) => w.reject(err));
    }
  }
}
