import { describe, expect, test } from "@jest/globals";
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

describe("progress-aware deadlines", () => {
  test("a missed deadline waits while the agent is alive and has not been past the publication for a deadline", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const older = t.record("c1/node-init/a", "ua");
    t.record("c1/node-init/b", "ub");
    clock.advance(900);
    t.reported("c1", older.generation); // busy with older publications
    clock.advance(200);
    expect(t.pending("c1/node-init/b", "ub")?.deadlineMs).toBe(clock.now() + 1000);
    // Quiet for a whole deadline: publish again.
    clock.advance(1000);
    expect(t.pending("c1/node-init/b", "ub")).toBeUndefined();
  });

  test("past the publication for a whole deadline and still not seen: lost, publish again", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const mine = t.record("c2/node-init/b", "ub");
    clock.advance(900);
    t.reported("c2", mine.generation + 1); // just past it: its applies run concurrently
    clock.advance(200);
    expect(t.pending("c2/node-init/b", "ub")).toBeDefined();
    clock.advance(500);
    t.reported("c2", mine.generation + 2);
    clock.advance(501); // the extended deadline has passed, and the agent was past it 1201 ms ago
    expect(t.pending("c2/node-init/b", "ub")).toBeUndefined();
  });

  test("a forced publication is never extended; a fresh stream counts as alive for one deadline", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    t.record("c1/node-init/b", "ub");
    t.restartProgress("c1");
    t.expire("c1/node-init/b");
    expect(t.pending("c1/node-init/b", "ub")).toBeUndefined();
    const fresh = t.record("c4/node-init/y", "uy");
    clock.advance(500);
    t.restartProgress("c4");
    clock.advance(501);
    expect(t.pending("c4/node-init/y", "uy")).toBeDefined();
    clock.advance(1000);
    expect(t.pending("c4/node-init/y", "uy")).toBeUndefined();
    expect(fresh.attempts).toBe(1);
    // An agent never heard from, or forgotten: the deadline holds.
    t.record("c3/node-init/x", "ux");
    t.record("c4/node-init/z", "uz");
    t.forgetProgress("c4");
    clock.advance(1001);
    expect(t.pending("c3/node-init/x", "ux")).toBeUndefined();
    expect(t.pending("c4/node-init/z", "uz")).toBeUndefined();
  });

  test("however busy the agent, five minutes after publication it is published again", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const patient = t.record("c1/node-init/d", "ud");
    let extended = 0;
    for (let i = 0; i < 400; i++) {
      clock.advance(900);
      t.reported("c1", patient.generation - 1);
      if (t.pending("c1/node-init/d", "ud") !== undefined) extended++;
    }
    expect(extended).toBeGreaterThan(300);
    expect(t.pending("c1/node-init/d", "ud")).toBeUndefined();
  });
});
