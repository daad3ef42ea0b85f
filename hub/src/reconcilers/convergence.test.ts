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
  test("a missed deadline waits while the publication is queued in the agent (received, not yet applied)", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const older = t.record("c1/node-init/a", "ua");
    const mine = t.record("c1/node-init/b", "ub");
    t.received("c1", mine.generation);
    clock.advance(900);
    t.reported("c1", older.generation); // busy with older publications
    clock.advance(200);
    expect(t.pending("c1/node-init/b", "ub")?.deadlineMs).toBe(clock.now() + 1000);
    clock.advance(5000);
    expect(t.pending("c1/node-init/b", "ub")).toBeDefined(); // still queued, still extended
  });

  test("a publication the agent never received is published again at its deadline", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const before = t.record("c1/node-init/a", "ua");
    t.record("c1/node-init/b", "ub");
    t.received("c1", before.generation); // the agent got the earlier one only
    clock.advance(1001);
    expect(t.pending("c1/node-init/b", "ub")).toBeUndefined();
    // Another cluster's receipts say nothing about this one.
    t.record("c2/node-init/x", "ux");
    t.received("c1", 10_000);
    clock.advance(1001);
    expect(t.pending("c2/node-init/x", "ux")).toBeUndefined();
  });

  test("not received: waits while the agent has not read its hub stream past the publication, lost once it has", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    t.received("c1", 0, clock.now() - 10); // the agent read an Ack from before the publication
    const late = t.record("c1/node-init/a", "ua");
    clock.advance(1001);
    // A busy agent: its last word predates the publication, so nothing says it was lost.
    expect(t.pending("c1/node-init/a", "ua")?.deadlineMs).toBe(clock.now() + 1000);
    // It read an Ack sent just after the publication: within the margin for the NATS hop.
    t.received("c1", 0, late.publishedAtMs + 100);
    clock.advance(1001);
    expect(t.pending("c1/node-init/a", "ua")).toBeDefined();
    // It read an Ack sent well after the publication and still has not received it: lost.
    t.received("c1", 0, late.publishedAtMs + 300);
    clock.advance(1001);
    expect(t.pending("c1/node-init/a", "ua")).toBeUndefined();
    expect(t.record("c1/node-init/a", "ua").attempts).toBe(2);
    // Received after all (a later generation, in order): waits in the agent's queue.
    const queued = t.record("c1/node-init/b", "ub");
    t.received("c1", queued.generation, clock.now() + 5000);
    clock.advance(1001);
    expect(t.pending("c1/node-init/b", "ub")).toBeDefined();
  });

  test("not received and the agent's last echo too old to tell: its agent is asked for an echo, once per deadline check", () => {
    const clock = new FakeClock();
    const asked: string[] = [];
    const t = new ConvergenceTracker(clock, 1000, Math.random, (c) => asked.push(c));
    t.received("c/1", 0, clock.now() - 10);
    const p = t.record("c%2F1/node-init/a", "ua");
    t.received("c2", 0, clock.now() - 10);
    const q = t.record("c2/node-init/b", "ub");
    expect(t.pending("c%2F1/node-init/a", "ua")).toBeDefined(); // before the deadline: nothing asked
    expect(asked).toEqual([]);
    clock.advance(1001);
    expect(t.pending("c%2F1/node-init/a", "ua")).toBeDefined();
    expect(asked).toEqual(["c/1"]);
    // Received (it waits in the agent's queue) or already known lost: nothing to ask.
    t.received("c2", q.generation);
    expect(t.pending("c2/node-init/b", "ub")).toBeDefined();
    t.received("c/1", 0, p.publishedAtMs + 500);
    clock.advance(1001);
    expect(t.pending("c%2F1/node-init/a", "ua")).toBeUndefined();
    expect(asked).toEqual(["c/1"]);
  });

  test("an agent that never says which Ack it read: a publication not received is published again, as before", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const mine = t.record("c1/node-init/a", "ua");
    t.received("c1", mine.generation - 1);
    clock.advance(1001);
    expect(t.pending("c1/node-init/a", "ua")).toBeUndefined();
    // A new stream forgets what the old one had read.
    t.received("c2", 0, clock.now() - 10);
    t.restartProgress("c2");
    t.record("c2/node-init/b", "ub");
    clock.advance(1001);
    expect(t.pending("c2/node-init/b", "ub")).toBeUndefined();
  });

  test("past the publication for a whole deadline and still not seen: published again", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const mine = t.record("c2/node-init/b", "ub");
    t.received("c2", mine.generation + 5);
    clock.advance(900);
    t.reported("c2", mine.generation + 1); // just past it: its applies run concurrently
    clock.advance(200);
    expect(t.pending("c2/node-init/b", "ub")).toBeDefined();
    clock.advance(500);
    t.reported("c2", mine.generation + 2);
    clock.advance(501); // the extended deadline has passed, and the agent was past it 1201 ms ago
    expect(t.pending("c2/node-init/b", "ub")).toBeUndefined();
  });

  test("forced publications, new streams and forgotten agents are never extended", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const forced = t.record("c1/node-init/b", "ub");
    t.received("c1", forced.generation);
    t.expire("c1/node-init/b");
    expect(t.pending("c1/node-init/b", "ub")).toBeUndefined();
    const a = t.record("c3/node-init/x", "ux");
    t.received("c3", a.generation);
    t.restartProgress("c3"); // a new stream: what the old one received may be lost
    const b = t.record("c4/node-init/z", "uz");
    t.received("c4", b.generation);
    t.forgetProgress("c4");
    clock.advance(1001);
    expect(t.pending("c3/node-init/x", "ux")).toBeUndefined();
    expect(t.pending("c4/node-init/z", "uz")).toBeUndefined();
  });

  test("however long the agent's queue, five minutes after publication it is published again", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 1000);
    const patient = t.record("c1/node-init/d", "ud");
    t.received("c1", patient.generation);
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

describe("failed applies", () => {
  test("republished after a per-object backoff that grows with the attempts, never extended", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 5000, () => 0);
    const delays: number[] = [];
    for (let i = 0; i < 7; i++) {
      const e = t.record("c1/node-init/a", "ua");
      t.received("c1", e.generation);
      const d = t.failedApply("c1/node-init/a", e.generation, 503) ?? -1;
      delays.push(d);
      clock.advance(d - 1);
      expect(t.pending("c1/node-init/a", "ua")).toBeDefined();
      clock.advance(1);
      // Received by the agent, yet due: a failure is not "queued in the agent".
      expect(t.pending("c1/node-init/a", "ua")).toBeUndefined();
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    // Another generation's failure changes nothing.
    expect(t.failedApply("c1/node-init/a", 12345, 503)).toBeUndefined();
  });

  test("an applied patch in the cluster makes its transient failures due at once, once per desired state", () => {
    const clock = new FakeClock();
    const t = new ConvergenceTracker(clock, 5000, () => 0);
    const a = t.record("c1/node-init/a", "ua");
    const b = t.record("c1/node-init/b", "ub");
    const other = t.record("c2/node-init/x", "ux");
    t.failedApply("c1/node-init/a", a.generation, 500);
    t.failedApply("c1/node-init/b", b.generation, 422); // the object's own problem
    t.failedApply("c2/node-init/x", other.generation, 0);
    expect(t.recovered("c1")).toEqual(["c1/node-init/a"]);
    expect(t.pending("c1/node-init/a", "ua")).toBeUndefined();
    expect(t.pending("c1/node-init/b", "ub")).toBeDefined();
    expect(t.pending("c2/node-init/x", "ux")).toBeDefined();
    // Fails again: follows its own backoff now, however many others apply.
    const again = t.record("c1/node-init/a", "ua");
    t.failedApply("c1/node-init/a", again.generation, 500);
    expect(t.recovered("c1")).toEqual([]);
    expect(t.pending("c1/node-init/a", "ua")).toBeDefined();
    // A cleared key is not made due.
    t.clear("c2/node-init/x");
    expect(t.recovered("c2")).toEqual([]);
  });
});
