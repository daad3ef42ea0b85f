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
const NODES = 5;
/** Tries per node during the outage: the backoff shows in the gaps between them. */
const TRIES = 4;

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

test(`PATCH refused for ${TRIES} tries per node: per-object backoff, summaries, nodes initialized after recovery`, async () => {
  const cluster = [...fleet.clusters.keys()][0] ?? "";
  proxy.setFaults([{ ...PATCH, status: 503 }]);
  const since = Date.now();
  fleet.addNodes(cluster, NODES);
  /** When each object was tried (refused), by path. */
  const tries = () => {
    const by = new Map<string, number[]>();
    for (const r of proxy.requests)
      if (r.method === PATCH.method && r.atMs >= since) by.set(r.path, [...(by.get(r.path) ?? []), r.atMs]);
    return [...by.values()].filter((t) => t.length >= TRIES);
  };
  // The outage lasts until every node was refused TRIES times (about 8 s).
  expect(await waitFor(() => tries().length === NODES, 60_000)).toBe(true);
  const refused = tries();
  proxy.clearFaults();
  const healed = Date.now();

  // Per object, the hub republishes after 1 s doubling (±20 %): each gap is at least 0.8 s,
  // 1.6 s, 3.2 s. A fixed 250 ms rate (~100 tries per node in 25 s) fails here.
  for (const [t0 = 0, t1 = 0, t2 = 0, t3 = 0] of refused) {
    expect(t1 - t0).toBeGreaterThanOrEqual(800);
    expect(t2 - t1).toBeGreaterThanOrEqual(1600);
    expect(t3 - t2).toBeGreaterThanOrEqual(3200);
  }
  expect(fleet.progress().initialized).toBe(0);

  // The hub: one line at the first failure, then summaries, not a warning per failed apply
  // (NODES × TRIES of them).
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
