import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { ConflictError, InstanceNotFoundError, ThrottledError } from "../../cloud/errors.js";
import type { CloudProvider, CloudRoute, InstanceMetadata, Routes } from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { VerifiedInstances } from "../../cloud/verified-instances.js";
import { parseHubConfig } from "../../config/load.js";
import { FleetState } from "../../fleet/state.js";
import { HubMetrics } from "../../metrics.js";
import { WorkQueue } from "../../queue/index.js";
import { FakeClock } from "../../util/clock.js";
import { Semaphore } from "../../util/semaphore.js";
import { ConvergenceTracker } from "../convergence.js";
import { routeController } from "./index.js";
import { ROUTE } from "./reconcile.js";

function node(name: string, cidrs: string[], over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    podCidrs: cidrs,
    conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    ...over,
  });
}

function meta(id: string, over: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return {
    providerID: `simulated://r1/${id}`,
    instanceID: id,
    name: id,
    instanceType: "t",
    region: "r1",
    zone: "z",
    addresses: [],
    state: "running",
    tags: {},
    ...over,
  };
}

/** A route table and an instance table; records deletions. */
function cloudDouble(outOfScope: Set<string> = new Set()) {
  const table: CloudRoute[] = [];
  const deleted: string[] = [];
  let seq = 0;
  const provider: CloudProvider = {
    name: "simulated",
    instances: {
      async getByProviderID(id) {
        const i = id.replace("simulated://r1/", "");
        if (i === "i-gone") throw new InstanceNotFoundError(id);
        return meta(i, outOfScope.has(i) ? { region: "elsewhere" } : {});
      },
      async findByName() {
        return [];
      },
      async listPage() {
        return { instances: [] };
      },
      parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
    routes: {
      async list() {
        return [...table];
      },
      async create(at, r) {
        const route = { ...r, id: `r-${++seq}`, ownerCluster: at.cluster };
        table.push(route);
        return route;
      },
      async delete(_at, r) {
        const i = table.findIndex((x) => x.id === r.id);
        if (i >= 0) table.splice(i, 1);
        deleted.push(r.destinationCIDR);
        return undefined;
      },
    },
  };
  const cloud: ClusterCloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  return { cloud, table, deleted };
}

function harness(opts: { outOfScope?: Set<string>; maxNodes?: number } = {}) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const d = cloudDouble(opts.outOfScope);
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [{ name: "a", provider: "simulated", region: "r1", credentials: { env: "K" } }],
      clusters: [],
      lifecycle: {
        deleteAfterChecks: 3,
        deleteAfterMs: 30_000,
        blastRadius: { maxPercent: 0, maxNodes: opts.maxNodes ?? 1, windowMs: 600_000 },
      },
    }),
  );
  const metrics = new HubMetrics(false);
  const writes = new Semaphore(4);
  const controller = routeController({
    config,
    fleet,
    queue: new WorkQueue({ clock }),
    tracker: new ConvergenceTracker(clock, 5000),
    verified: new VerifiedInstances(clock),
    metrics,
    clock,
    logger: pino({ level: "silent" }),
    cloudFor: () => d.cloud,
    cacheFor: () => undefined,
    lookupsFor: () => undefined,
    routeWritesFor: () => writes,
  });
  fleet.subscribe(controller.triggers);
  fleet.setConnected("c1", true);
  const owned = (cidr: string, target: string) =>
    d.table.push({
      id: `pre-${cidr}`,
      destinationCIDR: cidr,
      targetInstanceID: target,
      ownerCluster: "c1",
    });
  const reconcile = async () => {
    await Promise.resolve(); // let deltas settle (they are classified at the end of their run)
    return controller.reconcile({ cluster: "c1", kind: ROUTE, name: "" });
  };
  const routes = () =>
    d.table
      .map((r) => `${r.destinationCIDR}>${r.targetInstanceID}`)
      .sort()
      .join(" ");
  const held = async () => (await metrics.routesHeld.get()).values[0]?.value ?? 0;
  const blocked = async () => (await metrics.routeDeletionsBlocked.get()).values[0]?.value ?? 0;
  /** fleet_ccm_route_cidr_conflicts{cluster="c1"} (0 when the series does not exist). */
  const conflicts = async () =>
    (await metrics.registry.getMetricsAsJSON())
      .find((m) => m.name === "fleet_ccm_route_cidr_conflicts")
      ?.values.find((v) => v.labels["cluster"] === "c1")?.value ?? 0;
  return { clock, fleet, d, owned, reconcile, routes, held, blocked, conflicts };
}

describe("route controller: retry policy", () => {
  test("a throttled create comes back after the vendor's Retry-After, not the period", async () => {
    const h = harness();
    const routes = h.d.cloud.provider.routes as Routes;
    routes.create = async () => {
      throw new ThrottledError("429", 2_500);
    };
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    expect((await h.reconcile()).requeue).toEqual({ kind: "after", ms: 2_500 });
  });

  test("a throttled list waits for Retry-After", async () => {
    const h = harness();
    const routes = h.d.cloud.provider.routes as Routes;
    routes.list = async () => {
      throw new ThrottledError("429", 4_000);
    };
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    expect((await h.reconcile()).requeue).toEqual({ kind: "after", ms: 4_000 });
  });
});

describe("route controller: writes of one shared object", () => {
  test("writes of one lock key never overlap, other keys run at once; a conflict is repeated without an Event", async () => {
    const h = harness();
    const routes = h.d.cloud.provider.routes as Routes;
    const create = routes.create.bind(routes);
    const inside = new Map<string, number>();
    const most = new Map<string, number>();
    let conflicted = false;
    // One shared object per instance (as Linode's interface ranges): two CIDRs of node b share one.
    routes.lockKey = (_cluster, route) => `instance:${route.targetInstanceID}`;
    routes.create = async (cluster, route, signal) => {
      const key = route.targetInstanceID;
      inside.set(key, (inside.get(key) ?? 0) + 1);
      most.set(key, Math.max(most.get(key) ?? 0, inside.get(key) ?? 0));
      await new Promise((r) => setTimeout(r, 5));
      inside.set(key, (inside.get(key) ?? 1) - 1);
      if (route.destinationCIDR === "10.0.2.0/24" && !conflicted) {
        conflicted = true;
        throw new ConflictError("interface ranges changed meanwhile");
      }
      return create(cluster, route, signal);
    };
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24", "10.0.3.0/24"])], []);
    const out = await h.reconcile();
    expect(h.routes()).toBe("10.0.1.0/24>i-a 10.0.2.0/24>i-b 10.0.3.0/24>i-b");
    expect(most.get("i-b")).toBe(1);
    expect(conflicted).toBe(true);
    expect(out.events ?? []).toEqual([]);
  });
});

describe("route controller: owned routes go only on positive evidence", () => {
  test("routes are created for every claimed CIDR", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24", "fd00::/64"])], []);
    await h.reconcile();
    expect(h.routes()).toBe("10.0.1.0/24>i-a 10.0.2.0/24>i-b fd00::/64>i-b");
  });

  test("(a) a node claims the CIDR for another instance: the route is replaced at once", async () => {
    const h = harness();
    h.owned("10.0.1.0/24", "i-old");
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    await h.reconcile(); // the old route goes first…
    await h.reconcile(); // …then the new one is created
    expect(h.d.deleted).toEqual(["10.0.1.0/24"]);
    expect(h.routes()).toBe("10.0.1.0/24>i-a");
  });

  test("(b) a node deletion the agent reported releases its route at once", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24"])], []);
    await h.reconcile();
    h.fleet.deleteNode("c1", "b");
    await h.reconcile();
    expect(h.d.deleted).toEqual(["10.0.2.0/24"]);
    expect(h.routes()).toBe("10.0.1.0/24>i-a");
  });

  test("(b) a deletionTimestamp or a podCIDRs change releases at once; (a) a new providerID replaces", async () => {
    const h = harness();
    h.fleet.replace(
      "c1",
      [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24"]), node("c", ["10.0.3.0/24"])],
      [],
    );
    await h.reconcile();
    h.fleet.upsertNode("c1", node("a", ["10.0.1.0/24"], { deletionTimestamp: new Date() }));
    h.fleet.upsertNode("c1", node("b", ["10.0.9.0/24"]));
    h.fleet.upsertNode("c1", node("c", ["10.0.3.0/24"], { providerId: "simulated://r1/i-c2" }));
    await h.reconcile();
    expect([...h.d.deleted].sort()).toEqual(["10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"]);
    expect(h.routes()).toBe("10.0.3.0/24>i-c2 10.0.9.0/24>i-b");
  });

  test("(c) a node missing from a snapshot: held until K consecutive checks over T, then within budget", async () => {
    const h = harness({ maxNodes: 1 });
    const all = [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24"]), node("c", ["10.0.3.0/24"])];
    h.fleet.replace("c1", all, []);
    await h.reconcile();
    // The agent reconnects with a snapshot lacking b and c (deleted while it was away, or not).
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    for (let i = 0; i < 3; i++) {
      await h.reconcile();
      h.clock.advance(10_000);
    }
    expect(h.d.deleted).toEqual([]);
    expect(await h.held()).toBe(2);
    await h.reconcile(); // 4 checks over 30 s: confirmed, but only one fits the blast radius
    expect(h.d.deleted).toHaveLength(1);
    expect(await h.blocked()).toBe(1);
    expect(await h.held()).toBe(1);
    h.clock.advance(600_000);
    await h.reconcile();
    expect(h.d.deleted).toHaveLength(2);
    expect(h.routes()).toBe("10.0.1.0/24>i-a");
    expect(await h.held()).toBe(0);
  });

  test("(c) strikes are consecutive: a node back in the view (or a disconnect) starts them over", async () => {
    const h = harness();
    const a = node("a", ["10.0.1.0/24"]);
    const b = node("b", ["10.0.2.0/24"]);
    h.fleet.replace("c1", [a, b], []);
    await h.reconcile();
    h.fleet.replace("c1", [a], []);
    await h.reconcile();
    h.clock.advance(20_000);
    await h.reconcile();
    h.fleet.replace("c1", [a, b], []); // b is back
    await h.reconcile();
    h.fleet.replace("c1", [a], []);
    await h.reconcile();
    h.clock.advance(20_000);
    await h.reconcile();
    h.fleet.setConnected("c1", false);
    h.fleet.setConnected("c1", true);
    h.fleet.replace("c1", [a], []);
    h.clock.advance(20_000);
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
  });

  test("a view that claims no CIDR at all (empty snapshot, restarted hub) deletes nothing, ever", async () => {
    const h = harness({ maxNodes: 10 });
    h.owned("10.0.1.0/24", "i-a");
    h.owned("10.0.2.0/24", "i-b");
    h.fleet.replace("c1", [], []);
    for (let i = 0; i < 10; i++) {
      await h.reconcile();
      h.clock.advance(60_000);
    }
    expect(h.d.deleted).toEqual([]);
    expect(await h.held()).toBe(2);
  });

  test("a snapshot that drops a node is not a reported deletion (no prompt removal)", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24"])], []);
    await h.reconcile();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
  });

  test("a claimed CIDR whose instance is refused keeps its route", async () => {
    const h = harness({ outOfScope: new Set(["i-b"]) });
    h.owned("10.0.2.0/24", "i-b");
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"]), node("b", ["10.0.2.0/24"])], []);
    const out = await h.reconcile();
    h.clock.advance(120_000);
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
    expect(out.events?.some((e) => e.name === "b" && e.reason === "FailedToCreateRoute")).toBe(true);
  });

  test("routes of other clusters are never touched", async () => {
    const h = harness({ maxNodes: 10 });
    h.d.table.push({
      id: "x",
      destinationCIDR: "10.9.0.0/24",
      targetInstanceID: "i-x",
      ownerCluster: "c2",
    });
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"])], []);
    for (let i = 0; i < 5; i++) {
      await h.reconcile();
      h.clock.advance(60_000);
    }
    expect(h.routes()).toBe("10.0.1.0/24>i-a 10.9.0.0/24>i-x");
  });
});

describe("route controller: two live nodes claiming one range", () => {
  const EARLY = new Date("2026-01-01T00:00:00Z");
  const LATE = new Date("2026-02-01T00:00:00Z");
  type Out = Awaited<ReturnType<ReturnType<typeof harness>["reconcile"]>>;
  const conflictEvents = (out: Out) =>
    (out.events ?? [])
      .filter((e) => e.reason === "PodCIDRConflict")
      .map((e) => `${e.type} ${e.sourceComponent} ${e.name}: ${e.message}`);
  const networkUnavailable = (out: Out, name: string) => {
    const c = out.nodes
      ?.find((n) => n.name === name)
      ?.conditions.find((x) => x.type === "NetworkUnavailable");
    return c === undefined ? undefined : `${c.status}/${c.reason}`;
  };

  test("a newcomer claiming a routed node's pod CIDR gets no route: the route stays, an Event names the other node, the conflict is counted", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY })], []);
    await h.reconcile();
    expect(h.routes()).toBe("10.0.1.0/24>i-a");
    h.fleet.upsertNode("c1", node("b", ["10.0.1.0/24"], { creationTimestamp: LATE }));
    const out = await h.reconcile();
    await h.reconcile();
    h.clock.advance(60_000);
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
    expect(h.routes()).toBe("10.0.1.0/24>i-a");
    expect(conflictEvents(out)).toEqual([
      "Warning route_controller b: Not routing pod CIDR 10.0.1.0/24 to this node: it is also claimed by node a, which keeps the range (it has the route or was created first)",
    ]);
    expect(networkUnavailable(out, "b")).toBe("True/NoRouteCreated");
    expect(networkUnavailable(out, "a")).toBeUndefined(); // a's False/RouteCreated stands
    expect(await h.conflicts()).toBe(1);
  });

  test("the node whose route it is keeps the range even against an older node", async () => {
    const h = harness();
    h.owned("10.0.1.0/24", "i-b");
    h.fleet.replace(
      "c1",
      [
        node("b", ["10.0.1.0/24"], { creationTimestamp: LATE }),
        node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY }),
      ],
      [],
    );
    const out = await h.reconcile();
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
    expect(h.routes()).toBe("10.0.1.0/24>i-b");
    expect(conflictEvents(out)).toHaveLength(1);
    expect(conflictEvents(out)[0]).toMatch(/^Warning route_controller a: .* claimed by node b,/);
    expect(networkUnavailable(out, "a")).toBe("True/NoRouteCreated");
    expect(networkUnavailable(out, "b")).toBe("False/RouteCreated");
  });

  test("with no route yet, the earlier-created node gets the range whatever the report's order, and keeps it", async () => {
    for (const order of ["ab", "ba"]) {
      const h = harness();
      const a = node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY });
      const b = node("b", ["10.0.1.0/24"], { creationTimestamp: LATE });
      h.fleet.replace("c1", order === "ab" ? [a, b] : [b, a], []);
      for (let i = 0; i < 3; i++) {
        const out = await h.reconcile();
        expect(conflictEvents(out)).toEqual([expect.stringMatching(/^Warning route_controller b: /)]);
        h.clock.advance(10_000);
      }
      expect(h.routes()).toBe("10.0.1.0/24>i-a");
      expect(h.d.deleted).toEqual([]);
    }
  });

  test("overlapping ranges (contained, containing, IPv6) are refused too; a dual-stack newcomer keeps its free family", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.0.0/16", "fd00:1::/48"], { creationTimestamp: EARLY })], []);
    await h.reconcile();
    expect(h.routes()).toBe("10.0.0.0/16>i-a fd00:1::/48>i-a");
    h.fleet.upsertNode("c1", node("b", ["10.0.7.0/24"], { creationTimestamp: LATE })); // inside a's
    h.fleet.upsertNode("c1", node("d", ["10.1.0.0/24", "fd00:1:0:5::/64"], { creationTimestamp: LATE }));
    h.fleet.upsertNode("c1", node("e", ["10.0.0.0/8"], { creationTimestamp: LATE })); // contains a's
    const out = await h.reconcile();
    await h.reconcile();
    expect(h.d.deleted).toEqual([]);
    expect(h.routes()).toBe("10.0.0.0/16>i-a 10.1.0.0/24>i-d fd00:1::/48>i-a");
    expect(conflictEvents(out).sort()).toEqual([
      "Warning route_controller b: Not routing pod CIDR 10.0.7.0/24 to this node: it overlaps 10.0.0.0/16 of node a, which keeps the range (it has the route or was created first)",
      "Warning route_controller d: Not routing pod CIDR fd00:1:0:5::/64 to this node: it overlaps fd00:1::/48 of node a, which keeps the range (it has the route or was created first)",
      "Warning route_controller e: Not routing pod CIDR 10.0.0.0/8 to this node: it overlaps 10.0.0.0/16 of node a, which keeps the range (it has the route or was created first)",
    ]);
    for (const n of ["b", "d", "e"]) expect(networkUnavailable(out, n)).toBe("True/NoRouteCreated");
    expect(await h.conflicts()).toBe(3);
  });

  test("resolution: once the keeper is deleted or its podCIDRs change, the other node gets the range", async () => {
    const h = harness();
    h.fleet.replace(
      "c1",
      [
        node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY }),
        node("b", ["10.0.1.0/24"], { creationTimestamp: LATE }),
        node("c", ["10.0.2.0/24"], { creationTimestamp: EARLY }),
        node("d", ["10.0.2.0/25"], { creationTimestamp: LATE }),
      ],
      [],
    );
    await h.reconcile();
    expect(h.routes()).toBe("10.0.1.0/24>i-a 10.0.2.0/24>i-c");
    expect(await h.conflicts()).toBe(2);
    h.clock.advance(6_000); // past the condition publications' deadline
    h.fleet.deleteNode("c1", "a");
    h.fleet.upsertNode("c1", node("c", ["10.0.3.0/24"], { creationTimestamp: EARLY }));
    const out = await h.reconcile();
    expect([...h.d.deleted].sort()).toEqual(["10.0.1.0/24", "10.0.2.0/24"]);
    expect(h.routes()).toBe("10.0.1.0/24>i-b 10.0.2.0/25>i-d 10.0.3.0/24>i-c");
    expect(conflictEvents(out)).toEqual([]);
    expect(networkUnavailable(out, "b")).toBe("False/RouteCreated");
    expect(networkUnavailable(out, "d")).toBe("False/RouteCreated");
    expect(await h.conflicts()).toBe(0);
  });

  test("a node being deleted keeps no range: its route is released to the live claimant", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY })], []);
    await h.reconcile();
    h.fleet.upsertNode(
      "c1",
      node("a", ["10.0.1.0/24"], { creationTimestamp: EARLY, deletionTimestamp: LATE }),
    );
    h.fleet.upsertNode("c1", node("b", ["10.0.1.0/24"], { creationTimestamp: LATE }));
    const out = await h.reconcile();
    expect(h.routes()).toBe("10.0.1.0/24>i-b");
    expect(conflictEvents(out)).toEqual([]);
  });
});
