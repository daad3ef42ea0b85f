import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { CloudProvider } from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext, testHubConfig } from "../context.testkit.js";
import { cloudNodeController } from "./index.js";
import { NODE_INIT } from "./reconcile.js";

const TAINT = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };
const HOUR = 3_600_000;

function initialized(name: string, createdMs: number, over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    labels: { "node.kubernetes.io/instance-type": "sim.small" },
    creationTimestamp: new Date(createdMs),
    ...over,
  });
}

function harness() {
  const clock = new FakeClock();
  clock.advance(10 * HOUR);
  const fleet = new FleetState();
  const provider = {
    name: "simulated",
    instances: {
      parseProviderID: (id: string) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
  } as unknown as CloudProvider;
  const cloud: ClusterCloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  const config = testHubConfig();
  const c = cloudNodeController(testControllerContext({ config, fleet, clock, cloudFor: () => cloud }));
  fleet.subscribe(c.triggers);
  const syncedOf = async (name: string) => {
    await Promise.resolve();
    const out = await c.reconcile({ cluster: "c1", kind: NODE_INIT, name });
    return (out.events ?? []).filter((e) => e.reason === "Synced").length;
  };
  return { clock, fleet, syncedOf };
}

describe("Synced Event owed to initialized nodes (at least once, not for nodes of long ago)", () => {
  test("first seen initialized in a snapshot: owed if it joined recently, once", async () => {
    const h = harness();
    const now = h.clock.now();
    h.fleet.replace("c1", [initialized("recent", now - 60_000), initialized("old", now - 2 * HOUR)], []);
    expect(await h.syncedOf("recent")).toBe(1);
    expect(await h.syncedOf("recent")).toBe(0);
    expect(await h.syncedOf("old")).toBe(0);
    // A resync snapshot does not make it owed again.
    h.fleet.replace("c1", [initialized("recent", now - 60_000), initialized("old", now - 2 * HOUR)], []);
    expect(await h.syncedOf("recent")).toBe(0);
  });

  test("a new node reported (delta) without the taint was never ours: nothing owed", async () => {
    const h = harness();
    h.fleet.replace("c1", [], []);
    h.fleet.upsertNode("c1", initialized("plain", h.clock.now()));
    expect(await h.syncedOf("plain")).toBe(0);
  });

  test("a node seen tainted and then initialized is owed its Event even with nothing in flight", async () => {
    const h = harness();
    const created = h.clock.now() - 3 * HOUR;
    h.fleet.replace("c1", [initialized("n", created, { providerId: "", labels: {}, taints: [TAINT] })], []);
    // Another hub's patch lands (this hub published nothing for it).
    h.fleet.upsertNode("c1", initialized("n", created));
    expect(await h.syncedOf("n")).toBe(1);
    expect(await h.syncedOf("n")).toBe(0);
  });

  test("taint removed by hand (no cloud fields): nothing owed", async () => {
    const h = harness();
    h.fleet.replace(
      "c1",
      [initialized("m", h.clock.now(), { providerId: "", labels: {}, taints: [TAINT] })],
      [],
    );
    h.fleet.upsertNode("c1", initialized("m", h.clock.now(), { providerId: "", labels: {} }));
    expect(await h.syncedOf("m")).toBe(0);
  });
});
