/** What replicas share besides leases: an account's rate limit, and a cluster's deletion budget. */
import { describe, expect, test } from "@jest/globals";
import { DeletionBudget } from "../reconcilers/node-lifecycle/safety.js";
import { FakeClock } from "../util/clock.js";
import { TokenBucket } from "../util/rate-limiter.js";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("a replica's share of an account's rate limit", () => {
  test("setRate: a third of the rate and burst serves a third of the calls, waiters re-timed", async () => {
    const clock = new FakeClock();
    const limiter = new TokenBucket({ ratePerSecond: 30, burst: 30, clock });
    limiter.setRate(10, 10);
    let granted = 0;
    for (let i = 0; i < 40; i++) void limiter.take().then(() => granted++);
    await flush();
    expect(granted).toBe(10);
    clock.advance(1000);
    await flush();
    expect(granted).toBe(20);
    // The share grows back (another replica's clusters moved here): the waiters speed up.
    limiter.setRate(30, 30);
    clock.advance(500);
    await flush();
    expect(granted).toBe(35);
  });
});

describe("the blast-radius budget across a takeover", () => {
  const policy = {
    deleteAfterChecks: 3,
    deleteAfterMs: 60_000,
    blastRadius: { maxPercent: 10, maxNodes: 2, windowMs: 600_000 },
  };

  test("deletions recorded in the lease by the previous owner count against the new owner's budget", () => {
    const clock = new FakeClock();
    const recorded = [clock.now() - 1000, clock.now() - 500];
    const budget = new DeletionBudget(clock, () => recorded);
    expect(budget.used("c", policy)).toBe(2);
    expect(budget.tryConsume("c", 10, policy)).toBe(false);
    // Out of the window: the budget is whole again.
    clock.advance(600_000);
    expect(budget.tryConsume("c", 10, policy)).toBe(true);
  });

  test("without a lease record (one hub) the budget is this process's alone, as before", () => {
    const clock = new FakeClock();
    const budget = new DeletionBudget(clock);
    expect(budget.tryConsume("c", 10, policy)).toBe(true);
    expect(budget.tryConsume("c", 10, policy)).toBe(true);
    expect(budget.tryConsume("c", 10, policy)).toBe(false);
  });
});
