import { CallRates, RATE_WINDOW_MS, THROTTLE_WINDOW_MS } from "./call-rates.js";

describe("CallRates", () => {
  let nowMs = 1_000_000;
  const rates = () => new CallRates(() => nowMs);
  const advance = (ms: number) => {
    nowMs += ms;
  };

  test("an account without calls: nothing", () => {
    expect(rates().of("a")).toEqual({
      callsPerSecond: 0,
      throttledRecent: 0,
      throttledTotal: 0,
      lastThrottledMs: undefined,
    });
  });

  test("a steady 20 calls a second reads 20 a second, per account", () => {
    const r = rates();
    for (let s = 0; s < 30; s++) {
      for (let i = 0; i < 20; i++) {
        r.record("a", false);
        advance(50);
      }
      r.record("b", false);
    }
    expect(r.of("a").callsPerSecond).toBeCloseTo(20, 0);
    expect(r.of("b").callsPerSecond).toBeCloseTo(1, 0);
  });

  test("the rate covers the last 10 s only, and the first calls are no burst", () => {
    const r = rates();
    nowMs = 2_000_000;
    for (let i = 0; i < 5; i++) r.record("a", false);
    // Five calls in the first millisecond: five a second, not five thousand.
    expect(r.of("a").callsPerSecond).toBe(5);
    advance(RATE_WINDOW_MS + 1000);
    expect(r.of("a").callsPerSecond).toBe(0);
  });

  test("throttled answers: recent within the minute, total for ever, the last one's time", () => {
    const r = rates();
    nowMs = 3_000_000;
    r.record("a", true);
    advance(20_000);
    r.record("a", true);
    const last = nowMs;
    r.record("a", false);
    expect(r.of("a")).toMatchObject({ throttledRecent: 2, throttledTotal: 2, lastThrottledMs: last });
    advance(THROTTLE_WINDOW_MS - 20_000 + 1000);
    expect(r.of("a")).toMatchObject({ throttledRecent: 1, throttledTotal: 2, lastThrottledMs: last });
    advance(THROTTLE_WINDOW_MS);
    expect(r.of("a")).toMatchObject({ throttledRecent: 0, throttledTotal: 2, lastThrottledMs: last });
  });

  test("a slot is reused a minute later without counting the old second", () => {
    const r = rates();
    nowMs = 4_000_000;
    for (let i = 0; i < 100; i++) r.record("a", true);
    advance(THROTTLE_WINDOW_MS);
    r.record("a", false);
    expect(r.of("a").throttledRecent).toBe(0);
    expect(r.of("a").callsPerSecond).toBeLessThanOrEqual(1);
  });
});
