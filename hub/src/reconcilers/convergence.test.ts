import { expect, test } from "@jest/globals";
import { FakeClock } from "../util/clock.js";
import { ConvergenceTracker } from "./convergence.js";

test("deadlines double per republication; an applied result extends the wait; expire forces a republish", () => {
  const clock = new FakeClock();
  const t = new ConvergenceTracker(clock, 1000);
  const first = t.record("k", "u1");
  expect(first.deadlineMs - clock.now()).toBe(1000);
  clock.advance(1000);
  expect(t.pending("k", "u1")).toBeUndefined();
  const second = t.record("k", "u1");
  expect(second.attempts).toBe(2);
  expect(second.deadlineMs - clock.now()).toBe(2000);
  t.applied("k", first.generation); // an old generation changes nothing
  expect(t.get("k")?.deadlineMs).toBe(second.deadlineMs);
  t.applied("k", second.generation);
  expect((t.get("k")?.deadlineMs ?? 0) - clock.now()).toBe(4000);
  t.expire("k");
  expect(t.pending("k", "u1")).toBeUndefined();
  expect(t.record("k", "u2").attempts).toBe(1);
});
