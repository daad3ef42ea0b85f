/**
 * A hostile cluster (its own agent, its API server under an attacker's control) reports Nodes
 * whose providerIDs name another cluster's instances. Those instances are never initialized
 * into the hostile cluster, never put behind its load balancers, never routed to and never
 * treated as gone; each refusal is a Warning Event InstanceOutOfScope and counts in
 * fleet_ccm_instances_out_of_scope_total, while the victim cluster's own nodes, routes and
 * load balancer stay as they were.
 */
import { kubeletNode } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { waitForReconciles } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const OWNER = "fleet-ccm.io/cluster";

interface KubeEvent {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
}

let f: LocalFleet;
let hostile: string;
let victim: string;

beforeAll(async () => {
  f = await LocalFleet.start({
    clusters: 2,
    nodesPerCluster: 0,
    logger,
    configureCloudRoutes: true,
    hubConfig: {
      routes: { periodMs: 300, maxConcurrentPerAccount: 4 },
      lifecycle: {
        monitorPeriodMs: 300,
        deleteAfterChecks: 2,
        deleteAfterMs: 500,
        blastRadius: { maxPercent: 100, maxNodes: 10, windowMs: 600_000 },
      },
    },
  });
  await f.startHub();
  await f.startAgents();
  [hostile = "", victim = ""] = [...f.clusters.keys()];
}, 60_000);

afterAll(async () => {
  await f?.stop();
});

function podCidr(cluster: string, name: string, cidr: string): void {
  f.cluster(cluster).kube.patch("Node", undefined, name, "merge", {
    spec: { podCIDR: cidr, podCIDRs: [cidr] },
  });
}

test("forged providerIDs naming another cluster's instances: refused, never a backend, route or deletion", async () => {
  // The victim: two initialized nodes with pod CIDRs (routed), a load balancer over both.
  const victimNodes = f.addNodes(victim, 2);
  expect(await waitFor(() => f.progress().initialized === 2, 20_000)).toBe(true);
  victimNodes.forEach((n, i) => {
    podCidr(victim, n, `10.200.${i}.0/24`);
  });
  const [victimSvc] = f.addServices(victim, 1);
  const pidOf = (c: string, name: string) =>
    f.nodes(c).find((n) => n.metadata?.name === name)?.spec?.providerID ?? "";
  const stolen = victimNodes.map((n) => pidOf(victim, n));
  const stolenIds = stolen.map((p) => p.split("/").pop() ?? "");
  const victimRoutes = () => f.cloud.routes().filter((r) => r.tags[OWNER] === victim);
  expect(
    await waitFor(
      () =>
        victimRoutes().length === 2 &&
        f.services(victim).some((s) => (s.status?.loadBalancer?.ingress ?? []).length > 0),
      30_000,
    ),
  ).toBe(true);
  const victimMembers = () =>
    f.cloud
      .pools()
      .filter((p) => f.cloud.loadBalancers().some((l) => l.id === p.lbId && l.tags[OWNER] === victim))
      .flatMap((p) => p.members)
      .sort();
  const membersBefore = victimMembers();
  expect(membersBefore).toEqual([...stolenIds].sort());

  // The hostile cluster: one real node of its own, then two nodes claiming the victim's
  // instances: one as kubelet registers it with --provider-id (tainted), one posing as
  // initialized and NotReady (so node-lifecycle looks at it), both with pod CIDRs.
  const [own] = f.addNodes(hostile, 1);
  const kube = f.cluster(hostile).kube;
  kube.create("Node", {
    ...kubeletNode("forged-tainted", { podCIDRs: ["10.99.1.0/24"] }),
    spec: {
      providerID: stolen[0],
      podCIDR: "10.99.1.0/24",
      podCIDRs: ["10.99.1.0/24"],
      taints: [{ key: UNINITIALIZED, value: "true", effect: "NoSchedule" }],
    },
  });
  kube.create("Node", {
    ...kubeletNode("forged-notready", { ready: false, podCIDRs: ["10.99.2.0/24"] }),
    spec: { providerID: stolen[1], podCIDR: "10.99.2.0/24", podCIDRs: ["10.99.2.0/24"] },
  });
  const [hostileSvc] = f.addServices(hostile, 1);
  const outOfScope = (name: string) =>
    (kube.list("Event", "default") as KubeEvent[]).some(
      (e) => e.type === "Warning" && e.reason === "InstanceOutOfScope" && e.involvedObject?.name === name,
    );
  expect(await waitFor(() => outOfScope("forged-tainted"), 20_000)).toBe(true);
  expect(
    await waitFor(
      () => f.services(hostile).some((s) => (s.status?.loadBalancer?.ingress ?? []).length > 0),
      30_000,
    ),
  ).toBe(true);
  // Routes and lifecycle run many times over the forged nodes (every 300 ms).
  const hub = f.hub;
  if (hub === undefined) throw new Error("no hub");
  expect(await waitForReconciles(hub, "route", 10, 20_000)).toBe(true);
  expect(await waitForReconciles(hub, "node-lifecycle", 5, 20_000)).toBe(true);

  // Never initialized: the taint stays, no labels from the victim's instance.
  const forged = f.nodes(hostile).find((n) => n.metadata?.name === "forged-tainted");
  expect((forged?.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED)).toBe(true);
  // Never behind the hostile cluster's load balancer: its only member is its own instance.
  const hostileMembers = f.cloud
    .pools()
    .filter((p) => f.cloud.loadBalancers().some((l) => l.id === p.lbId && l.tags[OWNER] === hostile))
    .flatMap((p) => p.members);
  const ownId = pidOf(hostile, own ?? "")
    .split("/")
    .pop();
  expect(hostileMembers).toEqual([ownId]);
  // Never routed to: no route of the hostile cluster targets the victim's instances.
  const hostileRoutes = f.cloud.routes().filter((r) => r.tags[OWNER] === hostile);
  expect(hostileRoutes.some((r) => stolenIds.includes(r.targetInstanceId))).toBe(false);
  expect(hostileRoutes.map((r) => r.destinationCidr)).not.toContain("10.99.1.0/24");
  // Never deleted, never tainted shut down: the NotReady forged node is still there as it was,
  // and the victim's instances run.
  const notReady = f.nodes(hostile).find((n) => n.metadata?.name === "forged-notready");
  expect(notReady).toBeDefined();
  expect((notReady?.spec?.taints ?? []).some((t) => t.key.endsWith("/shutdown"))).toBe(false);
  for (const id of stolenIds) expect(f.cloud.getInstance(id)?.state).toBe("running");
  // Counted.
  const m = await hub.metrics.instancesOutOfScope.get();
  expect(m.values.find((v) => v.labels.cluster === hostile)?.value ?? 0).toBeGreaterThanOrEqual(2);
  expect(m.values.find((v) => v.labels.cluster === victim)).toBeUndefined();

  // The victim is untouched: same nodes, routes, members; its load balancer still serves.
  expect(
    f
      .nodes(victim)
      .map((n) => n.metadata?.name)
      .sort(),
  ).toEqual([...victimNodes].sort());
  expect(
    victimRoutes()
      .map((r) => r.targetInstanceId)
      .sort(),
  ).toEqual([...stolenIds].sort());
  expect(victimMembers()).toEqual(membersBefore);
  expect(
    f.services(victim).find((s) => s.metadata?.name === victimSvc)?.status?.loadBalancer?.ingress?.length,
  ).toBe(1);
  expect(hostileSvc).toBeDefined();
}, 120_000);
