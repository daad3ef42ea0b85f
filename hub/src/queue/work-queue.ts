/**
 * The work queue shared by every reconciler: client-go workqueue semantics (dirty set and
 * processing set: a key is never handed to two workers at once, a key added while it is
 * processed runs once more afterwards, adding a queued key is a no-op) plus what a fleet
 * needs: one FIFO per cluster served round-robin, so a cluster with thousands of pending keys
 * cannot starve the others, and one timer for all delayed keys.
 */
import { type BackoffOptions, ExponentialBackoff } from "../util/backoff.js";
import { type Clock, systemClock, type TimerHandle } from "../util/clock.js";
import { DelayHeap } from "./delay-heap.js";
import { Fifo } from "./fifo.js";
import { clusterKeyPrefix, keyOf, type WorkKey } from "./key.js";

/** client-go's DefaultControllerRateLimiter per-item part: 5 ms doubling to 1000 s. */
export const DEFAULT_QUEUE_BACKOFF: Readonly<BackoffOptions> = { initialMs: 5, maxMs: 1_000_000 };

export interface WorkQueueOptions {
  clock?: Clock;
  /** Per-key backoff of addRateLimited. Default DEFAULT_QUEUE_BACKOFF. */
  backoff?: BackoffOptions;
}

/** Keys of one cluster, by state; for a queue-depth metric. */
export interface ClusterDepth {
  /** Queued and ready to be handed to a worker. */
  ready: number;
  /** Scheduled by addAfter/addRateLimited, not yet due. */
  waiting: number;
  /** Handed to a worker, not yet done. */
  processing: number;
}

class ClusterQueue {
  readonly ready = new Fifo<WorkKey>();
  waiting = 0;
  processing = 0;
  inRing = false;
  /** Set by removeCluster: retries of this cluster's in-flight keys are dropped. */
  removed = false;

  constructor(readonly name: string) {}
}

interface Getter {
  resolve: (key: WorkKey | undefined) => void;
  signal: AbortSignal | undefined;
  settled: boolean;
}

// Node fires a timer longer than 2^31-1 ms immediately; wait in steps instead.
const MAX_TIMER_MS = 2_147_483_647;

export class WorkQueue {
  private readonly clock: Clock;
  private readonly backoff: ExponentialBackoff;
  private readonly clusters = new Map<string, ClusterQueue>();
  /** Clusters with ready keys, in serving order. May hold removed clusters; they are skipped. */
  private readonly ring = new Fifo<ClusterQueue>();
  /** Keys that need processing: queued, or to be re-queued when their worker is done. */
  private readonly dirty = new Set<string>();
  /** Keys handed to a worker, with the cluster queue counting them. */
  private readonly processing = new Map<string, ClusterQueue>();
  private readonly delayed = new DelayHeap<WorkKey>();
  private readonly getters = new Fifo<Getter>();
  /** Signals given to get() that this queue listens to (once each). */
  private readonly watched = new WeakSet<AbortSignal>();
  private liveGetters = 0;
  private readyCount = 0;
  private timer: TimerHandle | undefined;
  private timerDueMs = 0;
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.backoff = new ExponentialBackoff(options.backoff ?? DEFAULT_QUEUE_BACKOFF);
  }

  /** Queues `key` unless it is already queued. A pending addAfter of the key is superseded. */
  add(key: WorkKey): void {
    if (this.shuttingDown) return;
    const id = keyOf(key);
    this.cancelDelayed(id);
    if (this.dirty.has(id)) return;
    this.dirty.add(id);
    if (this.processing.has(id)) return; // done() re-queues it
    this.enqueueReady(copyKey(key));
  }

  /**
   * Queues `key` after `delayMs`. If the key is already waiting, the earlier due time wins:
   * a later addAfter never postpones an earlier one. delayMs <= 0 is add(key).
   */
  addAfter(key: WorkKey, delayMs: number): void {
    if (this.shuttingDown) return;
    const id = keyOf(key);
    if (this.isDroppedInFlight(id)) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const copy = copyKey(key);
    const isNew = this.delayed.get(id) === undefined;
    if (!this.delayed.scheduleEarliest(id, copy, this.clock.now() + delayMs)) return;
    if (isNew) this.clusterQueue(key.cluster).waiting++;
    this.armTimer();
  }

  /** addAfter with the key's exponential backoff; each call counts one more failure. */
  addRateLimited(key: WorkKey): void {
    if (this.shuttingDown) return;
    const id = keyOf(key);
    if (this.isDroppedInFlight(id)) return;
    this.addAfter(key, this.backoff.next(id));
  }

  /** The key succeeded: its backoff starts over. Does not dequeue it. */
  forget(key: WorkKey): void {
    this.backoff.forget(keyOf(key));
  }

  /** Failures counted by addRateLimited since the last forget. */
  numRequeues(key: WorkKey): number {
    return this.backoff.failures(keyOf(key));
  }

  /**
   * The next ready key, waiting for one if none is. The caller owns the key until done(key).
   * Resolves undefined once the queue is shut down or `signal` aborts.
   */
  get(signal?: AbortSignal): Promise<WorkKey | undefined> {
    if (this.shuttingDown || signal?.aborted) return Promise.resolve(undefined);
    const key = this.popReady();
    if (key) return Promise.resolve(key);
    return new Promise((resolve) => {
      const getter: Getter = { resolve, signal, settled: false };
      if (signal !== undefined && !this.watched.has(signal)) {
        // One listener per signal, not per get(): a worker pool passes the same one each time it
        // goes idle, and an EventTarget listener added and removed per key was garbage at a
        // storm's rate.
        this.watched.add(signal);
        signal.addEventListener("abort", () => this.abortGettersOf(signal), { once: true });
      }
      this.getters.push(getter);
      this.liveGetters++;
    });
  }

  /** get() without waiting: the next ready key or undefined. */
  tryGet(): WorkKey | undefined {
    return this.shuttingDown ? undefined : this.popReady();
  }

  /** The worker is finished with `key`; if it was added meanwhile, it is queued again. */
  done(key: WorkKey): void {
    const id = keyOf(key);
    const owner = this.processing.get(id);
    if (!owner) return;
    this.processing.delete(id);
    owner.processing--;
    if (this.dirty.has(id) && !this.shuttingDown) this.enqueueReady(copyKey(key));
  }

  /** Ready keys, all clusters. */
  len(): number {
    return this.readyCount;
  }

  /** Keys scheduled by addAfter/addRateLimited, not yet due. */
  waitingLen(): number {
    return this.delayed.size;
  }

  /** Keys handed out and not yet done. */
  processingLen(): number {
    return this.processing.size;
  }

  /** Depth of every cluster seen since it was last removed, including zeros (stable metric series). */
  pendingByCluster(): Map<string, ClusterDepth> {
    const depths = new Map<string, ClusterDepth>();
    for (const [name, cq] of this.clusters) {
      depths.set(name, { ready: cq.ready.length, waiting: cq.waiting, processing: cq.processing });
    }
    return depths;
  }

  /**
   * Drops every queued and delayed key of `cluster` and its backoff counts. Keys of the
   * cluster that are in flight finish, but their retries (addAfter, addRateLimited) are
   * dropped; a plain add() still counts, in case the cluster came back.
   */
  removeCluster(cluster: string): void {
    const cq = this.clusters.get(cluster);
    if (cq) {
      this.clusters.delete(cluster);
      cq.removed = true;
      for (const key of cq.ready) this.dirty.delete(keyOf(key));
      this.readyCount -= cq.ready.length;
      cq.ready.clear();
      if (cq.waiting > 0) {
        this.delayed.removeWhere((key) => key.cluster === cluster);
        this.armTimer();
      }
      for (const [id, owner] of this.processing) {
        if (owner === cq) this.dirty.delete(id);
      }
    }
    const prefix = clusterKeyPrefix(cluster);
    this.backoff.forgetIf((id) => id.startsWith(prefix));
  }

  /**
   * Stops handing out keys: pending and future get() calls resolve undefined, add calls are
   * ignored, queued and delayed keys are dropped. Keys in flight may still be marked done().
   */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.delayed.clear();
    for (const cq of this.clusters.values()) {
      cq.ready.clear();
      cq.waiting = 0;
    }
    this.ring.clear();
    this.dirty.clear();
    this.readyCount = 0;
    for (let getter = this.getters.shift(); getter; getter = this.getters.shift()) {
      this.settleGetter(getter, undefined);
    }
  }

  get isShutDown(): boolean {
    return this.shuttingDown;
  }

  private enqueueReady(key: WorkKey): void {
    const cq = this.clusterQueue(key.cluster);
    cq.ready.push(key);
    this.readyCount++;
    if (!cq.inRing) {
      cq.inRing = true;
      this.ring.push(cq);
    }
    this.dispatch();
  }

  /** Round-robin: one key from the cluster at the front of the ring, which then goes to the back. */
  private popReady(): WorkKey | undefined {
    for (let cq = this.ring.shift(); cq; cq = this.ring.shift()) {
      cq.inRing = false;
      if (cq.removed) continue;
      const key = cq.ready.shift();
      if (!key) continue;
      if (cq.ready.length > 0) {
        cq.inRing = true;
        this.ring.push(cq);
      }
      this.readyCount--;
      const id = keyOf(key);
      this.dirty.delete(id);
      this.processing.set(id, cq);
      cq.processing++;
      return key;
    }
    return undefined;
  }

  /** Hands ready keys to waiting get() calls, oldest call first. */
  private dispatch(): void {
    // liveGetters counts the unsettled getters in `getters`; readyCount the keys popReady can return.
    while (this.liveGetters > 0 && this.readyCount > 0) {
      const key = this.popReady()!;
      this.settleGetter(this.shiftLiveGetter()!, key);
    }
  }

  private shiftLiveGetter(): Getter | undefined {
    for (let getter = this.getters.shift(); getter; getter = this.getters.shift()) {
      if (!getter.settled) return getter;
    }
    return undefined;
  }

  private abortGettersOf(signal: AbortSignal): void {
    for (const getter of this.getters) if (getter.signal === signal) this.settleGetter(getter, undefined);
    // Aborted getters stay in the FIFO until reached; an idle queue polled with timeouts must not pile them up.
    if (this.liveGetters === 0) this.getters.clear();
  }

  private settleGetter(getter: Getter, key: WorkKey | undefined): void {
    if (getter.settled) return;
    getter.settled = true;
    this.liveGetters--;
    getter.resolve(key);
  }

  private clusterQueue(cluster: string): ClusterQueue {
    let cq = this.clusters.get(cluster);
    if (!cq) {
      cq = new ClusterQueue(cluster);
      this.clusters.set(cluster, cq);
    }
    return cq;
  }

  /** In flight for a cluster removed since: its retries are dropped. */
  private isDroppedInFlight(id: string): boolean {
    return this.processing.get(id)?.removed === true;
  }

  private cancelDelayed(id: string): void {
    const entry = this.delayed.remove(id);
    if (!entry) return;
    const cq = this.clusters.get(entry.value.cluster);
    if (cq) cq.waiting--;
    this.armTimer(); // clears the timer once nothing waits; an early one just re-arms when it fires
  }

  /** One timer for the earliest delayed key. */
  private armTimer(): void {
    const next = this.delayed.peek();
    if (!next) {
      if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    if (this.timer !== undefined && this.timerDueMs <= next.dueMs) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    const nowMs = this.clock.now();
    const waitMs = Math.min(MAX_TIMER_MS, Math.max(0, next.dueMs - nowMs));
    this.timerDueMs = nowMs + waitMs;
    this.timer = this.clock.setTimeout(() => this.onTimer(), waitMs);
  }

  private onTimer(): void {
    this.timer = undefined;
    const nowMs = this.clock.now();
    for (let entry = this.delayed.popDue(nowMs); entry; entry = this.delayed.popDue(nowMs)) {
      const cq = this.clusters.get(entry.value.cluster);
      if (cq) cq.waiting--;
      this.add(entry.value);
    }
    this.armTimer();
  }
}

/** Own copy, so a caller mutating its object cannot change a queued key. */
function copyKey(key: WorkKey): WorkKey {
  return { cluster: key.cluster, kind: key.kind, name: key.name };
}
