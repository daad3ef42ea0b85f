import { Node, type Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { AnnotationError } from "../../cloud/annotation-bounds.js";
import {
  ConflictError,
  InstanceNotFoundError,
  NeedsEnsureError,
  TransientCloudError,
} from "../../cloud/errors.js";
import {
  type CloudProvider,
  type InProgress,
  inProgress,
  type LbIngress,
  type LoadBalancerSpec,
  type LoadBalancers,
} from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { CONFLICT_ATTEMPTS } from "../../cloud/serialized-write.js";
import { VerifiedInstances } from "../../cloud/verified-instances.js";
import { type ClusterView, FleetState } from "../../fleet/state.js";
import { parseLabelSelector } from "../../k8s/label-selector.js";
import { FakeClock } from "../../util/clock.js";
import { ConvergenceTracker } from "../convergence.js";
import { FINALIZER, lbService, simulatedInstance } from "./fixtures.testkit.js";
import {
  computeBackendSet,
  type EnsuredRecord,
  NODE_INIT_WAIT_MAX_MS,
  NODE_INIT_WAIT_MS,
  reconcileService,
  SERVICE,
} from "./reconcile.js";

const SELECTOR = "example.com/node-selector";

const svc = lbService;

function node(name: string, labels: Record<string, string> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    labels,
  });
}

/** A load balancer double recording calls; instances all in scope. */
function cloudDouble(
  fail?: Error,
  polls = 0,
  checkAnnotations?: (annotations: Readonly<Record<string, string>>) => void,
) {
  const calls: string[] = [];
  /** Reads: load balancer and instance lookups. */
  const reads: string[] = [];
  const specs: LoadBalancerSpec[] = [];
  let ensurePolls = polls;
  let deletePolls = polls;
  const lbs: LoadBalancers = {
    capabilities: {
      sessionAffinity: false,
      proxyProtocol: true,
      internal: true,
      protocols: ["TCP", "UDP"],
      serviceAnnotationKeys: ["example.com/lb-id"],
    },
    ...(checkAnnotations !== undefined && { checkAnnotations }),
    nodeSelector: (a) => (a[SELECTOR] === undefined ? undefined : parseLabelSelector(a[SELECTOR])),
    async get() {
      reads.push("get");
      return undefined;
    },
    async ensure(_owner, spec, _signal, hints): Promise<LbIngress[] | InProgress> {
      calls.push("ensure");
      if (fail) throw fail;
      const warning = hints?.annotations["example.com/warn"];
      if (warning !== undefined) hints?.warn?.("SettingIgnored", warning);
      const annotate = hints?.annotations["example.com/annotate"];
      if (annotate !== undefined) for (const key of annotate.split(",")) hints?.annotate?.(key, "lb-1");
      specs.push(spec);
      if (ensurePolls-- > 0) return inProgress(1500, "provisioning");
      return [{ ip: "198.18.0.1", hostname: "lb.example" }];
    },
    async updateBackends(_owner, backends, _signal, annotations) {
      calls.push(
        `updateBackends ${backends.join(",")}${annotations === undefined ? "" : ` ${JSON.stringify(annotations)}`}`,
      );
      return undefined;
    },
    async ensureDeleted() {
      calls.push("ensureDeleted");
      if (fail) throw fail;
      if (deletePolls-- > 0) return inProgress(2500, "deleting");
      return undefined;
    },
  };
  const provider: CloudProvider = {
    name: "simulated",
    instances: {
      async getByProviderID(id) {
        reads.push("getByProviderID");
        const m = /^simulated:\/\/r1\/(i-.+)$/.exec(id);
        if (!m?.[1]) throw new InstanceNotFoundError(id);
        return simulatedInstance(m[1]);
      },
      async findByName() {
        return [];
      },
      async listPage() {
        return { instances: [] };
      },
      parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
    loadBalancers: lbs,
  };
  const cloud: ClusterCloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  return { cloud, calls, reads, specs };
}

function harness(
  services: Service[],
  nodes: Node[],
  fail?: Error,
  polls = 0,
  checkAnnotations?: (annotations: Readonly<Record<string, string>>) => void,
  leaving = false,
) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  fleet.replace("c1", nodes, services);
  const d = cloudDouble(fail, polls, checkAnnotations);
  const ensured = new Map<string, EnsuredRecord>();
  const verified = new VerifiedInstances(clock);
  const initializedAt = new Map<string, number>();
  const deps = {
    fleet,
    cloudFor: () => d.cloud,
    cacheFor: () => undefined,
    tracker: new ConvergenceTracker(clock, 5000),
    verified,
    ensured,
    backendsFor: (cluster: string, view: ClusterView, cloud: ClusterCloud) =>
      computeBackendSet(cluster, view, cloud, verified, undefined),
    logger: pino({ level: "silent" }),
    clock,
    loadBalancerClass: undefined,
    pending: new Map<string, "ensure" | "update" | "delete">(),
    refused: new Map<string, string>(),
    waitingForNodes: new Map<string, number>(),
    nodeInitializedAtMs: (c: string) => initializedAt.get(c),
    decommissioning: () => leaving,
  };
  return {
    ...d,
    fleet,
    clock,
    tracker: deps.tracker,
    initializedAt,
    run: () => reconcileService({ cluster: "c1", kind: SERVICE, name: "default/web" }, deps),
  };
}

describe("service reconcile: asynchronous load balancers", () => {
  test("in progress: requeued after the provider's delay, no failure Event, no ingress until ready", async () => {
    const h = harness([svc()], [node("a")], undefined, 2);
    const first = await h.run();
    expect(first.requeue).toEqual({ kind: "after", ms: 1500 });
    expect(first.services).toBeUndefined();
    expect(first.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer"]);
    const second = await h.run();
    expect(second.requeue).toEqual({ kind: "after", ms: 1500 });
    expect(second.events ?? []).toEqual([]);
    const done = await h.run();
    expect(h.calls).toEqual(["ensure", "ensure", "ensure"]);
    expect(done.events?.map((e) => e.reason)).toEqual(["EnsuredLoadBalancer"]);
    expect(done.services?.[0]?.ingress?.items).toEqual([{ ip: "198.18.0.1", hostname: "", ipMode: "" }]);
  });

  test("deletion in progress keeps the finalizer until the provider says deleted", async () => {
    const h = harness([svc({ deletionTimestamp: new Date() })], [], undefined, 2);
    for (let i = 0; i < 2; i++) {
      const out = await h.run();
      expect(out.requeue).toEqual({ kind: "after", ms: 2500 });
      expect(out.services).toBeUndefined();
      expect(out.events?.map((e) => e.reason)).toEqual(i === 0 ? ["DeletingLoadBalancer"] : []);
    }
    const done = await h.run();
    expect(done.services?.[0]).toMatchObject({ removeFinalizers: [FINALIZER] });
    expect(done.events?.map((e) => e.reason)).toEqual(["DeletedLoadBalancer"]);
  });
});

describe("service reconcile: a cluster leaving the hub (clusters[].decommission)", () => {
  const ingress = [{ ip: "198.18.0.1", hostname: "", ipMode: "", ports: [] }];
  test("a live Service: its load balancer is deleted, then one patch clears the finalizer and the ingress", async () => {
    const h = harness([svc({ ingress })], [node("n1")], undefined, 0, undefined, true);
    const out = await h.run();
    expect(h.calls).toEqual(["ensureDeleted"]);
    expect(out.services).toHaveLength(1);
    expect(out.services?.[0]).toMatchObject({
      uid: "svc-uid",
      removeFinalizers: [FINALIZER],
      addFinalizers: [],
      ingress: { items: [] },
    });
  });

  test("nothing is ensured and no finalizer added: a Service without either is left alone", async () => {
    const h = harness([svc({ finalizers: [] })], [node("n1")], undefined, 0, undefined, true);
    const out = await h.run();
    expect(h.calls).toEqual([]);
    expect(out.services ?? []).toEqual([]);
  });

  test("the same Service on a cluster staying: ensured as ever", async () => {
    const h = harness([svc({ ingress })], [node("n1")]);
    await h.run();
    expect(h.calls).toEqual(["ensure"]);
  });
});

describe("service reconcile", () => {
  test("finalizer first: nothing is created in the cloud before the finalizer shows", async () => {
    const h = harness([svc({ finalizers: [] })], [node("a")]);
    const out = await h.run();
    expect(h.calls).toEqual([]);
    expect(out.services?.[0]).toMatchObject({ addFinalizers: [FINALIZER], uid: "svc-uid" });
  });

  test("ensures the load balancer with listeners, eligible backends and health check, then publishes the ingress", async () => {
    const h = harness(
      [svc()],
      [
        node("a"),
        node("b"),
        node("x", { "node.kubernetes.io/exclude-from-external-load-balancers": "true" }),
      ],
    );
    const out = await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(h.specs[0]).toMatchObject({
      listeners: [{ protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false }],
      backends: ["i-a", "i-b"],
      healthCheck: { protocol: "TCP", port: 30080 },
      sourceRanges: [],
      sessionAffinity: "None",
    });
    expect(out.services?.[0]?.ingress?.items).toEqual([{ ip: "198.18.0.1", hostname: "", ipMode: "" }]);
    expect(out.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
  });

  test("externalTrafficPolicy Local health-checks /healthz on healthCheckNodePort", async () => {
    const h = harness([svc({ externalTrafficPolicy: "Local", healthCheckNodePort: 31999 })], [node("a")]);
    await h.run();
    expect(h.specs[0]?.healthCheck).toMatchObject({ protocol: "HTTP", port: 31999, path: "/healthz" });
  });

  test("an invalid annotation names itself and changes nothing in the cloud", async () => {
    const h = harness([svc({ annotations: { "lb.fleet-ccm.io/idle-timeout": "soon" } })], [node("a")]);
    const out = await h.run();
    expect(h.calls).toEqual([]);
    expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: "SyncLoadBalancerFailed" });
    expect(out.events?.[0]?.message).toContain("lb.fleet-ccm.io/idle-timeout");
    expect(out.events?.[0]?.message).toContain("whole number of seconds");
  });

  test("a 64 KiB health check path: one Warning naming it and the bound, no cloud call at all, no retry", async () => {
    const path = `/${"a".repeat(64 * 1024 - 1)}`;
    const h = harness([svc({ annotations: { "lb.fleet-ccm.io/health-check-path": path } })], [node("a")]);
    const out = await h.run();
    expect(h.calls).toEqual([]);
    expect(h.reads).toEqual([]);
    expect(out.requeue).toEqual({ kind: "done" });
    expect(out.events).toHaveLength(1);
    expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: "SyncLoadBalancerFailed" });
    const message = out.events?.[0]?.message ?? "";
    expect(message).toContain("lb.fleet-ccm.io/health-check-path");
    expect(message).toContain("1 to 1024 characters (65536 characters)");
    expect(message.length).toBeLessThan(300);
    // A re-sync of the unchanged Service (a node set change, a late requeue): no second Event.
    const again = await h.run();
    expect(again.events ?? []).toEqual([]);
    expect(again.requeue).toEqual({ kind: "done" });
    expect(h.reads).toEqual([]);
    // Another refusal of the same Service is news.
    const [s] = [...(h.fleet.view("c1")?.services.values() ?? [])];
    if (s === undefined) throw new Error("no Service");
    h.fleet.upsertService("c1", { ...s, annotations: { "lb.fleet-ccm.io/health-check-path": "healthz" } });
    expect((await h.run()).events?.[0]?.message).toContain('"healthz": expected an absolute URL path');
  });

  test("a malformed source ranges annotation is refused before any cloud call too", async () => {
    const h = harness(
      [svc({ annotations: { "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/33" } })],
      [node("a")],
    );
    const out = await h.run();
    expect([h.calls, h.reads]).toEqual([[], []]);
    expect(out.requeue).toEqual({ kind: "done" });
    expect(out.events?.[0]?.message).toContain("load-balancer-source-ranges");
  });

  test("a provider's vendor annotation refused by its reader: the same Event, before any cloud call", async () => {
    const bad = "service.beta.kubernetes.io/simulated-x";
    const h = harness([svc({ annotations: { [bad]: "no" } })], [node("a")], undefined, 0, (a) => {
      if (a[bad] !== undefined) throw new AnnotationError(bad, a[bad], '"yes"');
    });
    const out = await h.run();
    expect(h.calls).toEqual([]);
    expect(h.reads).toEqual([]);
    expect(out.requeue).toEqual({ kind: "done" });
    expect(out.events?.map((e) => [e.type, e.reason, e.message])).toEqual([
      [
        "Warning",
        "SyncLoadBalancerFailed",
        `Error syncing load balancer: invalid annotation ${bad}="no": expected "yes"`,
      ],
    ]);
  });

  test("an AnnotationError out of ensure is permanent too: no backoff retry", async () => {
    const h = harness([svc()], [node("a")], new AnnotationError("vendor/key", "v", "w"));
    const out = await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(out.requeue).toEqual({ kind: "done" });
    expect(out.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer", "SyncLoadBalancerFailed"]);
  });

  test("ClientIP affinity on a provider without it: Event, load balancer still ensured", async () => {
    const h = harness([svc({ sessionAffinity: "ClientIP" })], [node("a")]);
    const out = await h.run();
    expect(h.specs[0]?.sessionAffinity).toBe("None");
    expect(out.events?.some((e) => e.message.includes("sessionAffinity ClientIP is not supported"))).toBe(
      true,
    );
  });

  describe("ports without a node port (spec.allocateLoadBalancerNodePorts false)", () => {
    const ports = [
      { name: "dns", protocol: "UDP", port: 53, nodePort: 0 },
      { name: "http", protocol: "TCP", port: 80, nodePort: 0 },
      { name: "https", protocol: "TCP", port: 443, nodePort: 30443 },
    ];

    test("a provider reaching node ports: those ports get no listener, a Warning names them, the rest is ensured", async () => {
      const h = harness([svc({ ports })], [node("a")]);
      const out = await h.run();
      expect(h.calls).toEqual(["ensure"]);
      expect(h.specs[0]?.listeners.map((l) => [l.port, l.nodePort])).toEqual([[443, 30443]]);
      // The health check goes to a node port that exists, not to the first port's 0.
      expect(h.specs[0]?.healthCheck).toMatchObject({ protocol: "TCP", port: 30443 });
      const skipped = out.events?.find((e) => e.reason === "LoadBalancerPortsSkipped");
      expect(skipped?.type).toBe("Warning");
      expect(skipped?.message).toContain("ports 53/UDP, 80/TCP left out");
      expect(skipped?.message).toContain("allocateLoadBalancerNodePorts");
      expect(out.events?.map((e) => e.reason)).toContain("EnsuredLoadBalancer");
    });

    test("no port with a node port: refused before any cloud call, once, no retry; a node port given later ensures it", async () => {
      const none = ports.map((p) => ({ ...p, nodePort: 0 }));
      const h = harness([svc({ ports: none })], [node("a")]);
      const out = await h.run();
      expect([h.calls, h.reads]).toEqual([[], []]);
      expect(out.requeue).toEqual({ kind: "done" });
      expect(out.events).toHaveLength(1);
      expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: "SyncLoadBalancerFailed" });
      expect(out.events?.[0]?.message).toContain("no port of the Service has a node port");
      expect(out.events?.[0]?.message).toContain("provider simulated");
      const again = await h.run();
      expect(again.events ?? []).toEqual([]);
      expect(h.calls).toEqual([]);
      const [s] = [...(h.fleet.view("c1")?.services.values() ?? [])];
      if (s === undefined) throw new Error("no Service");
      h.fleet.upsertService("c1", { ...s, ports: ports.map((p) => ({ ...p, nodePort: 30000 + p.port })) });
      await h.run();
      expect(h.calls).toEqual(["ensure"]);
      expect(h.specs[0]?.listeners.map((l) => l.nodePort)).toEqual([30053, 30080, 30443]);
    });

    test("a provider whose load balancers reach the Service port (usesNodePorts false): every port is built, no Warning", async () => {
      const h = harness([svc({ ports: ports.map((p) => ({ ...p, nodePort: 0 })) })], [node("a")]);
      const lbs = h.cloud.provider.loadBalancers;
      if (lbs === undefined) throw new Error("no load balancers");
      Object.assign(lbs.capabilities, { usesNodePorts: () => false });
      const out = await h.run();
      expect(h.calls).toEqual(["ensure"]);
      expect(h.specs[0]?.listeners.map((l) => [l.port, l.nodePort])).toEqual([
        [53, 0],
        [80, 0],
        [443, 0],
      ]);
      expect(out.events?.map((e) => e.type)).not.toContain("Warning");
    });
  });

  test("a node set change updates only the backends", async () => {
    const h = harness([svc({ ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "VIP" }] })], [node("a")]);
    await h.run();
    h.fleet.upsertNode("c1", node("b"));
    const out = await h.run();
    expect(h.calls).toEqual(["ensure", "updateBackends i-a,i-b"]);
    expect(out.events?.map((e) => e.reason)).toEqual(["UpdatedLoadBalancer"]);
  });

  test("a provider's node selector: only the nodes it picks are backends; a relabelled node joins them", async () => {
    const h = harness(
      [svc({ annotations: { [SELECTOR]: "pool=web" } })],
      [node("a", { pool: "web" }), node("b", { pool: "batch" }), node("c")],
    );
    await h.run();
    expect(h.specs.at(-1)?.backends).toEqual(["i-a"]);
    h.fleet.upsertNode("c1", { ...node("c", { pool: "web" }), resourceVersion: "2" });
    h.fleet.upsertService(
      "c1",
      svc({
        resourceVersion: "2",
        annotations: { [SELECTOR]: "pool=web" },
        ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }],
      }),
    );
    h.clock.advance(10_000);
    await h.run();
    expect(h.calls.at(-1)).toBe("updateBackends i-a,i-c");
  });

  test("a node selector matching no node empties the load balancer, as upstream", async () => {
    const h = harness([svc({ annotations: { [SELECTOR]: "pool=none" } })], [node("a", { pool: "web" })]);
    await h.run();
    expect(h.specs.at(-1)?.backends).toEqual([]);
  });

  test("UnAvailableLoadBalancer only when upstream's predicates leave no node: nodes not yet initialized are available", async () => {
    // Registered, not yet initialized (no providerID): upstream lists them, so no Warning; the
    // hub has no backend for them yet and adds them once they have an instance.
    const pending = Node.fromPartial({ name: "a", uid: "uid-a", resourceVersion: "1" });
    const h = harness([svc()], [pending]);
    const out = await h.run();
    expect(h.specs[0]?.backends).toEqual([]);
    expect(out.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
    for (const nodes of [
      [],
      [node("x", { "node.kubernetes.io/exclude-from-external-load-balancers": "true" })],
      [Node.fromPartial({ ...pending, deletionTimestamp: new Date() })],
    ]) {
      const h2 = harness([svc()], nodes);
      let none = await h2.run();
      if (nodes.length === 0) {
        // A cluster with no node yet: the Service first waits for one to register.
        expect(none.requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS });
        h2.clock.advance(NODE_INIT_WAIT_MS);
        none = await h2.run();
      }
      expect(none.events?.map((e) => e.reason)).toEqual([
        "UnAvailableLoadBalancer",
        "EnsuringLoadBalancer",
        "EnsuredLoadBalancer",
      ]);
      expect(none.events?.[0]).toMatchObject({
        type: "Warning",
        message: "There are no available nodes for LoadBalancer",
      });
    }
  });

  test("a backend update the provider cannot apply alone (NeedsEnsureError) becomes an ensure in the same pass", async () => {
    const h = harness([svc({ ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "VIP" }] })], [node("a")]);
    await h.run();
    const lbs = h.cloud.provider.loadBalancers as { updateBackends: LoadBalancers["updateBackends"] };
    lbs.updateBackends = async (_owner, backends) => {
      h.calls.push(`updateBackends ${backends.join(",")}`);
      throw new NeedsEnsureError("config for port 443 is https and its certificate is not known here");
    };
    h.fleet.upsertNode("c1", node("b"));
    const out = await h.run();
    expect(h.calls).toEqual(["ensure", "updateBackends i-a,i-b", "ensure"]);
    expect(h.specs.at(-1)?.backends).toEqual(["i-a", "i-b"]);
    // No failure: the ensure did it (its Events are the ensure's own).
    expect(out.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
    expect(out.requeue).toEqual({ kind: "done" });
    // Recorded: the next pass with nothing changed calls nothing.
    await h.run();
    expect(h.calls).toHaveLength(3);
  });

  test("a backend node's vendor annotations reach the provider; a change to them updates the backends", async () => {
    const h = harness([svc({ ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "VIP" }] })], [node("a")]);
    const annotated = (value: string) =>
      Node.fromPartial({
        ...node("b"),
        resourceVersion: value,
        annotations: {
          "node.k8s.linode.com/private-ip": value,
          // The hub's own keys are not a provider's.
          "lifecycle.fleet-ccm.io/confirm-deletion": "true",
          "alpha.kubernetes.io/provided-node-ip": "10.9.9.9",
        },
      });
    h.fleet.upsertNode("c1", annotated("192.168.0.1"));
    await h.run();
    expect(h.specs[0]?.backends).toEqual(["i-a", "i-b"]);
    expect(h.specs[0]?.backendAnnotations).toEqual({
      "i-b": { "node.k8s.linode.com/private-ip": "192.168.0.1" },
    });
    h.fleet.upsertNode("c1", annotated("192.168.0.2"));
    const out = await h.run();
    expect(h.calls).toEqual([
      "ensure",
      'updateBackends i-a,i-b {"i-b":{"node.k8s.linode.com/private-ip":"192.168.0.2"}}',
    ]);
    expect(out.events?.map((e) => e.reason)).toEqual(["UpdatedLoadBalancer"]);
    // Unchanged: nothing to do.
    await h.run();
    expect(h.calls).toHaveLength(2);
  });

  test("a setting the provider leaves as it is becomes a Warning Event on the Service; the ensure still succeeds", async () => {
    const h = harness([svc({ annotations: { "example.com/warn": "left as it is" } })], [node("a")]);
    const out = await h.run();
    expect(out.events?.map((e) => [e.type, e.reason])).toEqual([
      ["Normal", "EnsuringLoadBalancer"],
      ["Warning", "SettingIgnored"],
      ["Normal", "EnsuredLoadBalancer"],
    ]);
    expect(out.events?.[1]?.message).toBe("left as it is");
    expect(out.services?.[0]?.ingress?.items).toHaveLength(1);
  });

  test("the vendor CCM's annotations the provider sets go out with the ingress, declared keys only, once", async () => {
    const h = harness(
      [svc({ annotations: { "example.com/annotate": "example.com/lb-id,example.com/other" } })],
      [node("a")],
    );
    const out = await h.run();
    expect(out.services?.[0]?.setAnnotations).toEqual({ "example.com/lb-id": "lb-1" });
    expect(out.services?.[0]?.ingress?.items).toHaveLength(1);
    // The Service shows both: nothing more to publish on the next ensure.
    h.fleet.upsertService(
      "c1",
      svc({
        resourceVersion: "2",
        annotations: {
          "example.com/annotate": "example.com/lb-id,example.com/other",
          "example.com/lb-id": "lb-1",
        },
        ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }],
      }),
    );
    h.clock.advance(10_000);
    const again = await h.run();
    expect(again.services ?? []).toEqual([]);
  });

  test("an ingress already shown with the annotation missing: the annotation alone is published", async () => {
    const h = harness(
      [
        svc({
          annotations: { "example.com/annotate": "example.com/lb-id" },
          ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }],
        }),
      ],
      [node("a")],
    );
    const out = await h.run();
    expect(out.services?.[0]?.setAnnotations).toEqual({ "example.com/lb-id": "lb-1" });
  });

  test("deletion: every cloud resource first, then the finalizer and the ingress", async () => {
    const h = harness(
      [svc({ deletionTimestamp: new Date(), ingress: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }] })],
      [],
    );
    const out = await h.run();
    expect(h.calls).toEqual(["ensureDeleted"]);
    expect(out.services?.[0]).toMatchObject({ removeFinalizers: [FINALIZER], ingress: { items: [] } });
    expect(out.events?.map((e) => e.reason)).toEqual(["DeletingLoadBalancer", "DeletedLoadBalancer"]);
  });

  test("type changed away from LoadBalancer is cleaned up like a deletion", async () => {
    const h = harness([svc({ type: "ClusterIP" })], []);
    const out = await h.run();
    expect(h.calls).toEqual(["ensureDeleted"]);
    expect(out.services?.[0]?.removeFinalizers).toEqual([FINALIZER]);
  });

  test("a cloud error keeps the finalizer and backs off", async () => {
    const h = harness([svc({ deletionTimestamp: new Date() })], [], new TransientCloudError("503"));
    const out = await h.run();
    expect(out.services).toBeUndefined();
    expect(out.requeue.kind).toBe("backoff");
    expect(out.events?.map((e) => e.reason)).toEqual(["DeletingLoadBalancer", "DeleteLoadBalancerFailed"]);
  });

  test("a conflict on the shared cloud object is repeated at once, then backs off as transient", async () => {
    const h = harness([svc()], [node("a")], new ConflictError("412 Precondition Failed"));
    const out = await h.run();
    // Three attempts in this pass (CONFLICT_ATTEMPTS), each reading fresh state, then one Event.
    expect(h.calls.filter((c) => c === "ensure")).toHaveLength(CONFLICT_ATTEMPTS);
    expect(out.requeue.kind).toBe("backoff");
    expect(out.events?.map((e) => e.reason)).toEqual(["EnsuringLoadBalancer", "SyncLoadBalancerFailed"]);
  });

  test("a Service of another loadBalancerClass is ignored", async () => {
    const h = harness([svc({ loadBalancerClass: "example.com/other", finalizers: [] })], [node("a")]);
    expect(await h.run()).toEqual({ requeue: { kind: "done" } });
    expect(h.calls).toEqual([]);
  });
});

describe("service reconcile: no cloud call the cluster's state does not need", () => {
  const TAINT = {
    key: "node.cloudprovider.kubernetes.io/uninitialized",
    value: "true",
    effect: "NoSchedule",
  };
  const joining = (name: string): Node => ({ ...node(name), providerId: "", taints: [TAINT] });

  test("a first ensure waits for the nodes being initialized, then builds the load balancer with them", async () => {
    const h = harness([svc()], [node("a"), joining("b")]);
    const waiting = await h.run();
    expect(waiting.requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS });
    expect([h.calls, h.reads]).toEqual([[], ["getByProviderID"]]);
    h.clock.advance(2000);
    expect((await h.run()).requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS - 2000 });
    h.fleet.upsertNode("c1", node("b"));
    const out = await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(h.specs[0]?.backends).toEqual(["i-a", "i-b"]);
    expect(out.services?.[0]?.ingress?.items).toHaveLength(1);
  });

  test("a cluster with no node yet (Services applied before the kubelets join): built once, with the nodes that then join", async () => {
    const h = harness([svc()], []);
    expect((await h.run()).requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS });
    h.clock.advance(4000);
    h.fleet.upsertNode("c1", joining("a"));
    h.fleet.upsertNode("c1", joining("b"));
    expect((await h.run()).requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS - 4000 });
    h.clock.advance(4000);
    h.fleet.upsertNode("c1", node("a"));
    h.initializedAt.set("c1", h.clock.now());
    expect((await h.run()).requeue).toEqual({ kind: "after", ms: NODE_INIT_WAIT_MS });
    h.fleet.upsertNode("c1", node("b"));
    await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(h.specs[0]?.backends).toEqual(["i-a", "i-b"]);
  });

  test("a node that never initializes delays a new Service by NODE_INIT_WAIT_MS, no more", async () => {
    const h = harness([svc()], [node("a"), joining("b")]);
    await h.run();
    h.clock.advance(NODE_INIT_WAIT_MS);
    await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(h.specs[0]?.backends).toEqual(["i-a"]);
  });

  test("while the cluster's nodes keep being initialized the wait goes on, up to NODE_INIT_WAIT_MAX_MS", async () => {
    const h = harness([svc()], [node("a"), joining("b")]);
    await h.run();
    for (let t = 0; t < NODE_INIT_WAIT_MAX_MS - 5000; t += 5000) {
      h.clock.advance(5000);
      h.initializedAt.set("c1", h.clock.now()); // another node got its providerID
      const out = await h.run();
      expect(out.requeue).toEqual({
        kind: "after",
        ms: Math.min(NODE_INIT_WAIT_MS, NODE_INIT_WAIT_MAX_MS - (t + 5000)),
      });
    }
    expect(h.calls).toEqual([]);
    h.clock.advance(5000);
    h.initializedAt.set("c1", h.clock.now());
    await h.run();
    expect(h.calls).toEqual(["ensure"]);
  });

  test("a Service already showing an ingress (a restarted hub) does not wait", async () => {
    const ingress = [{ ip: "198.18.0.1", hostname: "", ipMode: "", ports: [] }];
    const h = harness([svc({ ingress })], [node("a"), joining("b")]);
    await h.run();
    expect(h.calls).toEqual(["ensure"]);
  });

  test("the ingress report late past its deadline: the recorded ingress is published again, no cloud call", async () => {
    const h = harness([svc()], [node("a")]);
    const first = await h.run();
    expect(h.calls).toEqual(["ensure"]);
    const published = first.services?.[0]?.ingress?.items;
    h.clock.advance(6000);
    const again = await h.run();
    expect(h.calls).toEqual(["ensure"]);
    expect(again.events ?? []).toEqual([]);
    expect(again.services?.[0]?.ingress?.items).toEqual(published);
    expect(again.services?.[0]?.generation).toBeGreaterThan(first.services?.[0]?.generation ?? 0);
    // The report shows it: nothing more.
    const [s] = [...(h.fleet.view("c1")?.services.values() ?? [])];
    if (s === undefined) throw new Error("no Service");
    h.fleet.upsertService("c1", { ...s, ingress: (published ?? []).map((i) => ({ ...i, ports: [] })) });
    const done = await h.run();
    expect([done.services ?? [], h.calls]).toEqual([[], ["ensure"]]);
    expect(h.tracker.get("c1/service/default/web")).toBeUndefined();
  });

  test("a node joined while the ingress report lags: the backends are updated and the ingress published again", async () => {
    const h = harness([svc()], [node("a")]);
    const first = await h.run();
    h.fleet.upsertNode("c1", node("b"));
    h.clock.advance(6000);
    const again = await h.run();
    expect(h.calls).toEqual(["ensure", "updateBackends i-a,i-b"]);
    expect(again.events?.map((e) => e.reason)).toEqual(["UpdatedLoadBalancer"]);
    expect(again.services?.[0]?.ingress?.items).toEqual(first.services?.[0]?.ingress?.items);
  });
});
