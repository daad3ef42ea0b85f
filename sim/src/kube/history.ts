// The resource-version history: the one global resourceVersion counter, a bounded ring of the latest
// events (to resume watches and to serve LISTs at an older revision) and waits for a revision.

import { tooOldResourceVersion } from "./errors.js";
import type { ResourceDef } from "./resources.js";
import type { Entry, Table } from "./table.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface HistoryEvent {
  readonly rv: number;
  readonly def: ResourceDef;
  readonly type: WatchEventType;
  /** The new state; for DELETED the last state carrying the deletion resourceVersion. */
  readonly entry: Entry;
  /** The state before this event (undefined for ADDED). */
  readonly prev: Entry | undefined;
}

export class History {
  private rv = 0;
  private readonly ring: HistoryEvent[] = [];
  private start = 0;
  private evictedUpTo = 0;
  private readonly waiters = new Set<() => void>();
  private readonly capacity: number;

  /** `size`: how many events are kept; older resourceVersions are expired. */
  constructor(size: number) {
    this.capacity = Math.max(1, size);
  }

  /** The latest resourceVersion. */
  get current(): number {
    return this.rv;
  }

  /** The newest evicted resourceVersion: anything older can no longer be served. */
  get oldest(): number {
    return this.evictedUpTo;
  }

  /** The resourceVersion of the write being committed. */
  next(): number {
    return ++this.rv;
  }

  append(ev: HistoryEvent): void {
    if (this.ring.length < this.capacity) {
      this.ring.push(ev);
    } else {
      const old = this.ring[this.start];
      if (old !== undefined) this.evictedUpTo = old.rv;
      this.ring[this.start] = ev;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  /** Wakes the waitFor calls after a commit. */
  wakeWaiters(): void {
    if (this.waiters.size > 0) for (const fn of [...this.waiters]) fn();
  }

  /** Events with rv > after, oldest first (after must be >= oldest). */
  *after(after: number): Generator<HistoryEvent> {
    const n = this.ring.length;
    if (n === 0) return;
    const oldest = this.at(0)?.rv ?? this.rv + 1;
    let i = Math.max(0, after + 1 - oldest);
    for (; i < n; i++) {
      const ev = this.at(i);
      if (ev !== undefined) yield ev;
    }
  }

  /** The table content at revision `rv`, reconstructed from the history. */
  snapshotAt(table: Table, rv: number): ReadonlyMap<string, Entry> {
    if (rv >= this.rv) return table.entries;
    if (rv < this.evictedUpTo) throw tooOldResourceVersion(rv, this.evictedUpTo);
    let map: Map<string, Entry> | undefined;
    for (let i = this.ring.length - 1; i >= 0; i--) {
      const ev = this.at(i);
      if (ev === undefined || ev.rv <= rv) break;
      if (ev.def !== table.def) continue;
      map ??= new Map(table.entries);
      if (ev.type === "ADDED") map.delete(ev.entry.key);
      else if (ev.prev !== undefined) map.set(ev.prev.key, ev.prev);
    }
    return map ?? table.entries;
  }

  /** Resolves true once the store reached `rv`, false after `ms`. */
  waitFor(rv: number, ms: number): Promise<boolean> {
    if (this.rv >= rv) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.rv >= rv) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve(true);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        resolve(this.rv >= rv);
      }, ms);
      timer.unref();
      this.waiters.add(check);
    });
  }

  private at(i: number): HistoryEvent | undefined {
    return this.ring[(this.start + i) % this.ring.length];
  }
}
