// fleet-ccm benchmarks: `npm run bench -- --scenario NAME --clusters N --nodes M [flags] --json`
// prints one JSON object on stdout. Progress goes to stderr. See bench/README.md.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runFailover } from "./failover.js";
import { type LinodeBenchOptions, runLinode } from "./linode.js";
import {
  type BenchOptions,
  type Result,
  runChaos,
  runChurn,
  runJoin,
  runRestart,
  runSteady,
  type ScenarioName,
} from "./scenarios.js";
import { pinCores } from "./util.js";
import { runVendor, VENDOR_DEFAULTS, VENDORS, type Vendor, type VendorBenchOptions } from "./vendors.js";

const USAGE = `usage: npm run bench -- --scenario join|steady|churn|chaos|restart|failover|linode|digitalocean|hetzner|gcp|openstack|azure [flags]

  --clusters N            simulated clusters (default 3; chaos 3)
  --nodes M               nodes per cluster (default 5; chaos 30)
  --services K            Services of type LoadBalancer per cluster (default 0)
  --cloud-latency-ms MS   latency of every simulated cloud call (default 50)
  --json                  print only the JSON object on stdout
  --timeout-s S           give up waiting for the join after S seconds (default 300)
  --probes N              join: after the storm, N more nodes join one at a time, 100 ms apart,
                          spread over the clusters (default 100; 0: none)
  --duration-s S          steady: measured window per phase (20); churn: churn window (30);
                          chaos: longest fault phase (120)
  --refresh-period-ms MS  steady: hub refresh.periodMs (default 2000)
  --idle-s S              steady: first a fresh hub at its default periods, idle for S seconds
                          (300: one refresh period): idleHubCpuPercent, idleHubCpuMsPerNodeHour;
                          with --baseline-hub-bin the same into that hub (default 0: none)
  --idle-only             steady: only that idle phase, not the two cache-scope phases
  --idle-settle-s S       steady --idle-s: after the fresh hub's resync, S seconds more before the
                          window, for the collections of the resync's garbage (default 120)
  --churn-rate R          churn: node joins, node leaves and Service changes per second (default 5)
  --workers N             hub reconcile.workers (default 65536, the hub's default, given explicitly so
                          that another tree's hub under --hub-bin runs with the same)
  --rate-limit R          the account's cloud calls per second in the hub (default 1000)
  --not-ready N           chaos: NotReady nodes per cluster whose instance keeps running (default 3)
  --gone N                chaos: NotReady nodes per cluster whose instance is terminated (default 1)
  --min-checks N          chaos: lifecycle checks to run at least (default 60)
  --monitor-period-ms MS  chaos: hub lifecycle.monitorPeriodMs (default 200)
  --delete-after-ms MS    chaos: hub lifecycle.deleteAfterMs (default 3000)
  --extra-instances N     chaos: unrelated instances in the account, so lists are paged (default 1200)
  --cpu-prof DIR          write a V8 CPU profile of the hub process into DIR (node --cpu-prof)
  --fleet-cpu-prof DIR    the same for the fleet worker process (API servers and agents)
  --hub-log-level L       hub log level (default warn); logs go to a file in the run directory
  --agent-log-level L     agents' log level (default warn)
  --seed N                picks of churn and chaos (default 1)
  --no-pin                do not pin the hub to core 0 and the rest to core 1
  --no-separate-agent     run every agent in the fleet process (no agentPeakRssBytes)
  --agent-node-options S  NODE_OPTIONS of the agent process (default: what deploy/agent sets)
  --hub-node-options S    NODE_OPTIONS of the hub process (default: what deploy/hub sets)
  --hub-node-args S       V8 flags on the hub's node command line, space-separated (those NODE_OPTIONS
                          refuses, e.g. --no-memory-reducer; default: what the hub image's ENTRYPOINT
                          gives node, today none)
  --hub-bin PATH          join, churn, chaos (and the first hub of steady, restart): this CLI (another tree's
                          bin/fleet-ccm.js) instead of this tree's; the bench, fleet and agents stay this tree's
  --baseline-hub-bin PATH restart, steady --idle-s: also restart into this hub CLI (another tree's bin/fleet-ccm.js)
  --baseline-hub-node-args S  steady --idle-s: that hub's V8 flags instead of --hub-node-args' (to
                          compare flags side by side, give this tree's bin/fleet-ccm.js as the baseline)
  --keep                  keep the run directory (configs, logs) and print its path

  linode: Linode API calls per hour, fleet-ccm (measured against the fake Linode API, one account)
  against as many Linode CCMs (modelled); --clusters (100), --nodes (50), --services (1),
  --duration-s (30: the measured window), --time-scale K (30: the hub's periods divided by K)

  digitalocean, hetzner, gcp: the same against the vendor's fake (one token / project) and as
  many vendor CCMs (modelled), against the vendor's published limit; then a hub restart.
  --clusters (100), --nodes (20), --services (1), --duration-s (30), --time-scale (30)
  openstack: the same per OpenStack service (Keystone, Nova, Neutron, Octavia; --nodes 50 by default)
  azure: the same with ARM's reads and writes apart (--nodes 50 by default), and a wave of Service
  changes (every Service's port at once) before the restart
  The vendor's fake runs in a process of its own (bench/cloud-worker.ts), the hub in another (core 0).
`;

/**
 * The hub and agent processes run with the runtime settings of the shipped manifests, as in
 * production: their literal NODE_OPTIONS and MALLOC_* environment variables.
 */
function deployedRuntimeEnv(role: "hub" | "agent"): Record<string, string> {
  const path = `deploy/${role}/deployment.yaml`;
  const manifest = readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
  const env: Record<string, string> = {};
  for (const m of manifest.matchAll(/- name: (NODE_OPTIONS|MALLOC_[A-Z_]+)\s+value: "?([^"\n]*)"?/g))
    if (m[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2].trim();
  if (env["NODE_OPTIONS"] === undefined) throw new Error(`${path} sets no NODE_OPTIONS`);
  return env;
}

function runtimeEnv(role: "hub" | "agent", nodeOptions: string | undefined): Record<string, string> {
  const env = deployedRuntimeEnv(role);
  return nodeOptions === undefined ? env : { ...env, NODE_OPTIONS: nodeOptions };
}

/** The V8 flags the hub image's ENTRYPOINT gives node (`["node", FLAGS…, SCRIPT]`), as in production. */
function deployedHubNodeArgs(): string[] {
  const path = "deploy/images/hub.Containerfile";
  const text = readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
  const line = text.split("\n").find((l) => l.startsWith("ENTRYPOINT "));
  const argv = JSON.parse(line?.slice("ENTRYPOINT ".length) ?? "[]") as string[];
  return argv[0] === "node" ? argv.slice(1).filter((a) => a.startsWith("--")) : [];
}

function nodeArgs(flags: string): string[] {
  return flags.split(" ").filter((a) => a !== "");
}

function num(v: string | undefined, name: string, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name}: expected a number >= ${min}, got "${v}"`);
  return n;
}

/** Set by parse for `--scenario linode`, which takes its own few options. */
let linodeRun: LinodeBenchOptions | undefined;
/** Set by parse for `--scenario digitalocean|hetzner|gcp|openstack|azure`. */
let vendorRun: Omit<VendorBenchOptions, "pinning" | "hubEnv"> | undefined;

function parse(argv: string[]): { opts: BenchOptions; json: boolean } {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      scenario: { type: "string" },
      clusters: { type: "string" },
      nodes: { type: "string" },
      services: { type: "string" },
      "cloud-latency-ms": { type: "string" },
      json: { type: "boolean" },
      "timeout-s": { type: "string" },
      probes: { type: "string" },
      "duration-s": { type: "string" },
      "refresh-period-ms": { type: "string" },
      "idle-s": { type: "string" },
      "idle-settle-s": { type: "string" },
      "idle-only": { type: "boolean" },
      "churn-rate": { type: "string" },
      workers: { type: "string" },
      "rate-limit": { type: "string" },
      "not-ready": { type: "string" },
      gone: { type: "string" },
      "min-checks": { type: "string" },
      "monitor-period-ms": { type: "string" },
      "delete-after-ms": { type: "string" },
      "extra-instances": { type: "string" },
      "cpu-prof": { type: "string" },
      "fleet-cpu-prof": { type: "string" },
      "hub-log-level": { type: "string" },
      "agent-log-level": { type: "string" },
      seed: { type: "string" },
      "no-pin": { type: "boolean" },
      "no-separate-agent": { type: "boolean" },
      "agent-node-options": { type: "string" },
      "hub-node-options": { type: "string" },
      "hub-node-args": { type: "string" },
      keep: { type: "boolean" },
      "baseline-hub-bin": { type: "string" },
      "baseline-hub-node-args": { type: "string" },
      "hub-bin": { type: "string" },
      "time-scale": { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const scenario = values.scenario ?? "join";
  if (scenario === "linode") {
    linodeRun = {
      clusters: num(values.clusters, "clusters", 100, 1),
      nodes: num(values.nodes, "nodes", 50, 1),
      services: num(values.services, "services", 1, 0),
      windowS: num(values["duration-s"], "duration-s", 30, 1),
      timeScale: num(values["time-scale"], "time-scale", 30, 1),
      timeoutS: num(values["timeout-s"], "timeout-s", 300, 1),
      log: (line) => process.stderr.write(`[bench +${Math.round(performance.now() / 1000)}s] ${line}\n`),
    };
  }
  if ((VENDORS as readonly string[]).includes(scenario)) {
    const vendor = scenario as Vendor;
    vendorRun = {
      vendor,
      clusters: num(values.clusters, "clusters", VENDOR_DEFAULTS[vendor].clusters, 1),
      nodes: num(values.nodes, "nodes", VENDOR_DEFAULTS[vendor].nodes, 1),
      services: num(values.services, "services", 1, 0),
      windowS: num(values["duration-s"], "duration-s", 30, 1),
      timeScale: num(values["time-scale"], "time-scale", 30, 1),
      timeoutS: num(values["timeout-s"], "timeout-s", 300, 1),
      log: (line) => process.stderr.write(`[bench +${Math.round(performance.now() / 1000)}s] ${line}\n`),
    };
  }
  const own = ["linode", ...VENDORS];
  if (!["join", "steady", "churn", "chaos", "restart", "failover", ...own].includes(scenario))
    throw new Error(
      `--scenario: expected join, steady, churn, chaos, restart, failover, linode, digitalocean, hetzner, gcp, openstack or azure, got "${scenario}"`,
    );
  const s = (own.includes(scenario) ? "join" : scenario) as ScenarioName;
  const json = values.json === true;
  const defaultDuration = { join: 0, steady: 20, churn: 30, chaos: 120, restart: 0, failover: 0 }[s];
  const opts: BenchOptions = {
    scenario: s,
    clusters: num(values.clusters, "clusters", 3, 1),
    nodes: num(values.nodes, "nodes", s === "chaos" ? 30 : 5, 0),
    services: num(values.services, "services", 0, 0),
    cloudLatencyMs: num(values["cloud-latency-ms"], "cloud-latency-ms", 50, 0),
    // The hub's DEFAULT_RECONCILE_WORKERS, written out: the bench does not load the hub.
    workers: num(values.workers, "workers", 65_536, 1),
    rateLimitPerSecond: num(values["rate-limit"], "rate-limit", 1000, 0.001),
    timeoutS: num(values["timeout-s"], "timeout-s", 300, 1),
    probes: num(values.probes, "probes", 100, 0),
    durationS: num(values["duration-s"], "duration-s", defaultDuration, 1),
    refreshPeriodMs: num(values["refresh-period-ms"], "refresh-period-ms", 2000, 1),
    idleS: num(values["idle-s"], "idle-s", 0, 0),
    idleSettleS: num(values["idle-settle-s"], "idle-settle-s", 120, 0),
    idleOnly: values["idle-only"] === true,
    churnRate: num(values["churn-rate"], "churn-rate", 5, 0.01),
    seed: num(values.seed, "seed", 1, 0),
    hubLogLevel: values["hub-log-level"] ?? "warn",
    agentLogLevel: values["agent-log-level"] ?? "warn",
    cpuProfDir: values["cpu-prof"],
    fleetCpuProfDir: values["fleet-cpu-prof"],
    pinning: pinCores(values["no-pin"] !== true),
    separateAgent: values["no-separate-agent"] !== true,
    agentEnv: runtimeEnv("agent", values["agent-node-options"]),
    hubEnv: runtimeEnv("hub", values["hub-node-options"]),
    hubNodeArgs:
      values["hub-node-args"] === undefined ? deployedHubNodeArgs() : nodeArgs(values["hub-node-args"]),
    ...(values["baseline-hub-node-args"] !== undefined && {
      baselineHubNodeArgs: nodeArgs(values["baseline-hub-node-args"]),
    }),
    keep: values.keep === true,
    ...(values["baseline-hub-bin"] !== undefined && { baselineHubBin: values["baseline-hub-bin"] }),
    ...(values["hub-bin"] !== undefined && { hubBin: values["hub-bin"] }),
    notReady: num(values["not-ready"], "not-ready", 3, 0),
    gone: num(values.gone, "gone", 1, 0),
    minChecks: num(values["min-checks"], "min-checks", 60, 0),
    monitorPeriodMs: num(values["monitor-period-ms"], "monitor-period-ms", 200, 1),
    deleteAfterMs: num(values["delete-after-ms"], "delete-after-ms", 3000, 0),
    extraInstances: num(values["extra-instances"], "extra-instances", 1200, 0),
    log: (line) => process.stderr.write(`[bench +${Math.round(performance.now() / 1000)}s] ${line}\n`),
  };
  return { opts, json };
}

/** The commit measured, and how many files differed from it (others may be editing the tree). */
function gitDescription(): string | null {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean);
    return dirty.length === 0 ? head : `${head}+${dirty.length} changed files`;
  } catch {
    return null;
  }
}

async function main(): Promise<number> {
  let parsed: { opts: BenchOptions; json: boolean };
  try {
    parsed = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { opts, json } = parsed;
  // Every run is bounded: the join timeout plus the scenario's windows plus set-up and tear-down.
  const hardLimitMs =
    (opts.timeoutS + 3 * opts.durationS + 2 * (opts.idleS + opts.idleSettleS + opts.timeoutS) + 300) * 1000;
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: still running after ${hardLimitMs / 1000} s; giving up\n`);
    process.exit(3);
  }, hardLimitMs);
  const started = Date.now();
  let result: Result;
  try {
    const run = {
      join: runJoin,
      steady: runSteady,
      churn: runChurn,
      chaos: runChaos,
      restart: runRestart,
      failover: runFailover,
    }[opts.scenario];
    result =
      linodeRun !== undefined
        ? await runLinode(linodeRun)
        : vendorRun !== undefined
          ? await runVendor({ ...vendorRun, pinning: opts.pinning, hubEnv: opts.hubEnv })
          : await run(opts);
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
    clearTimeout(watchdog);
    return 1;
  }
  clearTimeout(watchdog);
  result["runMs"] = Date.now() - started;
  result["node"] = process.version;
  result["git"] = gitDescription();
  process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
  const ok =
    (result["converged"] ?? true) !== false && (opts.scenario !== "chaos" || result["wrongDeletions"] === 0);
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${String(err)}\n`);
    process.exit(1);
  },
);
