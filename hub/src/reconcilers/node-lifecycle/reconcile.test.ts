import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { InstanceNotFoundError, TransientCloudError } from "../../cloud/errors.js";
import type { CloudProvider, InstanceMetadata, InstanceState } from "../../cloud/provider.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { VerifiedInstances } from "../../cloud/verified-instances.js";
import { FleetState } from "../../fleet/state.js";
import { HubMetrics } from "../../metrics.js";
import { FakeClock } from "../../util/clock.js";
import { ConvergenceTracker } from "../convergence.js";
import { ANNOTATION_CONFIRM_DELETION, NODE_LIFECYCLE, reconcileNodeLifecycle } from "./reconcile.js";
import { DeletionBudget, NotFoundEvidence } from "./safety.js";

function node(name: string, ready: string, over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    conditions: [{ type: "Ready", status: ready, reason: "", message: "" }],
    ...over,
  });
}

type Answer = InstanceState | "gone" | "error";

function cloudDouble(answers: Map<string, Answer>) {
  let calls = 0;
  const provider: CloudProvider = {
    name: "simulated",
    instances: {
      async getByProviderID(id) {
        calls++;
        const name = id.replace("simulated://r1/i-", "");
        const a = answers.get(name) ?? "running";
        if (a === "gone") throw new InstanceNotFoundError(id);
        if (a === "error") throw new TransientCloudError("503");
        const meta: InstanceMetadata = {
          providerID: id,
          instanceID: `i-${name}`,
          name,
          instanceType: "t",
          region: "r1",
          zone: "z",
          addresses: [],
          state: a,
          tags: {},
        };
        return meta;
      },
      async findByName() {
        return [];
      },
      async listPage() {
        return { instances: [] };
      },
      parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
    },
  };
  const cloud: ClusterCloud = clusterCloud("c1", {
    provider,
    account: { name: "a", provider: "simulated", region: "r1", credential: "k", requestTimeoutMs: 1000 },
  });
  return { cloud, calls: () => calls };
}

function harness(
  nodes: Node[],
  answers: Map<string, Answer>,
  policy = {
    deleteAfterChecks: 3,
    deleteAfterMs: 10_000,
    blastRadius: { maxPercent: 10, maxNodes: 1, windowMs: 60_000 },
  },
) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  fleet.replace("c1", nodes, []);
  fleet.setConnected("c1", true);
  const d = cloudDouble(answers);
  const deps = {
    fleet,
    cloudFor: () => d.cloud,
    tracker: new ConvergenceTracker(clock, 5000),
    verified: new VerifiedInstances(clock),
    evidence: new NotFoundEvidence(clock),
    budget: new DeletionBudget(clock),
    policy,
    metrics: new HubMetrics(false),
    logger: pino({ level: "silent" }),
    clock,
  };
  const run = (name: string) => reconcileNodeLifecycle({ cluster: "c1", kind: NODE_LIFECYCLE, name }, deps);
  return { clock, fleet, run, calls: d.calls };
}

describe("node lifecycle", () => {
  test("a disconnected cluster's view judges nothing: no lookup, no evidence", async () => {
    const h = harness([node("a", "False")], new Map([["a", "gone"]]));
    h.fleet.setConnected("c1", false);
    for (let i = 0; i < 5; i++) {
      expect(await h.run("a")).toEqual({ requeue: { kind: "done" } });
      h.clock.advance(10_000);
    }
    expect(h.calls()).toBe(0);
  });

  test("a node that disappears from the view and comes back starts its evidence over", async () => {
    const h = harness([node("a", "False"), node("b", "True")], new Map([["a", "gone"]]));
    await h.run("a");
    h.clock.advance(6000);
    await h.run("a");
    h.fleet.replace("c1", [node("b", "True")], []); // missing from a snapshot: forgotten, not judged
    expect(await h.run("a")).toEqual({ requeue: { kind: "done" } });
    h.fleet.replace("c1", [node("a", "False"), node("b", "True")], []);
    h.clock.advance(6000);
    // Two more answers, 12 s after the first: the count started over, so no deletion yet.
    expect((await h.run("a")).nodes).toBeUndefined();
    h.clock.advance(6000);
    expect((await h.run("a")).nodes).toBeUndefined();
    h.clock.advance(6000);
    expect((await h.run("a")).nodes?.[0]).toMatchObject({ name: "a", delete: true });
  });

  test("a node is deleted only after K not-found answers spread over at least T", async () => {
    const h = harness([node("a", "False")], new Map([["a", "gone"]]));
    expect((await h.run("a")).nodes).toBeUndefined();
    h.clock.advance(5000);
    expect((await h.run("a")).nodes).toBeUndefined();
    h.clock.advance(1000);
    // Three answers, but only 6 s apart: not yet.
    expect((await h.run("a")).nodes).toBeUndefined();
    h.clock.advance(4000);
    const out = await h.run("a");
    expect(out.nodes?.[0]).toMatchObject({ name: "a", uid: "uid-a", delete: true });
    expect(out.events?.[0]).toMatchObject({
      reason: "DeletingNode",
      sourceComponent: "cloud-node-lifecycle-controller",
    });
  });

  test("errors neither count nor reset: the evidence resumes where it was", async () => {
    const answers = new Map<string, Answer>([["a", "gone"]]);
    const h = harness([node("a", "Unknown")], answers);
    await h.run("a");
    h.clock.advance(5000);
    answers.set("a", "error");
    for (let i = 0; i < 5; i++) {
      expect((await h.run("a")).nodes).toBeUndefined();
      h.clock.advance(1000);
    }
    answers.set("a", "gone");
    await h.run("a");
    expect((await h.run("a")).nodes?.[0]?.delete).toBe(true);
  });

  test("a found instance clears the evidence", async () => {
    const answers = new Map<string, Answer>([["a", "gone"]]);
    const h = harness([node("a", "False")], answers);
    await h.run("a");
    await h.run("a");
    answers.set("a", "running");
    await h.run("a");
    answers.set("a", "gone");
    h.clock.advance(20_000);
    expect((await h.run("a")).nodes).toBeUndefined();
  });

  test("Ready nodes are never looked up", async () => {
    const h = harness([node("a", "True")], new Map([["a", "gone"]]));
    expect(await h.run("a")).toEqual({ requeue: { kind: "done" } });
    expect(h.calls()).toBe(0);
  });

  test("stopped instance: shutdown taint; running again: removed", async () => {
    const answers = new Map<string, Answer>([["a", "stopped"]]);
    const h = harness([node("a", "False")], answers);
    const out = await h.run("a");
    expect(out.nodes?.[0]?.addTaints).toEqual([
      { key: "node.cloudprovider.kubernetes.io/shutdown", value: "", effect: "NoSchedule" },
    ]);
    h.fleet.upsertNode(
      "c1",
      node("a", "False", {
        taints: [{ key: "node.cloudprovider.kubernetes.io/shutdown", value: "", effect: "NoSchedule" }],
      }),
    );
    answers.set("a", "running");
    h.clock.advance(60_000);
    expect((await h.run("a")).nodes?.[0]?.removeTaintKeys).toEqual([
      "node.cloudprovider.kubernetes.io/shutdown",
    ]);
  });

  test("blast radius: beyond the budget deletions stop with an Event; an operator's annotation lets one through", async () => {
    const nodes = ["a", "b", "c"].map((n) => node(n, "False"));
    const h = harness(
      nodes,
      new Map<string, Answer>([
        ["a", "gone"],
        ["b", "gone"],
        ["c", "gone"],
      ]),
      {
        deleteAfterChecks: 1,
        deleteAfterMs: 0,
        blastRadius: { maxPercent: 0, maxNodes: 1, windowMs: 60_000 },
      },
    );
    expect((await h.run("a")).nodes?.[0]?.delete).toBe(true);
    const blocked = await h.run("b");
    expect(blocked.nodes).toBeUndefined();
    expect(blocked.events?.[0]).toMatchObject({ type: "Warning", reason: "NodeDeletionLimitExceeded" });
    h.fleet.upsertNode("c1", node("c", "False", { annotations: { [ANNOTATION_CONFIRM_DELETION]: "true" } }));
    expect((await h.run("c")).nodes?.[0]?.delete).toBe(true);
    // After the window the budget is back.
    h.clock.advance(61_000);
    expect((await h.run("b")).nodes?.[0]?.delete).toBe(true);
  });

  test("a node without providerID is never judged", async () => {
    const h = harness([node("a", "False", { providerId: "" })], new Map([["a", "gone"]]));
    for (let i = 0; i < 5; i++) {
      h.clock.advance(10_000);
      expect((await h.run("a")).nodes).toBeUndefined();
    }
    expect(h.calls()).toBe(0);
  });
});
