import { Node, ObjectKind, Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { FleetState } from "../fleet/state.js";
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from "../k8s/well-known.js";
import { FleetObservations } from "./observations.js";
import {
  type ClusterInput,
  clusterDetail,
  fleetJson,
  type HubHealthInput,
  hubHealthJson,
  REASON_UNDELIVERABLE,
  undeliverable,
} from "./views.js";

const healthyHub: HubHealthInput = {
  nats: { connected: true, problem: null, sinceMs: 1_000, kept: 0, dropped: 0, accountProblem: null },
  grpc: { listening: true, listen: "0.0.0.0:7443" },
  leases: undefined,
};
const natsDown: HubHealthInput = {
  ...healthyHub,
  nats: {
    ...healthyHub.nats,
    connected: false,
    problem: "lost the connection to NATS at nats://n:4222",
    kept: 3,
  },
};

const MIN = 60_000;
const ready = (status: string) => [{ type: "Ready", status, reason: "", message: "" }];
const node = (name: string, over: Partial<Node> = {}) =>
  Node.fromPartial({ name, uid: `uid-${name}`, resourceVersion: "1", conditions: ready("True"), ...over });
const lb = (name: string, over: Partial<Service> = {}) =>
  Service.fromPartial({
    namespace: "default",
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    type: "LoadBalancer",
    ...over,
  });
const uninit = [{ key: TAINT_UNINITIALIZED, value: "true", effect: "NoSchedule" }];

function setup() {
  let now = 1_000_000;
  const fleet = new FleetState({ now: () => now });
  const obs = new FleetObservations(() => now);
  fleet.subscribe(obs.listener());
  fleet.setConnected("c1", true);
  const input = (over: Partial<ClusterInput> = {}): ClusterInput => ({
    name: "c1",
    account: "acct",
    routesEnabled: false,
    loadBalancerClass: undefined,
    view: fleet.view("c1"),
    observations: obs.of("c1"),
    agent: { agentVersion: "0.1.0", kubernetesVersion: "v1.31.0" },
    patches: { inflight: 0, republished: 0, failedApply: 0 },
    accountThrottled: false,
    undeliverable: null,
    ...over,
  });
  return { fleet, obs, input, advance: (ms: number) => (now += ms), now: () => now };
}

const event = (kind: "node" | "service", name: string, type: string, reason: string, message = reason) => ({
  kind: kind === "node" ? ObjectKind.OBJECT_KIND_NODE : ObjectKind.OBJECT_KIND_SERVICE,
  namespace: kind === "node" ? "" : "default",
  name,
  uid: `uid-${name}`,
  type,
  reason,
  message,
  sourceComponent: "test",
});

describe("cluster view", () => {
  test("nodes: initialized, waiting with the last Warning reason and since when, shutdown, deletion held", () => {
    const { fleet, obs, input, advance, now } = setup();
    const start = now();
    fleet.replace(
      "c1",
      [
        node("ok"),
        node("ghost", { taints: uninit }),
        node("new", { taints: uninit }),
        node("off", {
          taints: [{ key: TAINT_SHUTDOWN, value: "", effect: "NoSchedule" }],
          conditions: ready("False"),
        }),
        node("gone", { conditions: ready("Unknown") }),
      ],
      [],
    );
    obs.published("c1", [
      event("node", "ghost", "Warning", "InstanceNotFound", "Instance for node ghost not found"),
      event("node", "gone", "Warning", "NodeDeletionLimitExceeded"),
      event("node", "x", "Normal", "DeletingNode"),
    ]);
    // The same deletion published again is one deletion.
    obs.published("c1", [event("node", "x", "Normal", "DeletingNode")]);
    advance(2 * MIN);
    const d = clusterDetail(input(), { nowMs: now(), waitingUnhealthyAfterMs: 5 * MIN });
    const by = Object.fromEntries(d.nodeList.map((n) => [n.name, n]));
    expect(by["ok"]?.state).toBe("initialized");
    expect(by["ghost"]).toMatchObject({
      state: "waiting",
      reason: "InstanceNotFound",
      message: "Instance for node ghost not found",
      since: new Date(start).toISOString(),
    });
    expect(by["new"]).toMatchObject({ state: "waiting", reason: "Initializing" });
    expect(by["off"]?.state).toBe("shutdown");
    expect(by["gone"]?.state).toBe("deletion-held");
    expect(d.nodes).toMatchObject({
      total: 5,
      initialized: 3,
      waiting: 2,
      waitingReasons: { InstanceNotFound: 1, Initializing: 1 },
      shutdown: 1,
      deletedByLifecycle: 1,
      deletionsHeld: 1,
    });
    // Waiting 2 min of 5: a warning, not yet unhealthy.
    expect(d.health).toBe("warning");
    advance(4 * MIN);
    const later = clusterDetail(input(), { nowMs: now(), waitingUnhealthyAfterMs: 5 * MIN });
    expect(later.health).toBe("unhealthy");
    expect(later.problems.map((p) => p.message)).toContain("2 nodes waiting for initialization over 5 min");
  });

  test("an Event for an earlier object of the same name does not explain the new one", () => {
    const { fleet, obs, input, now } = setup();
    obs.published("c1", [event("node", "n", "Warning", "InstanceNotFound")]);
    fleet.replace("c1", [node("n", { uid: "other", taints: uninit })], []);
    const d = clusterDetail(input(), { nowMs: now(), waitingUnhealthyAfterMs: MIN });
    expect(d.nodeList[0]).toMatchObject({ state: "waiting", reason: "Initializing" });
  });

  test("load balancers: only handled LoadBalancer Services; ready, in progress, failing with the last reason", () => {
    const { fleet, obs, input, now } = setup();
    fleet.replace(
      "c1",
      [node("a")],
      [
        lb("web", { ingress: [{ ip: "203.0.113.5", hostname: "", ipMode: "" }] }),
        lb("new"),
        lb("bad", { ingress: [{ ip: "203.0.113.6", hostname: "", ipMode: "" }] }),
        lb("theirs", { loadBalancerClass: "example.com/other" }),
        Service.fromPartial({ namespace: "default", name: "kubernetes", uid: "k", type: "ClusterIP" }),
      ],
    );
    obs.published("c1", [
      event("service", "web", "Normal", "EnsuredLoadBalancer"),
      event("service", "new", "Normal", "EnsuringLoadBalancer"),
      event("service", "bad", "Warning", "SyncLoadBalancerFailed", "Error syncing load balancer: quota"),
    ]);
    const d = clusterDetail(input(), { nowMs: now(), waitingUnhealthyAfterMs: MIN });
    expect(d.services).toEqual({ loadBalancers: 3, ready: 1, inProgress: 1, failing: 1 });
    expect(d.loadBalancerList.find((l) => l.name === "bad")).toMatchObject({
      state: "failing",
      reason: "SyncLoadBalancerFailed",
      message: "Error syncing load balancer: quota",
    });
    expect(d.loadBalancerList.find((l) => l.name === "web")?.ingress).toEqual(["203.0.113.5"]);
    expect(d.health).toBe("unhealthy");
  });

  test("held and refused objects, a disconnected agent, a throttled account", () => {
    const { fleet, input, now } = setup();
    fleet.replace(
      "c1",
      [node("a")],
      [],
      [{ kind: "node", namespace: "", name: "huge", uid: "u", limit: "label", message: "too big" }],
    );
    const d = clusterDetail(input({ accountThrottled: true }), {
      nowMs: now(),
      waitingUnhealthyAfterMs: MIN,
    });
    expect(d.objects).toEqual({ refused: 1, held: 0 });
    expect(d.refusedList[0]).toMatchObject({ kind: "node", key: "huge", message: "too big" });
    expect(d.problems.map((p) => p.message)).toContain("account acct throttled by the cloud");
    fleet.setConnected("c1", false);
    const off = clusterDetail(input(), { nowMs: now(), waitingUnhealthyAfterMs: MIN });
    expect(off.agent.connected).toBe(false);
    expect(off.health).toBe("unhealthy");
    expect(off.problems[0]?.message).toBe("agent disconnected");
  });

  test("the fleet lists clusters trouble first", () => {
    const { input, now } = setup();
    const policy = { nowMs: now(), waitingUnhealthyAfterMs: MIN };
    const ok = { ...clusterDetail(input(), policy), name: "a", health: "ok" as const };
    const bad = { ...clusterDetail(input(), policy), name: "z", health: "unhealthy" as const };
    const f = fleetJson(hubHealthJson(healthyHub), [ok, bad], [], now());
    expect(f.clusters.map((c) => c.name)).toEqual(["z", "a"]);
    expect(f.health).toBe("unhealthy");
    expect(f.counts).toEqual({ clusters: 2, unhealthy: 1, warning: 0 });
  });

  test("the hub's own health: each part it needs, and the fleet is no better than the hub", () => {
    const ok = hubHealthJson(healthyHub);
    expect(ok).toMatchObject({ health: "ok", problems: [], leases: null });
    expect(ok.nats).toMatchObject({ connected: true, since: new Date(1_000).toISOString() });
    const down = hubHealthJson({
      ...natsDown,
      grpc: { listening: false, listen: "0.0.0.0:7443" },
      leases: { problem: "the lease bucket is not reachable" },
    });
    expect(down.health).toBe("unhealthy");
    expect(down.problems.map((p) => p.message)).toEqual([
      "gRPC: the agents' listener is not up yet",
      "NATS: lost the connection to NATS at nats://n:4222",
      "leases: the lease bucket is not reachable",
    ]);
    expect(down.leases).toEqual({ ok: false, problem: "the lease bucket is not reachable" });
    expect(fleetJson(down, [], [], 0).health).toBe("unhealthy");
  });

  test("results that cannot be delivered: the cluster is unhealthy, a Service in progress and a waiting node say why", () => {
    const { fleet, input, now } = setup();
    fleet.replace("c1", [node("n1", { taints: uninit })], [lb("web")]);
    const policy = { nowMs: now(), waitingUnhealthyAfterMs: MIN };
    const why = undeliverable(natsDown, { kept: 2, refused: null });
    expect(why).toBe(
      "results cannot reach the agent (NATS: lost the connection to NATS at nats://n:4222); 2 results kept for delivery",
    );
    expect(undeliverable(healthyHub, { kept: 0, refused: null })).toBeNull();
    // Connected, but NATS refuses this cluster's subject.
    expect(undeliverable(healthyHub, { kept: 0, refused: "the hub's publish was refused" })).toBe(
      "results cannot reach the agent (NATS: the hub's publish was refused)",
    );
    const d = clusterDetail(input({ undeliverable: why }), policy);
    expect(d.health).toBe("unhealthy");
    expect(d.problems.map((p) => p.message)).toContain(why);
    expect(d.loadBalancerList[0]).toMatchObject({
      state: "in-progress",
      reason: REASON_UNDELIVERABLE,
      message: why,
    });
    expect(d.nodeList[0]).toMatchObject({ state: "waiting", reason: REASON_UNDELIVERABLE, message: why });
    const fine = clusterDetail(input(), policy);
    expect(fine.loadBalancerList[0]?.reason).toBeUndefined();
    expect(fine.nodeList[0]?.reason).toBe("Initializing");
  });
});
