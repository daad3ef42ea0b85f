import { Node, Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { FleetState } from "./fleet/state.js";
import { loadBalancerStats, NodesWaitingStats } from "./fleet-stats.js";
import { TAINT_UNINITIALIZED } from "./k8s/well-known.js";
import { HubMetrics } from "./metrics.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const node = (name: string, createdMs: number, waiting: boolean) =>
  Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    creationTimestamp: new Date(createdMs),
    taints: waiting ? [{ key: TAINT_UNINITIALIZED, value: "true", effect: "NoSchedule" }] : [],
  });
const lb = (name: string, ingress: boolean, extra: Partial<Service> = {}) =>
  Service.fromPartial({
    namespace: "default",
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    type: "LoadBalancer",
    ingress: ingress ? [{ ip: "203.0.113.1" }] : [],
    ...extra,
  });

function fleet(): FleetState {
  const f = new FleetState({ hold: { maxObjects: 100, maxPercent: 100, confirmAfterMs: 0 }, now: () => T0 });
  f.replace(
    "a",
    [node("n1", T0 - 300_000, true), node("n2", T0 - 60_000, true), node("n3", T0 - 900_000, false)],
    [
      lb("ready", true),
      lb("pending", false),
      lb("failing", true),
      lb("cluster-ip", false, { type: "ClusterIP" }),
      lb("other-class", false, { loadBalancerClass: "example.com/other" }),
    ],
  );
  f.replace("b", [node("m1", T0 - 900_000, false)], []);
  return f;
}

describe("fleet state gauges", () => {
  test("nodes waiting: the tainted ones and the oldest one's age; 0 where none waits", () => {
    expect(new NodesWaitingStats().of(fleet(), ["a", "b", "never-connected"], T0)).toEqual([
      { cluster: "a", count: 2, oldestSeconds: 300 },
      { cluster: "b", count: 0, oldestSeconds: 0 },
      { cluster: "never-connected", count: 0, oldestSeconds: 0 },
    ]);
  });

  test("nodes waiting: a cluster's nodes are walked again only after its node set changed", () => {
    const f = fleet();
    const stats = new NodesWaitingStats();
    const a = f.view("a");
    if (a === undefined) throw new Error("no view");
    let walks = 0;
    const values = a.nodes.values.bind(a.nodes);
    (a.nodes as Map<string, unknown>).values = () => {
      walks++;
      return values();
    };
    expect(stats.of(f, ["a"], T0)[0]?.count).toBe(2);
    expect(stats.of(f, ["a"], T0 + 1000)).toEqual([{ cluster: "a", count: 2, oldestSeconds: 301 }]);
    expect(walks).toBe(1);
    f.upsertNode("a", node("n1", T0 - 300_000, false)); // initialized
    expect(stats.of(f, ["a"], T0)).toEqual([{ cluster: "a", count: 1, oldestSeconds: 60 }]);
    f.upsertNode("a", node("n4", T0 - 600_000, true));
    expect(stats.of(f, ["a"], T0)).toEqual([{ cluster: "a", count: 2, oldestSeconds: 600 }]);
    f.deleteNode("a", "n4");
    f.deleteNode("a", "n2");
    expect(stats.of(f, ["a"], T0)).toEqual([{ cluster: "a", count: 0, oldestSeconds: 0 }]);
    f.replace("a", [node("n5", T0 - 5000, true)], []);
    expect(stats.of(f, ["a"], T0)).toEqual([{ cluster: "a", count: 1, oldestSeconds: 5 }]);
  });

  test("load balancers by state: failing before ready; only Services this hub serves", () => {
    const stats = loadBalancerStats(
      fleet(),
      ["a", "b"],
      undefined,
      (c, k) => c === "a" && k === "default/failing",
    );
    expect(stats).toEqual([
      { cluster: "a", state: "ready", count: 1 },
      { cluster: "a", state: "pending", count: 1 },
      { cluster: "a", state: "failing", count: 1 },
      { cluster: "b", state: "ready", count: 0 },
      { cluster: "b", state: "pending", count: 0 },
      { cluster: "b", state: "failing", count: 0 },
    ]);
  });

  test("the gauges read the hooks at each scrape and drop clusters no longer reported", async () => {
    const m = new HubMetrics(false);
    let agents = [
      { cluster: "a", connected: true, disconnectedSeconds: 0 },
      { cluster: "b", connected: false, disconnectedSeconds: 42.5 },
    ];
    m.clusterAgents = () => agents;
    m.nodesWaiting = () => new NodesWaitingStats().of(fleet(), ["a"], T0);
    m.loadBalancers = () => loadBalancerStats(fleet(), ["a"], undefined, () => false);
    const text = await m.registry.metrics();
    expect(text).toContain('fleet_ccm_cluster_agent_connected{cluster="a"} 1');
    expect(text).toContain('fleet_ccm_cluster_agent_connected{cluster="b"} 0');
    expect(text).toContain('fleet_ccm_cluster_agent_disconnected_seconds{cluster="b"} 42.5');
    expect(text).toContain('fleet_ccm_nodes_waiting_initialization{cluster="a"} 2');
    expect(text).toContain('fleet_ccm_nodes_waiting_initialization_oldest_seconds{cluster="a"} 300');
    expect(text).toContain('fleet_ccm_load_balancers{cluster="a",state="ready"} 2');
    expect(text).toContain('fleet_ccm_load_balancers{cluster="a",state="pending"} 1');
    agents = [{ cluster: "a", connected: false, disconnectedSeconds: 1 }];
    const after = await m.registry.metrics();
    expect(after).toContain('fleet_ccm_cluster_agent_connected{cluster="a"} 0');
    expect(after).not.toContain('cluster="b"');
  });
});
