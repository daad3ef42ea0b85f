import { ApplyOutcome, ApplyResult, Node, ObjectKind } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "./fake-clock.testkit.js";
import {
  APPLY_HOLD_MAX_MS,
  ECHO_WAIT_MS,
  Outbox,
  objectKey,
  type PendingChange,
  pendingResult,
  readyChange,
} from "./outbox.js";

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

describe("Outbox.hold: a node's changes wait while a patch is applied to it", () => {
  function held(): { o: Outbox; clock: FakeClock; released: () => number } {
    const clock = new FakeClock();
    let n = 0;
    const o = new Outbox(() => n++, clock);
    return { o, clock, released: () => n };
  }

  test("the status echo and the object echo go out as one delta, once the apply is done and both came back", () => {
    const { o, clock, released } = held();
    o.put(node("b", "u2", "1"));
    const hold = o.hold("u1");
    hold.wrote();
    o.put(node("a", "u1", "2"));
    hold.wrote();
    hold.done();
    expect(o.size).toBe(1);
    o.put(node("a", "u1", "3"));
    expect(released()).toBe(1);
    expect(clock.scheduled).toBe(0);
    expect(describeItem(o)).toEqual(["node b/u2@1", "node a/u1@3"]);
    // Held no more: the next change is in line at once.
    o.put(node("a", "u1", "4"));
    expect(describeItem(o)).toEqual(["node a/u1@4"]);
  });

  test("echoes that came back before the apply finished are released when it finishes", () => {
    const { o, released } = held();
    const hold = o.hold("u1");
    hold.wrote();
    o.put(node("a", "u1", "2"));
    hold.wrote();
    o.put(node("a", "u1", "3"));
    expect(o.size).toBe(0);
    hold.done();
    expect(released()).toBe(1);
    expect(describeItem(o)).toEqual(["node a/u1@3"]);
  });

  test("a failed apply releases what it held at once, and one that wrote nothing holds nothing", () => {
    const { o, clock, released } = held();
    const failed = o.hold("u1");
    o.put(node("a", "u1", "2"));
    failed.done();
    expect(describeItem(o)).toEqual(["node a/u1@2"]);
    const idle = o.hold("u1");
    idle.done();
    expect(released()).toBe(1);
    expect(clock.scheduled).toBe(0);
    o.put(node("a", "u1", "3"));
    expect(describeItem(o)).toEqual(["node a/u1@3"]);
  });

  test("a slow apply (seconds between its writes and their echoes) still goes out as one delta", () => {
    const { o, clock, released } = held();
    const slow = o.hold("u1");
    clock.advance(10_000);
    slow.wrote();
    o.put(node("a", "u1", "2"));
    clock.advance(10_000);
    slow.wrote();
    expect(o.size).toBe(0);
    slow.done();
    clock.advance(ECHO_WAIT_MS - 1);
    expect(o.size).toBe(0);
    o.put(node("a", "u1", "3"));
    expect(released()).toBe(1);
    expect(describeItem(o)).toEqual(["node a/u1@3"]);
    expect(clock.scheduled).toBe(0);
  });

  test("bounded: a stuck apply releases the latest state after APPLY_HOLD_MAX_MS, a lost echo ECHO_WAIT_MS after the apply", () => {
    const { o, clock } = held();
    const stuck = o.hold("u1");
    stuck.wrote();
    o.put(node("a", "u1", "2"));
    clock.advance(APPLY_HOLD_MAX_MS - 1);
    expect(o.size).toBe(0);
    clock.advance(1);
    expect(describeItem(o)).toEqual(["node a/u1@2"]);
    stuck.done();
    o.put(node("a", "u1", "3"));
    expect(describeItem(o)).toEqual(["node a/u1@3"]);

    const lost = o.hold("u1");
    lost.wrote();
    lost.wrote();
    o.put(node("a", "u1", "4"));
    lost.done();
    clock.advance(ECHO_WAIT_MS - 1);
    expect(o.size).toBe(0);
    clock.advance(1);
    expect(describeItem(o)).toEqual(["node a/u1@4"]);
    expect(clock.scheduled).toBe(0);
  });

  test("a deletion during the hold goes out at once; a change already waiting is not held", () => {
    const { o } = held();
    const hold = o.hold("u1");
    hold.wrote();
    o.put(node("a", "u1", "2"));
    o.put(readyChange({ $case: "nodeDeleted", value: { namespace: "", name: "a", uid: "u1" } }));
    expect(describeItem(o)).toEqual(["nodeDeleted a/u1"]);
    hold.done();
    expect(o.size).toBe(0);

    o.put(node("b", "u2", "1"));
    const waiting = o.hold("u2");
    o.put(node("b", "u2", "2"));
    expect(describeItem(o)).toEqual(["node b/u2@2"]);
    waiting.done();
  });

  test("a new apply to a node whose echoes are still awaited releases the earlier hold first", () => {
    const { o } = held();
    const first = o.hold("u1");
    first.wrote();
    first.wrote();
    o.put(node("a", "u1", "2"));
    first.done();
    const second = o.hold("u1");
    expect(describeItem(o)).toEqual(["node a/u1@2"]);
    first.done();
    o.put(node("a", "u1", "3"));
    expect(o.size).toBe(0);
    second.done();
    expect(describeItem(o)).toEqual(["node a/u1@3"]);
  });
});
