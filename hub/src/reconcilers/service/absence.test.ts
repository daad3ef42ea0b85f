import { Node, type Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { InstanceNotFoundError } from "../../cloud/errors.js";
import { InstanceCache } from "../../cloud/instance-cache.js";
import type { CloudProvider, LbIngress, LoadBalancers } from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext, testHubConfig } from "../context.testkit.js";
import { lbService } from "./fixtures.testkit.js";
import { SERVICE, serviceController } from "./index.js";

const svc = (over: Partial<Service> = {}): Service =>
  lbService({ ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "VIP" }], ...over });

function node(name: string, labels: Record<string, string> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    labels,
  });
}

/** One load balancer in the cloud: its backends as last written. */
function harness(inCloud?: readonly string[], terminated: readonly string[] = []) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const calls: string[] = [];
  let backends: readonly string[] | undefined = inCloud;
  const lbs: LoadBalancers = {
    capabilities: { sessionAffinity: false, proxyProtocol: true, internal: true, protocols: ["TCP"] },
    async get(owner) {
      return backends === undefined ? undefined : { id: "lb-1", name: "lb", owner, ingress: [], backends };
    },
    async ensure(_owner, spec): Promise<LbIngress[]> {
      calls.push(`ensure ${spec.backends.join(",")}`);
      backends = spec.backends;
      return [{ ip: "198.18.0.1" }];
    },
    async updateBackends(_owner, b) {
      calls.push(`updateBackends ${b.join(",")}`);
      backends = b;
      return undefined;
    },
    async ensureDeleted() {
      calls.push("ensureDeleted");
      backends = undefined;
      return undefined;
    },
  };
  const provider: CloudProvider = {
    name: "simulated",
    loadBalancers: lbs,
    instances: {
      async getByProviderID(id) {
        const m = /^simulated:\/\/r1\/(i-.+)$/.exec(id);
        if (!m?.[1]) throw new InstanceNotFoundError(id);
        return {
          providerID: id,
          instanceID: m[1],
          name: m[1],
          instanceType: "t",
          region: "r1",
          zone: "z",
          addresses: [],
          state: "running",
          tags: {},
        };
      },
      async findByName() {
        return [];
      },
      async listPage() {
        return {
          instances: terminated.map((id) => ({
            providerID: `simulated://r1/${id}`,
            instanceID: id,
            name: id,
            instanceType: "t",
            region: "r1",
            zone: "z",
            addresses: [],
            state: "terminated" as const,
            tags: {},
          })),
        };
      },
      parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
  };
  const cloud: ClusterCloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  const cache = new InstanceCache(provider.instances, clock, 60_000, pino({ level: "silent" }));
  const config = testHubConfig();
  const c = serviceController(
    testControllerContext({ config, fleet, clock, cloudFor: () => cloud, cacheFor: () => cache }),
  );
  fleet.subscribe(c.triggers);
  const run = async () => {
    await Promise.resolve(); // deltas are classified at the end of their run
    clock.advance(2000); // past the shared backend set's minimum age
    return c.reconcile({ cluster: "c1", kind: SERVICE, name: "default/web" });
  };
  return { fleet, calls, run, backends: () => backends, controller: c };
}

describe("service controller: nothing destroyed because something is absent", () => {
  test("a Service missing from a snapshot never deletes its load balancer", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a")], [svc()]);
    await h.run();
    h.fleet.replace("c1", [node("a")], []);
    expect(await h.run()).toEqual({ requeue: { kind: "done" } });
    h.fleet.replace("c1", [node("a")], [svc()]);
    await h.run();
    expect(h.calls).not.toContain("ensureDeleted");
    expect(h.backends()).toEqual(["i-a"]);
  });

  test("an empty eligible set from a snapshot keeps the backends not seen leaving, with a Warning", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a"), node("b")], [svc()]);
    await h.run();
    h.fleet.replace("c1", [], [svc()]);
    const out = await h.run();
    expect(h.backends()).toEqual(["i-a", "i-b"]);
    expect(out.events?.find((e) => e.reason === "LoadBalancerBackendsKept")?.message).toContain(
      "2 of the load balancer's 2 backends were not seen leaving",
    );
  });

  test("a restarted hub (nothing remembered) whose first report is empty keeps them too", async () => {
    const h = harness(["i-a", "i-b"]);
    h.fleet.replace("c1", [], [svc()]);
    await h.run();
    expect(h.calls).toEqual(["ensure i-a,i-b"]);
    expect(h.backends()).toEqual(["i-a", "i-b"]);
  });

  test("backends the account's instance list shows terminated are not kept", async () => {
    const h = harness(["i-a", "i-b"], ["i-a"]);
    h.fleet.replace("c1", [], [svc()]);
    await h.run();
    expect(h.backends()).toEqual(["i-b"]);
  });

  test("nodes seen leaving (deleted, excluded) empty the load balancer, as upstream does", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a"), node("b")], [svc()]);
    await h.run();
    h.fleet.deleteNode("c1", "a");
    h.fleet.upsertNode(
      "c1",
      node("b", { "node.kubernetes.io/exclude-from-external-load-balancers": "true" }),
    );
    const out = await h.run();
    expect(h.backends()).toEqual([]);
    expect(out.events?.map((e) => e.reason)).toContain("UnAvailableLoadBalancer");
  });

  test("a released cluster (removed, or handed to another replica) keeps no evidence: nodes it saw leave before count as unseen", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a"), node("b")], [svc()]);
    await h.run();
    h.fleet.deleteNode("c1", "a");
    h.fleet.deleteNode("c1", "b");
    h.controller.onReleased?.("c1");
    // Back later (the cluster added again, the lease won back): a snapshot with no node keeps both.
    h.fleet.replace("c1", [], [svc()]);
    const out = await h.run();
    expect(h.backends()).toEqual(["i-a", "i-b"]);
    expect(out.events?.map((e) => e.reason)).toContain("LoadBalancerBackendsKept");
  });

  test("only the unseen ones stay: one node deleted, the other missing from a snapshot", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("a"), node("b")], [svc()]);
    await h.run();
    h.fleet.deleteNode("c1", "a");
    await h.run();
    expect(h.backends()).toEqual(["i-b"]);
    h.fleet.replace("c1", [], [svc()]);
    await h.run();
    expect(h.backends()).toEqual(["i-b"]);
  });
});
