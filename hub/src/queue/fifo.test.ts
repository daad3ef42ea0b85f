import { describe, expect, test } from "@jest/globals";
import { Fifo } from "./fifo.js";

describe("fifo - Fifo", () => {
  test("returns items in push order, then undefined", () => {
    const fifo = new Fifo<number>();
    fifo.push(1);
    fifo.push(2);
    expect(fifo.peek()).toBe(1);
    expect([fifo.shift(), fifo.shift(), fifo.shift()]).toEqual([1, 2, undefined]);
    expect(fifo.length).toBe(0);
  });

  test("keeps order across compaction with interleaved push and shift", () => {
    const fifo = new Fifo<number>();
    const out: number[] = [];
    let next = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 300; i++) fifo.push(next++);
      for (let i = 0; i < 250; i++) out.push(fifo.shift()!);
    }
    expect(fifo.length).toBe(50 * 50);
    expect([...fifo]).toEqual(Array.from({ length: 2_500 }, (_, i) => 12_500 + i));
    for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) out.push(item);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
  });

  test("clear empties it", () => {
    const fifo = new Fifo<string>();
    fifo.push("a");
    fifo.clear();
    expect(fifo.length).toBe(0);
    expect(fifo.shift()).toBeUndefined();
  });
});
