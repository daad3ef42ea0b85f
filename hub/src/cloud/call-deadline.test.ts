import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "../util/clock.js";
import { CallDeadline, type CallEnd, endedBy } from "./call-deadline.js";

function watch(clock: FakeClock, signals: readonly (AbortSignal | undefined)[]) {
  const ends: [CallEnd, Error][] = [];
  const deadline = new CallDeadline(clock, 1_000, signals, (end, reason) => ends.push([end, reason]));
  return { deadline, ends };
}

describe("CallDeadline", () => {
  test("the timeout ends the call once, with a TimeoutError naming the time", () => {
    const clock = new FakeClock();
    const { deadline, ends } = watch(clock, [new AbortController().signal]);
    clock.advance(999);
    expect(ends).toEqual([]);
    clock.advance(1);
    expect(ends.map(([end, reason]) => [end, reason.name, reason.message])).toEqual([
      ["timeout", "TimeoutError", "no answer within 1000 ms"],
    ]);
    expect(endedBy(deadline)).toEqual({ timedOut: true, aborted: false });
    deadline.dispose();
  });

  test("any caller's signal ends it with that signal's reason; the timeout after it changes nothing", () => {
    const clock = new FakeClock();
    const shutdown = new AbortController();
    const caller = new AbortController();
    const { deadline, ends } = watch(clock, [shutdown.signal, undefined, caller.signal]);
    const why = new Error("service deleted");
    caller.abort(why);
    shutdown.abort();
    clock.advance(5_000);
    expect(ends).toEqual([["aborted", why]]);
    expect(endedBy(deadline)).toEqual({ timedOut: false, aborted: true });
    deadline.dispose();
  });

  test("a signal aborted before the call ends it at once; a reason that is no Error becomes an AbortError", () => {
    const clock = new FakeClock();
    const gone = new AbortController();
    gone.abort("bye");
    const { deadline, ends } = watch(clock, [gone.signal]);
    expect(ends.map(([end, reason]) => [end, reason.name])).toEqual([["aborted", "AbortError"]]);
    deadline.dispose();
  });

  test("disposed: neither the timer nor the signals end it any more, and nothing is left behind", () => {
    const clock = new FakeClock();
    const shutdown = new AbortController();
    const { deadline, ends } = watch(clock, [shutdown.signal]);
    deadline.dispose();
    expect(clock.pendingTimers()).toBe(0);
    shutdown.abort();
    clock.advance(5_000);
    expect(ends).toEqual([]);
    expect(deadline.ended).toBeUndefined();
  });
});
