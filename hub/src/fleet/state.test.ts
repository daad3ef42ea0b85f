import { Node, PersistentVolume, Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { FleetState, type ObjectChange } from "./state.js";

const node = (name: string) => Node.fromPartial({ name, uid: `uid-${name}`, resourceVersion: "1" });
const svc = (name: string) =>
  Service.fromPartial({ namespace: "default", name, uid: `uid-${name}`, resourceVersion: "1" });
const nodes = (n: number) => Array.from({ length: n }, (_, i) => node(`n${i}`));

function fleetAt(policy = { maxObjects: 2, maxPercent: 10, confirmAfterMs: 1000 }) {
  let now = 0;
  const fleet = new FleetState({ hold: policy, now: () => now });
  const deleted: string[] = [];
  fleet.subscribe({
    onNode: (_c, name, ch: ObjectChange<Node>) => ch.type === "delete" && deleted.push(name),
    onService: (_c, key, ch: ObjectChange<Service>) => ch.type === "delete" && deleted.push(key),
  });
  return { fleet, deleted, advance: (ms: number) => (now += ms) };
}

describe("snapshot hold", () => {
  test("the threshold is max(maxObjects, maxPercent % of the kind's count)", () => {
    const { fleet, deleted } = fleetAt({ maxObjects: 2, maxPercent: 10, confirmAfterMs: 1000 });
    fleet.replace("c", nodes(50), []);
    // 10 % of 50 = 5: dropping 5 is applied, dropping 6 more (of 45: limit 4) is held.
    const small = fleet.replace("c", nodes(45), []);
    expect(small.removed).toEqual({ node: 5, service: 0, persistentVolume: 0 });
    expect(deleted).toHaveLength(5);
    const big = fleet.replace("c", nodes(39), []);
    expect(big.held).toHaveLength(6);
    expect(big.dropped.node).toEqual({ count: 6, of: 45 });
    expect(fleet.view("c")?.nodes.size).toBe(45);
    expect(deleted).toHaveLength(5);
  });

  test("nodes and Services are judged separately; a held drop is confirmed only confirmAfterMs later", () => {
    const { fleet, deleted, advance } = fleetAt();
    fleet.replace("c", nodes(3), [svc("a"), svc("b"), svc("c"), svc("d")]);
    const r = fleet.replace("c", nodes(3), [svc("a")]);
    expect(r.held.map((h) => h.key)).toEqual(["default/b", "default/c", "default/d"]);
    expect(fleet.view("c")?.services.size).toBe(4);
    advance(999);
    expect(fleet.replace("c", nodes(3), [svc("a")]).confirmed).toEqual([]);
    advance(1);
    expect(fleet.replace("c", nodes(3), [svc("a")]).confirmed).toHaveLength(3);
    expect(deleted).toEqual(["default/b", "default/c", "default/d"]);
    expect(fleet.view("c")?.held.size).toBe(0);
  });

  test("an upsert of a held object releases it; further drops while something is held are held too", () => {
    const { fleet, deleted } = fleetAt();
    fleet.replace("c", nodes(10), []);
    fleet.replace("c", nodes(5), []);
    expect(fleet.view("c")?.held.size).toBe(5);
    fleet.upsertNode("c", node("n9"));
    expect(fleet.view("c")?.held.size).toBe(4);
    // One more missing (n4): with 4 still held that is over the limit, so held as well.
    fleet.replace("c", [...nodes(4), node("n9")], []);
    expect(fleet.view("c")?.held.size).toBe(5);
    expect(deleted).toEqual([]);
  });

  test("without a policy every drop is applied (as before)", () => {
    const fleet = new FleetState();
    fleet.replace("c", nodes(10), []);
    expect(fleet.replace("c", [], []).removed.node).toBe(10);
    expect(fleet.view("c")?.nodes.size).toBe(0);
  });

  test("a refused object keeps its last accepted version and is never reported deleted", () => {
    const { fleet, deleted } = fleetAt();
    fleet.replace("c", nodes(2), []);
    fleet.replace(
      "c",
      [node("n0")],
      [],
      [{ kind: "node", namespace: "", name: "n1", uid: "uid-n1", limit: "label", message: "bad label" }],
    );
    expect(fleet.view("c")?.nodes.get("n1")?.resourceVersion).toBe("1");
    expect(fleet.view("c")?.refused.get("node/n1")?.limit).toBe("label");
    expect(deleted).toEqual([]);
  });
});

describe("persistent volumes", () => {
  const pv = (name: string) =>
    PersistentVolume.fromPartial({ name, uid: `uid-${name}`, source: "csi", csiDriver: "ebs.csi.aws.com" });

  test("held like the other kinds: a snapshot without most PVs changes nothing until confirmed", () => {
    let now = 0;
    const fleet = new FleetState({
      hold: { maxObjects: 2, maxPercent: 10, confirmAfterMs: 1000 },
      now: () => now,
    });
    const changes: string[] = [];
    fleet.subscribe({
      onPersistentVolume: (_c, name, ch) => changes.push(`${ch.type}:${ch.origin}:${name}`),
    });
    const all = Array.from({ length: 20 }, (_, i) => pv(`pv${i}`));
    fleet.replace("c", [], [], [], all);
    expect(changes).toHaveLength(20);
    changes.length = 0;
    const outcome = fleet.replace("c", [], [], [], all.slice(0, 5));
    expect(outcome.held.filter((h) => h.kind === "persistentVolume")).toHaveLength(15);
    expect(fleet.view("c")?.persistentVolumes.size).toBe(20);
    expect(changes).toEqual([]);
    now += 1000;
    const confirmed = fleet.replace("c", [], [], [], all.slice(0, 5));
    expect(confirmed.confirmed).toHaveLength(15);
    expect(fleet.view("c")?.persistentVolumes.size).toBe(5);
    // An observed deletion needs no confirmation.
    fleet.deletePersistentVolume("c", "pv0");
    expect(changes.at(-1)).toBe("delete:delta:pv0");
    fleet.upsertPersistentVolume("c", pv("pv0"));
    expect(changes.at(-1)).toBe("upsert:delta:pv0");
  });
});
