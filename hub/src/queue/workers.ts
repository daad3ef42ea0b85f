/**
 * The worker loop, written once for every reconciler. A handler only returns what should
 * happen next (Requeue); this runner alone turns that into queue calls, as
 * processNextServiceItem does upstream: done → forget, after → addAfter, backoff → addRateLimited.
 */
import { setMaxListeners } from "node:events";
import { type Clock, systemClock } from "../util/clock.js";
import type { WorkKey } from "./key.js";
import type { WorkQueue } from "./work-queue.js";

export type Requeue =
  | { kind: "done" } // forget(key)
  | { kind: "after"; ms: number } // forget(key), then addAfter(key, ms)
  | { kind: "backoff"; error: unknown }; // addRateLimited(key)

export type WorkHandler = (key: WorkKey) => Promise<Requeue>;

/** The part of WorkQueue the runner uses; tests may pass a spy. */
export type WorkerQueue = Pick<WorkQueue, "get" | "done" | "forget" | "addAfter" | "addRateLimited">;

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
 * Starts `concurrency` workers on `queue`. They run until stop() or until the queue shuts
 * down. The queue guarantees a key is never handled by two workers at once.
 */
export function runWorkers(queue: WorkerQueue, options: WorkerPoolOptions): WorkerPool {
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  }
  const clock = options.clock ?? systemClock;
  const stopping = new AbortController();
  // Every idle worker waits in queue.get() with a listener on this one signal.
  setMaxListeners(concurrency, stopping.signal);
  let inFlight = 0;

  const reportError = (key: WorkKey, error: unknown): void => {
    try {
      options.onError?.(key, error);
    } catch {
      // An error reporter that throws has nowhere left to report to; the worker must go on.
    }
  };

  const processOne = async (key: WorkKey): Promise<void> => {
    const startMs = clock.now();
    let outcome: Requeue;
    try {
      outcome = await runHandler(options.handler, key);
    } catch (error) {
      outcome = { kind: "backoff", error };
      reportError(key, error);
    }
    try {
      applyRequeue(queue, key, outcome);
    } finally {
      queue.done(key);
    }
    try {
      options.onProcessed?.(key, outcome, clock.now() - startMs);
    } catch (error) {
      reportError(key, error);
    }
  };

  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get(stopping.signal);
      if (key === undefined) return;
      inFlight++;
      try {
        await processOne(key);
      } catch (error) {
        reportError(key, error); // a queue call threw; keep the worker alive
      } finally {
        inFlight--;
      }
    }
  };

  const workers = Array.from({ length: concurrency }, () => worker());
  const finished = Promise.all(workers).then(() => undefined);

  return {
    get inFlight() {
      return inFlight;
    },
    stop() {
      stopping.abort();
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

/** The handler's outcome; a malformed one (a JS caller, a missing return) throws so the key backs off. */
async function runHandler(handler: WorkHandler, key: WorkKey): Promise<Requeue> {
  const result: unknown = await handler(key);
  if (isRequeue(result)) return result;
  throw new TypeError(`handler returned no Requeue: ${String(result)}`);
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
