/** A clock for tests: time moves only when a test fires timers or advances it. */
import type { Clock } from "./backoff.js";

export class FakeClock implements Clock {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 1;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== h);
  }
  get scheduled(): number {
    return this.timers.length;
  }
  /** How long until the earliest timer is due (Infinity: none). */
  get nextInMs(): number {
    return Math.min(...this.timers.map((x) => x.at - this.t));
  }
  /** Runs the earliest timer, and the time moves to it. */
  fireNext(): void {
    this.timers.sort((a, b) => a.at - b.at);
    const next = this.timers.shift();
    if (next === undefined) throw new Error("no timer");
    this.t = next.at;
    next.fn();
  }
  /** Runs every timer due within `ms`, in order, and the time moves by `ms`. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (next === undefined || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
}
