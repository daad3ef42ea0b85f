/**
 * The hub as a process (the built CLI) against NATS outages (a real nats-server, stopped and
 * started): health endpoints and the agents' gRPC port are up from start-up, /readyz names
 * what is missing, the log says what is wrong in one line per state change, and desired state
 * produced while NATS is down reaches the cluster once it is back.
 */
import { type AgentMessage, HubClient, type HubMessage } from "@fleet-ccm/proto";
import { credentials, Metadata } from "@grpc/grpc-js";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";

let fleet: LocalFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: r.status, body: await r.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

/** Hello over the real protocol; resolves with the hub's first answer. */
async function hello(port: number, cluster: string, token: string): Promise<HubMessage | undefined> {
  const client = new HubClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${token}`);
  const call = client.sync(md);
  try {
    return await new Promise<HubMessage | undefined>((resolve) => {
      call.on("data", (m: HubMessage) => resolve(m));
      call.on("error", () => resolve(undefined));
      const body: AgentMessage["body"] = {
        $case: "hello",
        value: { cluster, agentVersion: "probe", kubernetesVersion: "v1.31.0" },
      };
      call.write({ body });
    });
  } finally {
    call.cancel();
    client.close();
  }
}

function initialized(f: LocalFleet, cluster: string, names: readonly string[]): boolean {
  const nodes = f.nodes(cluster);
  return names.every((name) => {
    const n = nodes.find((x) => x.metadata?.name === name);
    return n !== undefined && !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
  });
}

/** Log lines (pino JSON) whose msg matches. */
function lines(output: string, msg: RegExp): Record<string, unknown>[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => msg.test(String(l["msg"])));
}

test("NATS down at start-up: /healthz and gRPC serve, /readyz names NATS; once NATS is up, nodes converge, and survive another outage", async () => {
  const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  fleet = f;
  const cluster = [...f.clusters.keys()][0] ?? "";
  const token = f.cluster(cluster).token;

  // NATS goes down for 10 s; the hub starts in the meantime.
  const natsBack = f.nats.restart(10_000);
  expect(await waitFor(() => f.nats.pid() === 0, 5000)).toBe(true);
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true, logLevel: "info" });
  expect(await waitFor(async () => (await get(hub.httpPort, "/healthz")).status === 200, 8000)).toBe(true);
  const notReady = await get(hub.httpPort, "/readyz");
  expect(f.nats.pid()).toBe(0);
  expect(notReady.status).toBe(503);
  expect(notReady.body).toContain("NATS");
  expect(notReady.body).toContain(f.nats.url.replace("nats://", ""));
  const welcome = await hello(hub.grpcPort, cluster, token);
  expect(welcome?.body?.$case).toBe("welcome");
  // One line for the state change, naming the server and the setting; not one per retry.
  expect(await waitFor(() => lines(hub.output(), /cannot connect to NATS/).length > 0, 5000)).toBe(true);
  const down = lines(hub.output(), /cannot connect to NATS/);
  expect(down).toHaveLength(1);
  expect(String(down[0]?.["msg"])).toContain(`127.0.0.1:${f.nats.port}`);
  expect(String(down[0]?.["msg"])).toContain("nats.servers");
  expect(hub.output()).not.toMatch(/\n\s+at /);

  await natsBack;
  expect(await waitFor(async () => (await get(hub.httpPort, "/readyz")).status === 200, 20_000)).toBe(true);
  // The log line comes through the hub's stdout pipe, which may lag the HTTP answer.
  expect(await waitFor(() => lines(hub.output(), /connected to NATS/).length > 0, 5000)).toBe(true);
  expect(lines(hub.output(), /connected to NATS/)).toHaveLength(1);
  f.spawnAgentProcess(cluster, hub.grpcPort);
  const first = f.addNodes(cluster, 3);
  expect(await waitFor(() => initialized(f, cluster, first), 30_000)).toBe(true);

  // Another outage: nodes that join while NATS is down are initialized once it is back.
  const again = f.nats.restart(3000);
  expect(await waitFor(() => f.nats.pid() === 0, 5000)).toBe(true);
  const later = f.addNodes(cluster, 2);
  expect(await waitFor(async () => (await get(hub.httpPort, "/readyz")).body.includes("NATS"), 5000)).toBe(
    true,
  );
  await again;
  expect(await waitFor(() => initialized(f, cluster, later), 30_000)).toBe(true);
  expect(lines(hub.output(), /NATS connection lost/).length).toBeGreaterThanOrEqual(1);
});

test("a wrong NATS password: the hub keeps serving, says which server refused and which settings to check", async () => {
  const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  fleet = f;
  const hub = await f.spawnHubProcess(undefined, {
    captureOutput: true,
    logLevel: "info",
    env: { FLEET_CCM_NATS_HUB: "not-the-password" },
  });
  expect(await waitFor(() => lines(hub.output(), /refused the hub's credentials/).length > 0, 10_000)).toBe(
    true,
  );
  const line = String(lines(hub.output(), /refused the hub's credentials/)[0]?.["msg"]);
  expect(line).toContain(`127.0.0.1:${f.nats.port}`);
  expect(line).toContain("nats.user and nats.password");
  expect(hub.output()).not.toContain("not-the-password");
  expect(hub.output()).not.toMatch(/\n\s+at /);
  const ready = await get(hub.httpPort, "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body).toContain("nats.password");
  expect((await get(hub.httpPort, "/healthz")).status).toBe(200);
  expect(hub.child.exitCode).toBeNull();
});
