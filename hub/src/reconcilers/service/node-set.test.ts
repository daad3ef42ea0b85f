// The batched node-set sync (SERVICE_NODES): it computes the backend set (which verifies every
// eligible node's instance) only for a cluster that has a Service whose pass reads it, and then
// queues exactly those Services.
import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { CloudProvider } from "../../cloud/provider.js";
import { clusterCloud } from "../../cloud/scope.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext, testHubConfig } from "../context.testkit.js";
import { lbService, simulatedInstances } from "./fixtures.testkit.js";
import { serviceController } from "./index.js";
import { SERVICE_NODES } from "./reconcile.js";

const node = (name: string) =>
  Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    conditions: [{ type: "Ready", status: "True" }],
  });

function harness() {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const lookups: string[] = [];
  const provider: CloudProvider = {
    name: "simulated",
    instances: simulatedInstances(lookups),
  };
  const cloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  const ctx = testControllerContext({ config: testHubConfig(), fleet, clock, cloudFor: () => cloud });
  const services = serviceController(ctx);
  return {
    fleet,
    lookups,
    queue: ctx.queue,
    syncNodeSet: () => services.reconcile({ cluster: "c1", kind: SERVICE_NODES, name: "" }),
  };
}

describe("the batched node-set sync", () => {
  test("a cluster without a load-balanced Service computes no backend set and queues nothing", async () => {
    const h = harness();
    const clusterIp = lbService({ name: "internal", uid: "u-internal", type: "ClusterIP", finalizers: [] });
    h.fleet.replace("c1", [node("a"), node("b")], [clusterIp]);
    expect((await h.syncNodeSet()).requeue).toEqual({ kind: "done" });
    expect(h.lookups).toEqual([]);
    expect(h.queue.len()).toBe(0);
  });

  test("a cluster with one: the set is computed (each node verified) and only that Service queued", async () => {
    const h = harness();
    const clusterIp = lbService({ name: "internal", uid: "u-internal", type: "ClusterIP", finalizers: [] });
    h.fleet.replace("c1", [node("a"), node("b")], [clusterIp, lbService()]);
    expect((await h.syncNodeSet()).requeue).toEqual({ kind: "done" });
    expect([...h.lookups].sort()).toEqual(["simulated://r1/i-a", "simulated://r1/i-b"]);
    expect(h.queue.tryGet()).toMatchObject({ cluster: "c1", name: "default/web" });
    expect(h.queue.tryGet()).toBeUndefined();
  });
});
