import { Node } from "@fleet-ccm/proto";
import { expect, test } from "@jest/globals";
import { pino } from "pino";
import { InstanceNotFoundError } from "../../cloud/errors.js";
import { InstanceCache } from "../../cloud/instance-cache.js";
import type { CloudProvider, InstanceMetadata } from "../../cloud/provider.js";
import { clusterCloud } from "../../cloud/scope.js";
import { VerifiedInstances } from "../../cloud/verified-instances.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { ConvergenceTracker } from "../convergence.js";
import { NODE_REFRESH, reconcileNodeRefresh } from "./reconcile.js";

const clusters = ["c1", "c2", "c3"];

function instance(cluster: string): InstanceMetadata {
  return {
    providerID: `simulated://r1/i-${cluster}`,
    instanceID: `i-${cluster}`,
    name: `n-${cluster}`,
    instanceType: "sim.small",
    region: "r1",
    zone: "r1a",
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    state: "running",
    tags: { "fleet-ccm.io/cluster": cluster },
  };
}

/** An initialized node whose address the cloud has since changed. */
function node(cluster: string): Node {
  return Node.fromPartial({
    name: `n-${cluster}`,
    uid: `uid-${cluster}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${cluster}`,
    labels: {
      "topology.kubernetes.io/region": "r1",
      "topology.kubernetes.io/zone": "r1a",
      "node.kubernetes.io/instance-type": "sim.small",
    },
    addresses: [{ type: "InternalIP", address: "10.0.0.9" }],
    conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
  });
}

/** The refresh's dependencies around one account whose listing is `listPage`, on a fake clock. */
function refreshDeps(listPage: () => Promise<InstanceMetadata[]>) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const provider: CloudProvider = {
    name: "simulated",
    instances: {
      async getByProviderID(id) {
        throw new InstanceNotFoundError(id);
      },
      async findByName() {
        return [];
      },
      async listPage() {
        return { instances: await listPage() };
      },
      parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
  };
  const cache = new InstanceCache(provider.instances, clock, 300_000, pino({ level: "silent" }));
  const deps = {
    fleet,
    cloudFor: (cluster: string) =>
      clusterCloud(cluster, {
        provider,
        account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
        scope: { tags: { "fleet-ccm.io/cluster": cluster } },
      }),
    cacheFor: () => cache,
    verified: new VerifiedInstances(clock),
    tracker: new ConvergenceTracker(clock, 10_000),
    logger: pino({ level: "silent" }),
    periodMs: 300_000,
  };
  return { clock, fleet, cache, deps };
}

test("every cluster waiting on one listing walks its nodes on its view as it is when the listing ends, each in a turn of its own", async () => {
  let release: () => void = () => undefined;
  const listed = new Promise<void>((r) => {
    release = r;
  });
  const { fleet, cache, deps } = refreshDeps(async () => {
    await listed;
    return clusters.map(instance);
  });
  for (const c of clusters) {
    fleet.replace(c, [node(c)], []);
    fleet.setConnected(c, true);
  }
  const runs = clusters.map((cluster) =>
    reconcileNodeRefresh({ cluster, kind: NODE_REFRESH, name: "" }, deps),
  );
  // c3's agent goes away while the listing is in flight: its view is not judged.
  fleet.setConnected("c3", false);
  release();
  const outcomes = await Promise.all(runs);
  expect(cache.lists).toBe(1);
  expect(outcomes.map((o) => o.nodes?.map((n) => n.addresses?.items[0]?.address) ?? [])).toEqual([
    ["10.0.0.1"],
    ["10.0.0.1"],
    [],
  ]);
  expect(outcomes.every((o) => o.requeue.kind === "after" && o.requeue.ms === 300_000)).toBe(true);
});

test("a node that agreed with its instance is published again as soon as the instance changes, and not before", async () => {
  let listed = instance("c1");
  const { clock, fleet, cache, deps } = refreshDeps(async () => [structuredClone(listed)]);
  const agreeing = Node.fromPartial({
    ...node("c1"),
    labels: {
      ...node("c1").labels,
      "failure-domain.beta.kubernetes.io/region": "r1",
      "failure-domain.beta.kubernetes.io/zone": "r1a",
      "beta.kubernetes.io/instance-type": "sim.small",
    },
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
  });
  fleet.replace("c1", [agreeing], []);
  fleet.setConnected("c1", true);
  const refresh = async () => {
    clock.advance(300_000);
    const o = await reconcileNodeRefresh({ cluster: "c1", kind: NODE_REFRESH, name: "" }, deps);
    return (
      o.nodes?.map((n) => ({ labels: n.labels, addresses: n.addresses?.items.map((a) => a.address) })) ?? []
    );
  };
  expect(await refresh()).toStrictEqual([]);
  expect(await refresh()).toStrictEqual([]);
  listed = { ...instance("c1"), addresses: [{ type: "InternalIP", address: "10.0.0.2" }] };
  const moved = [{ labels: {}, addresses: ["10.0.0.2"] }];
  expect(await refresh()).toStrictEqual(moved);
  // Not yet applied: published again next period.
  expect(await refresh()).toStrictEqual(moved);
  fleet.replace(
    "c1",
    [
      Node.fromPartial({
        ...agreeing,
        resourceVersion: "2",
        addresses: [{ type: "InternalIP", address: "10.0.0.2" }],
      }),
    ],
    [],
  );
  expect(await refresh()).toStrictEqual([]);
  listed = { ...listed, zone: "r1b" };
  const o = await reconcileNodeRefresh({ cluster: "c1", kind: NODE_REFRESH, name: "" }, deps);
  expect(o.nodes).toBeUndefined(); // the view is still fresh: no new listing within the period
  clock.advance(300_000);
  const changed = await reconcileNodeRefresh({ cluster: "c1", kind: NODE_REFRESH, name: "" }, deps);
  expect(changed.nodes?.map((n) => n.labels)).toStrictEqual([
    { "topology.kubernetes.io/zone": "r1b", "failure-domain.beta.kubernetes.io/zone": "r1b" },
  ]);
  expect(cache.lists).toBe(6);
});
