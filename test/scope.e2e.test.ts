/**
 * Lookups by name respect each cluster's scope: two clusters in one cloud account, each with a
 * node "worker-1" on its own tagged instance, both initialize with the right providerID; an
 * ambiguous or out-of-scope answer leaves the node tainted with a Warning Event that says what
 * was found.
 */

import { CLUSTER_TAG, kubeletNode } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { DEMO_ACCOUNT, DEMO_REGION, LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

interface KubeNode {
  metadata: { name: string; uid: string };
  spec: { providerID?: string; taints?: { key: string }[] };
}
interface KubeEvent {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { name?: string; uid?: string };
}

let fleet: LocalFleet;
let a: string;
let b: string;

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 2, nodesPerCluster: 0, logger, convergeDeadlineMs: 2000 });
  await fleet.startHub();
  await fleet.startAgents();
  [a = "", b = ""] = [...fleet.clusters.keys()];
});

afterAll(async () => {
  await fleet?.stop();
});

function machine(cluster: string, name: string) {
  return fleet.cloud.createInstance(DEMO_ACCOUNT, {
    name,
    region: DEMO_REGION,
    zone: `${DEMO_REGION}a`,
    instanceType: "sim.small",
    tags: { [CLUSTER_TAG]: cluster },
  });
}

function node(cluster: string, name: string): KubeNode | undefined {
  return fleet.cluster(cluster).kube.get("Node", undefined, name) as unknown as KubeNode | undefined;
}

function initialized(cluster: string, name: string): boolean {
  const n = node(cluster, name);
  return n !== undefined && !(n.spec.taints ?? []).some((t) => t.key === UNINITIALIZED);
}

function warnings(cluster: string, name: string): KubeEvent[] {
  return (fleet.cluster(cluster).kube.list("Event", "default") as KubeEvent[]).filter(
    (e) => e.type === "Warning" && e.involvedObject?.name === name,
  );
}

describe("instance lookups by name within the cluster's scope", () => {
  test("two clusters in one account with a node of the same name: each gets its own instance", async () => {
    const ia = machine(a, "worker-1");
    const ib = machine(b, "worker-1");
    fleet.cluster(a).kube.create("Node", kubeletNode("worker-1"));
    fleet.cluster(b).kube.create("Node", kubeletNode("worker-1"));
    expect(await waitFor(() => initialized(a, "worker-1") && initialized(b, "worker-1"), 20_000)).toBe(true);
    expect(node(a, "worker-1")?.spec.providerID).toBe(`simulated://${DEMO_REGION}/${ia.id}`);
    expect(node(b, "worker-1")?.spec.providerID).toBe(`simulated://${DEMO_REGION}/${ib.id}`);
    expect(warnings(a, "worker-1")).toEqual([]);
    expect(warnings(b, "worker-1")).toEqual([]);
  });

  test("two in-scope instances of one name: the node stays tainted with a Warning naming both", async () => {
    const i1 = machine(a, "worker-2");
    const i2 = machine(a, "worker-2");
    fleet.cluster(a).kube.create("Node", kubeletNode("worker-2"));
    expect(
      await waitFor(() => warnings(a, "worker-2").some((e) => e.reason === "AmbiguousInstanceName"), 20_000),
    ).toBe(true);
    const ev = warnings(a, "worker-2").find((e) => e.reason === "AmbiguousInstanceName");
    expect(ev?.message).toContain(`2 instances named worker-2 in this cluster's scope`);
    expect(ev?.message).toContain(i1.id);
    expect(ev?.message).toContain(i2.id);
    expect(initialized(a, "worker-2")).toBe(false);
    // Resolved once one of them goes: the node initializes onto the other.
    fleet.cloud.terminateInstance(i1.id);
    expect(await waitFor(() => initialized(a, "worker-2"), 30_000)).toBe(true);
    expect(node(a, "worker-2")?.spec.providerID).toBe(`simulated://${DEMO_REGION}/${i2.id}`);
  });

  test("the only instance of the name is another cluster's: Warning says it is outside the scope", async () => {
    const other = machine(b, "worker-3");
    fleet.cluster(a).kube.create("Node", kubeletNode("worker-3"));
    expect(
      await waitFor(() => warnings(a, "worker-3").some((e) => e.reason === "InstanceOutOfScope"), 20_000),
    ).toBe(true);
    const ev = warnings(a, "worker-3").find((e) => e.reason === "InstanceOutOfScope");
    expect(ev?.message).toContain("1 instance named worker-3 exists but outside this cluster's scope");
    expect(ev?.message).toContain(other.id);
    expect(ev?.message).toContain(`${CLUSTER_TAG}=${a}`);
    expect(initialized(a, "worker-3")).toBe(false);
  });
});
