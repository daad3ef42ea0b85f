import { expect, test } from "@jest/globals";
import { FakeClock } from "../util/clock.js";
import { LogThrottle } from "./log-throttle.js";

test("one line per key and second; the next one counts what was left out", () => {
  const clock = new FakeClock();
  const t = new LogThrottle(clock, 1000);
  expect(t.take("a/token")).toBe(0);
  for (let i = 0; i < 500; i++) expect(t.take("a/token")).toBeUndefined();
  expect(t.take("b/token")).toBe(0);
  clock.advance(1000);
  expect(t.take("a/token")).toBe(500);
  expect(t.take("a/token")).toBeUndefined();
  clock.advance(5000);
  expect(t.take("a/token")).toBe(1);
});
