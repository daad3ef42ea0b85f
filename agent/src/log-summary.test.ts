import { expect, test } from "@jest/globals";
import { pino } from "pino";
import type { Clock } from "./backoff.js";
import { FailureSummary } from "./log-summary.js";

test("first failure at once, then one summary per period, nothing while quiet", () => {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return t;
    },
    clearTimeout: (h) => {
      timers.splice(timers.indexOf(h as (typeof timers)[number]), 1);
    },
  };
  const advance = (ms: number) => {
    const end = now + ms;
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      const t = timers[0];
      if (t === undefined || t.at > end) break;
      timers.shift();
      now = t.at;
      t.fn();
    }
    now = end;
  };
  const lines: { msg: string; [k: string]: unknown }[] = [];
  const logger = pino({}, { write: (s: string) => lines.push(JSON.parse(s)) });
  const s = new FailureSummary(logger, "patch not applied", clock, 30_000);
  for (let i = 0; i < 100; i++) {
    s.failed(`node/n${i % 7}`, { status: 503 });
    advance(250);
  }
  // 25 s of failures: one line; the summary comes at 30 s.
  expect(lines).toHaveLength(1);
  advance(5_000);
  expect(lines).toHaveLength(2);
  expect(lines[1]).toMatchObject({ failures: 99, objects: 7, status: 503 });
  expect(lines[1]?.msg).toBe("patch not applied (99 times in the last 30 s)");
  advance(120_000);
  expect(lines).toHaveLength(2);
  s.failed("node/n1", { status: 500 });
  expect(lines).toHaveLength(3);
  s.stop();
  expect(timers).toHaveLength(0);
});
