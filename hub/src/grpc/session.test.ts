import {
  type AgentMessage,
  AnnotationFilter,
  type ApplyResult,
  type HubMessage,
  Node,
  PersistentVolume,
  Service,
  UNIFIED_ANNOTATION_PREFIXES,
} from "@fleet-ccm/proto";
import { status } from "@grpc/grpc-js";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { FleetState, type Refusal, type ReplaceOutcome } from "../fleet/state.js";
import { FakeClock } from "../util/clock.js";
import { AgentSession, type SessionLimits, type StreamRefusalReason } from "./session.js";

function node(name: string, rv = "1"): Node {
  return Node.fromPartial({ name, uid: `uid-${name}`, resourceVersion: rv });
}

function service(name: string, extra: Partial<Service> = {}): Service {
  return Service.fromPartial({
    namespace: "default",
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    type: "LoadBalancer",
    ...extra,
  });
}

const TLS_REFERENCE = {
  annotationPrefix: "service.beta.kubernetes.io/vendor-port-",
  jsonField: "tls-secret-name",
  keys: ["tls.crt", "tls.key"],
};

/** 500 CIDRs: a real Service's source ranges (over 7,000 characters as an annotation). */
const CIDRS = Array.from({ length: 500 }, (_, i) => `100.64.${i >> 2}.${(i & 3) * 64}/26`);

function harness(
  limits: SessionLimits = { maxObjectsPerChunk: 10, maxObjectsPerCluster: 100 },
  hold = { maxObjects: 2, maxPercent: 10, confirmAfterMs: 5000 },
  hubHeartbeatIntervalMs = 0,
) {
  const clock = new FakeClock();
  const fleet = new FleetState({ hold, now: () => clock.now() });
  const refusals: Refusal[] = [];
  const outcomes: ReplaceOutcome[] = [];
  const written: HubMessage[] = [];
  const failures: { code: status; details: string }[] = [];
  const reasons: StreamRefusalReason[] = [];
  const applied: ApplyResult[] = [];
  const received: ([string, number] | [string, number, number])[] = [];
  let primary: AgentSession | undefined;
  const session = new AgentSession(
    "alpha",
    1,
    {
      write: (m) => written.push(m),
      fail: (code, details, reason) => {
        failures.push({ code, details });
        reasons.push(reason);
      },
    },
    {
      fleet,
      limits,
      clock,
      logger: pino({ level: "silent" }),
      heartbeatIntervalMs: 1000,
      hubHeartbeatIntervalMs,
      desiredSubject: "fleet.v1.alpha.desired",
      maxMessageBytes: 1 << 20,
      annotations: new AnnotationFilter([
        ...UNIFIED_ANNOTATION_PREFIXES,
        "service.beta.kubernetes.io/vendor-",
      ]),
      secretReferences: [TLS_REFERENCE],
      volumeSources: { inTree: ["awsElasticBlockStore"], csiDrivers: ["ebs.csi.aws.com"] },
      confirmAfterMs: hold.confirmAfterMs,
      onRefused: (_c, r) => refusals.push(...r),
      onSnapshotApplied: (_c, o) => outcomes.push(o),
      onPrimary: (s) => {
        primary = s;
      },
      isPrimary: (s) => s === primary,
      onApplyResult: (_c, r) => applied.push(r),
      onReceived: (c, g, acked) => received.push(acked === 0 ? [c, g] : [c, g, acked]),
      onClosed: () => undefined,
    },
  );
  const send = (m: AgentMessage["body"]) => session.handle({ body: m });
  const hello = (cluster = "alpha") =>
    send({ $case: "hello", value: { cluster, agentVersion: "t", kubernetesVersion: "v1.31.0" } });
  const snapshot = (id: number, nodes: Node[], services: Service[] = [], seq = 0) =>
    send({
      $case: "snapshot",
      value: { snapshotId: id, nodes, services, persistentVolumes: [], last: true, seq },
    });
  const nodeNames = () => [...(fleet.view("alpha")?.nodes.keys() ?? [])];
  return {
    clock,
    fleet,
    written,
    failures,
    reasons,
    applied,
    received,
    refusals,
    outcomes,
    session,
    send,
    hello,
    snapshot,
    nodeNames,
  };
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
      value: { snapshotId: 1, nodes: [node("a")], services: [], persistentVolumes: [], last: false, seq: 0 },
    });
    expect(h.fleet.view("alpha")?.synced ?? false).toBe(false);
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("b")], services: [], persistentVolumes: [], last: true, seq: 7 },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "b"]);
    expect(h.written.at(-1)).toEqual({
      body: { $case: "ack", value: { seq: 7, hubTimeMs: h.clock.now(), echo: false } },
    });
  });

  test("a heartbeat tells the hub what desired state the agent has received, once it streams", () => {
    const h = harness();
    h.hello();
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 7 } });
    expect(h.received).toEqual([]); // no view yet: not the primary stream
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [], services: [], persistentVolumes: [], last: true, seq: 0 },
    });
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } });
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 9 } });
    expect(h.received).toEqual([["alpha", 9]]);
    expect(h.written.at(-1)?.body?.$case).toBe("ack");
  });

  test("a heartbeat echoing an Ack's hub time reaches the tracker, even before anything was received", () => {
    const h = harness();
    h.hello();
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [], services: [], persistentVolumes: [], last: true, seq: 0 },
    });
    const ack = h.written.at(-1)?.body;
    if (ack?.$case !== "ack") throw new Error("no ack after the snapshot");
    expect(ack.value.hubTimeMs).toBe(h.clock.now());
    h.clock.advance(50);
    const echo = { seq: 0, sentAt: undefined, receivedGeneration: 0, ackedHubTimeMs: ack.value.hubTimeMs };
    h.send({ $case: "heartbeat", value: echo });
    expect(h.received).toEqual([["alpha", 0, ack.value.hubTimeMs]]);
  });

  test("an echo request is an Ack with echo set, at most one a second, and only on a streaming stream", () => {
    const h = harness();
    h.hello();
    h.session.requestEcho(); // no snapshot yet: nothing to say
    expect(h.written.some((m) => m.body?.$case === "ack")).toBe(false);
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [], services: [], persistentVolumes: [], last: true, seq: 0 },
    });
    const acks = () => h.written.filter((m) => m.body?.$case === "ack").map((m) => m.body?.value);
    expect(acks()).toEqual([{ seq: 0, hubTimeMs: h.clock.now(), echo: false }]);
    h.clock.advance(10);
    h.session.requestEcho();
    h.session.requestEcho(); // many publications wait: one echo answers for all
    h.clock.advance(999);
    h.session.requestEcho();
    expect(acks()).toEqual([
      { seq: 0, hubTimeMs: h.clock.now() - 1009, echo: false },
      { seq: 0, hubTimeMs: h.clock.now() - 999, echo: true },
    ]);
    h.clock.advance(1);
    h.session.requestEcho();
    expect(acks().at(-1)).toEqual({ seq: 0, hubTimeMs: h.clock.now(), echo: true });
  });

  test("a sequence gap asks for a resync and ignores deltas until the next snapshot", () => {
    const h = harness();
    h.hello();
    h.send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [node("a")], services: [], persistentVolumes: [], last: true, seq: 0 },
    });
    h.send({ $case: "delta", value: { seq: 1, change: { $case: "node", value: node("b") } } });
    h.send({ $case: "delta", value: { seq: 3, change: { $case: "node", value: node("c") } } });
    expect(h.written.at(-1)?.body?.$case).toBe("resync");
    h.send({ $case: "delta", value: { seq: 4, change: { $case: "node", value: node("d") } } });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "b"]);
    h.send({
      $case: "snapshot",
      value: {
        snapshotId: 2,
        nodes: [node("a"), node("c")],
        services: [],
        persistentVolumes: [],
        last: true,
        seq: 4,
      },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["a", "c"]);
    h.send({
      $case: "delta",
      value: { seq: 5, change: { $case: "nodeDeleted", value: { namespace: "", name: "a", uid: "uid-a" } } },
    });
    expect([...(h.fleet.view("alpha")?.nodes.keys() ?? [])]).toEqual(["c"]);
  });

  test("an oversized chunk (a protocol violation) ends the stream with a status that says why", () => {
    const h = harness({ maxObjectsPerChunk: 2, maxObjectsPerCluster: 100 });
    h.hello();
    h.send({
      $case: "snapshot",
      value: {
        snapshotId: 1,
        nodes: [node("a"), node("b"), node("c")],
        services: [],
        persistentVolumes: [],
        last: true,
        seq: 0,
      },
    });
    expect(h.failures[0]).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: expect.stringContaining("limit is 2"),
    });
  });

  test("a Service with 500 source ranges (as annotation and spec) is a real object: accepted", () => {
    const h = harness();
    h.hello();
    const annotation = CIDRS.join(",");
    expect(annotation.length).toBeGreaterThan(7000);
    const big = service("big", {
      annotations: { "service.beta.kubernetes.io/load-balancer-source-ranges": annotation },
      loadBalancerSourceRanges: CIDRS,
    });
    h.snapshot(1, [node("a")], [big]);
    expect(h.failures).toEqual([]);
    expect(h.fleet.view("alpha")?.services.get("default/big")?.loadBalancerSourceRanges).toHaveLength(500);
    h.send({
      $case: "delta",
      value: { seq: 1, change: { $case: "service", value: { ...big, resourceVersion: "2" } } },
    });
    expect(h.failures).toEqual([]);
    expect(h.refusals).toEqual([]);
  });

  test("an invalid or over-limit object is refused alone; the stream and every other object keep flowing", () => {
    const h = harness();
    h.hello();
    const huge = service("huge", { annotations: { "lb.fleet-ccm.io/x": "y".repeat(256 * 1024) } });
    h.snapshot(1, [node("a"), node("Bad_Name")], [huge, service("web")]);
    expect(h.failures).toEqual([]);
    expect(h.session.closed).toBe(false);
    expect(h.nodeNames()).toEqual(["a"]);
    expect([...(h.fleet.view("alpha")?.services.keys() ?? [])]).toEqual(["default/web"]);
    expect(h.refusals.map((r) => [r.kind, r.name, r.limit])).toEqual([
      ["node", "Bad_Name", "name"],
      ["service", "huge", "annotations-size"],
    ]);
    expect(h.refusals[1]?.message).toContain("the limit is 262144");
    expect(h.written.at(-1)?.body?.$case).toBe("ack");

    // Deltas keep flowing; a refused delta neither ends the stream nor reaches the view.
    h.send({ $case: "delta", value: { seq: 1, change: { $case: "node", value: node("b") } } });
    h.send({
      $case: "delta",
      value: { seq: 2, change: { $case: "service", value: { ...huge, resourceVersion: "2" } } },
    });
    expect(h.nodeNames()).toEqual(["a", "b"]);
    expect(h.fleet.view("alpha")?.services.has("default/huge")).toBe(false);
    // Same refusal again: no second Event.
    expect(h.refusals).toHaveLength(2);
    // Fixed: accepted.
    h.send({ $case: "delta", value: { seq: 3, change: { $case: "service", value: service("huge") } } });
    expect(h.fleet.view("alpha")?.services.has("default/huge")).toBe(true);
    expect(h.fleet.view("alpha")?.refused.size).toBe(1);
    // A reconnect's snapshot repeating a known refusal emits nothing new.
    h.snapshot(2, [node("a"), node("b"), node("Bad_Name")], [service("huge"), service("web")], 3);
    expect(h.refusals).toHaveLength(2);
    expect(h.failures).toEqual([]);
  });

  test("an update that breaks a limit keeps the last accepted version (a refusal is no deletion)", () => {
    const h = harness();
    h.hello();
    h.snapshot(1, [node("a")], [service("web")]);
    const bad = service("web", {
      resourceVersion: "2",
      annotations: { "lb.fleet-ccm.io/x": "y".repeat(300_000) },
    });
    h.send({ $case: "delta", value: { seq: 1, change: { $case: "service", value: bad } } });
    expect(h.fleet.view("alpha")?.services.get("default/web")?.resourceVersion).toBe("1");
    expect(h.refusals.map((r) => r.name)).toEqual(["web"]);
  });

  test("objects beyond maxObjectsPerCluster are refused, not the stream", () => {
    const h = harness({ maxObjectsPerChunk: 10, maxObjectsPerCluster: 3 });
    h.hello();
    h.snapshot(1, [node("a"), node("b")], [service("s1"), service("s2")]);
    expect(h.failures).toEqual([]);
    expect(h.nodeNames()).toEqual(["a", "b"]);
    expect([...(h.fleet.view("alpha")?.services.keys() ?? [])]).toEqual(["default/s1"]);
    expect(h.refusals.map((r) => [r.name, r.limit])).toEqual([["s2", "max-objects-per-cluster"]]);
    h.send({ $case: "delta", value: { seq: 1, change: { $case: "node", value: node("c") } } });
    expect(h.nodeNames()).toEqual(["a", "b"]);
    expect(h.refusals.map((r) => r.name)).toEqual(["s2", "c"]);
    // Updates of known objects still flow.
    h.send({ $case: "delta", value: { seq: 2, change: { $case: "node", value: node("a", "2") } } });
    expect(h.fleet.view("alpha")?.nodes.get("a")?.resourceVersion).toBe("2");
    expect(h.session.closed).toBe(false);
  });

  test("a snapshot missing most nodes is held, a fresh snapshot is asked for, and a later one confirms", () => {
    const h = harness(undefined, { maxObjects: 2, maxPercent: 10, confirmAfterMs: 5000 });
    h.hello();
    const all = Array.from({ length: 10 }, (_, i) => node(`n${i}`));
    h.snapshot(1, all);
    const deletes: string[] = [];
    h.fleet.subscribe({ onNode: (_c, name, ch) => ch.type === "delete" && deletes.push(name) });
    // The agent's next snapshot lists 2 of 10 nodes.
    h.snapshot(2, all.slice(0, 2));
    expect(h.nodeNames()).toHaveLength(10);
    expect(deletes).toEqual([]);
    expect(h.outcomes.at(-1)?.held).toHaveLength(8);
    expect(h.fleet.view("alpha")?.held.size).toBe(8);
    // A snapshot before confirmAfterMs still lacking them confirms nothing.
    h.clock.advance(1000);
    h.snapshot(3, all.slice(0, 2));
    expect(h.nodeNames()).toHaveLength(10);
    expect(h.outcomes.at(-1)?.held).toHaveLength(0);
    // After confirmAfterMs the hub asks for a fresh snapshot itself.
    const resyncs = () => h.written.filter((m) => m.body?.$case === "resync").length;
    const beat = () =>
      h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } });
    for (let i = 0; i < 4; i++) {
      h.clock.advance(999);
      beat();
    }
    h.clock.advance(3);
    expect(resyncs()).toBe(0);
    h.clock.advance(1);
    expect(resyncs()).toBe(1);
    h.snapshot(4, all.slice(0, 2));
    expect(h.nodeNames()).toEqual(["n0", "n1"]);
    expect(deletes).toHaveLength(8);
    expect(h.outcomes.at(-1)?.confirmed).toHaveLength(8);
    expect(h.fleet.view("alpha")?.held.size).toBe(0);
  });

  test("held objects come back with the next full snapshot; an observed deletion needs no confirmation", () => {
    const h = harness(undefined, { maxObjects: 2, maxPercent: 10, confirmAfterMs: 5000 });
    h.hello();
    const all = Array.from({ length: 10 }, (_, i) => node(`n${i}`));
    h.snapshot(1, all);
    h.snapshot(2, []);
    expect(h.fleet.view("alpha")?.held.size).toBe(10);
    h.send({
      $case: "delta",
      value: {
        seq: 1,
        change: { $case: "nodeDeleted", value: { namespace: "", name: "n9", uid: "uid-n9" } },
      },
    });
    expect(h.nodeNames()).toHaveLength(9);
    h.clock.advance(100);
    h.snapshot(3, all.slice(0, 9), [], 1);
    expect(h.nodeNames()).toHaveLength(9);
    expect(h.fleet.view("alpha")?.held.size).toBe(0);
    expect(h.outcomes.at(-1)?.released).toEqual({ node: 9, service: 0, persistentVolume: 0 });
    // A small drop is applied as today.
    h.snapshot(4, all.slice(0, 7), [], 1);
    expect(h.nodeNames()).toHaveLength(7);
  });

  test("a silent stream is closed after three heartbeat intervals (within a tenth more: the timers' grid)", () => {
    const h = harness();
    h.hello();
    h.clock.advance(2999);
    expect(h.session.closed).toBe(false);
    h.clock.advance(300);
    expect(h.failures[0]?.code).toBe(status.DEADLINE_EXCEEDED);
  });

  test("each message moves the idle deadline: three intervals after the last one, not the first", () => {
    const h = harness();
    h.hello();
    h.snapshot(1, [], [], 0);
    for (let i = 0; i < 5; i++) {
      h.clock.advance(2500);
      h.send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } });
    }
    expect(h.session.closed).toBe(false);
    h.clock.advance(2999);
    expect(h.session.closed).toBe(false);
    h.clock.advance(300);
    expect(h.failures[0]).toEqual({
      code: status.DEADLINE_EXCEEDED,
      details: "no message for 3000 ms: the stream is considered dead",
    });
  });

  test("the hub writes something every hubHeartbeatIntervalMs (told in Welcome): a HubHeartbeat only when nothing else went out", () => {
    const h = harness(undefined, undefined, 300);
    h.hello();
    const welcome = h.written[0]?.body;
    expect(welcome?.$case === "welcome" && welcome.value.hubHeartbeatIntervalMs).toBe(300);
    const beats = () => h.written.filter((m) => m.body?.$case === "heartbeat").length;
    // Never later than the interval, at most a tenth earlier (the timers' grid).
    h.clock.advance(269);
    expect(beats()).toBe(0);
    h.clock.advance(31);
    expect(beats()).toBe(1);
    // The snapshot's ack (at 300) and the ack of the agent's heartbeat (at 500) are the hub speaking.
    h.snapshot(1, [node("n1")]);
    h.clock.advance(200);
    h.send({ $case: "heartbeat", value: { seq: 0, sentAt: new Date(), receivedGeneration: 0 } });
    h.clock.advance(269);
    expect(beats()).toBe(1);
    h.clock.advance(31);
    expect(beats()).toBe(2);
    h.clock.advance(600);
    expect(beats()).toBe(4);
    h.session.close();
    h.clock.advance(1000);
    expect(beats()).toBe(4);
  });
});

describe("annotations", () => {
  test("Welcome names the cluster's prefixes; annotations outside them never reach fleet state", () => {
    const h = harness();
    h.hello();
    const welcome = h.written[0]?.body;
    expect(welcome?.$case === "welcome" ? [...welcome.value.forwardAnnotationPrefixes].sort() : []).toEqual(
      [...UNIFIED_ANNOTATION_PREFIXES, "service.beta.kubernetes.io/vendor-"].sort(),
    );
    const annotations = {
      "lb.fleet-ccm.io/idle-timeout": "30",
      "service.beta.kubernetes.io/vendor-idle": "40",
      "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
      "example.com/secret-note": "s3cret",
    };
    h.snapshot(1, [node("n1")], [service("web", { annotations: { ...annotations } })]);
    const kept = {
      "lb.fleet-ccm.io/idle-timeout": "30",
      "service.beta.kubernetes.io/vendor-idle": "40",
      "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
    };
    expect(h.fleet.view("alpha")?.services.get("default/web")?.annotations).toEqual(kept);
    h.send({
      $case: "delta",
      value: {
        seq: 1,
        change: { $case: "service", value: service("web", { annotations: { ...annotations } }) },
      },
    });
    expect(h.fleet.view("alpha")?.services.get("default/web")?.annotations).toEqual(kept);
  });
});

describe("Secrets", () => {
  const port = (secret: string) => ({
    "service.beta.kubernetes.io/vendor-port-443": JSON.stringify({
      protocol: "https",
      "tls-secret-name": secret,
    }),
  });
  const tls = (name: string, extra: Record<string, Buffer> = {}) => ({
    name,
    data: { "tls.crt": Buffer.from("CERT"), "tls.key": Buffer.from("KEY"), ...extra },
    problem: "",
  });

  test("Welcome names the provider's Secret references", () => {
    const h = harness();
    h.hello();
    const welcome = h.written[0]?.body;
    expect(welcome?.$case === "welcome" ? welcome.value.secretReferences : []).toEqual([TLS_REFERENCE]);
  });

  test("a Service keeps only the Secrets its own annotations name, with only the keys asked for", () => {
    const h = harness();
    h.hello();
    const forged = service("web", {
      annotations: port("web-tls"),
      secrets: [
        tls("web-tls", { "ca.crt": Buffer.from("CA") }),
        // Not named by this Service: another Service's, or anything the agent chose to send.
        tls("other-tls"),
        { name: "web-tls", data: { "tls.crt": Buffer.from("SECOND") }, problem: "" },
      ],
    });
    const unnamed = service("plain", { secrets: [tls("web-tls")] });
    const half = service("half", {
      annotations: port("half"),
      secrets: [{ name: "half", data: { "tls.crt": Buffer.from("C") }, problem: "" }],
    });
    const invalid = service("invalid", {
      annotations: port("../kube-system/token"),
      secrets: [tls("../kube-system/token")],
    });
    h.snapshot(1, [], [forged, unnamed, half, invalid]);
    const view = h.fleet.view("alpha")?.services;
    expect(view?.get("default/web")?.secrets).toEqual([tls("web-tls")]);
    expect(view?.get("default/plain")?.secrets).toEqual([]);
    expect(view?.get("default/half")?.secrets).toEqual([
      { name: "half", data: {}, problem: "the agent sent Secret half without tls.crt, tls.key" },
    ]);
    expect(view?.get("default/invalid")?.secrets).toEqual([
      { name: "../kube-system/token", data: {}, problem: "not a valid Secret name (a DNS-1123 subdomain)" },
    ]);
  });

  test("an oversized Secret or problem refuses the Service alone, the message naming no content", () => {
    const h = harness();
    h.hello();
    const big = service("big", {
      annotations: port("big"),
      secrets: [tls("big", { "tls.key": Buffer.alloc(64 * 1024 + 1, "K") })],
    });
    const wordy = service("wordy", {
      annotations: port("wordy"),
      secrets: [{ name: "wordy", data: {}, problem: "x".repeat(301) }],
    });
    h.snapshot(1, [], [big, wordy, service("web")]);
    expect([...(h.fleet.view("alpha")?.services.keys() ?? [])]).toEqual(["default/web"]);
    expect(h.refusals.map((r) => [r.name, r.limit])).toEqual([
      ["big", "secret"],
      ["wordy", "secret"],
    ]);
    expect(h.refusals[0]?.message).toBe(
      'service "default/big": tls.key of Secret "big" takes 65537 bytes; the limit is 65536',
    );
    expect(h.refusals.map((r) => r.message).join("\n")).not.toMatch(/KKKK|xxxx/);
    expect(h.failures).toEqual([]);
  });
});

describe("AgentSession against a hostile agent", () => {
  test("a replayed delta seq ends the stream (sequence); a gap asks for a snapshot", () => {
    const h = harness();
    h.hello();
    h.snapshot(1, [], [], 4);
    h.send({ $case: "delta", value: { seq: 5, change: { $case: "node", value: node("a") } } });
    h.send({ $case: "delta", value: { seq: 5, change: { $case: "node", value: node("b") } } });
    expect(h.failures).toEqual([
      { code: status.INVALID_ARGUMENT, details: "delta seq 5 replays or reorders: the last seq is 5" },
    ]);
    expect(h.reasons).toEqual(["sequence"]);
    expect(h.nodeNames()).toEqual(["a"]);
  });

  test("deltas beyond maxDeltasPerSecond (after ten seconds' worth) end the stream; a paced agent is fine", () => {
    const h = harness({ maxObjectsPerChunk: 10, maxObjectsPerCluster: 100, maxDeltasPerSecond: 5 });
    h.hello();
    h.snapshot(1, []);
    let seq = 0;
    const delta = () =>
      h.send({
        $case: "delta",
        value: { seq: ++seq, change: { $case: "node", value: node(`n${seq % 50}`) } },
      });
    // Paced at the limit for a minute: never refused.
    for (let i = 0; i < 300; i++) {
      delta();
      h.clock.advance(200);
    }
    expect(h.failures).toEqual([]);
    // A burst: ten seconds' worth pass, the next is refused.
    for (let i = 0; i < 60; i++) delta();
    expect(h.reasons).toEqual(["delta-rate"]);
    expect(h.failures[0]?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(h.failures[0]?.details).toBe(
      "more than 5 deltas and apply results per second (limits.maxDeltasPerSecond)",
    );
  });

  test("undecodable and oversized messages are refused with their own reasons", () => {
    const bad = harness();
    bad.hello();
    bad.session.handle({ malformed: "decode", error: "index out of range" });
    expect(bad.failures).toEqual([
      { code: status.INVALID_ARGUMENT, details: "malformed AgentMessage: index out of range" },
    ]);
    expect(bad.reasons).toEqual(["malformed"]);
    const big = harness();
    big.session.handle({ malformed: "size", error: "message of 9 bytes; the limit is 8" });
    expect(big.failures).toEqual([
      { code: status.RESOURCE_EXHAUSTED, details: "message of 9 bytes; the limit is 8" },
    ]);
    expect(big.reasons).toEqual(["message-size"]);
  });

  test("a LoadBalancer Service over maxServicePorts or with invalid ports is refused alone", () => {
    const h = harness({ maxObjectsPerChunk: 10, maxObjectsPerCluster: 100, maxServicePorts: 3 });
    h.hello();
    const ports = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `p${i}`, protocol: "TCP", port: 80 + i, nodePort: 0 }));
    h.snapshot(
      1,
      [],
      [
        service("wide", { ports: ports(4) }),
        service("ok", { ports: ports(3) }),
        service("clusterip", { type: "ClusterIP", ports: ports(4) }),
        service("udp-and-tcp", {
          ports: [
            { name: "a", protocol: "TCP", port: 53, nodePort: 0 },
            { name: "b", protocol: "UDP", port: 53, nodePort: 0 },
          ],
        }),
        service("zero", { ports: [{ name: "a", protocol: "TCP", port: 0, nodePort: 0 }] }),
        service("sctp-typo", { ports: [{ name: "a", protocol: "STCP", port: 1, nodePort: 0 }] }),
      ],
    );
    expect(h.failures).toEqual([]);
    expect([...(h.fleet.view("alpha")?.services.keys() ?? [])].sort()).toEqual([
      "default/clusterip",
      "default/ok",
      "default/udp-and-tcp",
    ]);
    expect(h.refusals.map((r) => [r.name, r.limit, r.message])).toEqual([
      [
        "wide",
        "ports",
        'service "default/wide": 4 ports; a LoadBalancer Service may have at most 3 (limits.maxServicePorts)',
      ],
      ["zero", "ports", 'service "default/zero": port 0 is not in 1-65535'],
      ["sctp-typo", "ports", 'service "default/sctp-typo": protocol "STCP" is not TCP, UDP or SCTP'],
    ]);
  });

  test("an agent of an unsupported release is told which side to upgrade", () => {
    const clock = new FakeClock();
    const failures: string[] = [];
    const session = new AgentSession(
      "alpha",
      1,
      { write: () => undefined, fail: (_c, d, r) => failures.push(`${r}: ${d}`) },
      {
        fleet: new FleetState({ now: () => clock.now() }),
        limits: { maxObjectsPerChunk: 10, maxObjectsPerCluster: 10 },
        clock,
        logger: pino({ level: "silent" }),
        heartbeatIntervalMs: 1000,
        desiredSubject: "fleet.v1.alpha.desired",
        maxMessageBytes: 1 << 20,
        annotations: new AnnotationFilter([...UNIFIED_ANNOTATION_PREFIXES]),
        hubVersion: "0.4.0",
        onPrimary: () => undefined,
        isPrimary: () => false,
        onApplyResult: () => undefined,
        onClosed: () => undefined,
      },
    );
    session.handle({
      body: { $case: "hello", value: { cluster: "alpha", agentVersion: "0.2.9", kubernetesVersion: "" } },
    });
    expect(failures).toEqual([
      "version: agent 0.2.9 is too old for hub 0.4.0: this hub serves agents 0.3.x and 0.4.x; upgrade the agent",
    ]);
  });
});

test("an apply result naming an object no API server holds ends the stream; its message is clipped", () => {
  const h = harness();
  const results = h.applied;
  h.hello();
  h.snapshot(1, []);
  const result = (name: string, message: string) =>
    h.send({
      $case: "applyResult",
      value: {
        kind: 1,
        namespace: "",
        name,
        uid: "u",
        generation: 1,
        outcome: 3,
        httpStatus: 500,
        reason: "x",
        message,
      },
    });
  result("node-1", "m".repeat(5000));
  expect(results[0]?.message.length).toBe(1025);
  result("n".repeat(10 * 1024), "");
  expect(h.reasons).toEqual(["protocol"]);
  expect(h.failures[0]?.details).toBe(
    "apply result for an object no API server holds (name of 10240, namespace of 0, uid of 1 characters)",
  );
  expect(results).toHaveLength(1);
});

test("PersistentVolumes: the Welcome names the provider's sources; only those are kept, invalid ones refused", () => {
  const h = harness();
  h.hello();
  const welcome = h.written.find((m) => m.body?.$case === "welcome")?.body;
  expect(welcome?.$case === "welcome" && welcome.value.volumeInTreeSources).toEqual(["awsElasticBlockStore"]);
  expect(welcome?.$case === "welcome" && welcome.value.volumeCsiDrivers).toEqual(["ebs.csi.aws.com"]);
  const pv = (name: string, source: string, csiDriver = "") =>
    PersistentVolume.fromPartial({ name, uid: `u-${name}`, source, csiDriver, volumeHandle: "vol-1" });
  h.send({
    $case: "snapshot",
    value: {
      snapshotId: 1,
      nodes: [],
      services: [],
      persistentVolumes: [
        pv("ebs", "csi", "ebs.csi.aws.com"),
        pv("in-tree", "awsElasticBlockStore"),
        pv("nfs-like", "csi", "nfs.csi.k8s.io"),
        pv("bad/name", "awsElasticBlockStore"),
      ],
      last: true,
      seq: 0,
    },
  });
  expect([...(h.fleet.view("alpha")?.persistentVolumes.keys() ?? [])].sort()).toEqual(["ebs", "in-tree"]);
  expect(h.refusals.map((r) => [r.kind, r.name, r.limit])).toEqual([
    ["persistentVolume", "bad/name", "name"],
  ]);
  h.send({
    $case: "delta",
    value: { seq: 1, change: { $case: "persistentVolume", value: pv("late", "awsElasticBlockStore") } },
  });
  h.send({
    $case: "delta",
    value: {
      seq: 2,
      change: { $case: "persistentVolumeDeleted", value: { namespace: "", name: "ebs", uid: "u-ebs" } },
    },
  });
  expect([...(h.fleet.view("alpha")?.persistentVolumes.keys() ?? [])].sort()).toEqual(["in-tree", "late"]);
  expect(h.failures).toEqual([]);
});
