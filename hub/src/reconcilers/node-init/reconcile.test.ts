import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { InstanceNotFoundError, ThrottledError, TransientCloudError } from "../../cloud/errors.js";
import type { CloudProvider, InstanceMetadata } from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { VerifiedInstances } from "../../cloud/verified-instances.js";
import { FleetState } from "../../fleet/state.js";
import { keyOf } from "../../queue/index.js";
import { FakeClock } from "../../util/clock.js";
import { ConvergenceTracker } from "../convergence.js";
import { NodeInitProgress } from "./progress.js";
import { NODE_INIT, reconcileNodeInit } from "./reconcile.js";

const TAINT = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };

function node(name: string, over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    labels: { "kubernetes.io/hostname": name },
    taints: [TAINT],
    addresses: [{ type: "Hostname", address: name }],
    conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    ...over,
  });
}

function instance(name: string, over: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return {
    providerID: `simulated://r1/i-${name}`,
    instanceID: `i-${name}`,
    name,
    instanceType: "sim.small",
    region: "r1",
    zone: "r1a",
    addresses: [
      { type: "InternalIP", address: "10.0.0.1" },
      { type: "ExternalIP", address: "100.64.0.1" },
    ],
    state: "running",
    tags: { "fleet-ccm.io/cluster": "c1" },
    ...over,
  };
}

/** A cloud double: answers from a table, or fails as told; counts calls. */
function fakeCloud(instances: InstanceMetadata[], fail?: Error): ClusterCloud & { calls: string[] } {
  const calls: string[] = [];
  const provider: CloudProvider = {
    name: "simulated",
    instances: {
      async getByProviderID(id) {
        calls.push(`get ${id}`);
        if (fail) throw fail;
        const m = instances.find((i) => i.providerID === id);
        if (!m) throw new InstanceNotFoundError(id);
        return m;
      },
      async findByName(name) {
        calls.push(`byName ${name}`);
        if (fail) throw fail;
        return instances.filter((i) => i.name === name);
      },
      async listPage() {
        return { instances };
      },
      parseProviderID: (id) =>
        id.startsWith("simulated://r1/") ? id.slice("simulated://r1/".length) : undefined,
    },
  };
  return {
    calls,
    ...clusterCloud("c1", {
      provider,
      account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
      scope: { tags: { "fleet-ccm.io/cluster": "c1" } },
    }),
  };
}

function harness(nodes: Node[], cloud: ClusterCloud) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  fleet.replace("c1", nodes, []);
  const tracker = new ConvergenceTracker(clock, 10_000);
  const progress = new NodeInitProgress();
  const deps = {
    fleet,
    cloudFor: () => cloud,
    tracker,
    verified: new VerifiedInstances(clock),
    logger: pino({ level: "silent" }),
    clock,
    progress,
  };
  return {
    clock,
    fleet,
    tracker,
    progress,
    run: (name: string) => reconcileNodeInit({ cluster: "c1", kind: NODE_INIT, name }, deps),
  };
}

describe("node-init reconcile", () => {
  test("uninitialized node looked up by name: providerID, labels, addresses and taint removal in one patch", async () => {
    const h = harness([node("n1")], fakeCloud([instance("n1")]));
    const out = await h.run("n1");
    expect(out.requeue).toEqual({ kind: "after", ms: 10_000 });
    expect(out.events ?? []).toEqual([]);
    expect(out.nodes).toHaveLength(1);
    const d = out.nodes?.[0];
    expect(d).toMatchObject({
      name: "n1",
      uid: "uid-n1",
      providerId: "simulated://r1/i-n1",
      removeTaintKeys: [TAINT.key],
      delete: false,
    });
    expect(d?.labels).toEqual({
      "node.kubernetes.io/instance-type": "sim.small",
      "beta.kubernetes.io/instance-type": "sim.small",
      "topology.kubernetes.io/zone": "r1a",
      "failure-domain.beta.kubernetes.io/zone": "r1a",
      "topology.kubernetes.io/region": "r1",
      "failure-domain.beta.kubernetes.io/region": "r1",
    });
    // The kubelet's Hostname is kept because the cloud reports none.
    expect(d?.addresses?.items).toEqual([
      { type: "InternalIP", address: "10.0.0.1" },
      { type: "ExternalIP", address: "100.64.0.1" },
      { type: "Hostname", address: "n1" },
    ]);
  });

  test("node with a providerID is looked up by it and the providerID is not rewritten", async () => {
    const cloud = fakeCloud([instance("n1")]);
    const h = harness([node("n1", { providerId: "simulated://r1/i-n1" })], cloud);
    const out = await h.run("n1");
    expect(cloud.calls).toEqual(["get simulated://r1/i-n1"]);
    expect(out.nodes?.[0]?.providerId).toBe("");
  });

  test("instance not found: no patch, taint stays, Warning event, backoff", async () => {
    const h = harness([node("n2")], fakeCloud([]));
    const out = await h.run("n2");
    expect(out.nodes ?? []).toEqual([]);
    expect(out.requeue.kind).toBe("backoff");
    expect(out.events?.[0]).toMatchObject({
      type: "Warning",
      reason: "InstanceNotFound",
      name: "n2",
      uid: "uid-n2",
    });
  });

  test("same name in another cluster's scope: the in-scope instance is picked", async () => {
    const h = harness(
      [node("w1")],
      fakeCloud([
        instance("w1", {
          instanceID: "i-other",
          providerID: "simulated://r1/i-other",
          tags: { "fleet-ccm.io/cluster": "c2" },
        }),
        instance("w1"),
      ]),
    );
    const out = await h.run("w1");
    expect(out.events ?? []).toEqual([]);
    expect(out.nodes?.[0]?.providerId).toBe("simulated://r1/i-w1");
  });

  test("two in-scope instances of the name: Warning naming both, no patch, backoff", async () => {
    const h = harness(
      [node("w2")],
      fakeCloud([
        instance("w2"),
        instance("w2", { instanceID: "i-w2b", providerID: "simulated://r1/i-w2b" }),
      ]),
    );
    const out = await h.run("w2");
    expect(out.nodes ?? []).toEqual([]);
    expect(out.requeue.kind).toBe("backoff");
    expect(out.events).toHaveLength(1);
    expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: "AmbiguousInstanceName", name: "w2" });
    expect(out.events?.[0]?.message).toContain(
      "2 instances named w2 in this cluster's scope (region r1, tags fleet-ccm.io/cluster=c1): i-w2, i-w2b",
    );
  });

  test("only instances outside the scope: Warning says why, no patch", async () => {
    const h = harness(
      [node("w3")],
      fakeCloud([
        instance("w3", { tags: { "fleet-ccm.io/cluster": "c2" } }),
        instance("w3", { instanceID: "i-dead", providerID: "simulated://r1/i-dead", state: "terminated" }),
      ]),
    );
    const out = await h.run("w3");
    expect(out.nodes ?? []).toEqual([]);
    expect(out.events?.[0]).toMatchObject({ reason: "InstanceOutOfScope" });
    expect(out.events?.[0]?.message).toContain(
      "1 instance named w3 exists but outside this cluster's scope (region r1, tags fleet-ccm.io/cluster=c1): instance i-w3 lacks tag fleet-ccm.io/cluster=c1",
    );
  });

  test("a network in the scope: an instance in another network is outside it", async () => {
    const cloud = fakeCloud([instance("w4", { network: "net-b" })]);
    const h = harness(
      [node("w4")],
      clusterCloud("c1", {
        provider: cloud.provider,
        account: cloud.account,
        scope: { ...cloud.target.scope, network: "net-a" },
      }),
    );
    const out = await h.run("w4");
    expect(out.events?.[0]?.message).toContain("(region r1, network net-a, tags fleet-ccm.io/cluster=c1)");
    expect(out.events?.[0]?.message).toContain("instance i-w4 is not in network net-a");
  });

  test("throttled: requeue after the provider's delay, nothing published", async () => {
    const h = harness([node("n3")], fakeCloud([], new ThrottledError("slow down", 30_000)));
    const out = await h.run("n3");
    expect(out).toEqual({ requeue: { kind: "after", ms: 30_000 } });
  });

  test("transient error: backoff, no event, no patch", async () => {
    const h = harness([node("n4")], fakeCloud([], new TransientCloudError("503")));
    const out = await h.run("n4");
    expect(out.requeue.kind).toBe("backoff");
    expect(out.nodes).toBeUndefined();
    expect(out.events).toBeUndefined();
  });

  test("instance outside the cluster's scope is refused with an Event", async () => {
    const foreign = instance("n5", { tags: { "fleet-ccm.io/cluster": "other" } });
    const h = harness([node("n5")], fakeCloud([foreign]));
    const out = await h.run("n5");
    expect(out.nodes).toBeUndefined();
    expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: "InstanceOutOfScope" });
    expect(out.requeue.kind).toBe("backoff");
  });

  test("foreign providerID scheme is refused without a cloud call", async () => {
    const cloud = fakeCloud([instance("n6")]);
    const h = harness([node("n6", { providerId: "aws:///us-east-1a/i-123" })], cloud);
    const out = await h.run("n6");
    expect(cloud.calls).toEqual([]);
    expect(out.events?.[0]?.reason).toBe("InstanceOutOfScope");
  });

  test("a report that has not converged yet waits for the deadline without calling the cloud", async () => {
    const cloud = fakeCloud([instance("n1")]);
    const h = harness([node("n1")], cloud);
    await h.run("n1");
    h.clock.advance(4_000);
    const again = await h.run("n1");
    expect(again).toEqual({ requeue: { kind: "after", ms: 6_000 } });
    expect(cloud.calls).toHaveLength(1);
    // Past the deadline it looks up again and republishes, with a longer deadline.
    h.clock.advance(6_000);
    const republished = await h.run("n1");
    expect(republished.nodes).toHaveLength(1);
    expect(republished.requeue).toEqual({ kind: "after", ms: 20_000 });
    expect(cloud.calls).toHaveLength(2);
  });

  test("the first publication of a node marks its cluster's progress; a republication does not", async () => {
    const h = harness([node("n1")], fakeCloud([instance("n1")]));
    const start = h.clock.now();
    await h.run("n1");
    h.progress.settled("c1", "n1");
    expect(h.progress.movedAtMs("c1", start + 30_000, 60_000)).toBe(start);
    h.clock.advance(10_000);
    expect((await h.run("n1")).nodes).toHaveLength(1);
    expect(h.progress.movedAtMs("c1", start + 30_000, 60_000)).toBe(start);
  });

  test("converged report: Synced event once, tracker cleared", async () => {
    const h = harness([node("n1")], fakeCloud([instance("n1")]));
    await h.run("n1");
    h.fleet.upsertNode("c1", node("n1", { taints: [], providerId: "simulated://r1/i-n1" }));
    const out = await h.run("n1");
    expect(out.events).toEqual([
      expect.objectContaining({ type: "Normal", reason: "Synced", message: "Node synced successfully" }),
    ]);
    expect(h.tracker.get(keyOf({ cluster: "c1", kind: NODE_INIT, name: "n1" }))).toBeUndefined();
    expect(await h.run("n1")).toEqual({ requeue: { kind: "done" } });
  });

  test("node recreated with a new uid gets a fresh lookup and a patch for the new uid", async () => {
    const cloud = fakeCloud([instance("n1")]);
    const h = harness([node("n1")], cloud);
    await h.run("n1");
    h.fleet.upsertNode("c1", node("n1", { uid: "uid-new" }));
    const out = await h.run("n1");
    expect(out.nodes?.[0]?.uid).toBe("uid-new");
  });

  test("unsynced cluster: nothing happens", async () => {
    const clock = new FakeClock();
    const fleet = new FleetState();
    fleet.upsertNode("c1", node("n1"));
    const cloud = fakeCloud([instance("n1")]);
    const out = await reconcileNodeInit(
      { cluster: "c1", kind: NODE_INIT, name: "n1" },
      {
        fleet,
        cloudFor: () => cloud,
        tracker: new ConvergenceTracker(clock, 1000),
        verified: new VerifiedInstances(clock),
        logger: pino({ level: "silent" }),
        clock,
      },
    );
    expect(out).toEqual({ requeue: { kind: "done" } });
    expect(cloud.calls).toEqual([]);
  });
});
