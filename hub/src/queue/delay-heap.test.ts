import { describe, expect, test } from "@jest/globals";
import { DelayHeap } from "./delay-heap.js";

function drain(heap: DelayHeap<string>, nowMs = Number.POSITIVE_INFINITY): string[] {
  const out: string[] = [];
  for (let entry = heap.popDue(nowMs); entry; entry = heap.popDue(nowMs)) out.push(entry.id);
  return out;
}

describe("delay-heap - DelayHeap", () => {
  test("pops in due order, ties in scheduling order, only once due", () => {
    const heap = new DelayHeap<string>();
    heap.scheduleEarliest("c", "c", 30);
    heap.scheduleEarliest("a", "a", 10);
    heap.scheduleEarliest("b1", "b1", 20);
    heap.scheduleEarliest("b2", "b2", 20);
    expect(heap.popDue(9)).toBeUndefined();
    expect(drain(heap, 20)).toEqual(["a", "b1", "b2"]);
    expect(heap.peek()?.id).toBe("c");
  });

  test("an earlier due time replaces a later one, never the reverse", () => {
    const heap = new DelayHeap<string>();
    expect(heap.scheduleEarliest("k", "k", 100)).toBe(true);
    expect(heap.scheduleEarliest("k", "k", 200)).toBe(false);
    expect(heap.get("k")?.dueMs).toBe(100);
    expect(heap.scheduleEarliest("k", "k", 50)).toBe(true);
    expect(heap.size).toBe(1);
    expect(heap.popDue(50)?.id).toBe("k");
  });

  test("remove and removeWhere keep the heap ordered", () => {
    const heap = new DelayHeap<string>();
    const dues = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1_000);
    for (const [i, dueMs] of dues.entries())
      heap.scheduleEarliest(`k${i}`, i % 3 === 0 ? "drop" : "keep", dueMs);
    for (let i = 1; i < 500; i += 10) heap.remove(`k${i}`);
    const dropped = dues.filter((_, i) => i % 3 === 0 && (i - 1) % 10 !== 0).length;
    expect(heap.removeWhere((value) => value === "drop")).toBe(dropped);
    const expected = dues
      .map((dueMs, i) => ({ dueMs, i }))
      .filter(({ i }) => i % 3 !== 0 && (i - 1) % 10 !== 0)
      .sort((a, b) => a.dueMs - b.dueMs || a.i - b.i)
      .map(({ i }) => `k${i}`);
    expect(drain(heap)).toEqual(expected);
    expect(heap.remove("k1")).toBeUndefined();
  });
});
