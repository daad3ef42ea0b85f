import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { PodNetworkSchema } from "../../config/pod-network.js";
import { planAllocation } from "./plan.js";

let created = 0;
function node(name: string, podCidrs: string[] = [], over: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name,
    uid: `uid-${name}`,
    podCidrs,
    creationTimestamp: new Date(Date.UTC(2026, 0, 1) + ++created * 1000),
    ...over,
  });
}

const net = (cidrs: string[], over: Record<string, unknown> = {}) =>
  PodNetworkSchema.parse({ cidrs, ...over });
const none = new Map<string, string[]>();

describe("planAllocation", () => {
  test("defaults /24 and /64; dual-stack pairs one range of each CIDR, in configured order, oldest node first", () => {
    const p = planAllocation(
      net(["fd00:10::/56", "10.20.0.0/16"]),
      [node("b"), node("a", [], { creationTimestamp: new Date(0) })],
      none,
    );
    expect(p.assigned.map((a) => [a.node.name, a.cidrs, a.fresh])).toEqual([
      ["a", ["fd00:10::/64", "10.20.0.0/24"], true],
      ["b", ["fd00:10:0:1::/64", "10.20.1.0/24"], true],
    ]);
    expect(p.free).toEqual(
      new Map([
        ["fd00:10::/56", 254],
        ["10.20.0.0/16", 254],
      ]),
    );
  });

  test("ranges nodes hold are recorded whoever set them, never given again; a node being deleted keeps its own", () => {
    const p = planAllocation(
      net(["10.0.0.0/22"]),
      [
        node("old", ["10.0.0.0/24"]),
        node("leaving", ["10.0.2.0/24"], { deletionTimestamp: new Date() }),
        node("leaving-bare", [], { deletionTimestamp: new Date() }),
        node("foreign", ["192.168.0.0/24"]),
        node("new"),
      ],
      none,
    );
    expect(p.assigned.map((a) => [a.node.name, a.cidrs])).toEqual([["new", ["10.0.1.0/24"]]]);
    expect(p.free.get("10.0.0.0/22")).toBe(1);
  });

  test("a range wider than the node mask occupies every block inside it", () => {
    const p = planAllocation(net(["10.0.0.0/22"]), [node("wide", ["10.0.0.0/23"]), node("new")], none);
    expect(p.assigned[0]?.cidrs).toEqual(["10.0.2.0/24"]);
  });

  test("exhaustion: the nodes past the last range wait, naming the CIDR; a dual-stack node gets no half pair", () => {
    const p = planAllocation(
      net(["10.0.0.0/23", "fd00::/63"], { nodeMaskSizeIPv6: 64 }),
      [node("a", ["10.0.0.0/24", "fd00::/64"]), node("b"), node("c")],
      none,
    );
    expect(p.assigned.map((a) => [a.node.name, a.cidrs])).toEqual([
      ["b", ["10.0.1.0/24", "fd00:0:0:1::/64"]],
    ]);
    expect(p.waiting.map((w) => [w.node.name, w.exhausted])).toEqual([["c", "10.0.0.0/23"]]);
    const v6Short = planAllocation(
      net(["10.0.0.0/22", "fd00::/64"]),
      [node("a", ["10.0.0.0/24", "fd00::/64"]), node("b")],
      none,
    );
    expect(v6Short.waiting.map((w) => w.exhausted)).toEqual(["fd00::/64"]);
    expect(v6Short.free.get("10.0.0.0/22")).toBe(3);
  });

  test("a deleted node's range is free again: the lowest free range goes first", () => {
    const full = [node("a", ["10.0.0.0/24"]), node("b", ["10.0.1.0/24"])];
    expect(planAllocation(net(["10.0.0.0/23"]), [...full, node("c")], none).waiting).toHaveLength(1);
    const p = planAllocation(net(["10.0.0.0/23"]), [full[1] as Node, node("c")], none);
    expect(p.assigned.map((a) => [a.node.name, a.cidrs])).toEqual([["c", ["10.0.0.0/24"]]]);
  });

  test("reservations (published, not yet seen) are kept and nobody else gets them; a taken one is chosen again", () => {
    const reserved = new Map([
      ["uid-b", ["10.0.0.0/24"]],
      ["uid-c", ["10.0.1.0/24"]],
    ]);
    const p = planAllocation(
      net(["10.0.0.0/22"]),
      [node("a"), node("b"), node("c"), node("d", ["10.0.1.0/24"])],
      reserved,
    );
    expect(p.assigned.map((a) => [a.node.name, a.cidrs, a.fresh])).toEqual([
      ["b", ["10.0.0.0/24"], false],
      ["a", ["10.0.2.0/24"], true],
      ["c", ["10.0.3.0/24"], true],
    ]);
    expect(p.lost.map((l) => l.node.name)).toEqual(["c"]);
  });

  test("the same view gives the same plan (a restarted hub chooses as the one before it)", () => {
    const nodes = Array.from({ length: 20 }, (_, i) => node(`n${i}`, i % 3 === 0 ? [`10.9.${i}.0/24`] : []));
    const a = planAllocation(net(["10.9.0.0/16"]), nodes, none);
    const b = planAllocation(net(["10.9.0.0/16"]), [...nodes].reverse(), none);
    expect(b.assigned.map((x) => [x.node.name, x.cidrs])).toEqual(
      a.assigned.map((x) => [x.node.name, x.cidrs]),
    );
    const all = [...nodes.flatMap((n) => n.podCidrs), ...a.assigned.flatMap((x) => x.cidrs)];
    expect(new Set(all).size).toBe(all.length);
  });

  test("a 5000-node dual-stack cluster joining at once: every node a distinct pair, the cluster's ranges unused", () => {
    const nodes = Array.from({ length: 5000 }, (_, i) =>
      node(`big-${i}`, i < 100 ? [`10.128.${i}.0/24`] : []),
    );
    const p = planAllocation(net(["10.128.0.0/9", "fd00:99::/48"]), nodes, none);
    expect(p.assigned).toHaveLength(4900);
    const all = [...nodes.flatMap((n) => n.podCidrs), ...p.assigned.flatMap((a) => a.cidrs)];
    expect(new Set(all).size).toBe(100 + 2 * 4900);
    expect(p.assigned[0]?.cidrs).toEqual(["10.128.100.0/24", "fd00:99::/64"]);
  });
});
