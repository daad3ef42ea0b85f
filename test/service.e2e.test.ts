/**
 * LoadBalancer Services end to end: real nats-server, gRPC, API simulator and the simulated
 * cloud's load balancers with their sub-resources. The cloud inventory is checked at each step.
 */
import { afterEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";
const UID_TAG = "fleet-ccm.io/service-uid";

interface KubeService {
  metadata: { name: string; namespace: string; uid: string; finalizers?: string[] };
  spec: { ports: { port: number; nodePort: number; protocol: string }[] };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

let fleet: LocalFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

function svc(f: LocalFleet, cluster: string, name: string): KubeService | undefined {
  return f.cluster(cluster).kube.get("Service", "default", name) as unknown as KubeService | undefined;
}

function hasIngress(s: KubeService | undefined): boolean {
  return (s?.status?.loadBalancer?.ingress ?? []).length > 0;
}

/** Everything in the cloud that belongs to one Service (by its owner tag). */
function owned(f: LocalFleet, uid: string) {
  const inv = f.cloud.inventory();
  const mine = <T extends { tags: Readonly<Record<string, string>> }>(xs: T[]) =>
    xs.filter((x) => x.tags[UID_TAG] === uid);
  return {
    loadBalancers: mine(inv.loadBalancers),
    listeners: mine(inv.listeners),
    pools: mine(inv.pools),
    healthChecks: mine(inv.healthChecks),
    firewallRules: mine(inv.firewallRules),
  };
}

function total(o: ReturnType<typeof owned>): number {
  return (
    o.loadBalancers.length +
    o.listeners.length +
    o.pools.length +
    o.healthChecks.length +
    o.firewallRules.length
  );
}

function instanceIds(f: LocalFleet, names: readonly string[]): string[] {
  return names
    .map((n) => f.cloud.listInstances().find((i) => i.name === n && i.state !== "terminated")?.id ?? "")
    .sort();
}

function nodeNames(f: LocalFleet, cluster: string): string[] {
  return f.nodes(cluster).map((n) => n.metadata?.name ?? "");
}

/** One cluster with `nodes` nodes, its hub and agent running. */
async function oneCluster(nodes: number): Promise<{ f: LocalFleet; c: string }> {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  await fleet.startHub();
  await fleet.startAgents();
  const c = [...fleet.clusters.keys()][0] ?? "";
  if (nodes > 0) fleet.addNodes(c, nodes);
  return { f: fleet, c };
}

describe("LoadBalancer Services", () => {
  test("create, update ports, scale nodes up and down, exclude a node, delete: the cloud matches at each step", async () => {
    const { f, c } = await oneCluster(0);
    const kube = f.cluster(c).kube;
    f.addNodes(c, 3);
    expect(await waitFor(() => f.progress().initialized === 3, 20_000)).toBe(true);
    const [name] = f.addServices(c, 1);
    const svcName = name ?? "";
    expect(await waitFor(() => hasIngress(svc(f, c, svcName)), 20_000)).toBe(true);
    const s0 = svc(f, c, svcName);
    const uid = s0?.metadata.uid ?? "";
    expect(s0?.metadata.finalizers).toContain(FINALIZER);
    let o = owned(f, uid);
    expect(o.loadBalancers).toHaveLength(1);
    const lb = o.loadBalancers[0];
    expect(s0?.status?.loadBalancer?.ingress?.[0]?.ip).toBe(lb?.ingress.ip);
    expect(o.listeners.map((l) => [l.protocol, l.port])).toEqual([["TCP", 80]]);
    expect(o.pools).toHaveLength(1);
    expect([...(o.pools[0]?.members ?? [])].sort()).toEqual(instanceIds(f, nodeNames(f, c)));
    expect(o.pools[0]?.targetPort).toBe(s0?.spec.ports[0]?.nodePort);
    expect(o.healthChecks).toHaveLength(1);
    const events = kube.list("Event", "default") as { reason?: string; involvedObject?: { name?: string } }[];
    expect(events.filter((e) => e.involvedObject?.name === svcName).map((e) => e.reason)).toEqual(
      expect.arrayContaining(["EnsuringLoadBalancer", "EnsuredLoadBalancer"]),
    );

    // Ports: one more, updated in place (same load balancer).
    kube.patch("Service", "default", svcName, "merge", {
      spec: {
        ports: [
          { name: "http", port: 80, targetPort: 8080 },
          { name: "https", port: 443, targetPort: 8443 },
        ],
      },
    });
    expect(
      await waitFor(() => owned(f, uid).listeners.length === 2 && owned(f, uid).pools.length === 2, 20_000),
    ).toBe(true);
    o = owned(f, uid);
    expect(o.loadBalancers.map((x) => x.id)).toEqual([lb?.id]);
    expect(o.listeners.map((l) => l.port).sort()).toEqual([443, 80].sort());

    const membersMatch = () =>
      owned(f, uid).pools.every((p) => [...p.members].sort().join() === expected().join());
    let expected = () => instanceIds(f, nodeNames(f, c));
    // Scale up.
    f.addNodes(c, 2);
    expect(await waitFor(() => f.progress().initialized === 5 && membersMatch(), 20_000)).toBe(true);
    // Scale down: a node deleted.
    const gone = nodeNames(f, c)[0] ?? "";
    kube.delete("Node", undefined, gone);
    expect(await waitFor(membersMatch, 20_000)).toBe(true);
    // Exclude a node by label.
    const excluded = nodeNames(f, c)[0] ?? "";
    kube.patch("Node", undefined, excluded, "merge", {
      metadata: { labels: { "node.kubernetes.io/exclude-from-external-load-balancers": "true" } },
    });
    expected = () =>
      instanceIds(
        f,
        nodeNames(f, c).filter((n) => n !== excluded),
      );
    expect(await waitFor(membersMatch, 20_000)).toBe(true);
    expect(owned(f, uid).loadBalancers.map((x) => x.id)).toEqual([lb?.id]);

    // Delete: every sub-resource, then the finalizer; the Service goes away.
    kube.delete("Service", "default", svcName);
    expect(await waitFor(() => svc(f, c, svcName) === undefined, 20_000)).toBe(true);
    expect(total(owned(f, uid))).toBe(0);
    expect(f.cloud.auditLoadBalancers().orphans).toEqual([]);
  });

  test("type change away from LoadBalancer cleans up the cloud and the ingress", async () => {
    const { f, c } = await oneCluster(2);
    const [name] = f.addServices(c, 1);
    expect(await waitFor(() => hasIngress(svc(f, c, name ?? "")), 20_000)).toBe(true);
    const uid = svc(f, c, name ?? "")?.metadata.uid ?? "";
    f.cluster(c).kube.patch("Service", "default", name ?? "", "merge", { spec: { type: "ClusterIP" } });
    expect(
      await waitFor(
        () =>
          total(owned(f, uid)) === 0 &&
          !(svc(f, c, name ?? "")?.metadata.finalizers ?? []).includes(FINALIZER),
        20_000,
      ),
    ).toBe(true);
    expect(hasIngress(svc(f, c, name ?? ""))).toBe(false);
  });

  test("two clusters with Services of the same namespace/name get separate load balancers", async () => {
    fleet = await LocalFleet.start({ clusters: 2, nodesPerCluster: 0, logger });
    const f = fleet;
    await f.startHub();
    await f.startAgents();
    const [a, b] = [...f.clusters.keys()];
    for (const c of [a, b]) {
      f.addNodes(c ?? "", 2);
      f.addServices(c ?? "", 1);
    }
    expect(await waitFor(() => f.serviceProgress().withIngress === 2, 20_000)).toBe(true);
    const ua = svc(f, a ?? "", "web-0000")?.metadata.uid ?? "";
    const ub = svc(f, b ?? "", "web-0000")?.metadata.uid ?? "";
    const la = owned(f, ua).loadBalancers;
    const lb = owned(f, ub).loadBalancers;
    expect(la).toHaveLength(1);
    expect(lb).toHaveLength(1);
    expect(la[0]?.id).not.toBe(lb[0]?.id);
    expect(la[0]?.name).not.toBe(lb[0]?.name);
    // Each pool holds only its own cluster's instances (once the nodes are initialized).
    const members = (uid: string) => [...(owned(f, uid).pools[0]?.members ?? [])].sort().join();
    const matches = () =>
      members(ua) === instanceIds(f, nodeNames(f, a ?? "")).join() &&
      members(ub) === instanceIds(f, nodeNames(f, b ?? "")).join();
    expect(await waitFor(matches, 20_000)).toBe(true);
    expect(members(ua).split(",")).toHaveLength(2);
  });

  test("an invalid annotation gives SyncLoadBalancerFailed naming it, and nothing in the cloud", async () => {
    const { f, c } = await oneCluster(1);
    f.cluster(c).kube.create("Service", {
      metadata: {
        name: "bad",
        namespace: "default",
        annotations: { "lb.fleet-ccm.io/health-check-interval": "often" },
      },
      spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
    });
    const failed = () =>
      (f.cluster(c).kube.list("Event", "default") as { reason?: string; message?: string }[]).find(
        (e) => e.reason === "SyncLoadBalancerFailed",
      );
    expect(await waitFor(() => failed() !== undefined, 20_000)).toBe(true);
    expect(failed()?.message).toContain("lb.fleet-ccm.io/health-check-interval");
    const uid = svc(f, c, "bad")?.metadata.uid ?? "";
    expect(total(owned(f, uid))).toBe(0);
  });

  test("allocateLoadBalancerNodePorts false: a port with a node port is built, one without is named in a Warning; a Service with none is refused", async () => {
    const { f, c } = await oneCluster(2);
    const kube = f.cluster(c).kube;
    for (const [name, ports] of [
      [
        "partial",
        [
          { name: "http", port: 80 },
          { name: "https", port: 443, nodePort: 30443 },
        ],
      ],
      ["none", [{ name: "http", port: 80 }]],
    ] as const)
      kube.create("Service", {
        metadata: { name, namespace: "default" },
        spec: { type: "LoadBalancer", allocateLoadBalancerNodePorts: false, ports },
      });
    // The API server allocated no node port where none was asked for.
    expect(svc(f, c, "partial")?.spec.ports.map((p) => p.nodePort ?? 0)).toEqual([0, 30443]);
    const event = (name: string, reason: string) =>
      (
        kube.list("Event", "default") as {
          reason?: string;
          message?: string;
          involvedObject?: { name?: string };
        }[]
      ).find((e) => e.reason === reason && e.involvedObject?.name === name);
    expect(await waitFor(() => hasIngress(svc(f, c, "partial")), 20_000)).toBe(true);
    const partial = owned(f, svc(f, c, "partial")?.metadata.uid ?? "");
    expect(partial.listeners.map((l) => l.port)).toEqual([443]);
    expect(partial.pools.map((p) => p.targetPort)).toEqual([30443]);
    expect(event("partial", "LoadBalancerPortsSkipped")?.message).toContain("port 80/TCP left out");
    expect(await waitFor(() => event("none", "SyncLoadBalancerFailed") !== undefined, 20_000)).toBe(true);
    expect(event("none", "SyncLoadBalancerFailed")?.message).toContain(
      "no port of the Service has a node port",
    );
    expect(hasIngress(svc(f, c, "none"))).toBe(false);
    expect(total(owned(f, svc(f, c, "none")?.metadata.uid ?? ""))).toBe(0);
  });

  test("50 Services across 3 clusters with 30% cloud faults: all converge once faults stop, no duplicates, no orphans", async () => {
    fleet = await LocalFleet.start({
      clusters: 3,
      nodesPerCluster: 0,
      logger,
      requestTimeoutMs: 1000,
    });
    const f = fleet;
    await f.startHub();
    await f.startAgents();
    const clusters = [...f.clusters.keys()];
    for (const c of clusters) f.addNodes(c, 3);
    expect(await waitFor(() => f.progress().initialized === 9, 20_000)).toBe(true);
    f.cloud.setFaults({
      errorRate: 0.1,
      throttleRate: 0.1,
      throttleRetryAfterSeconds: 0,
      timeoutRate: 0.1,
      timeoutHangMs: 3000,
    });
    const hub = f.hub;
    if (hub === undefined) throw new Error("no hub");
    const failedCalls = async () =>
      (await metricSum(hub, "fleet_ccm_cloud_calls_total")) -
      (await metricSum(hub, "fleet_ccm_cloud_calls_total", { outcome: "ok" }));
    const failedBefore = await failedCalls();
    for (const [i, c] of clusters.entries()) f.addServices(c, i === 0 ? 18 : 16);
    // The faults stop once half the Services converged through them, after many failed calls.
    expect(
      await waitFor(
        async () => f.serviceProgress().withIngress >= 25 && (await failedCalls()) >= failedBefore + 40,
        // Patient: under 30% faults with two suites side by side, half may take a while.
        120_000,
        200,
      ),
    ).toBe(true);
    f.cloud.resetFaults();
    expect(await waitFor(() => f.serviceProgress().withIngress === 50, 90_000, 200)).toBe(true);
    const audit = f.cloud.auditLoadBalancers();
    expect(audit.duplicates).toEqual([]);
    expect(audit.orphans).toEqual([]);
    expect(f.cloud.inventory().loadBalancers).toHaveLength(50);
  }, 240_000);

  test("hub killed (SIGKILL) between sub-resource creations: one load balancer per Service, no orphans", async () => {
    fleet = await LocalFleet.start({
      clusters: 1,
      nodesPerCluster: 0,
      logger,
      cloudLatencyMs: 150,
    });
    const f = fleet;
    const first = await f.spawnHubProcess();
    await f.startAgents();
    const c = [...f.clusters.keys()][0] ?? "";
    f.addNodes(c, 2);
    expect(await waitFor(() => f.progress().initialized === 2, 30_000)).toBe(true);
    f.addServices(c, 3);
    // Kill as soon as a load balancer exists but its sub-resources are not all there yet.
    const midway = () => {
      const inv = f.cloud.inventory();
      return inv.loadBalancers.length > 0 && inv.listeners.length < 3;
    };
    expect(await waitFor(midway, 30_000, 5)).toBe(true);
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    await f.spawnHubProcess(first.grpcPort);
    expect(await waitFor(() => f.serviceProgress().withIngress === 3, 60_000, 100)).toBe(true);
    const audit = f.cloud.auditLoadBalancers();
    expect(audit.duplicates).toEqual([]);
    expect(audit.orphans).toEqual([]);
    expect(f.cloud.inventory().loadBalancers).toHaveLength(3);
  }, 120_000);
});
