import { type AgentMessage, type HubMessage, Node } from "@fleet-ccm/proto";
import { status } from "@grpc/grpc-js";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { FleetState } from "../fleet/state.js";
import { FakeClock } from "../util/clock.js";
import { AgentSession } from "./session.js";

function node(name: string, rv = "1"): Node {
  return Node.fromPartial({ name, uid: `uid-${name}`, resourceVersion: rv });
}

function harness(limits = { maxObjectsPerChunk: 10, maxObjectsPerCluster: 100 }) {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const written: HubMessage[] = [];
  const failures: { code: status; details: string }[] = [];
  const received: [string, number][] = [];
  let primary: AgentSession | undefined;
  const session = new AgentSession(
    "alpha",
    1,
    { write: (m) => written.push(m), fail: (code, details) => failures.push({ code, details }) },
    {
      fleet,
      limits,
      clock,
      logger: pino({ level: "silent" }),
      heartbeatIntervalMs: 1000,
      desiredSubject: "fleet.v1.alpha.desired",
      maxMessageBytes: 1 << 20,
      onPrimary: (s) => {
        primary = s;
      },
      isPrimary: (s) => s === primary,
      onApplyResult: () => undefined,
      onReceived: (c, g) => received.push([c, g]),
      onClosed: () => undefined,
    },
  );
  const send = (m: AgentMessage["body"]) => session.handle({ body: m });
  const hello = (cluster = "alpha") =>
    send({ $case: "hello", value: { cluster, agentVersion: "t", kubernetesVersion: "v1.31.0" } });
  return { clock, fleet, written, failures, received, session, send, hello };
}

describe("AgentSession", () => {
  test("Hello naming another cluster is refused with PERMISSION_DENIED", () => {
    const h = harness();
    h.hello("beta");
    expect(h.failures).toEqual([
      { code: status.PERMISSION_DENIED, details: expect.stringContaining('"alpha"') },
    ]);
    expect(h.session.closed).toBe(true);
    expect(h.written).toEqual([]);
  });

  test("anything before Hello is refused", () => {
    const h = harness();
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } });
    expect(h.failures[0]?.code).toBe(status.FAILED_PRECONDITION);
  });

  test("the view changes only when the last snapshot chunk arrives", () => {
    const h = harness();
    h.hello();
    expect(h.written[0]?.body?.$case).toBe("welcome");
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("a")], services: [], last: false, seq: 0 },
    });
    expect(h.fleet.view("alpha")?.synced ?? false).toBe(false);
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("b")], services: [], last: true, seq: 7 },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "b"]);
    expect(h.written.at(-1)).toEqual({ body: { $case: "ack", value: { seq: 7 } } });
  });

  test("a heartbeat tells the hub what desired state the agent has received, once it streams", () => {
    const h = harness();
    h.hello();
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 7 } });
    expect(h.received).toEqual([]); // no view yet: not the primary stream
    h.send({ $case: "snapshot", value: { snapshotId: 1, nodes: [], services: [], last: true, seq: 0 } });
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } });
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 9 } });
    expect(h.received).toEqual([["alpha", 9]]);
    expect(h.written.at(-1)?.body?.$case).toBe("ack");
  });

  test("a sequence gap asks for a resync and ignores deltas until the next snapshot", () => {
    const h = harness();
    h.hello();
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("a")], services: [], last: true, seq: 0 },
    });
    h.send({ $case: "delta", value: { seq: 1, change: { $case: "node", value: node("b") } } });
    h.send({ $case: "delta", value: { seq: 3, change: { $case: "node", value: node("c") } } });
    expect(h.written.at(-1)?.body?.$case).toBe("resync");
    h.send({ $case: "delta", value: { seq: 4, change: { $case: "node", value: node("d") } } });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "b"]);
    h.send({
      $case: "snapshot",
      value: { snapshotId: 2, nodes: [node("a"), node("c")], services: [], last: true, seq: 4 },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "c"]);
    h.send({
      $case: "delta",
      value: { seq: 5, change: { $case: "nodeDeleted", value: { namespace: "", name: "a", uid: "uid-a" } } },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["c"]);
  });

  test("oversized chunks and invalid objects are refused with a status that says why", () => {
    const h = harness({ maxObjectsPerChunk: 2, maxObjectsPerCluster: 100 });
    h.hello();
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("a"), node("b"), node("c")], services: [], last: true, seq: 0 },
    });
    expect(h.failures[0]).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: expect.stringContaining("limit is 2"),
    });

    const h2 = harness();
    h2.hello();
    h2.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("Bad_Name")], services: [], last: true, seq: 0 },
    });
    expect(h2.failures[0]?.code).toBe(status.INVALID_ARGUMENT);
    expect(h2.fleet.view("alpha")?.synced ?? false).toBe(false);
  });

  test("a silent stream is closed after three heartbeat intervals", () => {
    const h = harness();
    h.hello();
    h.clock.advance(2999);
    expect(h.session.closed).toBe(false);
    h.clock.advance(1);
    expect(h.failures[0]?.code).toBe(status.DEADLINE_EXCEEDED);
  });
});
