import { describe, expect, test } from "@jest/globals";
import { ExponentialBackoff } from "./backoff.js";

const services = { initialMs: 1_000, maxMs: 300_000 };

describe("backoff - ExponentialBackoff", () => {
  test("grows per key, independently, and counts failures", () => {
    const backoff = new ExponentialBackoff(services);
    expect([backoff.next("a"), backoff.next("a"), backoff.next("a")]).toEqual([1_000, 2_000, 4_000]);
    expect(backoff.next("b")).toBe(1_000);
    expect(backoff.failures("a")).toBe(3);
    expect(backoff.failures("b")).toBe(1);
    expect(backoff.failures("never")).toBe(0);
  });

  test("caps at maxMs (client-go controller default: 5 ms to 1000 s)", () => {
    const backoff = new ExponentialBackoff({ initialMs: 5, maxMs: 1_000_000 });
    const delays = Array.from({ length: 25 }, () => backoff.next("k"));
    expect(delays[0]).toBe(5);
    expect(delays[17]).toBe(5 * 2 ** 17);
    expect(delays[18]).toBe(1_000_000);
    expect(delays[24]).toBe(1_000_000);
  });

  test("forget starts the key over; forgetIf drops matching keys", () => {
    const backoff = new ExponentialBackoff(services);
    backoff.next("c1/x");
    backoff.next("c1/x");
    backoff.next("c1/y");
    backoff.next("c2/x");
    backoff.forget("c1/x");
    expect(backoff.failures("c1/x")).toBe(0);
    expect(backoff.next("c1/x")).toBe(1_000);
    backoff.forgetIf((key) => key.startsWith("c1/"));
    expect(backoff.size).toBe(1);
    expect(backoff.failures("c2/x")).toBe(1);
  });

  test("applies jitter on every next()", () => {
    const randoms = [0, 1 - Number.EPSILON, 0.5];
    const backoff = new ExponentialBackoff({
      ...services,
      jitter: 0.1,
      random: () => randoms.shift() ?? 0.5,
    });
    expect(backoff.next("k")).toBe(1_000);
    expect(backoff.next("k")).toBe(1_800);
    expect(backoff.next("k")).toBe(3_800);
  });

  test("refuses bad options up front", () => {
    expect(() => new ExponentialBackoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});
