import { describe, expect, test } from "@jest/globals";
import { Counter, Histogram, Registry } from "prom-client";
import { LabelledCounter, LabelledHistogram } from "./labelled-metrics.js";

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];
const LABELS = ["controller", "outcome"] as const;

/** The same observations into prom-client's Histogram and ours, each in its own registry. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: "h_seconds",
    help: "Help text.",
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [theirs],
  });
  const fast = new LabelledHistogram({
    name: "h_seconds",
    help: "Help text.",
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [ours],
  });
  const observe = (controller: string, outcome: string, v: number) => {
    reference.observe({ controller, outcome }, v);
    fast.series(controller, outcome).observe(v);
  };
  return { theirs, ours, fast, observe };
}

describe("LabelledHistogram", () => {
  test("exposes exactly prom-client's lines for the same observations", async () => {
    const { theirs, ours, observe } = both();
    const values = [0, 0.0005, 0.001, 0.002, 0.05, 0.1, 0.7, 1, 3, 10, 11, 1e6];
    for (const v of values) observe("node-init", "done", v);
    observe("node-init", "after", 0.02);
    observe("service", "backoff", 2.5);
    observe("node-init", "done", 0.003);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // prom-client's JSON adds `exemplar: null` to each bucket; the rest is the same.
    const stripped = (await theirs.getMetricsAsJSON()).map((m) => ({
      ...m,
      values: m.values.map((v) => {
        const { exemplar: _, ...rest } = v as typeof v & { exemplar?: unknown };
        return rest;
      }),
    }));
    expect(await ours.getMetricsAsJSON()).toEqual(stripped);
  });

  test("label values that need escaping", async () => {
    const { theirs, ours, observe } = both();
    observe('a"b\\c', "x\ny", 0.5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  test("reset drops every series, as prom-client's does; a wrong number of values or a non-finite value throws", async () => {
    const { theirs, ours, fast, observe } = both();
    observe("a", "b", 1);
    fast.reset();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(() => fast.series("only-one")).toThrow(RangeError);
    expect(() => fast.series("a", "b").observe(Number.NaN)).toThrow(TypeError);
  });
});

describe("LabelledCounter", () => {
  test("renders exactly prom-client's lines and JSON for the same calls; reset and bad increments too", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const labelNames = ["provider", "account", "op", "outcome"] as const;
    const reference = new Counter({ name: "c_total", help: "Calls.", labelNames, registers: [theirs] });
    const fast = new LabelledCounter({ name: "c_total", help: "Calls.", labelNames, registers: [ours] });
    const inc = (provider: string, account: string, op: string, outcome: string, by?: number) => {
      reference.inc({ provider, account, op, outcome }, by);
      fast.series(provider, account, op, outcome).inc(by);
    };
    expect(await ours.metrics()).toBe(await theirs.metrics());
    inc("aws", "main", "ec2.DescribeInstances", "ok");
    inc("aws", "main", "ec2.DescribeInstances", "ok", 3);
    inc("aws", "other", "ec2.DescribeInstances", "throttled");
    inc("gcp", 'we"ird\\', "op\nline", "ok", 0.5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    fast.reset();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(() => fast.series("a", "b", "c", "d").inc(-1)).toThrow(TypeError);
    expect(() => fast.series("a")).toThrow(RangeError);
  });
});
