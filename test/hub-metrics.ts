/**
 * Waits on the hub's own counters instead of the clock: "nothing happened" is asserted after the
 * hub has demonstrably done the work that would have made it happen (K more reconcile passes of
 * a controller, K more lifecycle checks), not after some milliseconds.
 */
import type { Hub } from "@fleet-ccm/hub";
import { waitFor } from "../cli/src/local-fleet.js";

/** An in-process hub, or a hub process by its HTTP port (/metrics). */
export type MetricsSource = Hub | { readonly httpPort: number };

/** One sample: labels and value. */
interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ""] = l[2] ?? "";
    out.push({ name: m[1] ?? "", labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape(source: MetricsSource): Promise<Sample[]> {
  if ("httpPort" in source) {
    // Bounded: a frozen process (SIGSTOP) accepts the connection and never answers.
    const res = await fetch(`http://127.0.0.1:${source.httpPort}/metrics`, {
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
    return parse(await res.text());
  }
  return parse(await source.metrics.registry.metrics());
}

/** The sum of a series' samples whose labels include `labels` (0 when none); a failed scrape throws. */
export async function metricSum(
  source: MetricsSource,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return (await scrape(source))
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * Waits until `name` (with `labels`) has grown by at least `n` from its value now. A pass in
 * flight at the call counts, so callers ask for one more than the passes they rely on.
 */
export async function waitForIncrease(
  source: MetricsSource,
  name: string,
  n: number,
  opts: { labels?: Record<string, string>; timeoutMs?: number } = {},
): Promise<boolean> {
  const base = await metricSum(source, name, opts.labels);
  // A failed scrape (a hub process busy or restarting) is a "not yet".
  const grown = async () => (await metricSum(source, name, opts.labels).catch(() => base)) >= base + n;
  return waitFor(grown, opts.timeoutMs ?? 20_000);
}

/**
 * Waits until the hub has finished `n` more reconcile passes of `controller` (a work-key kind:
 * "route", "node-lifecycle", …) than now.
 */
export function waitForReconciles(
  source: MetricsSource,
  controller: string,
  n: number,
  timeoutMs = 20_000,
): Promise<boolean> {
  return waitForIncrease(source, "fleet_ccm_reconcile_duration_seconds_count", n, {
    labels: { controller },
    timeoutMs,
  });
}
