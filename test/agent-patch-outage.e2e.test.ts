/**
 * The API server refuses every PATCH for a while nodes wait for initialization: the patches
 * back off per object instead of being retried at a fixed rate, the hub and the agent log
 * summaries, and the nodes initialize once the API server heals. The agent runs as a process
 * behind a fault proxy.
 */
import type { ChildProcess } from "node:child_process";
import { type FaultProxy, startFaultProxy } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const hubLines: { level: number; msg: string; [k: string]: unknown }[] = [];
const logger = pino({ level: "warn" }, { write: (s: string) => hubLines.push(JSON.parse(s)) });
const PATCH = { method: "PATCH" } as const;
const OUTAGE_MS = 25_000;
const NODES = 5;

let fleet: LocalFleet;
let proxy: FaultProxy;
let agent: ChildProcess | undefined;
const output: string[] = [];

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  await fleet.startHub();
  const cluster = [...fleet.clusters.keys()][0] ?? "";
  proxy = await startFaultProxy({ target: fleet.cluster(cluster).kube.url });
  agent = fleet.spawnAgentProcess(cluster, { kubeServer: proxy.url, output, logLevel: "info" });
  expect(await waitFor(() => output.some((l) => l.includes("connected to hub")), 20_000)).toBe(true);
});

afterAll(async () => {
  agent?.kill("SIGKILL");
  await fleet?.stop();
  await proxy?.close();
});

test("PATCH refused for 25 s: per-object backoff, summaries, nodes initialized after recovery", async () => {
  const cluster = [...fleet.clusters.keys()][0] ?? "";
  proxy.setFaults([{ ...PATCH, status: 503 }]);
  const since = Date.now();
  fleet.addNodes(cluster, NODES);
  // The outage itself: its length is the fault, not a wait for a condition.
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  const patches = proxy.count(PATCH, since);
  proxy.clearFaults();
  const healed = Date.now();

  // At least a few tries per node, but far from a fixed 250 ms rate (~100 per node in 25 s).
  expect(patches).toBeGreaterThanOrEqual(NODES * 2);
  expect(patches).toBeLessThanOrEqual(NODES * 10);
  expect(fleet.progress().initialized).toBe(0);

  // The hub: one line at the first failure, then summaries, not a warning per failed apply.
  const hubWarnings = hubLines.filter((l) => l.level === 40 && /could not apply/.test(l.msg));
  expect(hubWarnings.length).toBeGreaterThanOrEqual(1);
  expect(hubWarnings.length).toBeLessThanOrEqual(3);
  // The agent likewise.
  const agentLines = output.filter((l) => l.includes("not applied"));
  expect(agentLines.length).toBeGreaterThanOrEqual(1);
  expect(agentLines.length).toBeLessThanOrEqual(3);

  // Healed: every node initializes, soon (well under the backoff cap of one node).
  expect(await waitFor(() => fleet.progress().initialized === NODES, 30_000)).toBe(true);
  expect(Date.now() - healed).toBeLessThan(20_000);
});
