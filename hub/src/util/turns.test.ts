import { expect, test } from "@jest/globals";
import { Turns } from "./turns.js";

test("waiters resume one per event-loop turn, in call order, with other work run between them", async () => {
  const turns = new Turns();
  const order: string[] = [];
  const waiters = [0, 1, 2].map(async (i) => {
    await turns.next();
    order.push(`w${i}`);
    // Queued while w0 runs: it runs before the last waiter, not after all of them.
    if (i === 0) setImmediate(() => order.push("other"));
  });
  await Promise.all(waiters);
  expect(order).toEqual(["w0", "w1", "other", "w2"]);
  // Reusable once drained.
  await turns.next();
});
