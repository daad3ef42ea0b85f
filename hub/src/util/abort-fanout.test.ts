import { getEventListeners } from "node:events";
import { whenAborted } from "./abort-fanout.js";

describe("whenAborted", () => {
  test("many subscriptions hold one listener on the signal; abort calls those still subscribed, once", () => {
    const ac = new AbortController();
    const calls: number[] = [];
    const offs = Array.from({ length: 500 }, (_, i) => whenAborted(ac.signal, () => calls.push(i)));
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(1);
    for (let i = 0; i < 500; i += 2) offs[i]?.();
    ac.abort();
    ac.abort();
    expect(calls).toHaveLength(250);
    expect(calls.every((i) => i % 2 === 1)).toBe(true);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
  });

  test("the same function subscribed twice is called twice; unsubscribing one leaves the other", () => {
    const ac = new AbortController();
    let n = 0;
    const fn = () => n++;
    const off = whenAborted(ac.signal, fn);
    whenAborted(ac.signal, fn);
    off();
    ac.abort();
    expect(n).toBe(1);
  });

  test("an aborted signal calls at once and holds nothing", () => {
    const signal = AbortSignal.abort();
    let n = 0;
    const off = whenAborted(signal, () => n++);
    expect(n).toBe(1);
    off();
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  test("signals are independent", () => {
    const a = new AbortController();
    const b = new AbortController();
    const seen: string[] = [];
    whenAborted(a.signal, () => seen.push("a"));
    whenAborted(b.signal, () => seen.push("b"));
    b.abort();
    expect(seen).toEqual(["b"]);
    a.abort();
    expect(seen).toEqual(["b", "a"]);
  });
});
