import { setMaxListeners } from "node:events";
import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "./clock.js";
import { AbortError, TokenBucket } from "./rate-limiter.js";

/** Lets resolved promises run their continuations. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function bucket(ratePerSecond: number, burst: number) {
  const clock = new FakeClock();
  return { clock, limiter: new TokenBucket({ ratePerSecond, burst, clock }) };
}

describe("rate-limiter - TokenBucket", () => {
  test("starts full: burst tokens at once, then none", () => {
    const { limiter } = bucket(10, 3);
    expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  test("refills at ratePerSecond and never above burst", () => {
    const { clock, limiter } = bucket(10, 2);
    limiter.tryTake();
    limiter.tryTake();
    clock.advance(99);
    expect(limiter.tryTake()).toBe(false);
    clock.advance(1);
    expect(limiter.tryTake()).toBe(true);
    clock.advance(60_000);
    expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([true, true, false]);
  });

  test.each([0, -1, Number.POSITIVE_INFINITY])("ratePerSecond %p means unlimited", async (rate) => {
    const { clock, limiter } = bucket(rate, 1);
    expect(limiter.unlimited).toBe(true);
    for (let i = 0; i < 1_000; i++) expect(limiter.tryTake()).toBe(true);
    await limiter.take();
    expect(clock.pendingTimers()).toBe(0);
  });

  test("burst below 1 still lets one call through", () => {
    const { limiter } = bucket(1, 0);
    expect(limiter.tryTake()).toBe(true);
    expect(limiter.tryTake()).toBe(false);
  });

  test("take() resolves at once while tokens last, then waits for the refill", async () => {
    const { clock, limiter } = bucket(2, 1);
    await limiter.take();
    let granted = false;
    void limiter.take().then(() => {
      granted = true;
    });
    await flush();
    expect(granted).toBe(false);
    expect(limiter.waitingCount).toBe(1);
    clock.advance(499);
    await flush();
    expect(granted).toBe(false);
    clock.advance(1);
    await flush();
    expect(granted).toBe(true);
    expect(limiter.waitingCount).toBe(0);
  });

  test("serves waiters in call order, one per interval, with one timer", async () => {
    const { clock, limiter } = bucket(10, 1);
    limiter.tryTake();
    const order: number[] = [];
    for (let i = 0; i < 1_000; i++) void limiter.take().then(() => order.push(i));
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(100);
    await flush();
    expect(order).toEqual([0]);
    clock.advance(300);
    await flush();
    expect(order).toEqual([0, 1, 2, 3]);
    clock.advance(100_000);
    await flush();
    expect(order).toEqual(Array.from({ length: 1_000 }, (_, i) => i));
    expect(clock.pendingTimers()).toBe(0);
  });

  test("tryTake never jumps ahead of waiters", async () => {
    const { clock, limiter } = bucket(10, 1);
    limiter.tryTake();
    let waiterServed = false;
    void limiter.take().then(() => {
      waiterServed = true;
    });
    // A refilled token exists before the timer runs; it belongs to the waiter.
    expect(limiter.tryTake()).toBe(false);
    clock.advance(100);
    expect(limiter.tryTake()).toBe(false);
    await flush();
    expect(waiterServed).toBe(true);
  });

  test("never exceeds rate × T + burst over any window, with waiters and tryTake mixed", async () => {
    const ratePerSecond = 7;
    const burst = 5;
    const { clock, limiter } = bucket(ratePerSecond, burst);
    const grantsMs: number[] = [];
    const startMs = clock.now();
    for (let i = 0; i < 200; i++) void limiter.take().then(() => grantsMs.push(clock.now() - startMs));
    // Irregular steps so windows start and end between refills; tryTake competes throughout.
    let seed = 1;
    const random = () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    while (limiter.waitingCount > 0) {
      clock.advance(Math.floor(random() * 400));
      if (limiter.tryTake()) grantsMs.push(clock.now() - startMs);
      await flush();
    }
    for (let i = 0; i < 500; i++) {
      clock.advance(Math.floor(random() * 300));
      if (limiter.tryTake()) grantsMs.push(clock.now() - startMs);
    }
    grantsMs.sort((a, b) => a - b);
    expect(grantsMs.length).toBeGreaterThan(200);
    const violations: string[] = [];
    for (let i = 0; i < grantsMs.length; i++) {
      for (let j = i; j < grantsMs.length; j++) {
        const windowMs = grantsMs[j]! - grantsMs[i]!;
        if (j - i + 1 > (ratePerSecond * windowMs) / 1000 + burst) {
          violations.push(`${j - i + 1} grants in ${windowMs} ms`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  test("abort rejects with AbortError, frees the slot, and the next waiter is served on time", async () => {
    const { clock, limiter } = bucket(10, 1);
    limiter.tryTake();
    const controller = new AbortController();
    const first = limiter.take(controller.signal);
    let secondServedMs = 0;
    void limiter.take().then(() => {
      secondServedMs = clock.now();
    });
    expect(limiter.waitingCount).toBe(2);
    const startMs = clock.now();
    controller.abort(new Error("cluster removed"));
    await expect(first).rejects.toBeInstanceOf(AbortError);
    await first.catch((error: unknown) => {
      expect(error).toMatchObject({ name: "AbortError", code: "ABORT_ERR" });
      expect((error as Error).cause).toEqual(new Error("cluster removed"));
    });
    expect(limiter.waitingCount).toBe(1);
    clock.advance(100);
    await flush();
    expect(secondServedMs - startMs).toBe(100);
  });

  test("an already aborted signal rejects without waiting or taking a token", async () => {
    const { limiter } = bucket(10, 1);
    await expect(limiter.take(AbortSignal.abort())).rejects.toBeInstanceOf(AbortError);
    expect(limiter.tryTake()).toBe(true);
  });

  test("when every waiter aborts, the timer is cleared", async () => {
    const { clock, limiter } = bucket(1, 1);
    limiter.tryTake();
    const controller = new AbortController();
    setMaxListeners(200, controller.signal); // one signal shared by 100 waiters is intended here
    const waits = Array.from({ length: 100 }, () => limiter.take(controller.signal).catch(() => "aborted"));
    expect(clock.pendingTimers()).toBe(1);
    controller.abort();
    expect(await Promise.all(waits)).toEqual(Array(100).fill("aborted"));
    expect(limiter.waitingCount).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(1_000);
    expect(limiter.tryTake()).toBe(true);
  });

  test("a late abort after the grant changes nothing", async () => {
    const { limiter } = bucket(10, 1);
    const controller = new AbortController();
    await limiter.take(controller.signal);
    controller.abort();
    expect(limiter.waitingCount).toBe(0);
  });

  describe("observe: the vendor's own count of what is left", () => {
    test("never holds more tokens than the vendor says remain", () => {
      const { limiter } = bucket(10, 20);
      limiter.observe(2, 0);
      expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([true, true, false]);
    });

    test("never adds tokens: a vendor with more left than the bucket changes nothing", () => {
      const { limiter } = bucket(10, 2);
      limiter.tryTake();
      limiter.tryTake();
      limiter.observe(5_000, 0);
      expect(limiter.tryTake()).toBe(false);
    });

    test("with none left, no call before the vendor's next free call, then the bucket's own pace", async () => {
      const { clock, limiter } = bucket(10, 5);
      limiter.observe(0, clock.now() + 30_000);
      let granted = 0;
      for (let i = 0; i < 2; i++)
        void limiter.take().then(() => {
          granted++;
        });
      clock.advance(29_999);
      await flush();
      expect(granted).toBe(0);
      clock.advance(101);
      await flush();
      expect(granted).toBe(1);
      clock.advance(100);
      await flush();
      expect(granted).toBe(2);
    });

    test("a next free call hours away waits at most an hour", async () => {
      const { clock, limiter } = bucket(1, 1);
      limiter.observe(0, clock.now() + 10 * 3_600_000);
      let granted = false;
      void limiter.take().then(() => {
        granted = true;
      });
      clock.advance(3_600_000 + 1_000);
      await flush();
      expect(granted).toBe(true);
    });

    test("an unlimited bucket ignores it", () => {
      const { limiter } = bucket(0, 1);
      limiter.observe(0, Number.MAX_SAFE_INTEGER);
      expect(limiter.tryTake()).toBe(true);
    });
  });
});
