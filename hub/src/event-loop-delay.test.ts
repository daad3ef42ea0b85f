import { afterEach, expect, test } from "@jest/globals";
import { Registry } from "prom-client";
import { BusyLoopDelay, collectProcessMetrics } from "./event-loop-delay.js";
import { HubMetrics } from "./metrics.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Keeps the loop busy for `ms`: a stall. */
const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

const made: { stop(): void }[] = [];
afterEach(() => {
  for (const m of made.splice(0)) m.stop();
});

const FAST = { resolutionMs: 10, checkMs: 20, busyShare: 0.2, quietChecks: 3 };

function delay(): BusyLoopDelay {
  const d = new BusyLoopDelay(FAST);
  made.push(d);
  return d;
}

/** Waits until `cond` holds, checking every 5 ms, for at most `ms`. */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await sleep(5);
  return cond();
}

test("samples from the start, stops after its quiet checks, and starts again when the loop works", async () => {
  const d = delay();
  expect(d.sampling).toBe(true);
  // Three quiet checks of 20 ms each.
  expect(await until(() => !d.sampling, 2_000)).toBe(true);
  d.read();
  // Work in 15 ms steps, 200 ms at most: a check sees the loop busy.
  const end = performance.now() + 200;
  while (!d.sampling && performance.now() < end) {
    spin(15);
    await sleep(1);
  }
  expect(d.sampling).toBe(true);
});

test("an idle period reads as the resolution; a stall shows in the maximum even with sampling off", async () => {
  const d = delay();
  expect(await until(() => !d.sampling, 2_000)).toBe(true);
  d.read();
  await sleep(50);
  const idle = d.read();
  // Only the checks' samples: the resolution and their lateness.
  expect(idle.min).toBeCloseTo(0.01, 2);
  expect(idle.p99).toBeLessThan(0.1);
  // A 120 ms stall covers at least one 20 ms check, which fires that much late.
  spin(120);
  await sleep(5);
  const stalled = d.read();
  expect(stalled.max).toBeGreaterThan(0.08);
});

test("the time sampling was off is not taken for a delay when it starts again", async () => {
  const d = delay();
  expect(await until(() => !d.sampling, 2_000)).toBe(true);
  d.read();
  // Off for 300 ms, no read in between.
  await sleep(300);
  const end = performance.now() + 500;
  while (!d.sampling && performance.now() < end) {
    spin(15);
    await sleep(1);
  }
  expect(d.sampling).toBe(true);
  await sleep(40);
  // Node's monitorEventLoopDelay, enabled again, would record the 300 ms it was off.
  expect(d.read().max).toBeLessThan(0.2);
});

test("while sampling, the values are the histogram's: every sample at least the resolution", async () => {
  const d = delay();
  await sleep(60);
  const r = d.read();
  expect(r.min).toBeGreaterThanOrEqual(0.009);
  expect(r.max).toBeGreaterThanOrEqual(r.p99);
  expect(r.p99).toBeGreaterThanOrEqual(r.p50);
});

test("the registry serves prom-client's series names from it, once each", async () => {
  const registry = new Registry();
  made.push(collectProcessMetrics(registry, FAST));
  await sleep(30);
  const text = await registry.metrics();
  for (const s of ["min", "max", "mean", "stddev", "p50", "p90", "p99"])
    expect(text.match(new RegExp(`^nodejs_eventloop_lag_${s}_seconds \\d`, "gm"))).toHaveLength(1);
});

test("the hub's metrics keep every default process series, the event-loop ones from the busy-loop histogram", async () => {
  const m = new HubMetrics();
  made.push(m);
  const text = await m.registry.metrics();
  for (const name of [
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "nodejs_heap_size_used_bytes",
    "nodejs_gc_duration_seconds",
    "nodejs_eventloop_lag_seconds",
    "nodejs_eventloop_lag_max_seconds",
    "nodejs_eventloop_lag_p99_seconds",
  ])
    expect(text).toContain(`# TYPE ${name} `);
  // One series each: prom-client's own were replaced, not doubled.
  expect(text.match(/^nodejs_eventloop_lag_max_seconds /gm)).toHaveLength(1);
});
