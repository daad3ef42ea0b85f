// Small helpers shared by the benchmark modules: time, statistics, /proc, taskset, ss, Prometheus text.

import { type ChildProcess, execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { waitFor } from "@fleet-ccm/sim";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `intervalMs` (100 by default here) until it returns true or `timeoutMs` passes. */
export function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 100,
): Promise<boolean> {
  return waitFor(check, timeoutMs, intervalMs);
}

/** Until `count` (a cumulative counter: cloud calls) has not moved for `quietMs`, or `timeoutMs` passes. */
export function untilQuiet(
  count: () => number,
  quietMs: number,
  timeoutMs: number,
  intervalMs = 100,
): Promise<boolean> {
  let last = count();
  let lastChange = Date.now();
  return until(
    () => {
      const now = count();
      if (now !== last) {
        last = now;
        lastChange = Date.now();
      }
      return Date.now() - lastChange >= quietMs;
    },
    timeoutMs,
    intervalMs,
  );
}

/** Nearest-rank percentile (p in [0, 100]) of unsorted values; null when there are none. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] ?? null;
}

export function round(v: number | null, digits = 0): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** Seeded PRNG (mulberry32): churn and chaos pick the same objects on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** SIGTERM (a hub stops gracefully and writes its profile), SIGKILL after `graceMs`. */
export async function terminate(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(graceMs)]);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
    await exited;
  }
}

// ---- /proc -------------------------------------------------------------------------------------

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every mainstream kernel). */
export const CLK_TCK = 100;

/** utime + stime of a live process, in seconds; null once it is gone. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after "(comm)": state is field 3, utime field 14, stime field 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / CLK_TCK;
  } catch {
    return null;
  }
}

/** A number from `/proc/PID/status` (the kB of memory fields as given), or null. */
function statusNumber(pid: number, field: string): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = new RegExp(`^${field}:\\s+(\\d+)( kB)?$`, "m").exec(status);
    return m?.[1] === undefined ? null : Number(m[1]);
  } catch {
    return null;
  }
}

const statusBytes = (pid: number, field: string): number | null => {
  const kb = statusNumber(pid, field);
  return kb === null ? null : kb * 1024;
};

/** Peak resident set size (VmHWM) of a live process, in bytes. */
export const peakRssBytes = (pid: number): number | null => statusBytes(pid, "VmHWM");
/** Current resident set size (VmRSS), in bytes. */
export const rssBytes = (pid: number): number | null => statusBytes(pid, "VmRSS");

/**
 * Times the process's main thread went to sleep and was woken (voluntary context switches: for
 * a Node.js process, its event loop waiting in epoll and woken by a timer or a socket). On a
 * virtual machine a wake-up after a sleep is not free (caches and TLB cold, the vCPU rescheduled),
 * so an idle process's CPU follows its wake-ups as much as its work.
 */
export const mainThreadWakeups = (pid: number): number | null => statusNumber(pid, "voluntary_ctxt_switches");

// ---- CPU pinning -------------------------------------------------------------------------------

export interface Pinning {
  /** taskset prefix for the hub (empty when pinning is off). */
  readonly hubPrefix: readonly string[];
  readonly description: string;
}

/**
 * With taskset and at least two cores: this process (and so every child it spawns: the fleet
 * worker, nats-server, the separate agent) moves to core 1; the hub is started on core 0.
 */
export function pinCores(enabled: boolean): Pinning {
  const taskset = ["/usr/bin/taskset", "/bin/taskset"].find((p) => existsSync(p));
  if (!enabled) return { hubPrefix: [], description: "off (--no-pin)" };
  if (taskset === undefined) return { hubPrefix: [], description: "off (no taskset)" };
  if (cpus().length < 2) return { hubPrefix: [], description: "off (one core)" };
  const r = spawnSync(taskset, ["-pc", "1", String(process.pid)], { stdio: "ignore" });
  if (r.status !== 0) return { hubPrefix: [], description: "off (taskset failed)" };
  return {
    hubPrefix: [taskset, "-c", "0"],
    description: "hub on core 0; fleet, observer, cloud, NATS on core 1",
  };
}

/** Moves a running process (every thread of it) to the hub's core; nothing when pinning is off. */
export function pinProcess(pid: number | undefined, pinning: Pinning): void {
  const [taskset, , core] = pinning.hubPrefix;
  if (pid === undefined || taskset === undefined || core === undefined) return;
  spawnSync(taskset, ["-apc", core, String(pid)], { stdio: "ignore" });
}

// ---- TCP byte counters (ss) --------------------------------------------------------------------

/**
 * Bytes acknowledged on established TCP connections matching an ss filter, e.g.
 * `dport = :7443` (the agents' ends of their gRPC connections). Null without ss.
 * This is what really crossed the wire above TCP: HTTP/2 and gRPC framing included.
 */
export function tcpBytesAcked(filter: string): number | null {
  try {
    const out = execFileSync("ss", ["-tinH", "state", "established", filter], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    let total = 0;
    for (const m of out.matchAll(/bytes_acked:(\d+)/g)) total += Number(m[1]);
    return total;
  } catch {
    return null;
  }
}

// ---- Prometheus text ---------------------------------------------------------------------------

export interface Sample {
  readonly name: string;
  readonly labels: string;
  readonly value: number;
}

export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const brace = line.indexOf("{");
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const name = brace >= 0 && brace < space ? line.slice(0, brace) : line.slice(0, line.indexOf(" "));
    const labels = brace >= 0 && brace < space ? line.slice(brace + 1, line.lastIndexOf("}")) : "";
    const value = Number(line.slice(space + 1));
    if (Number.isFinite(value)) out.push({ name, labels, value });
  }
  return out;
}

/** Sum of every series of `name` whose label text contains each of `labelParts`. */
export function metricSum(samples: readonly Sample[], name: string, ...labelParts: string[]): number {
  let sum = 0;
  for (const s of samples)
    if (s.name === name && labelParts.every((p) => s.labels.includes(p))) sum += s.value;
  return sum;
}

/** How much metricSum grew between two scrapes. */
export function metricDelta(
  before: readonly Sample[],
  after: readonly Sample[],
  name: string,
  ...labelParts: string[]
): number {
  return metricSum(after, name, ...labelParts) - metricSum(before, name, ...labelParts);
}

/**
 * Quantile of a Prometheus histogram between two scrapes: the upper bound of the first bucket
 * whose count reaches q of the total (so it is coarse: as fine as the buckets).
 */
export function histogramQuantile(
  before: readonly Sample[],
  after: readonly Sample[],
  name: string,
  q: number,
): number | null {
  const buckets = new Map<string, number>();
  for (const s of after) if (s.name === `${name}_bucket`) buckets.set(s.labels, s.value);
  for (const s of before)
    if (s.name === `${name}_bucket` && buckets.has(s.labels))
      buckets.set(s.labels, (buckets.get(s.labels) ?? 0) - s.value);
  const rows = [...buckets.entries()]
    .map(([labels, count]) => {
      const le = /le="([^"]+)"/.exec(labels)?.[1] ?? "+Inf";
      return { le: le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le), count };
    })
    .sort((x, y) => x.le - y.le);
  const total = rows.at(-1)?.count ?? 0;
  if (total <= 0) return null;
  return rows.find((r) => r.count >= q * total)?.le ?? null;
}

export function hasMetric(samples: readonly Sample[], name: string): boolean {
  return samples.some((s) => s.name === name);
}

export async function httpText(url: string, timeoutMs = 5000): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.text();
}

/** What joinFleet needs of a LocalFleet (cli/src/local-fleet.ts). */
export interface JoiningFleet {
  readonly clusters: ReadonlyMap<string, unknown>;
  addNodes(cluster: string, n: number): void;
  addServices(cluster: string, n: number): void;
  progress(): { nodes: number; initialized: number };
  serviceProgress(): { services: number; withIngress: number };
}

/**
 * The join of the vendor scenarios: `nodes` Nodes and `services` LoadBalancer Services in every
 * cluster at once, then until every node is initialized and every Service has an ingress (or
 * the timeout). `joined` stays true from then on while nothing changes.
 */
export async function joinFleet(
  fleet: JoiningFleet,
  o: { readonly nodes: number; readonly services: number; readonly timeoutS: number },
): Promise<{ converged: boolean; joinMs: number; joined: () => boolean }> {
  const t0 = Date.now();
  for (const c of fleet.clusters.keys()) {
    fleet.addNodes(c, o.nodes);
    fleet.addServices(c, o.services);
  }
  const joined = () => {
    const p = fleet.progress();
    const s = fleet.serviceProgress();
    return p.initialized === p.nodes && s.withIngress === s.services;
  };
  const converged = await until(joined, o.timeoutS * 1000, 250);
  return { converged, joinMs: Date.now() - t0, joined };
}
