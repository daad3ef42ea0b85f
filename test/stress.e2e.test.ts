/**
 * A coarse regression guard for scale, run by `npm test` on CI (2 cores): 40 clusters × 25
 * nodes join at once through a whole local fleet (real nats-server, real gRPC, 40 Kubernetes
 * API simulators, the simulated cloud, the hub and 40 agents, all in this process). Bounds are
 * generous on purpose: it catches an order-of-magnitude regression (a quadratic loop, a leak,
 * a lost wake-up), not a few percent. The real figures come from `npm run bench`.
 */

import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const CLUSTERS = 40;
const NODES = 25;
/** Measured about 5 s on a 2-core machine; 45 s only fails on a real regression. */
const CONVERGE_BOUND_MS = 45_000;
/**
 * The jest worker holds the hub, 40 agents and 40 API servers: about 370 MiB measured (a worker
 * reused from earlier suites carries their heap too, hence the margin).
 */
const RSS_BOUND_BYTES = 1.5 * 1024 ** 3;

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
let fleet: LocalFleet;
let peakRss = 0;
let sampler: NodeJS.Timeout | undefined;

beforeAll(async () => {
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
    `stress: ${p.initialized}/${p.nodes} nodes initialized in ${elapsedMs} ms; peak RSS ${Math.round(peakRss / 2 ** 20)} MiB; ${fleet.cloud.stats().totalCalls} cloud calls\n`,
  );
  expect(converged).toBe(true);
  expect(p).toEqual({ nodes: CLUSTERS * NODES, initialized: CLUSTERS * NODES });
  expect(peakRss).toBeLessThan(RSS_BOUND_BYTES);
  // Node-init looks each node up once (by name); a retry storm would show here. Generous: 3×.
  expect(fleet.cloud.stats().totalCalls).toBeLessThan(3 * CLUSTERS * NODES);
}, 55_000);
