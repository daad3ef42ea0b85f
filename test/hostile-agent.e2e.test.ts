/**
 * Agents are untrusted input: crafted gRPC clients speaking the real protocol play a hostile
 * cluster (cluster-001). Each attack ends with a clear status (and the `fleet-ccm-refusal`
 * trailer) or a refused object, counted in a metric, while the two honest clusters of the same
 * hub keep converging.
 */
import { AgentMessage, HubMessage, Node, RELEASE_VERSION, Service, type ServicePort } from "@fleet-ccm/proto";
import { Client, credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const lines: { msg: string; notLogged?: number }[] = [];
const logger = pino({ level: "info" }, { write: (l: string) => lines.push(JSON.parse(l)) });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const DELTAS_PER_SECOND = 200;
const OPENS_PER_MINUTE = 600;

let f: LocalFleet;
let hostile: string;
let honest: string[];

beforeAll(async () => {
  f = await LocalFleet.start({
    clusters: 3,
    nodesPerCluster: 0,
    logger,
    hubConfig: {
      limits: {
        maxDeltasPerSecond: DELTAS_PER_SECOND,
        maxStreamOpensPerMinute: OPENS_PER_MINUTE,
        maxStreamsPerCluster: 2,
      },
    },
  });
  await f.startHub();
  [hostile = "", ...honest] = [...f.clusters.keys()];
  for (const c of honest) {
    await f.startAgent(c);
    f.addNodes(c, 3);
    f.addServices(c, 1);
  }
  expect(await waitFor(honestConverged, 30_000)).toBe(true);
}, 60_000);

afterAll(async () => {
  // The honest clusters still converge on what changed during the attacks.
  for (const c of honest) {
    f.addNodes(c, 1);
    f.addServices(c, 1);
  }
  expect(await waitFor(honestConverged, 30_000)).toBe(true);
  for (const c of honest) expect(await refusedCount({ cluster: c })).toBe(0);
  await f?.stop();
}, 60_000);

function honestConverged(): boolean {
  return honest.every(
    (c) =>
      f.nodes(c).every((n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED)) &&
      f
        .services(c)
        .filter((s) => s.spec?.type === "LoadBalancer")
        .every((s) => (s.status?.loadBalancer?.ingress ?? []).length > 0) &&
      f.hub?.fleet.view(c)?.connected === true,
  );
}

async function refusedCount(labels: Record<string, string>): Promise<number> {
  const m = await f.hub?.metrics.streamsRefused.get();
  return (m?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k as "cluster"]) === want))
    .reduce((a, v) => a + v.value, 0);
}

async function objectsRefused(reason: string): Promise<number> {
  const m = await f.hub?.metrics.objectsRefused.get();
  return (m?.values ?? []).filter((v) => v.labels.reason === reason).reduce((a, v) => a + v.value, 0);
}

interface Ended {
  code: number;
  details: string;
  refusal: string;
}

/** One crafted stream: raw bytes on the wire, so it can send what no generated client would. */
function crafted(token: string | null = f.cluster(hostile).token) {
  const client = new Client(`127.0.0.1:${f.hubPort}`, credentials.createInsecure());
  const md = new Metadata();
  if (token !== null) md.set("authorization", `Bearer ${token}`);
  const call = client.makeBidiStreamRequest(
    "/fleet.v1.Hub/Sync",
    (b: Buffer) => b,
    (b: Buffer) => HubMessage.decode(b),
    md,
  );
  const received: HubMessage[] = [];
  call.on("data", (m: HubMessage) => received.push(m));
  let over = false;
  const ended = new Promise<Ended>((resolve) =>
    call.on("error", (e: ServiceError) => {
      over = true;
      resolve({
        code: e.code,
        details: e.details,
        refusal: String(e.metadata?.get("fleet-ccm-refusal")[0] ?? ""),
      });
    }),
  );
  const raw = (b: Buffer | Uint8Array) => {
    call.write(Buffer.from(b));
  };
  const send = (body: AgentMessage["body"]) => raw(AgentMessage.encode({ body }).finish());
  return {
    received,
    ended,
    raw,
    send,
    hello(cluster = hostile, agentVersion = RELEASE_VERSION) {
      send({ $case: "hello", value: { cluster, agentVersion, kubernetesVersion: "v1.31.0" } });
    },
    async welcomed(): Promise<boolean> {
      await waitFor(() => over || received.some((m) => m.body?.$case === "welcome"), 5000);
      return received.some((m) => m.body?.$case === "welcome");
    },
    snapshot(nodes: Node[], services: Service[], seq: number, snapshotId = 1) {
      send({
        $case: "snapshot",
        value: { snapshotId, nodes, services, persistentVolumes: [], last: true, seq },
      });
    },
    close() {
      call.cancel();
      client.close();
    },
  };
}

let uid = 0;
function wireNode(name: string): Node {
  return Node.fromPartial({ name, uid: `hostile-${++uid}`, resourceVersion: "1" });
}
function wireService(name: string, ports: Partial<ServicePort>[]): Service {
  return Service.fromPartial({
    namespace: "default",
    name,
    uid: `hostile-${++uid}`,
    resourceVersion: "1",
    type: "LoadBalancer",
    externalTrafficPolicy: "Cluster",
    ports,
  });
}

/** A stream past Hello and an empty snapshot, as a real agent's would be. */
async function streaming(seq = 0) {
  const s = crafted();
  s.hello();
  expect(await s.welcomed()).toBe(true);
  s.snapshot([], [], seq);
  expect(await waitFor(() => s.received.some((m) => m.body?.$case === "ack"), 5000)).toBe(true);
  return s;
}

describe("identity", () => {
  test("a Hello naming another cluster is PERMISSION_DENIED; unknown and missing tokens UNAUTHENTICATED", async () => {
    const other = honest[0] ?? "";
    const s = crafted();
    s.hello(other);
    const e = await s.ended;
    expect(e.code).toBe(status.PERMISSION_DENIED);
    expect(e.details).toContain(`belongs to cluster "${hostile}", not "${other}"`);
    expect(e.refusal).toBe("identity");
    s.close();
    expect(await refusedCount({ cluster: hostile, code: "PERMISSION_DENIED", reason: "identity" })).toBe(1);

    // Another cluster's token guessed: unknown. No token at all: missing.
    const guessed = crafted("not-a-token-of-this-fleet");
    guessed.hello(other);
    expect(await guessed.ended).toMatchObject({ code: status.UNAUTHENTICATED, refusal: "token" });
    guessed.close();
    const none = crafted(null);
    none.hello(other);
    expect(await none.ended).toMatchObject({ code: status.UNAUTHENTICATED, refusal: "token" });
    none.close();
    expect(await refusedCount({ cluster: "", code: "UNAUTHENTICATED", reason: "token" })).toBe(2);
    // The other cluster never lost its stream.
    expect(f.hub?.fleet.view(other)?.connected).toBe(true);
  });

  test("a 10 KiB cluster name in Hello is refused with a short, clipped message", async () => {
    const s = crafted();
    s.hello("x".repeat(10 * 1024));
    const e = await s.ended;
    expect(e.code).toBe(status.PERMISSION_DENIED);
    expect(e.details.length).toBeLessThan(200);
    s.close();
  });

  test("an agent two minor releases newer is told to upgrade the hub first", async () => {
    const [major, minor] = RELEASE_VERSION.split(".").map(Number);
    const s = crafted();
    s.hello(hostile, `${major}.${(minor ?? 0) + 2}.0`);
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.FAILED_PRECONDITION, refusal: "version" });
    expect(e.details).toContain("upgrade the hub first");
    s.close();
  });
});

describe("floods", () => {
  test("a flood of streams: beyond maxStreamsPerCluster and maxStreamOpensPerMinute, RESOURCE_EXHAUSTED", async () => {
    const before = await refusedCount({ cluster: hostile, reason: "stream-limit" });
    const streams = Array.from({ length: 20 }, () => crafted());
    for (const s of streams) s.hello();
    expect(
      await waitFor(
        async () => (await refusedCount({ cluster: hostile, reason: "stream-limit" })) - before === 18,
        10_000,
      ),
    ).toBe(true);
    const refused = await Promise.all(streams.slice(2).map((s) => s.ended));
    for (const e of refused) {
      expect(e.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(e.details).toContain("the limit is 2");
    }
    // 18 refusals within a second: one log line (the next one will say how many it left out).
    expect(lines.filter((l) => l.msg.startsWith("stream refused: the cluster already has")).length).toBe(1);
    for (const s of streams) s.close();
  }, 60_000);

  test("a flood of deltas: beyond maxDeltasPerSecond (after ten seconds' worth), RESOURCE_EXHAUSTED", async () => {
    const s = await streaming();
    for (let seq = 1; seq <= DELTAS_PER_SECOND * 15; seq++)
      s.send({
        $case: "delta",
        value: { seq, change: { $case: "nodeDeleted", value: { namespace: "", name: `n${seq}`, uid: "" } } },
      });
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.RESOURCE_EXHAUSTED, refusal: "delta-rate" });
    expect(e.details).toContain("limits.maxDeltasPerSecond");
    s.close();
    expect(await refusedCount({ cluster: hostile, reason: "delta-rate" })).toBe(1);
  }, 60_000);
});

describe("malformed, oversized and deeply nested messages", () => {
  test("bytes that are no AgentMessage: INVALID_ARGUMENT, reason malformed", async () => {
    const s = crafted();
    s.hello();
    expect(await s.welcomed()).toBe(true);
    s.raw(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.INVALID_ARGUMENT, refusal: "malformed" });
    expect(e.details).toMatch(/^malformed AgentMessage: /);
    s.close();

    // 30,000 nested groups of an unknown field: decoding fails, the hub does not.
    const deep = crafted();
    deep.raw(Buffer.concat([Buffer.alloc(30_000, 0x7b), Buffer.alloc(30_000, 0x7c)]));
    expect(await deep.ended).toMatchObject({ code: status.INVALID_ARGUMENT, refusal: "malformed" });
    deep.close();
    expect(await refusedCount({ cluster: hostile, reason: "malformed" })).toBe(2);
  }, 60_000);

  test("5,000 nested length-delimited unknown fields decode to an empty message: INVALID_ARGUMENT", async () => {
    let m = Buffer.alloc(0);
    for (let i = 0; i < 5000; i++) {
      const len: number[] = [];
      let l = m.length;
      do {
        len.push((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
        l >>>= 7;
      } while (l > 0);
      m = Buffer.concat([Buffer.from([0x7a, ...len]), m]);
    }
    const s = crafted();
    s.raw(m);
    const e = await s.ended;
    expect(e.code).toBe(status.INVALID_ARGUMENT);
    expect(e.details).toBe("empty AgentMessage");
    s.close();
  }, 60_000);

  test("a message over maxMessageBytes: RESOURCE_EXHAUSTED, reason message-size; over twice that, the transport's", async () => {
    const big = (bytes: number): AgentMessage["body"] => ({
      $case: "applyResult",
      value: {
        kind: 1,
        namespace: "",
        name: "n",
        uid: "u",
        generation: 1,
        outcome: 1,
        httpStatus: 0,
        reason: "",
        message: "x".repeat(bytes),
      },
    });
    const s = crafted();
    s.hello();
    expect(await s.welcomed()).toBe(true);
    s.send(big(5 * 1024 * 1024));
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.RESOURCE_EXHAUSTED, refusal: "message-size" });
    expect(e.details).toContain("the limit is 4194304 (limits.maxMessageBytes)");
    s.close();
    expect(await refusedCount({ cluster: hostile, reason: "message-size" })).toBe(1);

    // Over twice the limit grpc-js ends the stream from the length prefix, before buffering it.
    const huge = crafted();
    huge.hello();
    expect(await huge.welcomed()).toBe(true);
    huge.send(big(9 * 1024 * 1024));
    expect((await huge.ended).code).toBe(status.RESOURCE_EXHAUSTED);
    huge.close();
  }, 60_000);
});

describe("apply results", () => {
  test("an apply result for a 10 KiB object name ends the stream (protocol); the hub keeps nothing of it", async () => {
    const s = await streaming();
    s.send({
      $case: "applyResult",
      value: {
        kind: 1,
        namespace: "",
        name: "r".repeat(10 * 1024),
        uid: "u",
        generation: 1,
        outcome: 3,
        httpStatus: 500,
        reason: "",
        message: "",
      },
    });
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.INVALID_ARGUMENT, refusal: "protocol" });
    expect(e.details).toContain("apply result for an object no API server holds");
    s.close();
  });
});

describe("sequence numbers", () => {
  test("a replayed or reordered delta seq is INVALID_ARGUMENT; a gap asks for a snapshot", async () => {
    const s = await streaming(5);
    s.send({ $case: "delta", value: { seq: 6, change: { $case: "node", value: wireNode("replayed-1") } } });
    s.send({ $case: "delta", value: { seq: 6, change: { $case: "node", value: wireNode("replayed-2") } } });
    const e = await s.ended;
    expect(e).toMatchObject({ code: status.INVALID_ARGUMENT, refusal: "sequence" });
    expect(e.details).toContain("delta seq 6 replays or reorders: the last seq is 6");
    s.close();
    expect(f.hub?.fleet.view(hostile)?.nodes.has("replayed-2")).toBe(false);

    const gap = await streaming(0);
    gap.send({ $case: "delta", value: { seq: 3, change: { $case: "node", value: wireNode("after-gap") } } });
    expect(await waitFor(() => gap.received.some((m) => m.body?.$case === "resync"), 5000)).toBe(true);
    const resync = gap.received.find((m) => m.body?.$case === "resync");
    expect(resync?.body?.$case === "resync" && resync.body.value.reason).toBe("expected seq 1, got 3");
    expect(f.hub?.fleet.view(hostile)?.nodes.has("after-gap")).toBe(false);
    gap.close();
  }, 90_000);
});

describe("objects no API server would hold", () => {
  test("a LoadBalancer Service with 10,000 ports, a 10 KiB node name and broken ports are refused; the stream stays up", async () => {
    const s = crafted();
    s.hello();
    expect(await s.welcomed()).toBe(true);
    const wide = wireService(
      "ten-thousand-ports",
      Array.from({ length: 10_000 }, (_, i) => ({
        name: `p${i}`,
        protocol: "TCP",
        port: i + 1,
        nodePort: 0,
      })),
    );
    const dup = wireService("dup-ports", [
      { name: "a", protocol: "TCP", port: 80, nodePort: 30080 },
      { name: "b", protocol: "TCP", port: 80, nodePort: 30081 },
    ]);
    const range = wireService("bad-port", [{ name: "a", protocol: "TCP", port: 70_000, nodePort: 0 }]);
    const good = wireService("fine", [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }]);
    const longName = wireNode("n".repeat(10 * 1024));
    s.snapshot([longName, wireNode("ok-node")], [wide, dup, range, good], 0);
    // The hub acks a snapshot once it is the view.
    expect(await waitFor(() => s.received.some((m) => m.body?.$case === "ack"), 10_000)).toBe(true);
    const view = f.hub?.fleet.view(hostile);
    expect(view?.services.has("default/fine")).toBe(true);
    expect(view?.nodes.has("ok-node")).toBe(true);
    for (const n of ["ten-thousand-ports", "dup-ports", "bad-port"]) {
      expect(view?.services.has(`default/${n}`)).toBe(false);
      expect(view?.refused.get(`service/default/${n}`)?.limit).toBe("ports");
    }
    expect(view?.refused.get("service/default/ten-thousand-ports")?.message).toContain(
      "10000 ports; a LoadBalancer Service may have at most 100 (limits.maxServicePorts)",
    );
    const nodeRefusal = [...(view?.refused.values() ?? [])].find((r) => r.kind === "node");
    expect(nodeRefusal?.limit).toBe("name");
    expect(nodeRefusal?.name.length).toBeLessThanOrEqual(253);
    expect(nodeRefusal?.message.length).toBeLessThan(200);
    expect(await objectsRefused("ports")).toBe(3);
    expect(await objectsRefused("name")).toBeGreaterThanOrEqual(1);

    // A 10 KiB node name as a delta: refused, and the stream goes on.
    s.send({
      $case: "delta",
      value: { seq: 1, change: { $case: "node", value: wireNode("m".repeat(10 * 1024)) } },
    });
    s.send({ $case: "delta", value: { seq: 2, change: { $case: "node", value: wireNode("later-node") } } });
    s.send({ $case: "heartbeat", value: { seq: 2, sentAt: new Date(), receivedGeneration: 0 } });
    expect(await waitFor(() => f.hub?.fleet.view(hostile)?.nodes.has("later-node") === true, 5000)).toBe(
      true,
    );
    expect(
      await waitFor(() => s.received.some((m) => m.body?.$case === "ack" && m.body.value.seq === 2), 5000),
    ).toBe(true);
    // No cloud load balancer for any refused Service.
    for (const svc of [wide, dup, range])
      expect(f.cloud.loadBalancers().some((l) => l.tags["fleet-ccm.io/service-uid"] === svc.uid)).toBe(false);
    s.close();
  }, 60_000);
});

describe("stream churn (last: it spends the open budget)", () => {
  test("opening and closing streams as fast as it can: beyond maxStreamOpensPerMinute, RESOURCE_EXHAUSTED", async () => {
    // Opening and closing as fast as it can: the open budget (a burst of 10) runs out.
    let rateRefused: Ended | undefined;
    for (let i = 0; i < 40 && rateRefused === undefined; i++) {
      const s = crafted();
      s.hello();
      const first = await Promise.race([
        s.ended,
        s.welcomed().then((ok) => (ok ? undefined : ({ code: -1, details: "", refusal: "" } as Ended))),
      ]);
      if (first?.refusal === "stream-rate") rateRefused = first;
      s.close();
      await waitFor(() => (f.hub?.fleet.view(hostile)?.connected ?? false) === false, 2000);
    }
    expect(rateRefused?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(rateRefused?.details).toContain("limits.maxStreamOpensPerMinute");
    expect(await refusedCount({ cluster: hostile, reason: "stream-rate" })).toBeGreaterThan(0);
  }, 60_000);
});
