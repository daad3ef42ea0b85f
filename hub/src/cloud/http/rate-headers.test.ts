// The vendors' RateLimit-* headers as a budget: what each vendor's Reset means, and what is
// ignored (absent or unreadable headers never slow anything down).
import { describe, expect, test } from "@jest/globals";
import { rateBudgetFrom } from "./rate-headers.js";

const NOW = 1_700_000_000_000;
const h = (limit: string | undefined, remaining: string | undefined, reset: string | undefined) => {
  const headers = new Headers();
  if (limit !== undefined) headers.set("RateLimit-Limit", limit);
  if (remaining !== undefined) headers.set("RateLimit-Remaining", remaining);
  if (reset !== undefined) headers.set("RateLimit-Reset", reset);
  return headers;
};
const inSeconds = (s: number) => String(NOW / 1000 + s);

describe("rateBudgetFrom", () => {
  test("calls left: free now, whatever Reset means", () => {
    for (const reset of ["next-free", "full"] as const)
      expect(rateBudgetFrom(h("5000", "4816", inSeconds(30)), NOW, reset)).toEqual({
        remaining: 4816,
        nextFreeAtMs: NOW,
      });
  });

  test("DigitalOcean, none left: the next call is free when the oldest request expires (Reset)", () => {
    expect(rateBudgetFrom(h("5000", "0", inSeconds(42)), NOW, "next-free")).toEqual({
      remaining: 0,
      nextFreeAtMs: NOW + 42_000,
    });
  });

  test("Hetzner, none left: the budget refills evenly to Limit by Reset, so one call is free after Reset/Limit", () => {
    // 3,600 an hour refilled one a second: empty now, full in an hour, the next call in a second.
    expect(rateBudgetFrom(h("3600", "0", inSeconds(3_600)), NOW, "full")).toEqual({
      remaining: 0,
      nextFreeAtMs: NOW + 1_000,
    });
  });

  test("a Reset already past frees the next call now", () => {
    expect(rateBudgetFrom(h("3600", "0", inSeconds(-5)), NOW, "full")?.nextFreeAtMs).toBe(NOW);
  });

  test.each([
    ["no headers", h(undefined, undefined, undefined)],
    ["no Reset", h("5000", "10", undefined)],
    ["a Remaining that is no integer", h("5000", "lots", inSeconds(1))],
    ["a negative Remaining", h("5000", "-1", inSeconds(1))],
    ["a Reset as a date", h("5000", "0", "Wed, 21 Oct 2015 07:28:00 GMT")],
  ])("%s: no budget", (_what, headers) => {
    expect(rateBudgetFrom(headers, NOW, "next-free")).toBeUndefined();
  });

  test("Hetzner without a usable Limit waits for Reset", () => {
    expect(rateBudgetFrom(h(undefined, "0", inSeconds(60)), NOW, "full")?.nextFreeAtMs).toBe(NOW + 60_000);
  });
});
