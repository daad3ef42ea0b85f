import { expect, test } from "@jest/globals";
import { HubMetrics } from "./metrics.js";

test("forgetCluster drops the series the cluster's reconciles set, and no other cluster's", async () => {
  const m = new HubMetrics(false);
  for (const cluster of ["c1", "c2"]) {
    m.routeCidrConflicts.set({ cluster }, 1);
    m.ipamNodesWaiting.set({ cluster }, 2);
    m.ipamRangesFree.set({ cluster, cidr: "10.0.0.0/16" }, 3);
    m.ipamRangesFree.set({ cluster, cidr: "10.1.0.0/16" }, 4);
  }
  await m.forgetCluster("c1");
  const text = await m.registry.metrics();
  expect(text).not.toContain('cluster="c1"');
  expect(text.match(/cluster="c2"/g)).toHaveLength(4);
});

test("the per-cluster gauges computed at each scrape follow the clusters, updating series in place", async () => {
  const m = new HubMetrics(false);
  let agents = [
    { cluster: "c1", connected: true, disconnectedSeconds: 0 },
    { cluster: "c2", connected: false, disconnectedSeconds: 12 },
  ];
  let lbs = [
    { cluster: "c1", state: "ready" as const, count: 3 },
    { cluster: "c1", state: "pending" as const, count: 1 },
  ];
  m.clusterAgents = () => agents;
  m.loadBalancers = () => lbs;
  const scrape = async () =>
    (await m.registry.metrics()).split("\n").filter((l) => l.startsWith("fleet_ccm_"));
  expect(await scrape()).toEqual(
    expect.arrayContaining([
      'fleet_ccm_cluster_agent_connected{cluster="c1"} 1',
      'fleet_ccm_cluster_agent_connected{cluster="c2"} 0',
      'fleet_ccm_cluster_agent_disconnected_seconds{cluster="c2"} 12',
      'fleet_ccm_load_balancers{cluster="c1",state="ready"} 3',
      'fleet_ccm_load_balancers{cluster="c1",state="pending"} 1',
    ]),
  );

  agents = [
    { cluster: "c1", connected: false, disconnectedSeconds: 4 },
    { cluster: "c3", connected: true, disconnectedSeconds: 0 },
  ];
  lbs = [{ cluster: "c1", state: "ready", count: 4 }];
  const lines = await scrape();
  expect(lines).toEqual(
    expect.arrayContaining([
      'fleet_ccm_cluster_agent_connected{cluster="c1"} 0',
      'fleet_ccm_cluster_agent_connected{cluster="c3"} 1',
      'fleet_ccm_cluster_agent_disconnected_seconds{cluster="c1"} 4',
      'fleet_ccm_load_balancers{cluster="c1",state="ready"} 4',
    ]),
  );
  expect(lines.filter((l) => l.includes('cluster="c2"') || l.includes('state="pending"'))).toEqual([]);
  expect((await m.agentConnected.get()).values).toHaveLength(2);
});
