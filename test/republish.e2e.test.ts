/**
 * Convergence deadlines against a slow API server (real nats-server, gRPC, API simulator): a
 * patch that waits in the agent's queue is not published again when its deadline passes, because
 * the agent's heartbeats tell the hub what it has received.
 */

import { NatsMessageDropper, startTcpProxy, type TcpProxy } from "@fleet-ccm/sim";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
// Well above the agent's receipt delay (250 ms: one heartbeat tells the hub of many received
// batches), so only a patch the agent never received could be republished.
const DEADLINE_MS = 750;

let fleet: LocalFleet | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await fleet?.stop();
  fleet = undefined;
});

async function nodePatchesPublished(f: LocalFleet): Promise<number> {
  const metric = await f.hub?.metrics.patchesPublished.get();
  return metric?.values.find((v) => v.labels["kind"] === "node")?.value ?? 0;
}

/** One cluster, no nodes yet, and the hub (this process) with the short deadline. */
async function startHub(heartbeatIntervalMs?: number): Promise<LocalFleet> {
  const f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    convergeDeadlineMs: DEADLINE_MS,
    ...(heartbeatIntervalMs !== undefined && {
      hubConfig: { reconcile: { convergeDeadlineMs: DEADLINE_MS, heartbeatIntervalMs } },
    }),
  });
  fleet = f;
  await f.startHub();
  return f;
}

function tainted(n: unknown): boolean {
  const taints = (n as { spec?: { taints?: { key: string }[] } }).spec?.taints ?? [];
  return taints.some((t) => t.key === "node.cloudprovider.kubernetes.io/uninitialized");
}

test("a slow API server: patches queued in the agent are published once, however many deadlines pass", async () => {
  const f = await startHub();
  await f.startAgents();
  const cluster = [...f.clusters.keys()][0] ?? "";
  // Every API request takes 375 ms: 80 nodes (two patches and an Event each, 16 at a time) keep
  // the agent busy for several deadlines.
  f.cluster(cluster).kube.setLatencyMs(DEADLINE_MS / 2);
  const started = Date.now();
  f.addNodes(cluster, 80);
  expect(await waitFor(() => f.nodes(cluster).every((n) => !tainted(n)), 60_000)).toBe(true);
  const elapsed = Date.now() - started;
  expect(elapsed).toBeGreaterThan(4 * DEADLINE_MS);
  // With deadlines alone, every patch still queued after 300 ms would have been published again.
  expect(await nodePatchesPublished(f)).toBe(80);
});

test("a frozen agent: a patch it has not read yet is not published again; the hub waits until the agent reads its streams past it", async () => {
  const f = await startHub();
  const cluster = [...f.clusters.keys()][0] ?? "";
  const output: string[] = [];
  // Its own process, so it can be stopped (SIGSTOP) while the hub's process runs on.
  const agent = f.spawnAgentProcess(cluster, { output, logLevel: "info" });
  try {
    expect(await waitFor(() => output.some((l) => l.includes("connected to hub")), 20_000)).toBe(true);
    // One node first. The agent echoed the hub's first Ack at once (long before LocalFleet's
    // 2 s heartbeat interval), so the hub knows how far the agent reads.
    f.addNodes(cluster, 1);
    expect(await waitFor(() => f.nodes(cluster).every((n) => !tainted(n)), 20_000)).toBe(true);
    const before = await nodePatchesPublished(f);
    expect(before).toBe(1);
    const NODES = 5;
    f.addNodes(cluster, NODES);
    // Frozen as soon as the hub has published their patches (before the agent's receipt
    // heartbeat, 250 ms after it reads them, can have been sent), for four deadlines: within
    // the streams' silence limits (3 heartbeat intervals), so no stream is dropped.
    expect(await waitFor(async () => (await nodePatchesPublished(f)) === before + NODES, 20_000, 2)).toBe(
      true,
    );
    agent.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, 4 * DEADLINE_MS));
    agent.kill("SIGCONT");
    expect(await waitFor(() => f.nodes(cluster).every((n) => !tainted(n)), 20_000)).toBe(true);
    // With deadlines alone (or an agent that does not echo the hub's Acks), each would have been
    // published again at 750 ms and 1.5 s.
    expect(await nodePatchesPublished(f)).toBe(before + NODES);
    expect(output.filter((l) => l.includes("connected to hub"))).toHaveLength(1);
  } finally {
    agent.kill("SIGKILL");
  }
});

test("a publication lost on its way to the agent, heartbeats a minute apart: the hub asks for an echo and publishes it again within a few deadlines", async () => {
  const HEARTBEAT_MS = 60_000;
  const f = await startHub(HEARTBEAT_MS);
  const cluster = [...f.clusters.keys()][0] ?? "";
  // The agent's NATS connection goes through a proxy that can take single messages out of it
  // (the connection stays up: neither end notices).
  const droppers: NatsMessageDropper[] = [];
  proxy = await startTcpProxy({
    targets: f.natsUrls.map((u) => new URL(u).host),
    downstream: () => {
      const d = new NatsMessageDropper();
      droppers.push(d);
      return d;
    },
  });
  const output: string[] = [];
  const agent = f.spawnAgentProcess(cluster, {
    output,
    logLevel: "info",
    natsServers: [`nats://${proxy.address}`],
  });
  try {
    expect(await waitFor(() => output.some((l) => l.includes("connected to hub")), 20_000)).toBe(true);
    f.addNodes(cluster, 1);
    expect(await waitFor(() => f.nodes(cluster).every((n) => !tainted(n)), 20_000)).toBe(true);
    expect(await nodePatchesPublished(f)).toBe(1);
    expect(droppers).toHaveLength(1);
    // The publication that carries the new node's patch, its providerID (protobuf strings are
    // plain bytes), not whatever else the hub publishes meanwhile (the first node's Events).
    const started = Date.now();
    const [name] = f.addNodes(cluster, 1);
    if (name === undefined) throw new Error("no node added");
    const isPatch = (payload: Buffer) => payload.includes(name) && payload.includes("simulated://");
    for (const d of droppers) d.loseNext(1, (_subject, payload) => isPatch(payload));
    expect(
      await waitFor(
        () => f.nodes(cluster).length === 2 && f.nodes(cluster).every((n) => !tainted(n)),
        30_000,
      ),
    ).toBe(true);
    const elapsed = Date.now() - started;
    expect(droppers[0]?.dropped).toBe(1);
    // Published twice: the lost one and once more, no more.
    expect(await nodePatchesPublished(f)).toBe(3);
    // Without the echo the hub would have learned of the loss only from the agent's heartbeats,
    // two of them (up to two minutes) after the publication.
    expect(elapsed).toBeLessThan(HEARTBEAT_MS / 4);
    expect(output.filter((l) => l.includes("connected to hub"))).toHaveLength(1);
  } finally {
    agent.kill("SIGKILL");
  }
});
