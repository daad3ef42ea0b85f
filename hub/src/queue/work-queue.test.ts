import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "../util/clock.js";
import { keyOf, type WorkKey } from "./key.js";
import { WorkQueue } from "./work-queue.js";

const k = (cluster: string, name: string, kind = "node-init"): WorkKey => ({ cluster, kind, name });

/** Lets resolved promises run their continuations. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(backoff = { initialMs: 1_000, maxMs: 8_000 }) {
  const clock = new FakeClock();
  return { clock, queue: new WorkQueue({ clock, backoff }) };
}

/** Takes every ready key (and marks it done), in the order the queue hands them out. */
function drainNames(queue: WorkQueue): string[] {
  const out: string[] = [];
  for (let key = queue.tryGet(); key; key = queue.tryGet()) {
    out.push(`${key.cluster}:${key.name}`);
    queue.done(key);
  }
  return out;
}

describe("work-queue - client-go semantics", () => {
  test("adding a queued key is a no-op", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    queue.add(k("c1", "n1"));
    queue.add({ ...k("c1", "n1") });
    expect(queue.len()).toBe(1);
    expect(drainNames(queue)).toEqual(["c1:n1"]);
  });

  test("keys differing in any field are distinct", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    queue.add(k("c2", "n1"));
    queue.add(k("c1", "n1", "service-lb"));
    expect(queue.len()).toBe(3);
  });

  test("stores its own copy of the key", () => {
    const { queue } = setup();
    const key = { cluster: "c1", kind: "node-init", name: "n1" };
    queue.add(key);
    key.name = "mutated";
    expect(queue.tryGet()).toEqual(k("c1", "n1"));
  });

  test("a key being processed is not handed out again until done", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    const first = queue.tryGet()!;
    queue.add(k("c1", "n1"));
    expect(queue.len()).toBe(0);
    expect(queue.tryGet()).toBeUndefined();
    expect(queue.processingLen()).toBe(1);
    queue.done(first);
    expect(queue.len()).toBe(1);
    expect(queue.tryGet()).toEqual(k("c1", "n1"));
  });

  test("several adds during processing give exactly one more run", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    const key = queue.tryGet()!;
    for (let i = 0; i < 5; i++) queue.add(k("c1", "n1"));
    queue.done(key);
    expect(drainNames(queue)).toEqual(["c1:n1"]);
  });

  test("done without an add while processing does not requeue; done twice is harmless", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    const key = queue.tryGet()!;
    queue.done(key);
    queue.done(key);
    expect(queue.len()).toBe(0);
    expect(queue.processingLen()).toBe(0);
  });

  test("concurrent get() calls never receive the same key", async () => {
    const { queue } = setup();
    const received: string[] = [];
    for (let i = 0; i < 5; i++) void queue.get().then((key) => received.push(key?.name ?? "none"));
    for (let i = 0; i < 3; i++) queue.add(k("c1", "same"));
    queue.add(k("c1", "other"));
    await flush();
    expect(received).toEqual(["same", "other"]); // three callers still wait
    expect(queue.processingLen()).toBe(2);
  });

  test("get() waits for an add; waiting callers are served in call order", async () => {
    const { queue } = setup();
    const order: string[] = [];
    void queue.get().then((key) => order.push(`first:${key?.name}`));
    void queue.get().then((key) => order.push(`second:${key?.name}`));
    await flush();
    expect(order).toEqual([]);
    queue.add(k("c1", "a"));
    queue.add(k("c1", "b"));
    await flush();
    expect(order).toEqual(["first:a", "second:b"]);
  });

  test("an aborted get() resolves undefined and does not swallow a key", async () => {
    const { queue } = setup();
    const controller = new AbortController();
    const aborted = queue.get(controller.signal);
    const live = queue.get();
    controller.abort();
    expect(await aborted).toBeUndefined();
    queue.add(k("c1", "a"));
    expect(await live).toEqual(k("c1", "a"));
    expect(await queue.get(AbortSignal.abort())).toBeUndefined();
  });
});

describe("work-queue - abort signals", () => {
  test("one signal over many get() calls: one listener, and its abort ends only its own gets", async () => {
    const { queue } = setup();
    const controller = new AbortController();
    const other = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    // Served one after the other, as a worker pool that goes idle again and again does.
    for (let i = 0; i < 100; i++) {
      const got = queue.get(controller.signal);
      queue.add(k("c1", `n${i}`));
      expect(await got).toEqual(k("c1", `n${i}`));
      queue.done(k("c1", `n${i}`));
    }
    expect(listeners).toBe(1);
    const mine = [queue.get(controller.signal), queue.get(controller.signal)];
    const theirs = queue.get(other.signal);
    controller.abort();
    expect(await Promise.all(mine)).toEqual([undefined, undefined]);
    queue.add(k("c1", "after"));
    expect(await theirs).toEqual(k("c1", "after"));
  });
});

describe("work-queue - addAfter", () => {
  test("a delayed key becomes ready at its due time, in due order", () => {
    const { clock, queue } = setup();
    queue.addAfter(k("c1", "late"), 3_000);
    queue.addAfter(k("c1", "early"), 1_000);
    queue.addAfter(k("c1", "mid-a"), 2_000);
    queue.addAfter(k("c1", "mid-b"), 2_000);
    expect(queue.waitingLen()).toBe(4);
    clock.advance(999);
    expect(queue.len()).toBe(0);
    clock.advance(1);
    expect(drainNames(queue)).toEqual(["c1:early"]);
    clock.advance(2_000);
    expect(drainNames(queue)).toEqual(["c1:mid-a", "c1:mid-b", "c1:late"]);
    expect(queue.waitingLen()).toBe(0);
  });

  test("the earlier of two addAfter calls wins", () => {
    const { clock, queue } = setup();
    queue.addAfter(k("c1", "n1"), 1_000);
    queue.addAfter(k("c1", "n1"), 5_000); // must not postpone
    expect(queue.waitingLen()).toBe(1);
    clock.advance(1_000);
    expect(drainNames(queue)).toEqual(["c1:n1"]);
    clock.advance(10_000);
    expect(drainNames(queue)).toEqual([]);

    queue.addAfter(k("c1", "n2"), 5_000);
    queue.addAfter(k("c1", "n2"), 1_000); // moves it earlier
    clock.advance(1_000);
    expect(drainNames(queue)).toEqual(["c1:n2"]);
    clock.advance(10_000);
    expect(drainNames(queue)).toEqual([]);
  });

  test("an immediate add of a waiting key makes it ready now, and only once", () => {
    const { clock, queue } = setup();
    queue.addAfter(k("c1", "n1"), 5_000);
    queue.add(k("c1", "n1"));
    expect(queue.waitingLen()).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
    expect(drainNames(queue)).toEqual(["c1:n1"]);
    clock.advance(10_000);
    expect(drainNames(queue)).toEqual([]);
  });

  test.each([0, -5, Number.NaN])("delayMs %p adds at once", (delayMs) => {
    const { queue } = setup();
    queue.addAfter(k("c1", "n1"), delayMs);
    expect(queue.len()).toBe(1);
  });

  test("a key due while processing runs again after done", () => {
    const { clock, queue } = setup();
    queue.add(k("c1", "n1"));
    const key = queue.tryGet()!;
    queue.addAfter(k("c1", "n1"), 100);
    clock.advance(100);
    expect(queue.len()).toBe(0);
    queue.done(key);
    expect(drainNames(queue)).toEqual(["c1:n1"]);
  });

  test("10,000 delayed keys share one timer", () => {
    const { clock, queue } = setup();
    for (let i = 0; i < 10_000; i++) queue.addAfter(k(`c${i % 50}`, `n${i}`), 1 + ((i * 7_919) % 60_000));
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(30_000);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(30_000);
    expect(queue.len()).toBe(10_000);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe("work-queue - addRateLimited", () => {
  /** Advances until the key is ready; returns how long that took. */
  function msUntilReady(clock: FakeClock, queue: WorkQueue): number {
    const startMs = clock.now();
    clock.advance(0);
    while (queue.len() === 0) clock.advance(1);
    return clock.now() - startMs;
  }

  test("backs off exponentially per key, caps, and forget starts over", () => {
    const { clock, queue } = setup({ initialMs: 1_000, maxMs: 8_000 });
    const key = k("c1", "n1");
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      queue.addRateLimited(key);
      delays.push(msUntilReady(clock, queue));
      queue.done(queue.tryGet()!);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    expect(queue.numRequeues(key)).toBe(6);

    queue.addRateLimited(k("c1", "other"));
    expect(msUntilReady(clock, queue)).toBe(1_000);
    queue.done(queue.tryGet()!);

    queue.forget(key);
    expect(queue.numRequeues(key)).toBe(0);
    queue.addRateLimited(key);
    expect(msUntilReady(clock, queue)).toBe(1_000);
  });

  test("defaults to client-go's 5 ms start", () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    queue.addRateLimited(k("c1", "n1"));
    clock.advance(4);
    expect(queue.len()).toBe(0);
    clock.advance(1);
    expect(queue.len()).toBe(1);
  });
});

describe("work-queue - fairness across clusters", () => {
  test("a cluster with 5,000 pending keys does not delay a cluster with one", () => {
    const { queue } = setup();
    for (let i = 0; i < 5_000; i++) queue.add(k("flood", `n${i}`));
    queue.add(k("quiet", "only"));
    const first = [queue.tryGet(), queue.tryGet()].map((key) => key?.cluster);
    expect(first).toEqual(["flood", "quiet"]);
  });

  test("clusters are served round-robin, one key each per round, FIFO within a cluster", () => {
    const { queue } = setup();
    for (let i = 0; i < 4; i++) queue.add(k("a", `a${i}`));
    queue.add(k("b", "b0"));
    queue.add(k("c", "c0"));
    queue.add(k("c", "c1"));
    expect(drainNames(queue)).toEqual(["a:a0", "b:b0", "c:c0", "a:a1", "c:c1", "a:a2", "a:a3"]);
  });

  test("a cluster that keeps flooding while served still lets each other cluster in once per round", () => {
    const { queue } = setup();
    const clusters = Array.from({ length: 10 }, (_, i) => `c${i}`);
    let flooded = 0;
    for (let i = 0; i < 1_000; i++) queue.add(k("flood", `f${flooded++}`));
    const servedAt = new Map<string, number>();
    for (let step = 0; step < 2_000; step++) {
      // Every step the flooder adds 10 more, and every 50 steps each quiet cluster gets one key.
      for (let i = 0; i < 10; i++) queue.add(k("flood", `f${flooded++}`));
      if (step % 50 === 0) for (const c of clusters) queue.add(k(c, `q${step}`));
      const key = queue.tryGet()!;
      queue.done(key);
      if (key.cluster !== "flood") servedAt.set(`${key.cluster}:${key.name}`, step);
    }
    // Each quiet key is served within one round (11 active clusters) of being added.
    for (let step = 0; step < 2_000; step += 50) {
      for (const c of clusters) {
        const served = servedAt.get(`${c}:q${step}`);
        expect(served).toBeDefined();
        expect(served! - step).toBeLessThanOrEqual(clusters.length);
      }
    }
  });

  test("pendingByCluster reports ready, waiting and processing per cluster", () => {
    const { clock, queue } = setup();
    queue.add(k("c1", "a"));
    queue.add(k("c1", "b"));
    queue.addAfter(k("c1", "later"), 1_000);
    queue.add(k("c2", "x"));
    const taken = queue.tryGet()!; // c1:a
    expect(Object.fromEntries(queue.pendingByCluster())).toEqual({
      c1: { ready: 1, waiting: 1, processing: 1 },
      c2: { ready: 1, waiting: 0, processing: 0 },
    });
    queue.done(taken);
    drainNames(queue);
    clock.advance(1_000);
    drainNames(queue);
    // Drained clusters stay listed with zeros, so a gauge series drops to 0 rather than vanishing.
    expect(Object.fromEntries(queue.pendingByCluster())).toEqual({
      c1: { ready: 0, waiting: 0, processing: 0 },
      c2: { ready: 0, waiting: 0, processing: 0 },
    });
  });
});

describe("work-queue - removeCluster", () => {
  test("drops queued and delayed keys and backoff of that cluster only", () => {
    const { clock, queue } = setup();
    for (let i = 0; i < 100; i++) queue.add(k("gone", `n${i}`));
    queue.addAfter(k("gone", "delayed"), 1_000);
    queue.addRateLimited(k("gone", "failing"));
    queue.add(k("kept", "n1"));
    queue.addAfter(k("kept", "delayed"), 1_000);
    queue.addRateLimited(k("kept", "failing"));

    queue.removeCluster("gone");

    expect(queue.len()).toBe(1);
    expect(clock.pendingTimers()).toBe(1);
    expect(queue.waitingLen()).toBe(2);
    expect(queue.numRequeues(k("gone", "failing"))).toBe(0);
    expect(queue.numRequeues(k("kept", "failing"))).toBe(1);
    expect([...queue.pendingByCluster().keys()]).toEqual(["kept"]);
    clock.advance(1_000);
    expect(drainNames(queue)).toEqual(["kept:n1", "kept:delayed", "kept:failing"]);
  });

  test("an in-flight key of a removed cluster finishes without requeue or retry", () => {
    const { clock, queue } = setup();
    queue.add(k("gone", "n1"));
    const key = queue.tryGet()!;
    queue.add(k("gone", "n1")); // would normally rerun after done
    queue.removeCluster("gone");
    queue.addRateLimited(key); // the worker's retry
    queue.addAfter(key, 10);
    queue.done(key);
    clock.advance(60_000);
    expect(queue.len()).toBe(0);
    expect(queue.waitingLen()).toBe(0);
    expect(queue.processingLen()).toBe(0);
  });

  test("a cluster re-added after removal is queued again, fresh adds included", () => {
    const { queue } = setup();
    queue.add(k("c1", "inflight"));
    const key = queue.tryGet()!;
    queue.removeCluster("c1");
    queue.add(k("c1", "inflight")); // the cluster came back: a fresh event counts
    queue.add(k("c1", "other"));
    expect(queue.len()).toBe(1);
    queue.done(key);
    expect(drainNames(queue)).toEqual(["c1:other", "c1:inflight"]);
    expect(Object.fromEntries(queue.pendingByCluster())).toEqual({
      c1: { ready: 0, waiting: 0, processing: 0 },
    });
  });

  test("removing the only cluster with delayed keys clears the timer", () => {
    const { clock, queue } = setup();
    queue.addAfter(k("gone", "n1"), 1_000);
    queue.removeCluster("gone");
    expect(clock.pendingTimers()).toBe(0);
  });

  test("removing an unknown cluster is harmless", () => {
    const { queue } = setup();
    queue.add(k("c1", "n1"));
    queue.removeCluster("nope");
    expect(queue.len()).toBe(1);
  });
});

describe("work-queue - shutDown", () => {
  test("releases waiting get() calls, drops pending keys, clears the timer and ignores adds", async () => {
    const { clock, queue } = setup();
    const waiting = queue.get();
    queue.addAfter(k("c1", "later"), 1_000);
    queue.add(k("c2", "n1"));
    const inFlight = await waiting;
    queue.add(k("c2", "n2"));
    queue.shutDown();
    expect(queue.isShutDown).toBe(true);
    expect(await queue.get()).toBeUndefined();
    expect(queue.tryGet()).toBeUndefined();
    expect(clock.pendingTimers()).toBe(0);
    queue.add(k("c1", "new"));
    queue.addAfter(k("c1", "new"), 10);
    queue.addRateLimited(k("c1", "new"));
    expect(queue.len() + queue.waitingLen()).toBe(0);
    queue.done(inFlight!);
    expect(queue.processingLen()).toBe(0);
    queue.shutDown(); // idempotent
  });

  test("a get() already waiting resolves undefined", async () => {
    const { queue } = setup();
    const pending = queue.get();
    queue.shutDown();
    expect(await pending).toBeUndefined();
  });
});

describe("work-queue - scale", () => {
  test("100,000 keys across 500 clusters go through add/get/done once each", () => {
    const { queue } = setup();
    for (let i = 0; i < 100_000; i++) queue.add(k(`c${i % 500}`, `n${i}`));
    for (let i = 0; i < 100_000; i += 3) queue.add(k(`c${i % 500}`, `n${i}`)); // duplicates
    expect(queue.len()).toBe(100_000);
    const seen = new Set<string>();
    for (let key = queue.tryGet(); key; key = queue.tryGet()) {
      seen.add(keyOf(key));
      queue.done(key);
    }
    expect(seen.size).toBe(100_000);
    expect(queue.len()).toBe(0);
  });
});
