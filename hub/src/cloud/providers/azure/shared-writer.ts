/**
 * The whole-object writes of Azure's shared objects (a cluster's load balancer, its NSG, its
 * route table): every edit pending for one object when a write starts is applied to one fresh
 * read and written in one `PUT` with `If-Match` (the read's ETag); a 412 (ConflictError: another
 * writer changed it) reads again and re-applies every edit, so no edit is lost. Edits join while
 * the write before them runs, so a wave of Service changes costs one or a few PUTs, not one each.
 * Edits touch only their own owner's parts of the object (names derived from the Service uid).
 *
 * A Service's ensure reads what its edit needs first (its public IP, the nodes' addresses): it
 * holds the object meanwhile, and a write about to start waits for the holders' edits (at most
 * HOLD_MAX_MS), so a wave of Service changes underway at once is written together.
 */
import { ConflictError } from "../../errors.js";
import { CONFLICT_ATTEMPTS } from "../../serialized-write.js";

/** One Service's change to the object: the object after it (undefined: delete the object). */
export type Edit<T> = (current: T | undefined) => T | undefined;

export interface ObjectIo<T> {
  /** The object and its ETag, or undefined when absent. */
  read(): Promise<{ readonly value: T; readonly etag: string | undefined } | undefined>;
  /** Writes the whole object, `If-Match: etag` when it existed: the object as written (in progress or not). */
  put(value: T, etag: string | undefined): Promise<WriteResult<T>>;
  delete(etag: string | undefined): Promise<WriteResult<T>>;
  /** Whether two values are the same object for the cloud (no write needed). */
  same(a: T | undefined, b: T | undefined): boolean;
}

export interface WriteResult<T> {
  readonly value: T | undefined;
  /** The cloud is still applying the write (provisioningState Updating / Deleting). */
  readonly pending: boolean;
  /** Whether this pass wrote (PUT or DELETE). */
  readonly wrote?: boolean;
}

/** How long a write waits for the edits of Services still reading what they need. */
export const HOLD_MAX_MS = 2000;

interface Waiting<T> {
  readonly edit: Edit<T>;
  readonly resolve: (r: WriteResult<T>) => void;
  readonly reject: (err: unknown) => void;
}

export class SharedWriter<T> {
  private readonly queues = new Map<string, { waiting: Waiting<T>[]; running: boolean }>();
  /** Edits announced per key and not applied yet; the waiting write's wake-up. */
  private readonly holds = new Map<string, number>();
  private readonly wakers = new Map<string, () => void>();
  /** Writes made (PUT or DELETE), for tests and the bench. */
  writes = 0;

  /**
   * Announces an edit of `key` to come: answers its release (idempotent), which `apply` calls
   * once the edit is queued; call it too when no edit comes (an early return, an error).
   */
  hold(key: string): () => void {
    this.holds.set(key, (this.holds.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.holds.get(key) ?? 1) - 1;
      if (n > 0) {
        this.holds.set(key, n);
        return;
      }
      this.holds.delete(key);
      this.wakers.get(key)?.();
    };
  }

  /**
   * Applies `edit` with whatever else is pending for `key`; the object as the write left it.
   * `release`: the caller's hold of `key`, released once the edit is queued.
   */
  apply(key: string, io: ObjectIo<T>, edit: Edit<T>, release?: () => void): Promise<WriteResult<T>> {
    return new Promise((resolve, reject) => {
      const q = this.queues.get(key) ?? { waiting: [], running: false };
      this.queues.set(key, q);
      q.waiting.push({ edit, resolve, reject });
      release?.();
      // Edits made in the same turn (a wave of Services) join before the write starts.
      if (!q.running) setImmediate(() => void this.drain(key, io));
    });
  }

  /** Until no edit of `key` is announced and not queued, or HOLD_MAX_MS. */
  private async held(key: string): Promise<void> {
    const deadline = Date.now() + HOLD_MAX_MS;
    while ((this.holds.get(key) ?? 0) > 0 && Date.now() < deadline) {
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, deadline - Date.now());
        this.wakers.set(key, () => {
          clearTimeout(timer);
          wake();
        });
      });
      this.wakers.delete(key);
    }
  }

  private async drain(key: string, io: ObjectIo<T>): Promise<void> {
    const q = this.queues.get(key);
    if (q === undefined || q.running) return;
    q.running = true;
    try {
      while (q.waiting.length > 0) {
        await this.held(key);
        const batch = q.waiting.splice(0);
        try {
          const result = await this.writeOnce(
            io,
            batch.map((w) => w.edit),
          );
          for (const w of batch) w.resolve(result);
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      q.running = false;
      if (q.waiting.length === 0) this.queues.delete(key);
    }
  }

  private async writeOnce(io: ObjectIo<T>, edits: readonly Edit<T>[]): Promise<WriteResult<T>> {
    for (let attempt = 1; ; attempt++) {
      const current = await io.read();
      // A write still running (provisioningState Updating, Deleting): ARM refuses another
      // (409 AnotherOperationInProgress); the callers look again later.
      const state = (current?.value as { provisioningState?: string } | undefined)?.provisioningState;
      if (state === "Updating" || state === "Deleting") return { value: current?.value, pending: true };
      let next = current === undefined ? undefined : structuredClone(current.value);
      for (const edit of edits) next = edit(next);
      if (io.same(current?.value, next)) return { value: current?.value, pending: false };
      try {
        this.writes++;
        const r = next === undefined ? await io.delete(current?.etag) : await io.put(next, current?.etag);
        return { ...r, wrote: true };
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= CONFLICT_ATTEMPTS * 2) throw err;
      }
    }
  }
}
