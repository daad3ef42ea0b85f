/**
 * A coarse regression guard for scale, run by `npm test` on CI (2 cores): 40 clusters × 25
 * nodes join at once through a whole local fleet (real nats-server, real gRPC, 40 Kubernetes
 * API simulators, the simulated cloud, the hub and 40 agents, all in this process). Bounds are
 * generous on purpose: it catches an order-of-magnitude regression (a quadratic loop, a leak,
 * a lost wake-up), not a few percent. The real figures come from `npm run bench`.
 */

import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const CLUSTERS = 40;
const NODES = 25;
/** Measured about 5 s on a 2-core machine; 45 s only fails on a real regression. */
const CONVERGE_BOUND_MS = 45_000;
/**
 * What the fleet adds to the jest worker's RSS (the hub, 40 agents, 40 API servers): about
 * 120 MiB measured. The worker may be reused from earlier suites and carry their heap (it
 * started at up to ~1 GiB on CI), so the bound is on the growth during this suite.
 */
const RSS_GROWTH_BOUND_BYTES = 1024 ** 3;
/**
 * The first cluster's agent runs as its own process, from its bundle, as deployed: ~60–75 MiB
 * with 25 nodes. The plain module graph (client-node's whole generated API) started at 128 MiB.
 */
const AGENT_RSS_BOUND_BYTES = 100 * 1024 ** 2;

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
let fleet: LocalFleet;
let peakRss = 0;
let startRss = 0;
let sampler: NodeJS.Timeout | undefined;
let agentProcess: ChildProcess | undefined;

/** The process's peak RSS (VmHWM), from /proc. */
function peakRssOf(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? Number.NaN) * 1024;
}

beforeAll(async () => {
  startRss = process.memoryUsage.rss();
  fleet = await LocalFleet.start({
    clusters: CLUSTERS,
    nodesPerCluster: NODES,
    logger,
    cloudLatencyMs: 5,
    // The hub's production default: on a loaded CI machine a report may take a while.
    convergeDeadlineMs: 15_000,
  });
  await fleet.startHub();
  await fleet.startAgents();
  const first = [...fleet.clusters.keys()][0] ?? "";
  await fleet.stopAgent(first);
  agentProcess = fleet.spawnAgentProcess(first);
  sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 200);
}, 40_000);

afterAll(async () => {
  if (sampler) clearInterval(sampler);
  await fleet?.stop();
}, 30_000);

test(`${CLUSTERS} clusters × ${NODES} nodes join at once and all initialize within ${CONVERGE_BOUND_MS / 1000} s`, async () => {
  const t0 = Date.now();
  for (const c of fleet.clusters.keys()) fleet.addNodes(c, NODES);
  const converged = await waitFor(
    () => {
      const p = fleet.progress();
      return p.nodes === CLUSTERS * NODES && p.initialized === p.nodes;
    },
    CONVERGE_BOUND_MS,
    250,
  );
  const elapsedMs = Date.now() - t0;
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
  const p = fleet.progress();
  // One line for the CI log: the trend is worth seeing even when the test passes.
  process.stderr.write(
    `stress: ${p.initialized}/${p.nodes} nodes initialized in ${elapsedMs} ms; peak RSS ${Math.round(peakRss / 2 ** 20)} MiB (${Math.round(startRss / 2 ** 20)} MiB before the fleet); ${fleet.cloud.stats().totalCalls} cloud calls\n`,
  );
  expect(converged).toBe(true);
  expect(p).toEqual({ nodes: CLUSTERS * NODES, initialized: CLUSTERS * NODES });
  expect(peakRss - startRss).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
  const agentPeak = peakRssOf(agentProcess?.pid ?? 0);
  process.stderr.write(`stress: agent process peak RSS ${Math.round(agentPeak / 2 ** 20)} MiB\n`);
  expect(agentPeak).toBeLessThan(AGENT_RSS_BOUND_BYTES);
  // Node-init looks each node up once (by name); a retry storm would show here. Generous: 3×.
  expect(fleet.cloud.stats().totalCalls).toBeLessThan(3 * CLUSTERS * NODES);
}, 55_000);
