import { ApplyOutcome, ApplyResult, Node, ObjectKind } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { Outbox, objectKey, type PendingChange, pendingResult, readyChange } from "./outbox.js";

function node(name: string, uid: string, rv: string): PendingChange {
  return readyChange({ $case: "node", value: Node.fromPartial({ name, uid, resourceVersion: rv }) });
}

function result(name: string, uid: string, outcome: ApplyOutcome): ApplyResult {
  return ApplyResult.fromPartial({ kind: ObjectKind.OBJECT_KIND_NODE, name, uid, generation: 1, outcome });
}

function describeItem(o: Outbox): string[] {
  return o.drain().map((i) => {
    if (i.type === "result") return `result ${i.result.name} ${ApplyOutcome[i.result.outcome]}`;
    const c = i.wire();
    return c.$case === "node"
      ? `node ${c.value.name}/${c.value.uid}@${c.value.resourceVersion}`
      : `${c.$case} ${c.value.name}/${c.value.uid}`;
  });
}

describe("Outbox", () => {
  test("keeps the latest message per object, at the place of its first one", () => {
    const o = new Outbox();
    o.put(node("a", "u1", "1"));
    o.put(node("b", "u2", "1"));
    o.put(node("a", "u1", "2"));
    o.put(pendingResult(result("a", "u1", ApplyOutcome.APPLY_OUTCOME_FAILED)));
    o.put(pendingResult(result("a", "u1", ApplyOutcome.APPLY_OUTCOME_APPLIED)));
    expect(o.size).toBe(3);
    expect(describeItem(o)).toEqual(["node a/u1@2", "node b/u2@1", "result a APPLY_OUTCOME_APPLIED"]);
    expect(o.size).toBe(0);
  });

  test("a deletion replaces the object's pending update; a recreated object (new uid) comes after it", () => {
    const o = new Outbox();
    o.put(node("a", "u1", "5"));
    o.put(readyChange({ $case: "nodeDeleted", value: { namespace: "", name: "a", uid: "u1" } }));
    o.put(node("a", "u9", "7"));
    expect(describeItem(o)).toEqual(["nodeDeleted a/u1", "node a/u9@7"]);
  });

  test("take() hands out the oldest first and 10,000 updates of 100 objects leave 100 messages", () => {
    const o = new Outbox();
    for (let i = 0; i < 10_000; i++) o.put(node(`n${i % 100}`, `u${i % 100}`, String(i)));
    expect(o.size).toBe(100);
    const first = o.take();
    const c = first?.type === "change" ? first.wire() : undefined;
    expect(c?.$case === "node" && c.value.resourceVersion).toBe("9900");
    expect(o.size).toBe(99);
  });

  test("a change's wire form is built once, when it is taken, and never for a superseded one", () => {
    const o = new Outbox();
    const built: string[] = [];
    const lazy = (rv: string): PendingChange => ({
      type: "change",
      key: objectKey("node", "", "a", "u1"),
      wire: () => {
        built.push(rv);
        return { $case: "node", value: Node.fromPartial({ name: "a", uid: "u1", resourceVersion: rv }) };
      },
    });
    o.put(lazy("1"));
    o.put(lazy("2"));
    expect(built).toEqual([]);
    const taken = o.take();
    expect(taken?.type === "change" && taken.wire().$case).toBe("node");
    expect(built).toEqual(["2"]);
  });
});
