import { ApplyOutcome, ApplyResult, Node, ObjectKind } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { type Change, Outbox } from "./outbox.js";

function node(name: string, uid: string, rv: string): Change {
  return { $case: "node", value: Node.fromPartial({ name, uid, resourceVersion: rv }) };
}

function result(name: string, uid: string, outcome: ApplyOutcome): ApplyResult {
  return ApplyResult.fromPartial({ kind: ObjectKind.OBJECT_KIND_NODE, name, uid, generation: 1, outcome });
}

function describeItem(o: Outbox): string[] {
  return o
    .drain()
    .map((i) =>
      i.type === "result"
        ? `result ${i.result.name} ${ApplyOutcome[i.result.outcome]}`
        : i.change.$case === "node"
          ? `node ${i.change.value.name}/${i.change.value.uid}@${i.change.value.resourceVersion}`
          : `${i.change.$case} ${i.change.value.name}/${i.change.value.uid}`,
    );
}

describe("Outbox", () => {
  test("keeps the latest message per object, at the place of its first one", () => {
    const o = new Outbox();
    o.put({ type: "change", change: node("a", "u1", "1") });
    o.put({ type: "change", change: node("b", "u2", "1") });
    o.put({ type: "change", change: node("a", "u1", "2") });
    o.put({ type: "result", result: result("a", "u1", ApplyOutcome.APPLY_OUTCOME_FAILED) });
    o.put({ type: "result", result: result("a", "u1", ApplyOutcome.APPLY_OUTCOME_APPLIED) });
    expect(o.size).toBe(3);
    expect(describeItem(o)).toEqual(["node a/u1@2", "node b/u2@1", "result a APPLY_OUTCOME_APPLIED"]);
    expect(o.size).toBe(0);
  });

  test("a deletion replaces the object's pending update; a recreated object (new uid) comes after it", () => {
    const o = new Outbox();
    o.put({ type: "change", change: node("a", "u1", "5") });
    o.put({
      type: "change",
      change: { $case: "nodeDeleted", value: { namespace: "", name: "a", uid: "u1" } },
    });
    o.put({ type: "change", change: node("a", "u9", "7") });
    expect(describeItem(o)).toEqual(["nodeDeleted a/u1", "node a/u9@7"]);
  });

  test("take() hands out the oldest first and 10,000 updates of 100 objects leave 100 messages", () => {
    const o = new Outbox();
    for (let i = 0; i < 10_000; i++)
      o.put({ type: "change", change: node(`n${i % 100}`, `u${i % 100}`, String(i)) });
    expect(o.size).toBe(100);
    const first = o.take();
    expect(
      first?.type === "change" && first.change.$case === "node" && first.change.value.resourceVersion,
    ).toBe("9900");
    expect(o.size).toBe(99);
  });
});
