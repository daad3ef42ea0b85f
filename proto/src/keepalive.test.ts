import { expect, test } from "@jest/globals";
import { AGENT_PING_INTERVAL_MS, keepaliveOptions, pingTimeoutMs } from "./keepalive.js";

test("a ping's timeout is 10 s, or one interval when that is shorter", () => {
  expect(pingTimeoutMs(AGENT_PING_INTERVAL_MS)).toBe(10_000);
  expect(AGENT_PING_INTERVAL_MS).toBe(60_000);
  expect(pingTimeoutMs(60_000)).toBe(10_000);
  expect(pingTimeoutMs(300)).toBe(300);
});

test("the options ping with and without calls in flight", () => {
  expect(keepaliveOptions(60_000)).toEqual({
    "grpc.keepalive_time_ms": 60_000,
    "grpc.keepalive_timeout_ms": 10_000,
    "grpc.keepalive_permit_without_calls": 1,
  });
});
