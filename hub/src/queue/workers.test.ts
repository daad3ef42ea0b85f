import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "../util/clock.js";
import { keyOf, type WorkKey } from "./key.js";
import { WorkQueue } from "./work-queue.js";
import { type Requeue, runWorkers, type WorkerQueue, type WorkHandler } from "./workers.js";

const k = (cluster: string, name: string): WorkKey => ({ cluster, kind: "node-init", name });

/** Lets resolved promises and the worker loops run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup() {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock, backoff: { initialMs: 1_000, maxMs: 300_000 } });
  return { clock, queue };
}

/** A handler whose calls block until the test settles them, one Deferred per call. */
function gatedHandler() {
  const calls: { key: WorkKey; gate: Deferred<Requeue> }[] = [];
  const handler: WorkHandler = (key) => {
    const gate = deferred<Requeue>();
    calls.push({ key, gate });
    return gate.promise;
  };
  return { calls, handler };
}

/** Records the runner's queue calls in order, passing them on to a real queue. */
function spyQueue(queue: WorkQueue) {
  const calls: string[] = [];
  const spy: WorkerQueue = {
    get: (signal) => queue.get(signal),
    tryGet: () => queue.tryGet(),
    done: (key) => {
      calls.push(`done ${key.name}`);
      queue.done(key);
    },
    forget: (key) => {
      calls.push(`forget ${key.name}`);
      queue.forget(key);
    },
    addAfter: (key, ms) => {
      calls.push(`addAfter ${key.name} ${ms}`);
      queue.addAfter(key, ms);
    },
    addRateLimited: (key) => {
      calls.push(`addRateLimited ${key.name}`);
      queue.addRateLimited(key);
    },
  };
  return { calls, spy };
}

describe("workers - idle slots", () => {
  test("however high the concurrency, at most one get() waits, and every key is handled once", async () => {
    const { queue } = setup();
    let waitingGets = 0;
    let maxWaitingGets = 0;
    const counting: WorkerQueue = {
      get: (signal) => {
        waitingGets++;
        maxWaitingGets = Math.max(maxWaitingGets, waitingGets);
        return queue.get(signal).finally(() => {
          waitingGets--;
        });
      },
      tryGet: () => queue.tryGet(),
      done: (key) => queue.done(key),
      forget: (key) => queue.forget(key),
      addAfter: (key, ms) => queue.addAfter(key, ms),
      addRateLimited: (key) => queue.addRateLimited(key),
    };
    const handled = new Map<string, number>();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const pool = runWorkers(counting, {
      concurrency: 100_000,
      handler: async (key) => {
        handled.set(key.name, (handled.get(key.name) ?? 0) + 1);
        await gate;
        return { kind: "done" };
      },
    });
    for (let i = 0; i < 5000; i++) queue.add(k(`c${i % 7}`, `n${i}`));
    await flush();
    expect(pool.inFlight).toBe(5000);
    release();
    await flush();
    expect(pool.inFlight).toBe(0);
    for (let i = 0; i < 10; i++) queue.add(k("c1", `late${i}`));
    await flush();
    await pool.stop();
    expect(handled.size).toBe(5010);
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    expect(maxWaitingGets).toBe(1);
  });
});

describe("workers - outcome to queue", () => {
  test.each<[string, Requeue, string[]]>([
    ["done forgets", { kind: "done" }, ["forget n1", "done n1"]],
    [
      "after forgets then requeues after ms",
      { kind: "after", ms: 42_000 },
      ["forget n1", "addAfter n1 42000", "done n1"],
    ],
    ["backoff rate-limits", { kind: "backoff", error: new Error("x") }, ["addRateLimited n1", "done n1"]],
  ])("%s", async (_name, outcome, expected) => {
    const { queue } = setup();
    const { calls, spy } = spyQueue(queue);
    const pool = runWorkers(spy, { concurrency: 1, handler: async () => outcome });
    queue.add(k("c1", "n1"));
    await flush();
    await pool.stop();
    expect(calls).toEqual(expected);
  });

  test("after: the key comes back once the delay has passed", async () => {
    const { clock, queue } = setup();
    const runsMs: number[] = [];
    const pool = runWorkers(queue, {
      clock,
      handler: async () => {
        runsMs.push(clock.now());
        return runsMs.length < 3 ? { kind: "after", ms: 30_000 } : { kind: "done" };
      },
    });
    const startMs = clock.now();
    queue.add(k("c1", "n1"));
    for (let i = 0; i < 10; i++) {
      await flush();
      clock.advance(10_000);
    }
    await pool.stop();
    expect(runsMs.map((ms) => ms - startMs)).toEqual([0, 30_000, 60_000]);
  });

  test("backoff doubles per key until success, then starts over", async () => {
    const { clock, queue } = setup();
    const runsMs: number[] = [];
    let failuresLeft = 4;
    const pool = runWorkers(queue, {
      handler: async () => {
        runsMs.push(clock.now());
        return failuresLeft-- > 0 ? { kind: "backoff", error: new Error("cloud down") } : { kind: "done" };
      },
    });
    const startMs = clock.now();
    queue.add(k("c1", "n1"));
    for (let i = 0; i < 40; i++) {
      await flush();
      clock.advance(500);
    }
    const gaps = runsMs.slice(1).map((ms, i) => ms - runsMs[i]!);
    expect(runsMs[0]! - startMs).toBe(0);
    expect(gaps).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(queue.numRequeues(k("c1", "n1"))).toBe(0);
    await pool.stop();
  });

  test("a throwing handler backs off and reports to onError", async () => {
    const { queue } = setup();
    const errors: unknown[] = [];
    const boom = new Error("boom");
    const outcomes: Requeue[] = [];
    const pool = runWorkers(queue, {
      concurrency: 1,
      handler: async () => {
        throw boom;
      },
      onError: (_key, error) => errors.push(error),
      onProcessed: (_key, outcome) => outcomes.push(outcome),
    });
    queue.add(k("c1", "n1"));
    await flush();
    await pool.stop();
    expect(errors).toEqual([boom]);
    expect(outcomes).toEqual([{ kind: "backoff", error: boom }]);
    expect(queue.numRequeues(k("c1", "n1"))).toBe(1);
    expect(queue.waitingLen()).toBe(1);
  });

  test("a handler that throws before returning a promise backs off like a rejected one", async () => {
    const { queue } = setup();
    const errors: unknown[] = [];
    const boom = new Error("sync boom");
    const handler: WorkHandler = () => {
      throw boom;
    };
    const pool = runWorkers(queue, { handler, onError: (_key, error) => errors.push(error) });
    for (let i = 0; i < 2_000; i++) queue.add(k("c1", `n${i}`));
    await flush();
    await pool.stop();
    expect(errors).toHaveLength(2_000);
    expect(errors.every((e) => e === boom)).toBe(true);
    expect(queue.waitingLen()).toBe(2_000);
    expect(queue.processingLen()).toBe(0);
  });

  test("a queue call that throws is reported; the key is done and the pool goes on", async () => {
    const { queue } = setup();
    const { spy } = spyQueue(queue);
    const broken: WorkerQueue = {
      ...spy,
      addAfter: () => {
        throw new Error("addAfter broke");
      },
    };
    const errors: string[] = [];
    const processed: string[] = [];
    const pool = runWorkers(broken, {
      concurrency: 1,
      handler: async (key) => (key.name === "a" ? { kind: "after", ms: 10 } : { kind: "done" }),
      onError: (_key, error) => errors.push((error as Error).message),
      onProcessed: (key) => processed.push(key.name),
    });
    queue.add(k("c1", "a"));
    queue.add(k("c1", "b"));
    await flush();
    await pool.stop();
    expect(errors).toEqual(["addAfter broke"]);
    expect(processed).toEqual(["b"]);
    expect(queue.processingLen()).toBe(0);
  });

  test("a handler returning no Requeue backs off with a TypeError", async () => {
    const { queue } = setup();
    const errors: unknown[] = [];
    const handler = (async () => undefined) as unknown as WorkHandler;
    const pool = runWorkers(queue, { handler, onError: (_key, error) => errors.push(error) });
    queue.add(k("c1", "n1"));
    await flush();
    await pool.stop();
    expect(errors).toEqual([expect.any(TypeError)]);
    expect(queue.numRequeues(k("c1", "n1"))).toBe(1);
  });

  test("a returned backoff is not an onError; throwing hooks do not stop the worker", async () => {
    const { queue } = setup();
    const errors: unknown[] = [];
    let processed = 0;
    const pool = runWorkers(queue, {
      concurrency: 1,
      handler: async () => ({ kind: "backoff", error: new Error("expected") }),
      onProcessed: () => {
        processed++;
        throw new Error("metrics broke");
      },
      onError: (_key, error) => {
        errors.push(error);
        throw new Error("and so did logging");
      },
    });
    queue.add(k("c1", "a"));
    queue.add(k("c1", "b"));
    await flush();
    await pool.stop();
    expect(processed).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(["metrics broke", "metrics broke"]);
  });

  test("onProcessed gets the outcome and the handler's duration", async () => {
    const { clock, queue } = setup();
    const { calls, handler } = gatedHandler();
    const seen: [string, Requeue, number][] = [];
    const pool = runWorkers(queue, {
      clock,
      handler,
      onProcessed: (key, outcome, durationMs) => seen.push([key.name, outcome, durationMs]),
    });
    queue.add(k("c1", "n1"));
    await flush();
    clock.advance(250);
    calls[0]!.gate.resolve({ kind: "done" });
    await flush();
    await pool.stop();
    expect(seen).toEqual([["n1", { kind: "done" }, 250]]);
  });
});

describe("workers - concurrency and per-key serialization", () => {
  test("never runs the same key twice at once; a re-add during processing runs once after", async () => {
    const { queue } = setup();
    const { calls, handler } = gatedHandler();
    const pool = runWorkers(queue, { concurrency: 8, handler });
    queue.add(k("c1", "n1"));
    await flush();
    for (let i = 0; i < 5; i++) queue.add(k("c1", "n1"));
    await flush();
    expect(calls).toHaveLength(1); // seven idle workers, yet n1 waits for its running copy
    calls[0]!.gate.resolve({ kind: "done" });
    await flush();
    expect(calls).toHaveLength(2);
    calls[1]!.gate.resolve({ kind: "done" });
    await flush();
    expect(calls).toHaveLength(2);
    await pool.stop();
  });

  test("runs at most `concurrency` handlers, 16 by default", async () => {
    const { queue } = setup();
    const { calls, handler } = gatedHandler();
    const pool = runWorkers(queue, { handler });
    for (let i = 0; i < 40; i++) queue.add(k(`c${i % 4}`, `n${i}`));
    await flush();
    expect(calls).toHaveLength(16);
    expect(pool.inFlight).toBe(16);
    for (const call of calls.slice(0, 5)) call.gate.resolve({ kind: "done" });
    await flush();
    expect(calls).toHaveLength(21);
    expect(pool.inFlight).toBe(16);
    for (let settled = 5; settled < 40; settled++) {
      calls[settled]!.gate.resolve({ kind: "done" });
      await flush();
    }
    expect(pool.inFlight).toBe(0);
    expect(queue.len()).toBe(0);
    await pool.stop();
  });

  test("rejects a concurrency below 1", () => {
    const { queue } = setup();
    expect(() => runWorkers(queue, { concurrency: 0, handler: async () => ({ kind: "done" }) })).toThrow(
      RangeError,
    );
  });

  test("50,000 keys across 500 clusters are each processed exactly once", async () => {
    const { queue } = setup();
    const counts = new Map<string, number>();
    const total = 50_000;
    const allDone = deferred<void>();
    let processed = 0;
    const pool = runWorkers(queue, {
      handler: async (key) => {
        const id = keyOf(key);
        counts.set(id, (counts.get(id) ?? 0) + 1);
        return { kind: "done" };
      },
      onProcessed: () => {
        if (++processed === total) allDone.resolve();
      },
    });
    for (let i = 0; i < total; i++) queue.add(k(`cluster-${i % 500}`, `node-${i}`));
    await allDone.promise;
    await pool.stop();
    expect(counts.size).toBe(total);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(queue.len() + queue.processingLen() + queue.waitingLen()).toBe(0);
  });
});

describe("workers - stop", () => {
  test("stop() waits for in-flight handlers and applies their outcome", async () => {
    const { queue } = setup();
    const { calls, handler } = gatedHandler();
    const pool = runWorkers(queue, { concurrency: 2, handler });
    queue.add(k("c1", "a"));
    queue.add(k("c1", "b"));
    queue.add(k("c1", "c"));
    await flush();
    let stopped = false;
    const stopping = pool.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(false);
    calls[0]!.gate.resolve({ kind: "done" });
    calls[1]!.gate.reject(new Error("late failure"));
    await stopping;
    expect(calls.map((c) => c.key.name)).toEqual(["a", "b"]); // c was not started
    expect(queue.numRequeues(k("c1", "b"))).toBe(1);
    expect(queue.processingLen()).toBe(0);
    expect(queue.len()).toBe(1);
    await pool.stop(); // idempotent
  });

  test("workers end when the queue shuts down", async () => {
    const { queue } = setup();
    const pool = runWorkers(queue, { handler: async () => ({ kind: "done" }) });
    queue.shutDown();
    await pool.stop();
    expect(pool.inFlight).toBe(0);
  });
});
