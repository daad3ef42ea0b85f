/**
 * Routes end to end: each node's podCIDRs (dual-stack included) routed to its instance in the
 * account network's route table; stale owned routes removed; foreign routes untouched;
 * NetworkUnavailable follows; a node claiming another live node's range gets no route.
 */
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { DEMO_ACCOUNT, DEMO_REGION, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum, waitForReconciles } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const OWNER = "fleet-ccm.io/cluster";

interface KubeNode {
  metadata: { name: string };
  spec: { podCIDRs?: string[] };
  status: { conditions?: { type: string; status: string; reason?: string }[] };
}

let fleet: LocalFleet;
let cluster: string;

beforeAll(async () => {
  fleet = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    configureCloudRoutes: true,
    hubConfig: { routes: { periodMs: 500, maxConcurrentPerAccount: 4 } },
  });
  await fleet.startHub();
  await fleet.startAgents();
  cluster = [...fleet.clusters.keys()][0] ?? "";
});

afterAll(async () => {
  await fleet?.stop();
});

function instanceId(name: string): string {
  return fleet.cloud.listInstances().find((i) => i.name === name && i.state !== "terminated")?.id ?? "";
}

function setPodCIDRs(name: string, cidrs: string[]): void {
  fleet
    .cluster(cluster)
    .kube.patch("Node", undefined, name, "merge", { spec: { podCIDR: cidrs[0], podCIDRs: cidrs } });
}

/** The cluster's routes in the cloud, as "cidr -> instance", sorted. */
function ownedRoutes(): string[] {
  return fleet.cloud
    .routes()
    .filter((r) => r.tags[OWNER] === cluster)
    .map((r) => `${r.destinationCidr} -> ${r.targetInstanceId}`)
    .sort();
}

function want(entries: [string, string][]): string[] {
  return entries.map(([cidr, node]) => `${cidr} -> ${instanceId(node)}`).sort();
}

function networkUnavailable(name: string) {
  const n = fleet.cluster(cluster).kube.get("Node", undefined, name) as unknown as KubeNode | undefined;
  return n?.status.conditions?.find((c) => c.type === "NetworkUnavailable");
}

describe("routes", () => {
  test("podCIDRs routed, dual-stack included; removed nodes' routes deleted; a foreign route survives", async () => {
    const [a, b, c] = fleet.addNodes(cluster, 3);
    expect(await waitFor(() => fleet.progress().initialized === 3, 20_000)).toBe(true);
    // A route someone else made in the same table.
    const foreign = fleet.cloud.createRoute(DEMO_ACCOUNT, {
      region: DEMO_REGION,
      destinationCidr: "192.168.77.0/24",
      targetInstanceId: instanceId(c ?? ""),
      description: "made by hand",
    });

    setPodCIDRs(a ?? "", ["10.244.1.0/24"]);
    setPodCIDRs(b ?? "", ["10.244.2.0/24", "fd00:10:244:2::/64"]);
    let expected = want([
      ["10.244.1.0/24", a ?? ""],
      ["10.244.2.0/24", b ?? ""],
      ["fd00:10:244:2::/64", b ?? ""],
    ]);
    expect(await waitFor(() => ownedRoutes().join() === expected.join(), 20_000)).toBe(true);
    expect(await waitFor(() => networkUnavailable(b ?? "")?.status === "False", 20_000)).toBe(true);
    expect(networkUnavailable(b ?? "")?.reason).toBe("RouteCreated");
    expect(networkUnavailable(c ?? "")).toBeUndefined();

    // A new node with CIDRs, and one more dual-stack.
    const [d] = fleet.addNodes(cluster, 1);
    expect(await waitFor(() => fleet.progress().initialized === 4, 20_000)).toBe(true);
    setPodCIDRs(d ?? "", ["10.244.4.0/24", "fd00:10:244:4::/64"]);
    setPodCIDRs(c ?? "", ["10.244.3.0/24"]);
    expected = want([
      ["10.244.1.0/24", a ?? ""],
      ["10.244.2.0/24", b ?? ""],
      ["fd00:10:244:2::/64", b ?? ""],
      ["10.244.3.0/24", c ?? ""],
      ["10.244.4.0/24", d ?? ""],
      ["fd00:10:244:4::/64", d ?? ""],
    ]);
    expect(await waitFor(() => ownedRoutes().join() === expected.join(), 20_000)).toBe(true);

    // Nodes removed: their routes go, nothing else does.
    fleet.cluster(cluster).kube.delete("Node", undefined, b ?? "");
    fleet.cluster(cluster).kube.delete("Node", undefined, a ?? "");
    expected = want([
      ["10.244.3.0/24", c ?? ""],
      ["10.244.4.0/24", d ?? ""],
      ["fd00:10:244:4::/64", d ?? ""],
    ]);
    expect(await waitFor(() => ownedRoutes().join() === expected.join(), 20_000)).toBe(true);
    // Several more route syncs: stable, and the foreign route is untouched.
    const hub = fleet.hub;
    if (hub === undefined) throw new Error("no hub");
    const ops = () => metricSum(hub, "fleet_ccm_route_operations_total");
    // The pass that made the last change has counted its operations once it has finished.
    expect(await waitForReconciles(hub, "route", 1)).toBe(true);
    const opsBefore = await ops();
    expect(await waitForReconciles(hub, "route", 4)).toBe(true);
    expect(await ops()).toBe(opsBefore);
    expect(ownedRoutes()).toEqual(expected);
    const still = fleet.cloud.routes().find((r) => r.id === foreign.id);
    expect(still?.destinationCidr).toBe("192.168.77.0/24");
    expect(still?.description).toBe("made by hand");
  });

  test("a route that conflicts with a foreign one is refused with an Event and NetworkUnavailable=True", async () => {
    const [e] = fleet.addNodes(cluster, 1);
    expect(await waitFor(() => fleet.progress().initialized === fleet.progress().nodes, 20_000)).toBe(true);
    fleet.cloud.createRoute(DEMO_ACCOUNT, {
      region: DEMO_REGION,
      destinationCidr: "10.244.9.0/24",
      targetInstanceId: instanceId(e ?? ""),
    });
    setPodCIDRs(e ?? "", ["10.244.9.0/24"]);
    // The foreign route points at the right instance: it counts as routed.
    expect(await waitFor(() => networkUnavailable(e ?? "")?.status === "False", 20_000)).toBe(true);
    const [g] = fleet.addNodes(cluster, 1);
    expect(await waitFor(() => fleet.progress().initialized === fleet.progress().nodes, 20_000)).toBe(true);
    fleet.cloud.createRoute(DEMO_ACCOUNT, {
      region: DEMO_REGION,
      destinationCidr: "10.244.10.0/24",
      targetInstanceId: instanceId(e ?? ""),
    });
    setPodCIDRs(g ?? "", ["10.244.10.0/24"]);
    expect(await waitFor(() => networkUnavailable(g ?? "")?.status === "True", 20_000)).toBe(true);
    expect(networkUnavailable(g ?? "")?.reason).toBe("NoRouteCreated");
    const events = fleet.cluster(cluster).kube.list("Event", "default") as {
      reason?: string;
      message?: string;
    }[];
    expect(
      events.some((ev) => ev.reason === "FailedToCreateRoute" && ev.message?.includes("10.244.10.0/24")),
    ).toBe(true);
    // The foreign route is still there, still pointing where it did.
    expect(fleet.cloud.routes().find((r) => r.destinationCidr === "10.244.10.0/24")?.targetInstanceId).toBe(
      instanceId(e ?? ""),
    );
  });

  test("a node claiming a live node's pod CIDR, or a range overlapping it, gets no route: the route stays, an Event names the other node", async () => {
    const hub = fleet.hub;
    if (hub === undefined) throw new Error("no hub");
    const conflicts = () => metricSum(hub, "fleet_ccm_route_cidr_conflicts", { cluster });
    // From the first test: c holds 10.244.3.0/24, d 10.244.4.0/24 and fd00:10:244:4::/64.
    const [c, d] = ["10.244.3.0/24", "10.244.4.0/24"].map(
      (cidr) =>
        fleet
          .cluster(cluster)
          .kube.list("Node", undefined)
          .map((n) => n as unknown as KubeNode)
          .find((n) => n.spec.podCIDRs?.includes(cidr))?.metadata.name ?? "",
    );
    expect(networkUnavailable(c ?? "")?.reason).toBe("RouteCreated");
    const before = ownedRoutes();
    const [h, i] = fleet.addNodes(cluster, 2);
    expect(await waitFor(() => fleet.progress().initialized === fleet.progress().nodes, 20_000)).toBe(true);
    setPodCIDRs(h ?? "", ["10.244.3.0/24"]); // c's
    setPodCIDRs(i ?? "", ["10.244.4.128/25", "fd00:10:244:40::/64"]); // inside d's; its IPv6 is free
    const [freeV6 = ""] = want([["fd00:10:244:40::/64", i ?? ""]]);
    const expected = [...before, freeV6].sort();
    expect(await waitFor(() => ownedRoutes().includes(freeV6), 20_000)).toBe(true);
    // Several more route passes over both newcomers: c's and d's routes stay theirs.
    expect(await waitForReconciles(hub, "route", 3)).toBe(true);
    expect(ownedRoutes()).toEqual(expected);
    expect(networkUnavailable(c ?? "")).toMatchObject({ status: "False", reason: "RouteCreated" });
    expect(await waitFor(() => networkUnavailable(h ?? "")?.status === "True", 20_000)).toBe(true);
    expect(networkUnavailable(h ?? "")?.reason).toBe("NoRouteCreated");
    expect(await waitFor(() => networkUnavailable(i ?? "")?.status === "True", 20_000)).toBe(true);
    expect(await conflicts()).toBe(2);
    const conflictEvents = () =>
      (
        fleet.cluster(cluster).kube.list("Event", "default") as {
          reason?: string;
          message?: string;
          involvedObject?: { name?: string };
        }[]
      )
        .filter((ev) => ev.reason === "PodCIDRConflict")
        .map((ev) => `${ev.involvedObject?.name}: ${ev.message}`);
    expect(
      await waitFor(
        () => conflictEvents().some((m) => m.startsWith(`${h}: `) && m.includes(`claimed by node ${c},`)),
        20_000,
      ),
    ).toBe(true);
    expect(
      conflictEvents().some(
        (m) =>
          m.startsWith(`${i}: `) &&
          m.includes(`10.244.4.128/25`) &&
          m.includes(`overlaps 10.244.4.0/24 of node ${d},`),
      ),
    ).toBe(true);

    // The keeper goes: the newcomer gets the range.
    fleet.cluster(cluster).kube.delete("Node", undefined, c ?? "");
    expect(
      await waitFor(() => ownedRoutes().includes(want([["10.244.3.0/24", h ?? ""]])[0] ?? "-"), 20_000),
    ).toBe(true);
    expect(await waitFor(() => networkUnavailable(h ?? "")?.status === "False", 20_000)).toBe(true);
    expect(networkUnavailable(h ?? "")?.reason).toBe("RouteCreated");
    expect(await conflicts()).toBe(1);
  });
});
