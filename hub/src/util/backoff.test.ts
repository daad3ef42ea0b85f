import { describe, expect, test } from "@jest/globals";
import { backoffDelayMs, ExponentialBackoff } from "./backoff.js";

const services = { initialMs: 1_000, maxMs: 300_000 };

describe("backoff - backoffDelayMs", () => {
  test("doubles from initialMs and caps at maxMs", () => {
    const delays = Array.from({ length: 11 }, (_, attempt) => backoffDelayMs(attempt, services));
    expect(delays).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000,
    ]);
  });

  test("uses the given factor", () => {
    const grpc = { initialMs: 1_000, maxMs: 120_000, factor: 1.6 };
    expect(backoffDelayMs(1, grpc)).toBeCloseTo(1_600);
    expect(backoffDelayMs(2, grpc)).toBeCloseTo(2_560);
    expect(backoffDelayMs(20, grpc)).toBe(120_000);
  });

  test("stays at maxMs for huge attempts instead of overflowing", () => {
    expect(backoffDelayMs(5_000, services)).toBe(300_000);
    expect(backoffDelayMs(Number.MAX_SAFE_INTEGER, services)).toBe(300_000);
  });

  test("treats negative and fractional attempts as the floor, at least 0", () => {
    expect(backoffDelayMs(-3, services)).toBe(1_000);
    expect(backoffDelayMs(1.9, services)).toBe(2_000);
  });

  test("initialMs 0 means no delay", () => {
    expect(backoffDelayMs(5_000, { initialMs: 0, maxMs: 10 })).toBe(0);
  });

  test("jitter spreads ±fraction around the delay, using the injected random", () => {
    const at = (random: number) => backoffDelayMs(2, { ...services, jitter: 0.2, random: () => random });
    expect(at(0)).toBeCloseTo(3_200);
    expect(at(0.5)).toBeCloseTo(4_000);
    expect(at(0.999_999)).toBeCloseTo(4_800, 0);
  });

  test("jitter never pushes a delay past maxMs", () => {
    const delayMs = backoffDelayMs(20, { ...services, jitter: 0.5, random: () => 0.99 });
    expect(delayMs).toBe(300_000);
    expect(backoffDelayMs(20, { ...services, jitter: 0.5, random: () => 0 })).toBe(150_000);
  });

  test.each([
    ["negative initialMs", { initialMs: -1, maxMs: 10 }],
    ["maxMs below initialMs", { initialMs: 10, maxMs: 5 }],
    ["infinite maxMs", { initialMs: 1, maxMs: Number.POSITIVE_INFINITY }],
    ["factor below 1", { initialMs: 1, maxMs: 10, factor: 0.5 }],
    ["jitter above 1", { initialMs: 1, maxMs: 10, jitter: 1.5 }],
    ["NaN jitter", { initialMs: 1, maxMs: 10, jitter: Number.NaN }],
  ])("rejects %s", (_name, options) => {
    expect(() => backoffDelayMs(0, options)).toThrow(RangeError);
    expect(() => new ExponentialBackoff(options)).toThrow(RangeError);
  });
});

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
    expect(backoff.next("k")).toBeCloseTo(900);
    expect(backoff.next("k")).toBeCloseTo(2_200);
    expect(backoff.next("k")).toBeCloseTo(4_000);
  });
});
