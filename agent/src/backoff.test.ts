import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { Backoff, Retry } from "./backoff.js";
import { FakeClock } from "./fake-clock.testkit.js";

function capture(): { logger: pino.Logger; lines: { level: number; msg: string; [k: string]: unknown }[] } {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, lines };
}

describe("Backoff", () => {
  test("doubles to the cap; jitter takes at most its fraction off; reset starts over", () => {
    const noJitter = new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0 });
    expect(Array.from({ length: 6 }, () => noJitter.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(noJitter.failures).toBe(6);
    noJitter.reset();
    expect(noJitter.next()).toBe(100);

    const maxJitter = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0.5, random: () => 0.999999 });
    expect(Array.from({ length: 5 }, () => maxJitter.next())).toEqual([50, 100, 200, 400, 500]);
  });

  test("thousands of failures stay at the cap", () => {
    const b = new Backoff({ initialMs: 1, maxMs: 30_000, random: () => 0 });
    let last = 0;
    for (let i = 0; i < 5000; i++) last = b.next();
    expect(last).toBe(30_000);
  });

  test("refuses nonsense", () => {
    expect(() => new Backoff({ initialMs: 0, maxMs: 10 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});

describe("Retry", () => {
  test("first failure logged at once, then one summary per period, one recovery line", () => {
    const clock = new FakeClock();
    const { logger, lines } = capture();
    const r = new Retry({
      what: "initial list of nodes",
      logger,
      clock,
      backoff: { initialMs: 500, maxMs: 8_000, random: () => 0 },
      summaryEveryMs: 30_000,
      fields: { flag: "--kubeconfig" },
    });
    let tries = 0;
    const attempt = () => {
      tries++;
      if (clock.now() < 60_000) r.failed(new Error("HTTP 500"), attempt);
      else r.succeeded();
    };
    attempt();
    clock.advance(120_000);
    // 500, 1000, 2000, 4000, then 8000 each: tries until 60 s, then one success.
    expect(tries).toBe(1 + 4 + Math.ceil((60_000 - 7_500) / 8_000) + 0);
    expect(r.pending).toBe(false);
    const warns = lines.filter((l) => l.level === 40);
    expect(warns[0]).toMatchObject({
      msg: "initial list of nodes failed; retrying with backoff",
      err: "HTTP 500",
      flag: "--kubeconfig",
      retryInMs: 500,
    });
    // One summary per 30 s of failures, not one line per try.
    expect(warns.length).toBe(2);
    expect(warns[1]?.msg).toBe("initial list of nodes still failing; retrying with backoff");
    expect(warns[1]?.["failures"]).toBeGreaterThan(3);
    const infos = lines.filter((l) => l.level === 30);
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ msg: "initial list of nodes recovered" });
    expect(r.failures).toBe(0);
  });

  test("a new schedule replaces the pending one; cancel stops it", () => {
    const clock = new FakeClock();
    const { logger } = capture();
    const r = new Retry({
      what: "x",
      logger,
      clock,
      backoff: { initialMs: 100, maxMs: 100, random: () => 0 },
    });
    let ran = 0;
    r.failed("a", () => ran++);
    r.failed("b", () => ran++);
    expect(clock.scheduled).toBe(1);
    clock.advance(100);
    expect(ran).toBe(1);
    r.failed("c", () => ran++);
    r.cancel();
    clock.advance(1000);
    expect(ran).toBe(1);
  });
});
