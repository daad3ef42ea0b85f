/**
 * The hub–agent loop end to end: a real nats-server, real gRPC over loopback,
 * the real @kubernetes/client-node against the Kubernetes API simulator, and
 * the simulated cloud over HTTP. No module of ours is mocked.
 */

import { agentInboxPrefix, DesiredBatch, HubClient, type HubMessage } from "@fleet-ccm/proto";
import { Client, credentials, Metadata, status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

interface KubeNode {
  metadata: { name: string; uid: string; labels?: Record<string, string> };
  spec: { providerID?: string; taints?: { key: string }[] };
  status: { addresses?: { type: string; address: string }[] };
}

function tainted(n: KubeNode): boolean {
  return (n.spec.taints ?? []).some((t) => t.key === UNINITIALIZED);
}

function allInitialized(fleet: LocalFleet, cluster?: string): boolean {
  const clusters = cluster ? [cluster] : [...fleet.clusters.keys()];
  return clusters.every((c) => fleet.nodes(c).every((n) => !tainted(n as KubeNode)));
}

describe("node initialization across a fleet", () => {
  let fleet: LocalFleet;

  beforeAll(async () => {
    fleet = await LocalFleet.start({
      clusters: 3,
      nodesPerCluster: 5,
      logger,
      cloudLatencyMs: 5,
      convergeDeadlineMs: 2000,
    });
    await fleet.startHub();
    await fleet.startAgents();
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  test("3 clusters × 5 nodes: providerID, labels, addresses set and the taint removed", async () => {
    const agents = [...fleet.clusters.values()].map((c) => c.agent);
    const deltas = () => agents.reduce((n, a) => n + (a?.hubDeltasSent ?? 0), 0);
    // Streaming first, so every node's creation reaches the hub as a delta, not in a snapshot.
    expect(await waitFor(() => agents.every((a) => a?.connectedToHub === true), 10_000)).toBe(true);
    const before = deltas();
    for (const c of fleet.clusters.keys()) fleet.addNodes(c, 5);
    expect(await waitFor(() => allInitialized(fleet), 30_000)).toBe(true);

    // Three watch events per node (creation, the agent's status write, its object write); the
    // agent holds the node's changes while it writes, so the hub gets two: the creation and the
    // final state (three only for a node whose hold reached its bound, on a loaded machine).
    expect(await waitFor(() => deltas() - before >= 2 * 15, 5_000)).toBe(true);
    expect(deltas() - before).toBeLessThan(3 * 15);
    for (const c of fleet.clusters.keys()) {
      const nodes = fleet.nodes(c) as KubeNode[];
      expect(nodes).toHaveLength(5);
      for (const n of nodes) {
        const inst = fleet.cloud.listInstances().find((i) => i.name === n.metadata.name);
        expect(inst).toBeDefined();
        if (!inst) continue;
        expect(n.spec.providerID).toBe(`simulated://${inst.region}/${inst.id}`);
        expect(n.metadata.labels).toMatchObject({
          "node.kubernetes.io/instance-type": inst.instanceType,
          "beta.kubernetes.io/instance-type": inst.instanceType,
          "topology.kubernetes.io/zone": inst.zone,
          "failure-domain.beta.kubernetes.io/zone": inst.zone,
          "topology.kubernetes.io/region": inst.region,
          "failure-domain.beta.kubernetes.io/region": inst.region,
          "kubernetes.io/hostname": n.metadata.name,
        });
        const want = inst.addresses.map((a) => ({ type: a.type, address: a.address }));
        expect(n.status.addresses).toEqual(expect.arrayContaining(want));
        expect(n.status.addresses).toContainEqual({ type: "Hostname", address: n.metadata.name });
        expect(n.spec.taints ?? []).toEqual([]);
      }
    }
    // The loop is closed by observation: one Synced event per node, written by the agent.
    const first = [...fleet.clusters.keys()][0] ?? "";
    expect(
      await waitFor(() => {
        const events = fleet.cluster(first).kube.list("Event", "default") as { reason?: string }[];
        return events.filter((e) => e.reason === "Synced").length === 5;
      }, 10_000),
    ).toBe(true);
  });

  test("node deleted and recreated with the same name never receives the old object's patch", async () => {
    const c = [...fleet.clusters.keys()][1] ?? "";
    const kube = fleet.cluster(c).kube;
    const [name] = fleet.addNodes(c, 1);
    expect(await waitFor(() => allInitialized(fleet, c), 20_000)).toBe(true);
    const old = kube.get("Node", undefined, name ?? "") as unknown as KubeNode;
    kube.delete("Node", undefined, name ?? "");
    const { kubeletNode } = await import("@fleet-ccm/sim");
    kube.create("Node", kubeletNode(name ?? ""));
    const fresh = kube.get("Node", undefined, name ?? "") as unknown as KubeNode;
    expect(fresh.metadata.uid).not.toBe(old.metadata.uid);
    // Publish, as the hub would, a patch for the OLD uid on the cluster's subject.
    const nc = await connect({
      servers: fleet.nats.url,
      user: "hub",
      pass: fleet.hubNatsPassword,
      inboxPrefix: agentInboxPrefix("hub"),
    });
    nc.publish(
      `fleet.v1.${c}.desired`,
      DesiredBatch.encode({
        nodes: [
          {
            name: name ?? "",
            uid: old.metadata.uid,
            generation: 999_999,
            providerId: "",
            labels: { "poisoned-by-old-patch": "yes" },
            addresses: undefined,
            addTaints: [],
            removeTaintKeys: [UNINITIALIZED],
            delete: false,
            conditions: [],
            podCidrs: [],
          },
        ],
        services: [],
        persistentVolumes: [],
        events: [],
      }).finish(),
    );
    await nc.flush();
    await nc.close();
    // The hub initializes the new node (new uid) on its own…
    expect(
      await waitFor(() => !tainted(kube.get("Node", undefined, name ?? "") as unknown as KubeNode), 20_000),
    ).toBe(true);
    // …and the agent refused the stale patch (reported STALE to the hub).
    expect(
      await waitFor(
        async () =>
          ((await fleet.hub?.metrics.applyResults.get())?.values ?? []).some(
            (v) => v.labels["outcome"] === "APPLY_OUTCOME_STALE" && v.value >= 1,
          ),
        10_000,
      ),
    ).toBe(true);
    const now = kube.get("Node", undefined, name ?? "") as unknown as KubeNode;
    expect(now.metadata.uid).toBe(fresh.metadata.uid);
    expect(now.metadata.labels?.["poisoned-by-old-patch"]).toBeUndefined();
  });

  test("agent stopped mid-way and restarted: everything converges", async () => {
    const c = [...fleet.clusters.keys()][0] ?? "";
    await fleet.stopAgent(c);
    // The hub knows the agent is gone, so nothing can report (or initialize) the new nodes.
    expect(await waitFor(() => fleet.hub?.fleet.view(c)?.connected === false, 10_000)).toBe(true);
    const known = fleet.hub?.fleet.view(c)?.nodes.size;
    fleet.addNodes(c, 4);
    expect(allInitialized(fleet, c)).toBe(false);
    await fleet.startAgent(c);
    expect(await waitFor(() => allInitialized(fleet, c), 30_000)).toBe(true);
    expect(fleet.hub?.fleet.view(c)?.nodes.size).toBe((known ?? 0) + 4);
  });

  test("agent process killed (SIGKILL) mid-way and restarted: everything converges", async () => {
    const c = [...fleet.clusters.keys()][1] ?? "";
    await fleet.stopAgent(c);
    const first = fleet.spawnAgentProcess(c);
    expect(await waitFor(() => allInitialized(fleet, c), 20_000)).toBe(true);
    fleet.addNodes(c, 6);
    // Kill it as soon as the first of the new nodes is done: the rest is mid-way.
    await waitFor(
      () => fleet.nodes(c).filter((n) => !tainted(n as KubeNode)).length > fleet.nodes(c).length - 6,
      20_000,
      5,
    );
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));
    fleet.addNodes(c, 2);
    const second = fleet.spawnAgentProcess(c);
    expect(await waitFor(() => allInitialized(fleet, c), 30_000)).toBe(true);
    second.kill("SIGTERM");
    await new Promise((r) => second.once("exit", r));
    await fleet.startAgent(c);
  });

  test("nats-server restarted mid-way: everything converges", async () => {
    const c = [...fleet.clusters.keys()][2] ?? "";
    await fleet.nats.restart(0);
    fleet.addNodes(c, 4);
    expect(await waitFor(() => allInitialized(fleet), 40_000)).toBe(true);
  });

  test("a token for cluster A with Hello for cluster B is refused with PERMISSION_DENIED", async () => {
    const [a, b] = [...fleet.clusters.keys()];
    const client = new HubClient(`127.0.0.1:${fleet.hubPort}`, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${fleet.cluster(a ?? "").token}`);
    const call = client.sync(md);
    const err = await new Promise<{ code: number; details: string }>((resolve) => {
      call.on("error", (e: { code: number; details: string }) => resolve(e));
      call.on("data", (_m: HubMessage) => undefined);
      call.write({
        body: { $case: "hello", value: { cluster: b ?? "", agentVersion: "evil", kubernetesVersion: "" } },
      });
    });
    client.close();
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(err.details).toContain(`"${a}"`);
  });

  test("malformed and oversized agent messages are refused; the hub keeps serving the others", async () => {
    const [a] = [...fleet.clusters.keys()];
    const raw = new Client(`127.0.0.1:${fleet.hubPort}`, credentials.createInsecure(), {
      "grpc.max_send_message_length": -1,
    });
    const send = (payload: Buffer) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        const md = new Metadata();
        md.set("authorization", `Bearer ${fleet.cluster(a ?? "").token}`);
        const call = raw.makeBidiStreamRequest(
          "/fleet.v1.Hub/Sync",
          (b: Buffer) => b,
          (b: Buffer) => b,
          md,
        );
        call.on("error", (e: { code: number; details: string }) => resolve(e));
        call.on("data", () => undefined);
        call.write(payload);
      });
    const malformed = await send(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
    expect(malformed.code).not.toBe(status.OK);
    const oversized = await send(Buffer.alloc(5 * 1024 * 1024, 0x41));
    expect(oversized.code).toBe(status.RESOURCE_EXHAUSTED);
    const noToken = await new Promise<{ code: number }>((resolve) => {
      const call = raw.makeBidiStreamRequest(
        "/fleet.v1.Hub/Sync",
        (b: Buffer) => b,
        (b: Buffer) => b,
        new Metadata(),
      );
      call.on("error", (e: { code: number }) => resolve(e));
      call.on("data", () => undefined);
      call.write(Buffer.alloc(0));
    });
    expect(noToken.code).toBe(status.UNAUTHENTICATED);
    raw.close();
    // Every cluster is still served.
    for (const c of fleet.clusters.keys()) fleet.addNodes(c, 1);
    expect(await waitFor(() => allInitialized(fleet), 20_000)).toBe(true);
  });
});
