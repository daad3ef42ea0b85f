import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../util/clock.js";
import { MAX_RETRY_AFTER_MS, parseRetryAfterMs } from "./retry-after.js";

describe("Retry-After", () => {
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));

  test("delta-seconds", () => {
    expect(parseRetryAfterMs("3", clock.now())).toBe(3_000);
    expect(parseRetryAfterMs(" 0 ", clock.now())).toBe(0);
  });

  test("an HTTP date in each of its three forms, relative to the injected clock", () => {
    const now = clock.now();
    expect(parseRetryAfterMs(new Date(now + 5_000).toUTCString(), now)).toBe(5_000);
    expect(parseRetryAfterMs("Thursday, 01-Jan-26 00:00:09 GMT", now)).toBe(9_000);
    expect(parseRetryAfterMs("Thu Jan  1 00:00:30 2026", now)).toBe(30_000);
    // The same header read later on the same clock asks for less.
    clock.advance(2_000);
    expect(parseRetryAfterMs(new Date(now + 5_000).toUTCString(), clock.now())).toBe(3_000);
  });

  test("the past and negative seconds are 0; absurd delays are cut to the maximum", () => {
    const now = clock.now();
    expect(parseRetryAfterMs(new Date(now - 5_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfterMs("-4", now)).toBe(0);
    expect(parseRetryAfterMs("999999999999", now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfterMs(new Date(now + 400 * 86_400_000).toUTCString(), now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfterMs("120", now, 60_000)).toBe(60_000);
  });

  test("absent or unreadable is undefined", () => {
    for (const bad of [undefined, null, "", "soon", "3.5", "1e3", "Mon, 99 Foo 2026 00:00:00 GMT"])
      expect(parseRetryAfterMs(bad, clock.now())).toBeUndefined();
  });
});
