/**
 * Pod CIDRs a hub published are applied only on the hub stream they were received on: when the
 * stream is replaced (a restarted hub, another replica, a reconnect), what still waits in the
 * agent's queue is refused as STALE, since the hub now acting rebuilt its allocation from the
 * new stream's snapshot and may have given those ranges to other nodes. A real agent (one apply
 * at a time) against a slow Kubernetes API simulator, a real hub and nats-server.
 */
import { Agent } from "@fleet-ccm/agent";
import { parseHubConfig } from "@fleet-ccm/hub";
import { agentInboxPrefix, DesiredBatch, NodeDesired } from "@fleet-ccm/proto";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
/** Longer than the agent's way back to the hub (its retry after a refused stream is ~2 s). */
const LATENCY_MS = 4000;

interface KubeNode {
  metadata: { name: string; uid: string };
  spec: { podCIDR?: string; taints?: { key: string }[] };
}

let fleet: LocalFleet;
let agent: Agent;
let cluster: string;

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger, convergeDeadlineMs: 2000 });
  cluster = [...fleet.clusters.keys()][0] ?? "";
  await fleet.startHub();
  const c = fleet.cluster(cluster);
  agent = new Agent({
    cluster,
    kubeConfig: fleet.kubeConfigFor(cluster),
    hub: { address: `127.0.0.1:${fleet.hubPort}`, token: c.token, insecure: true },
    nats: { servers: [...fleet.natsUrls], user: `agent-${cluster}`, password: c.natsPassword },
    logger,
    applyConcurrency: 1,
  });
  await agent.start();
});

afterAll(async () => {
  await agent?.stop();
  await fleet?.stop();
});

function node(name: string): KubeNode {
  return fleet.cluster(cluster).kube.get("Node", undefined, name) as unknown as KubeNode;
}

async function staleResults(): Promise<number> {
  const values = (await fleet.hub?.metrics.applyResults.get())?.values ?? [];
  return values.find((v) => v.labels["outcome"] === "APPLY_OUTCOME_STALE")?.value ?? 0;
}

describe("pod CIDRs across hub streams", () => {
  test("a publication still queued when the stream is replaced is not applied; the one being applied lands", async () => {
    const [first = "", second = ""] = fleet.addNodes(cluster, 2);
    expect(
      await waitFor(() => [first, second].every((n) => (node(n).spec.taints ?? []).length === 0), 30_000),
    ).toBe(true);
    const kube = fleet.cluster(cluster).kube;
    // The agent's queue drains (Synced Events, conditions) before the API server turns slow.
    await new Promise((r) => setTimeout(r, 1000));
    kube.setLatencyMs(LATENCY_MS);
    const stale = await staleResults();
    // As a hub would publish them: the first is being applied (slowly), the second waits behind it.
    const nc = await connect({
      servers: fleet.nats.url,
      user: "hub",
      pass: fleet.hubNatsPassword,
      inboxPrefix: agentInboxPrefix("hub"),
    });
    const desired = (name: string, cidr: string, generation: number) =>
      NodeDesired.fromPartial({ name, uid: node(name).metadata.uid, generation, podCidrs: [cidr] });
    nc.publish(
      `fleet.v1.${cluster}.desired`,
      DesiredBatch.encode({
        nodes: [desired(first, "10.9.0.0/24", 900_001), desired(second, "10.9.1.0/24", 900_002)],
        services: [],
        events: [],
        persistentVolumes: [],
      }).finish(),
    );
    await nc.flush();
    await nc.close();
    await new Promise((r) => setTimeout(r, 300));
    // A new stream (the cluster's entry changed: the hub closes it; the agent comes back).
    const cfg = parseHubConfig(fleet.hubConfigText());
    fleet.hub?.reload({ ...cfg, clusters: cfg.clusters.map((c) => ({ ...c, controllers: ["*"] })) });
    expect(await waitFor(async () => (await staleResults()) > stale, 20_000)).toBe(true);
    kube.setLatencyMs(0);
    expect(await waitFor(() => node(first).spec.podCIDR === "10.9.0.0/24", 10_000)).toBe(true);
    expect(node(second).spec.podCIDR).toBeUndefined();
  }, 60_000);
});
