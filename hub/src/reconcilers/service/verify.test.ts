// After a snapshot (an agent reconnecting), the Services the hub ensured are re-verified from the
// account-wide listing of owned load balancers: one list call, not a chain per Service. Against
// the simulated cloud on a loopback port (tests may import sim/; hub/src code never does).

import { Node, type Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../sim/src/cloud/index.js";
import { parseHubConfig } from "../../config/load.js";
import { convergeAndStop, lbService, startServiceHarness, waitUntil } from "./harness.testkit.js";

const REGION = "sim-east-1";
const SERVICES = 12;

let cloud: SimulatedCloud;
beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 13 });
});
afterAll(async () => {
  await cloud.close();
});

/** SERVICES LoadBalancer Services, uids `${uidPrefix}0`, `${uidPrefix}1`, … */
function loadBalancerServices(uidPrefix: string): Service[] {
  return Array.from({ length: SERVICES }, (_, i) => lbService(`s${i}`, `${uidPrefix}${i}`));
}

/** A cloud account with one running instance, its node, and a hub config with one cluster in it. */
function account(name: string) {
  const env: NodeJS.ProcessEnv = { KEY: cloud.createAccount(name).apiKey };
  const instance = cloud.createInstance(name, { name: "n0", region: REGION });
  const nodes = [
    Node.fromPartial({
      name: "n0",
      uid: "uid-n0",
      resourceVersion: "1",
      providerId: `simulated://${REGION}/${instance.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    }),
  ];
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [
        {
          name,
          provider: "simulated",
          region: REGION,
          endpoint: cloud.url,
          credentials: { env: "KEY" },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: "c1", account: name, token: { env: "T" } }],
    }),
  );
  return { env, nodes, config };
}

test("after a reconnect, ensured Services are re-verified with one list call; only a vanished load balancer is ensured again", async () => {
  const { env, nodes, config } = account("acme");
  const hub = await startServiceHarness({ config, env, logger: pino({ level: "silent" }) });
  const verified = () => hub.passes("service-verify");
  const { fleet, calls, accounts } = hub;
  const services = () => [...(fleet.view("c1")?.services.values() ?? [])];
  try {
    fleet.setConnected("c1", true);
    fleet.replace("c1", nodes, loadBalancerServices("uid-s"));
    await waitUntil("every Service to have its ingress", () => services().every((s) => s.ingress.length > 0));
    await waitUntil("the queue to drain", () => hub.drained());
    expect(cloud.inventory("acme").loadBalancers).toHaveLength(SERVICES);

    // One load balancer vanishes out of band while the agent is away.
    const gone = services()[3];
    const bound = accounts.cloudFor("c1");
    await bound?.provider.loadBalancers?.ensureDeleted({ ...bound.target, serviceUid: gone?.uid ?? "" });
    expect(cloud.inventory("acme").loadBalancers).toHaveLength(SERVICES - 1);
    const listsBefore = await calls("lb.list");
    const listenerListsBefore = await calls("listener.list");
    const verifiedBefore = verified();

    fleet.setConnected("c1", false);
    fleet.setConnected("c1", true);
    fleet.replace("c1", nodes, services());
    await waitUntil(
      "the vanished load balancer to be ensured again",
      () => cloud.inventory("acme").loadBalancers.length === SERVICES,
    );
    await waitUntil("the queue to drain", () => hub.drained());

    expect(verified()).toBe(verifiedBefore + 1);
    // The listing (one page) plus the one re-ensure's own lookup; the other Services cost nothing,
    // and the re-ensure lists no listeners: with its load balancer gone, none is left to adopt.
    expect((await calls("lb.list")) - listsBefore).toBe(2);
    expect((await calls("listener.list")) - listenerListsBefore).toBe(0);
  } finally {
    await hub.stop();
  }
});

test("a restarted hub adopts current load balancers from the account listing: no per-Service call, no mutation; a changed Service is ensured", async () => {
  const { env, nodes, config } = account("restart");
  let reconciled = 0;
  const bootHub = () =>
    startServiceHarness({
      config,
      env,
      logger: pino({ level: "silent" }),
      onOutcome: (key) => {
        if (key.kind === "service") reconciled++;
      },
    });
  const services = await convergeAndStop(await bootHub(), "c1", nodes, loadBalancerServices("uid-r"));
  expect(cloud.inventory("restart").loadBalancers).toHaveLength(SERVICES);

  // The restarted hub sees the same Services (ingress and finalizer set), one with a new port.
  const changed = services.map((s, i) =>
    i === 5
      ? { ...s, resourceVersion: "99", ports: [{ ...s.ports[0], port: 8080 } as Service["ports"][number]] }
      : s,
  );
  const second = await bootHub();
  try {
    reconciled = 0;
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", nodes, changed);
    await waitUntil("every Service to be reconciled", () => reconciled >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const listener = cloud.inventory("restart").listeners.filter((l) => l.port === 8080);
    expect(listener).toHaveLength(1);
    // One listing page for the whole account, plus the changed Service's own ensure; the 11
    // current ones cost nothing: no listener, pool or health-check reads, no writes for them.
    expect(await second.calls("lb.list")).toBe(2);
    expect(await second.calls("listener.list")).toBe(1);
    expect(await second.calls("pool.list")).toBe(1);
    expect(await second.calls("lb.create")).toBe(0);
    expect(cloud.inventory("restart").loadBalancers).toHaveLength(SERVICES);
  } finally {
    await second.stop();
  }
});

test("a restarted hub whose node set changed meanwhile only updates the backends of load balancers built from the same spec", async () => {
  const { env, nodes, config } = account("restart-nodes");
  const bootHub = () => startServiceHarness({ config, env, logger: pino({ level: "silent" }) });
  const services = await convergeAndStop(await bootHub(), "c1", nodes, loadBalancerServices("uid-n"));
  // A node joined while the hub was down.
  const joined = cloud.createInstance("restart-nodes", { name: "n1", region: REGION });
  const more = [
    ...nodes,
    Node.fromPartial({
      name: "n1",
      uid: "uid-n1",
      resourceVersion: "1",
      providerId: `simulated://${REGION}/${joined.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    }),
  ];
  const second = await bootHub();
  try {
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", more, services);
    await waitUntil("every pool to have both nodes", () =>
      cloud.inventory("restart-nodes").pools.every((p) => p.members.length === 2),
    );
    await waitUntil("the queue to drain", () => second.drained());
    // No whole ensure (no listener, health-check or firewall reads), one pool update per Service.
    expect(await second.calls("listener.list")).toBe(0);
    expect(await second.calls("healthcheck.list")).toBe(0);
    expect(await second.calls("pool.update")).toBe(SERVICES);
    expect(await second.calls("lb.create")).toBe(0);
  } finally {
    await second.stop();
  }
});
