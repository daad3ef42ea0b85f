import {
  type AgentMessage,
  ApplyOutcome,
  type HubMessage,
  HubService,
  Node,
  ObjectKind,
} from "@fleet-ccm/proto";
import { Server, ServerCredentials, type ServerDuplexStream } from "@grpc/grpc-js";
import { afterEach, expect, test } from "@jest/globals";
import pino from "pino";
import { HubStream } from "./hub-stream.js";
import { readyChange } from "./outbox.js";

// A hub endpoint over real gRPC that welcomes the agent and records what it writes: whether the
// agent packs the changes of one turn of the event loop into a DeltaBatch depends on the Welcome.

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function hub(acceptsDeltaBatches: boolean): Promise<{ address: string; got: AgentMessage[] }> {
  const got: AgentMessage[] = [];
  const server = new Server();
  server.addService(HubService, {
    sync: (call: ServerDuplexStream<AgentMessage, HubMessage>) => {
      call.on("data", (m: AgentMessage) => {
        got.push(m);
        if (m.body?.$case === "hello")
          call.write({
            body: {
              $case: "welcome",
              value: {
                cluster: "alpha",
                limits: { maxMessageBytes: 1 << 20, maxObjectsPerChunk: 3 },
                desiredSubject: "fleet.v1.alpha.desired",
                heartbeatIntervalMs: 60_000,
                forwardAnnotationPrefixes: [],
                secretReferences: [],
                hubHeartbeatIntervalMs: 0,
                volumeInTreeSources: [],
                volumeCsiDrivers: [],
                acceptsDeltaBatches,
              },
            },
          });
      });
      call.on("end", () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  cleanups.push(() => server.forceShutdown());
  return { address: `127.0.0.1:${port}`, got };
}

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}

/** Five node changes and an apply result in one tick, once the stream is up. */
async function burst(acceptsDeltaBatches: boolean): Promise<AgentMessage["body"][]> {
  const h = await hub(acceptsDeltaBatches);
  const stream = new HubStream({
    address: h.address,
    cluster: "alpha",
    token: "t",
    insecure: true,
    agentVersion: "0.1.0",
    kubernetesVersion: () => "v1.31.0",
    logger: pino({ level: "silent" }),
    snapshot: () => ({ nodes: [], services: [], persistentVolumes: [] }),
  });
  cleanups.push(() => stream.stop());
  stream.start();
  await until(() => h.got.some((m) => m.body?.$case === "snapshot"));
  const change = (i: number) =>
    readyChange({
      $case: "node",
      value: Node.fromPartial({ name: `n${i}`, uid: `u${i}`, resourceVersion: "1" }),
    });
  for (let i = 1; i <= 4; i++) stream.sendChange(change(i));
  stream.sendApplyResult({
    kind: ObjectKind.OBJECT_KIND_NODE,
    namespace: "",
    name: "n0",
    uid: "u0",
    generation: 1,
    outcome: ApplyOutcome.APPLY_OUTCOME_APPLIED,
    httpStatus: 0,
    reason: "",
    message: "",
  });
  stream.sendChange(change(5));
  const sent = () =>
    h.got.flatMap((m) =>
      m.body?.$case === "delta" ? [1] : m.body?.$case === "deltas" ? m.body.value.deltas.map(() => 1) : [],
    ).length;
  await until(() => sent() === 5);
  return h.got
    .map((m) => m.body)
    .filter((b) => b?.$case !== "hello" && b?.$case !== "snapshot" && b?.$case !== "heartbeat");
}

const shape = (b: AgentMessage["body"]) =>
  b?.$case === "deltas"
    ? b.value.deltas.map((d) => d.seq)
    : b?.$case === "delta"
      ? d(b.value.seq)
      : (b?.$case ?? "");
const d = (seq: number) => `delta ${seq}`;

test("to a hub that takes DeltaBatch, one tick's changes go in batches of at most maxObjectsPerChunk, in order", async () => {
  expect((await burst(true)).map(shape)).toEqual([[1, 2, 3], d(4), "applyResult", d(5)]);
});

test("to a hub that predates DeltaBatch, each change is a Delta of its own", async () => {
  expect((await burst(false)).map(shape)).toEqual([d(1), d(2), d(3), d(4), "applyResult", d(5)]);
});
