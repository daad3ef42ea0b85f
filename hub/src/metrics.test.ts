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
