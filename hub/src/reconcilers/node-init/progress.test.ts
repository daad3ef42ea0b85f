import { describe, expect, test } from "@jest/globals";
import { NodeInitProgress } from "./progress.js";

const HORIZON = 60_000;

describe("NodeInitProgress", () => {
  test("a cluster moves now while a publication awaits its report, then as of its last publication", () => {
    const p = new NodeInitProgress();
    expect(p.movedAtMs("c1", 1_000, HORIZON)).toBeUndefined();
    p.published("c1", "a", 1_000);
    p.published("c1", "b", 2_000);
    expect(p.movedAtMs("c1", 30_000, HORIZON)).toBe(30_000);
    p.settled("c1", "a");
    expect(p.movedAtMs("c1", 31_000, HORIZON)).toBe(31_000);
    p.settled("c1", "b");
    expect(p.movedAtMs("c1", 32_000, HORIZON)).toBe(2_000);
    // Another cluster is its own.
    expect(p.movedAtMs("c2", 32_000, HORIZON)).toBeUndefined();
  });

  test("a report that never comes counts only until the horizon after the cluster's latest publication", () => {
    const p = new NodeInitProgress();
    p.published("c1", "stuck", 1_000);
    expect(p.movedAtMs("c1", 1_000 + HORIZON - 1, HORIZON)).toBe(1_000 + HORIZON - 1);
    expect(p.movedAtMs("c1", 1_000 + HORIZON, HORIZON)).toBe(1_000);
  });

  test("a released cluster is forgotten", () => {
    const p = new NodeInitProgress();
    p.published("c1", "a", 1_000);
    p.forget("c1");
    expect(p.movedAtMs("c1", 2_000, HORIZON)).toBeUndefined();
  });
});
