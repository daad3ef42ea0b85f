import { ApplyOutcome, Node, ObjectKind } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { parseHubConfig } from "../../config/load.js";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext } from "../context.testkit.js";
import type { Outcome } from "../outcome.js";
import { nodeIpamController } from "./index.js";
import { NODE_IPAM, REASON_CIDR_ASSIGNMENT_FAILED, REASON_CIDR_NOT_AVAILABLE } from "./reconcile.js";

const SETTLE_MS = 5000;

function node(name: string, podCidrs: string[] = [], over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    podCidrs,
    creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, Number(name.replace(/\D/g, "") || 0))),
    ...over,
  });
}

function harness(cidrs: string[] = ["10.0.0.0/22"], fleet = new FleetState()) {
  const clock = new FakeClock();
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      reconcile: { convergeDeadlineMs: SETTLE_MS },
      accounts: [{ name: "a", provider: "simulated", region: "r1", credentials: { env: "K" } }],
      clusters: [{ name: "c1", account: "a", token: { env: "T" }, podNetwork: { cidrs } }],
    }),
  );
  const ctx = testControllerContext({ config, fleet, clock, cloudFor: () => undefined });
  const controller = nodeIpamController(ctx);
  fleet.subscribe(controller.triggers);
  fleet.setConnected("c1", true);
  const pass = () => controller.reconcile({ cluster: "c1", kind: NODE_IPAM, name: "" });
  const given = (o: Outcome) => Object.fromEntries((o.nodes ?? []).map((d) => [d.name, d.podCidrs]));
  return { clock, fleet, ctx, controller, pass, given };
}

describe("node IPAM controller", () => {
  test("after the settle time, each node without ranges gets its own, once, with its uid", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("n1", ["10.0.0.0/24"]), node("n2"), node("n3")], []);
    const early = await h.pass();
    expect(early.nodes).toBeUndefined();
    expect(early.requeue).toEqual({ kind: "after", ms: SETTLE_MS });
    h.clock.advance(SETTLE_MS);
    const o = await h.pass();
    expect(h.given(o)).toEqual({ n2: ["10.0.1.0/24"], n3: ["10.0.2.0/24"] });
    expect(o.nodes?.map((d) => d.uid)).toEqual(["uid-n2", "uid-n3"]);
    // In flight: not published again, and nobody else gets those ranges.
    h.fleet.upsertNode("c1", node("n4"));
    expect(h.given(await h.pass())).toEqual({ n4: ["10.0.3.0/24"] });
    // The reports show them: recorded, nothing more to do.
    h.fleet.upsertNode("c1", node("n2", ["10.0.1.0/24"]));
    h.fleet.upsertNode("c1", node("n3", ["10.0.2.0/24"]));
    h.fleet.upsertNode("c1", node("n4", ["10.0.3.0/24"]));
    const done = await h.pass();
    expect(done.nodes).toEqual([]);
    expect(done.requeue).toEqual({ kind: "done" });
  });

  test("a node set by someone else keeps its ranges; what this hub published for it is free again", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("n1")], []);
    h.clock.advance(SETTLE_MS);
    expect(h.given(await h.pass())).toEqual({ n1: ["10.0.0.0/24"] });
    h.fleet.upsertNode("c1", node("n1", ["10.0.3.0/24"]));
    h.fleet.upsertNode("c1", node("n2"));
    expect(h.given(await h.pass())).toEqual({ n2: ["10.0.0.0/24"] });
  });

  test("no allocation from a partial view: not synced, disconnected, nodes held or refused", async () => {
    const fleet = new FleetState({ hold: { maxObjects: 0, maxPercent: 0, confirmAfterMs: 60_000 } });
    const h = harness(undefined, fleet);
    expect((await h.pass()).nodes).toBeUndefined();
    h.fleet.replace("c1", [node("n1", ["10.0.0.0/24"]), node("n2", ["10.0.1.0/24"])], []);
    h.clock.advance(SETTLE_MS);
    // A snapshot without n1 (held): its range must not look free.
    h.fleet.replace("c1", [node("n2", ["10.0.1.0/24"]), node("n3")], []);
    expect(h.fleet.view("c1")?.held.size).toBe(1);
    expect((await h.pass()).nodes).toBeUndefined();
    // A refused node is out of the view altogether.
    h.fleet.deleteNode("c1", "n1");
    h.fleet.refuse("c1", {
      kind: "node",
      namespace: "",
      name: "n9",
      uid: "u9",
      limit: "label",
      message: "x",
    });
    expect((await h.pass()).nodes).toBeUndefined();
    h.fleet.upsertNode("c1", node("n9", ["10.0.0.0/24"]));
    h.fleet.setConnected("c1", false);
    expect((await h.pass()).nodes).toBeUndefined();
    h.fleet.setConnected("c1", true);
    expect(h.given(await h.pass())).toEqual({ n3: ["10.0.2.0/24"] });
  });

  test("a restarted hub (or a new replica) rebuilds from the nodes and waits out the old owner's publications", async () => {
    const first = harness();
    first.fleet.replace("c1", [node("n1"), node("n2"), node("n3")], []);
    first.clock.advance(SETTLE_MS);
    const before = first.given(await first.pass());
    // n1's patch landed and shows; n2's landed after the new hub's snapshot; n3's was lost.
    const second = harness();
    second.fleet.replace("c1", [node("n1", before["n1"] ?? []), node("n2"), node("n3")], []);
    expect((await second.pass()).nodes).toBeUndefined();
    second.fleet.upsertNode("c1", node("n2", before["n2"] ?? []));
    second.clock.advance(SETTLE_MS);
    const after = second.given(await second.pass());
    expect(after).toEqual({ n3: before["n3"] });
    // Released (lease lost, taken again): settles again before allocating.
    second.controller.onReleased?.("c1");
    second.fleet.replace("c1", [node("n1", ["10.0.0.0/24"]), node("n4")], []);
    expect((await second.pass()).nodes).toBeUndefined();
  });

  test("exhausted: a CIDRNotAvailable Warning once per waiting node and a metric; a deleted node's range goes to it", async () => {
    const h = harness(["10.0.0.0/23"]);
    h.fleet.replace(
      "c1",
      [node("n1", ["10.0.0.0/24"]), node("n2", ["10.0.1.0/24"]), node("n3"), node("n4")],
      [],
    );
    h.clock.advance(SETTLE_MS);
    const o = await h.pass();
    expect(o.nodes).toEqual([]);
    expect(o.events?.map((e) => [e.name, e.type, e.reason, e.sourceComponent])).toEqual([
      ["n3", "Warning", REASON_CIDR_NOT_AVAILABLE, "cidrAllocator"],
      ["n4", "Warning", REASON_CIDR_NOT_AVAILABLE, "cidrAllocator"],
    ]);
    expect(o.events?.[0]?.message).toContain("no free range left in pod network 10.0.0.0/23");
    const metric = async () =>
      (await h.ctx.metrics.ipamNodesWaiting.get()).values.find((v) => v.labels.cluster === "c1")?.value;
    expect(await metric()).toBe(2);
    expect((await h.pass()).events).toEqual([]);
    h.fleet.deleteNode("c1", "n1");
    const reused = await h.pass();
    expect(h.given(reused)).toEqual({ n3: ["10.0.0.0/24"] });
    expect(await metric()).toBe(1);
  });

  test("an apply the agent refused is told as CIDRAssignmentFailed and published again after its backoff", async () => {
    const h = harness();
    h.fleet.replace("c1", [node("n1")], []);
    h.clock.advance(SETTLE_MS);
    const d = (await h.pass()).nodes?.[0];
    h.controller.onApplyResult?.("c1", {
      kind: ObjectKind.OBJECT_KIND_NODE,
      namespace: "",
      name: "n1",
      uid: "uid-n1",
      generation: d?.generation ?? 0,
      outcome: ApplyOutcome.APPLY_OUTCOME_FAILED,
      httpStatus: 403,
      reason: "Forbidden",
      message: "nodes is forbidden",
    });
    const o = await h.pass();
    expect(o.events?.map((e) => [e.reason, e.message])).toEqual([
      [REASON_CIDR_ASSIGNMENT_FAILED, "Pod CIDRs 10.0.0.0/24 not set: 403 Forbidden: nodes is forbidden"],
    ]);
    expect(o.nodes).toEqual([]);
    h.clock.advance(60_000);
    expect(h.given(await h.pass())).toEqual({ n1: ["10.0.0.0/24"] });
  });
});
