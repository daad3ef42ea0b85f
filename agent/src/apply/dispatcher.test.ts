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

test("a newer job replaces a waiting one of its slot only; other slots wait and run in order", async () => {
  const ran: string[] = [];
  const gates: (() => void)[] = [];
  const d = new KeyedDispatcher<string>(1, async (item) => {
    await new Promise<void>((r) => gates.push(r));
    ran.push(item);
  });
  d.submit("node/a", "init-1", "init");
  d.submit("node/a", "init-2", "init"); // waits behind init-1 (running)
  d.submit("node/a", "ipam-1", "ipam");
  d.submit("node/a", "route-1", "route");
  d.submit("node/a", "init-3", "init"); // replaces init-2 only
  d.submit("node/b", "init-b", "init");
  while (ran.length < 5) {
    await new Promise((r) => setImmediate(r));
    gates.shift()?.();
  }
  await d.idle();
  // One object at a time, so node/b comes once node/a's running job is done, before a's others.
  expect(ran).toEqual(["init-1", "init-b", "init-3", "ipam-1", "route-1"]);
});
