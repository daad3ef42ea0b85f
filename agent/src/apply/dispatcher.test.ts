import { expect, test } from "@jest/globals";
import { KeyedDispatcher } from "./dispatcher.js";

test("one job per key at a time, latest wins, bounded concurrency", async () => {
  const ran: string[] = [];
  let active = 0;
  let peak = 0;
  const gates: (() => void)[] = [];
  const d = new KeyedDispatcher<string>(2, async (item) => {
    active++;
    peak = Math.max(peak, active);
    await new Promise<void>((r) => gates.push(r));
    ran.push(item);
    active--;
  });
  d.submit("a", "a1");
  d.submit("b", "b1");
  d.submit("c", "c1");
  d.submit("a", "a2");
  d.submit("a", "a3"); // replaces a2 while a1 runs
  while (ran.length < 4) {
    await new Promise((r) => setImmediate(r));
    gates.shift()?.();
  }
  await d.idle();
  expect(ran).toEqual(["a1", "b1", "c1", "a3"]);
  expect(peak).toBe(2);
});
