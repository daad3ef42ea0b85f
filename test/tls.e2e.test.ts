/** The hub serves gRPC over TLS unless told otherwise; an agent verifies it with --ca-file. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "@fleet-ccm/agent";
import { HubClient } from "@fleet-ccm/proto";
import { credentials, Metadata, status } from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: "silent" });
let dir: string;
let fleet: LocalFleet;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-tls-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-keyout",
      join(dir, "tls.key"),
      "-out",
      join(dir, "tls.crt"),
      "-subj",
      "/CN=fleet-ccm-hub",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  fleet = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    hubConfig: {
      grpc: { listen: "127.0.0.1:0", tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") } },
    },
  });
  await fleet.startHub();
});

afterAll(async () => {
  await fleet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("an agent that verifies the hub's certificate initializes its nodes over TLS", async () => {
  const cluster = [...fleet.clusters.keys()][0] ?? "";
  const c = fleet.cluster(cluster);
  const agent = new Agent({
    cluster,
    kubeConfig: fleet.kubeConfigFor(cluster),
    hub: {
      address: `127.0.0.1:${fleet.hubPort}`,
      token: c.token,
      insecure: false,
      caPem: readFileSync(join(dir, "tls.crt")),
    },
    nats: { servers: [fleet.nats.url], user: `agent-${cluster}`, password: c.natsPassword },
    logger,
  });
  c.agent = agent;
  await agent.start();
  fleet.addNodes(cluster, 3);
  expect(await waitFor(() => fleet.progress().initialized === 3, 20_000)).toBe(true);
});

test("a plain-TCP client cannot talk to a TLS hub", async () => {
  const client = new HubClient(`127.0.0.1:${fleet.hubPort}`, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${fleet.cluster([...fleet.clusters.keys()][0] ?? "").token}`);
  const call = client.sync(md, { deadline: Date.now() + 5000 });
  const err = await new Promise<{ code: number }>((resolve) => {
    call.on("error", (e: { code: number }) => resolve(e));
    call.on("data", () => undefined);
    call.write({
      body: { $case: "hello", value: { cluster: "x", agentVersion: "", kubernetesVersion: "" } },
    });
  });
  client.close();
  expect([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.INTERNAL]).toContain(err.code);
});
