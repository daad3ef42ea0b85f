import { describe, expect, test } from "@jest/globals";
import { backoffDelayMs } from "./backoff.js";

// The one formula of hub and agent.

const services = { initialMs: 1_000, maxMs: 300_000 };

describe("proto backoff - backoffDelayMs", () => {
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

  test("jitter takes at most its fraction off the delay, using the injected random", () => {
    const at = (random: number) => backoffDelayMs(2, { ...services, jitter: 0.2, random: () => random });
    expect(at(0)).toBe(4_000);
    expect(at(0.5)).toBe(3_600);
    expect(at(0.999_999)).toBe(3_200);
  });

  test("jitter never pushes a delay past maxMs", () => {
    expect(backoffDelayMs(20, { ...services, jitter: 0.5, random: () => 0 })).toBe(300_000);
    expect(backoffDelayMs(20, { ...services, jitter: 0.5, random: () => 0.999_999 })).toBe(150_000);
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
  });
});
