import { expect, test } from "@jest/globals";
import type { Clock } from "./backoff.js";
import { DEFAULT_SILENCE_MS, HubSilence, MISSED_HUB_HEARTBEATS } from "./hub-silence.js";

/** Timers fire only when advance() passes them. */
class ManualClock implements Clock {
  t = 0;
  private timers = new Map<number, { due: number; fn: () => void }>();
  private seq = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { due: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers.delete(h as number);
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.timers].sort((a, b) => a[1].due - b[1].due)[0];
      if (next === undefined || next[1].due > end) break;
      this.timers.delete(next[0]);
      this.t = next[1].due;
      next[1].fn();
    }
    this.t = end;
  }
}

function silence() {
  const clock = new ManualClock();
  const silent: number[] = [];
  return { clock, silent, s: new HubSilence((ms) => silent.push(ms), clock) };
}

test("a welcomed stream on which the hub says nothing for three of its intervals is dead; each message moves the deadline", () => {
  const { clock, silent, s } = silence();
  s.start();
  s.welcomed(1000);
  clock.advance(2500);
  s.heard();
  clock.advance(2999);
  expect(silent).toEqual([]);
  clock.advance(1);
  expect(silent).toEqual([MISSED_HUB_HEARTBEATS * 1000]);
});

test("the Welcome is awaited for the last known deadline; before any Welcome, DEFAULT_SILENCE_MS", () => {
  const { clock, silent, s } = silence();
  s.start();
  clock.advance(DEFAULT_SILENCE_MS - 1);
  expect(silent).toEqual([]);
  clock.advance(1);
  expect(silent).toEqual([DEFAULT_SILENCE_MS]);
  // A new stream after a hub said 500 ms: a frozen hub that accepts the connection and never
  // answers the Hello is left after 1.5 s.
  s.start();
  s.welcomed(500);
  s.stop();
  silent.length = 0;
  s.start();
  clock.advance(1499);
  expect(silent).toEqual([]);
  clock.advance(1);
  expect(silent).toEqual([1500]);
});

test("a hub that announces no interval (older than the field) gets no deadline once welcomed; stop() ends the deadline", () => {
  const { clock, silent, s } = silence();
  s.start();
  s.welcomed(0);
  clock.advance(10 * DEFAULT_SILENCE_MS);
  expect(silent).toEqual([]);
  s.start();
  s.welcomed(1000);
  s.stop();
  clock.advance(10_000);
  expect(silent).toEqual([]);
});
