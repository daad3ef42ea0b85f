/**
 * The worker loop, written once for every reconciler. A handler only returns what should
 * happen next (Requeue); this runner alone turns that into queue calls, as
 * processNextServiceItem does upstream: done → forget, after → addAfter, backoff → addRateLimited.
 */
import { type Clock, systemClock } from "../util/clock.js";
import type { WorkKey } from "./key.js";
import type { WorkQueue } from "./work-queue.js";

export type Requeue =
  | { kind: "done" } // forget(key)
  | { kind: "after"; ms: number } // forget(key), then addAfter(key, ms)
  | { kind: "backoff"; error: unknown }; // addRateLimited(key)

export type WorkHandler = (key: WorkKey) => Promise<Requeue>;

/** The part of WorkQueue the runner uses; tests may pass a spy. */
export type WorkerQueue = Pick<
  WorkQueue,
  "get" | "tryGet" | "done" | "forget" | "addAfter" | "addRateLimited"
>;

export interface WorkerPoolOptions {
  /** Keys processed at once; handlers are I/O-bound. Default DEFAULT_CONCURRENCY. */
  concurrency?: number;
  handler: WorkHandler;
  /** The handler threw or returned no Requeue (the key backs off), or a hook threw. */
  onError?: (key: WorkKey, error: unknown) => void;
  /** After every key, for metrics; durationMs is the handler's time by `clock`. */
  onProcessed?: (key: WorkKey, outcome: Requeue, durationMs: number) => void;
  clock?: Clock;
}

export interface WorkerPool {
  /** Handlers running now. */
  readonly inFlight: number;
  /** Stops taking keys and resolves once every in-flight handler has finished and been applied. */
  stop(): Promise<void>;
}

export const DEFAULT_CONCURRENCY = 16;

/**
 * Runs up to `concurrency` handlers at once on `queue` until stop() or until the queue shuts
 * down. The queue guarantees a key is never handled by two handlers at once.
 *
 * Not one loop per worker: keys are pulled with tryGet() while there is room, and at most one
 * get() waits for the next key. An idle slot therefore costs nothing, so `concurrency` can be
 * set as high as the I/O-bound reconcilers need (thousands of them awaiting one account list
 * during a join storm) — with one waiting get() per idle worker, each key handed out cost time
 * proportional to the number of idle workers (their abort listeners).
 */
export function runWorkers(queue: WorkerQueue, options: WorkerPoolOptions): WorkerPool {
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  }
  const clock = options.clock ?? systemClock;
  const stopping = new AbortController();
  let inFlight = 0;
  let waiting = false;
  let ended = false;
  let onFinished: (() => void) | undefined;
  const finished = new Promise<void>((resolve) => {
    onFinished = resolve;
  });
  const finishIfIdle = (): void => {
    if (ended && inFlight === 0 && !waiting) onFinished?.();
  };

  const reportError = (key: WorkKey, error: unknown): void => {
    try {
      options.onError?.(key, error);
    } catch {
      // An error reporter that throws has nowhere left to report to; the pool must go on.
    }
  };

  // One reaction per key on the handler's promise, no async frames around it: at a join storm's
  // rate each async layer (and each .catch/.finally) was a visible share of the hub's garbage.
  const finish = (key: WorkKey, startMs: number, outcome: Requeue): void => {
    // A queue call that throws is reported and the pool goes on; the key is done either way.
    let applied = true;
    try {
      applyRequeue(queue, key, outcome);
    } catch (error) {
      applied = false;
      reportError(key, error);
    }
    try {
      queue.done(key);
    } catch (error) {
      applied = false;
      reportError(key, error);
    }
    if (applied) {
      try {
        options.onProcessed?.(key, outcome, clock.now() - startMs);
      } catch (error) {
        reportError(key, error);
      }
    }
    inFlight--;
    pump();
    finishIfIdle();
  };

  const failed = (key: WorkKey, startMs: number, error: unknown): void => {
    reportError(key, error);
    finish(key, startMs, { kind: "backoff", error });
  };

  const start = (key: WorkKey): void => {
    inFlight++;
    const startMs = clock.now();
    let result: Promise<unknown>;
    try {
      result = options.handler(key);
    } catch (error) {
      // Settled on a later tick like any other outcome: pump() is never re-entered from start().
      result = Promise.reject(error);
    }
    Promise.resolve(result).then(
      (value) =>
        isRequeue(value)
          ? finish(key, startMs, value)
          : failed(key, startMs, new TypeError(`handler returned no Requeue: ${String(value)}`)),
      (error: unknown) => failed(key, startMs, error),
    );
  };

  const pump = (): void => {
    if (ended) return;
    while (inFlight < concurrency) {
      const key = queue.tryGet();
      if (key === undefined) break;
      start(key);
    }
    if (inFlight >= concurrency || waiting) return;
    waiting = true;
    queue.get(stopping.signal).then(
      (key) => {
        waiting = false;
        if (key === undefined) ended = true;
        else start(key);
        pump();
        finishIfIdle();
      },
      (error: unknown) => {
        waiting = false;
        ended = true;
        reportError({ cluster: "", kind: "", name: "" }, error);
        finishIfIdle();
      },
    );
  };

  pump();

  return {
    get inFlight() {
      return inFlight;
    },
    stop() {
      ended = true;
      stopping.abort();
      finishIfIdle();
      return finished;
    },
  };
}

function applyRequeue(queue: WorkerQueue, key: WorkKey, outcome: Requeue): void {
  switch (outcome.kind) {
    case "done":
      queue.forget(key);
      return;
    case "after":
      queue.forget(key);
      queue.addAfter(key, outcome.ms);
      return;
    case "backoff":
      queue.addRateLimited(key);
      return;
  }
}

function isRequeue(value: unknown): value is Requeue {
  if (typeof value !== "object" || value === null || !("kind" in value)) return false;
  switch (value.kind) {
    case "done":
    case "backoff":
      return true;
    case "after":
      return "ms" in value && typeof value.ms === "number";
    default:
      return false;
  }
}
