// A new Service's wait for its cluster's initializing nodes, with node-init and the service
// controller wired as the hub wires them: node-init's publications count as progress while their
// reports are still to come (an agent tens of seconds behind), so the load balancer is built
// once, with every node, not before the reports and then updated.
import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { CloudProvider, LoadBalancerSpec } from "../../cloud/provider.js";
import { clusterCloud } from "../../cloud/scope.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext, testHubConfig } from "../context.testkit.js";
import { cloudNodeController } from "../node-init/index.js";
import { NodeInitProgress } from "../node-init/progress.js";
import { NODE_INIT } from "../node-init/reconcile.js";
import { lbService, simulatedInstances } from "./fixtures.testkit.js";
import { serviceController } from "./index.js";
import { NODE_INIT_WAIT_MS, SERVICE } from "./reconcile.js";

const TAINT = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };

const joining = (name: string) =>
  Node.fromPartial({ name, uid: `uid-${name}`, resourceVersion: "1", taints: [TAINT] });
const initialized = (name: string) =>
  Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "2",
    providerId: `simulated://r1/i-${name}`,
  });

function harness(progress: NodeInitProgress | undefined) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const ensured: LoadBalancerSpec[] = [];
  const provider: CloudProvider = {
    name: "simulated",
    instances: simulatedInstances(),
    loadBalancers: {
      capabilities: { sessionAffinity: true, proxyProtocol: true, internal: true, protocols: ["TCP"] },
      async get() {
        return undefined;
      },
      async ensure(_owner, spec) {
        ensured.push(spec);
        return [{ ip: "198.18.0.1" }];
      },
      async updateBackends() {
        return undefined;
      },
      async ensureDeleted() {
        return undefined;
      },
    },
  };
  const cloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  const ctx = testControllerContext({
    config: testHubConfig(),
    fleet,
    clock,
    cloudFor: () => cloud,
    ...(progress !== undefined && { nodeInitProgress: progress }),
  });
  const nodes = cloudNodeController(ctx);
  const services = serviceController(ctx);
  fleet.subscribe(nodes.triggers);
  fleet.subscribe(services.triggers);
  const svc = lbService();
  fleet.replace("c1", [joining("a"), joining("b")], [svc]);
  return {
    clock,
    fleet,
    ensured,
    initNode: (name: string) => nodes.reconcile({ cluster: "c1", kind: NODE_INIT, name }),
    syncService: () => services.reconcile({ cluster: "c1", kind: SERVICE, name: "default/web" }),
  };
}

/** Node-init publishes both nodes at 2 s; their reports come 14 s later, after NODE_INIT_WAIT_MS. */
async function slowReports(h: ReturnType<typeof harness>) {
  expect((await h.syncService()).requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS });
  h.clock.advance(2_000);
  expect((await h.initNode("a")).nodes).toHaveLength(1);
  expect((await h.initNode("b")).nodes).toHaveLength(1);
  h.clock.advance(NODE_INIT_WAIT_MS);
  await h.syncService();
  h.clock.advance(4_000);
  h.fleet.upsertNode("c1", initialized("a"));
  h.fleet.upsertNode("c1", initialized("b"));
  await h.syncService();
}

describe("a new Service waits for the nodes node-init has published", () => {
  test("reports slower than NODE_INIT_WAIT_MS: one ensure, with both nodes", async () => {
    const h = harness(new NodeInitProgress());
    await slowReports(h);
    expect(h.ensured.map((s) => s.backends)).toEqual([["i-a", "i-b"]]);
  });

  test("without node-init's progress the wait ended first: built with no node (what the hub did before)", async () => {
    const h = harness(undefined);
    await slowReports(h);
    expect(h.ensured.map((s) => s.backends)).toEqual([[]]);
  });
});
