import { expect, test } from "@jest/globals";
import { FakeClock } from "./clock.js";
import { WindowBatch } from "./window-batch.js";

test("what arrives within one window is one batch; the next item opens a new window", async () => {
  const clock = new FakeClock();
  const batches: number[][] = [];
  const w = new WindowBatch<number>(clock, 10, async (items) => {
    batches.push(items);
  });
  w.add(1);
  clock.advance(5);
  w.add(2);
  expect(batches).toEqual([]);
  clock.advance(5);
  expect(batches).toEqual([[1, 2]]);
  w.add(3);
  clock.advance(9);
  expect(batches).toEqual([[1, 2]]);
  clock.advance(1);
  expect(batches).toEqual([[1, 2], [3]]);
});
