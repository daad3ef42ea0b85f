// ARM's budgets as the provider keeps them: reads, writes and deletes apart, each lowered by
// what ARM's headers say is left; against the fake with ARM's buckets enforced, a burst of
// calls through the SDK waits for tokens instead of meeting 429s.
import { AzureFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../../util/clock.js";
import type { RateBudget } from "../../provider.js";
import { ArmBudget, kindOf } from "./arm-budget.js";
import { bindToFake } from "./azure.testkit.js";
import { ARM_LIMITS } from "./quotas.js";

const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name] });
/** Whether `p` settled after the clock's timers ran. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("the provider's budgets", () => {
  test("requests spend the budget of their kind: writes used up leave reads free", async () => {
    const clock = new FakeClock();
    const budget = new ArmBudget({ clock });
    expect([kindOf("GET"), kindOf("PUT"), kindOf("PATCH"), kindOf("DELETE")]).toEqual([
      "reads",
      "writes",
      "writes",
      "deletes",
    ]);
    for (let i = 0; i < ARM_LIMITS.writes.bucket; i++) await budget.take("PUT");
    const write = budget.take("PUT");
    expect(await settled(write)).toBe(false);
    expect(await settled(budget.take("GET"))).toBe(true);
    expect(await settled(budget.take("DELETE"))).toBe(true);
    // Writes refill at 10 a second.
    clock.advance(1000 / ARM_LIMITS.writes.perSecond);
    expect(await settled(write)).toBe(true);
  });

  test("ARM's remaining counts lower the buckets, and their sum reaches the hub's limiter", async () => {
    const clock = new FakeClock();
    const seen: RateBudget[] = [];
    const budget = new ArmBudget({ clock, rateBudget: (b) => seen.push(b) });
    budget.observe(
      headers({
        "x-ms-ratelimit-remaining-subscription-reads": "0",
        "x-ms-ratelimit-remaining-subscription-writes": "7",
        "x-ms-ratelimit-remaining-subscription-deletes": "200",
      }),
    );
    expect(seen).toEqual([{ remaining: 207, nextFreeAtMs: clock.now() }]);
    // Reads refill at 25 a second: the next in 40 ms.
    const read = budget.take("GET");
    expect(await settled(read)).toBe(false);
    expect(await settled(budget.take("PUT"))).toBe(true);
    clock.advance(39);
    expect(await settled(read)).toBe(false);
    clock.advance(1);
    expect(await settled(read)).toBe(true);
    // An answer without the headers changes nothing.
    budget.observe(headers({}));
    expect(seen).toHaveLength(1);
  });
});

describe("against ARM's enforced buckets", () => {
  const SUB = "00000000-0000-0000-0000-0000000000bb";
  const RG = "rg-budget";
  let fake: AzureFake;
  beforeAll(async () => {
    // A small read bucket so the test is short; ARM's own is 250 at 25 a second.
    fake = await AzureFake.start({
      armLimits: true,
      armBuckets: {
        reads: { size: 5, perSecond: 50 },
        writes: { size: 200, perSecond: 10 },
        deletes: { size: 200, perSecond: 10 },
      },
    });
    fake.createSubscription(SUB, "t", "app", "secret");
    fake.createResourceGroup(SUB, RG);
  });
  afterAll(() => fake.close());

  test("a burst of reads waits for what the headers say is left: no 429", async () => {
    const { provider } = await bindToFake(fake, { subscription: SUB, resourceGroup: RG });
    const started = Date.now();
    for (let i = 0; i < 20; i++) await provider.instances.listPage(undefined);
    // 20 reads from a bucket of 5 refilled at 50 a second: at least 15 / 50 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(fake.log.requests({ outcome: "429" })).toEqual([]);
    expect(fake.log.requests({ operation: "virtualMachines.list" }).length).toBe(20);
  });
});
