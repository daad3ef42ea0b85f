// After a snapshot (an agent reconnecting), the Services the hub ensured are re-verified from the
// account-wide listing of owned load balancers: one list call, not a chain per Service. Against
// the simulated cloud on a loopback port (tests may import sim/; hub/src code never does).

import { Node, Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { type Logger, pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../sim/src/cloud/index.js";
import { CloudAccounts } from "../../cloud/accounts.js";
import { simulatedProvider } from "../../cloud/providers/simulated/index.js";
import { ProviderRegistry } from "../../cloud/registry.js";
import { parseHubConfig } from "../../config/load.js";
import { FleetState } from "../../fleet/state.js";
import { HubMetrics } from "../../metrics.js";
import { runWorkers, type WorkKey } from "../../queue/index.js";
import { systemClock } from "../../util/clock.js";
import { accountsCloud, testControllerContext } from "../context.testkit.js";
import { serviceController } from "./index.js";

const REGION = "sim-east-1";
const SERVICES = 12;

let cloud: SimulatedCloud;
beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 13 });
});
afterAll(async () => {
  await cloud.close();
});

type HubConfig = ReturnType<typeof parseHubConfig>;

/** The service controller as the hub runs it: real queue and workers; patches applied to the fleet as an agent would. */
function startHub(config: HubConfig, accounts: CloudAccounts, metrics: HubMetrics, logger: Logger) {
  const fleet = new FleetState();
  const ctx = testControllerContext({
    config,
    fleet,
    clock: systemClock,
    metrics,
    logger,
    ...accountsCloud(accounts),
  });
  const queue = ctx.queue;
  const controller = serviceController(ctx);
  fleet.subscribe(controller.triggers);
  const listeners: ((key: WorkKey) => void)[] = [];
  const workers = runWorkers(queue, {
    concurrency: 4,
    handler: async (key) => {
      const out = await controller.reconcile(key);
      for (const l of listeners) l(key);
      for (const d of out.services ?? []) {
        const svc = fleet.view(key.cluster)?.services.get(`${d.namespace}/${d.name}`);
        if (svc === undefined) continue;
        fleet.upsertService(
          key.cluster,
          Service.fromPartial({
            ...svc,
            resourceVersion: String(Number(svc.resourceVersion) + 1),
            finalizers: [
              ...svc.finalizers.filter((f) => !d.removeFinalizers.includes(f)),
              ...d.addFinalizers,
            ],
            ingress: d.ingress === undefined ? svc.ingress : d.ingress.items,
          }),
        );
      }
      return out.requeue;
    },
  });
  return {
    fleet,
    queue,
    onReconciled: (l: (key: WorkKey) => void) => listeners.push(l),
    calls: async (op: string) =>
      (await metrics.cloudCalls.get()).values
        .filter((v) => v.labels.op === op)
        .reduce((n, v) => n + v.value, 0),
    async stop() {
      queue.shutDown();
      await workers.stop();
    },
  };
}

async function waitFor(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("after a reconnect, ensured Services are re-verified with one list call; only a vanished load balancer is ensured again", async () => {
  const env: NodeJS.ProcessEnv = { KEY: cloud.createAccount("acme").apiKey };
  const instance = cloud.createInstance("acme", { name: "n0", region: REGION });
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
          name: "acme",
          provider: "simulated",
          region: REGION,
          endpoint: cloud.url,
          credentials: { env: "KEY" },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: "c1", account: "acme", token: { env: "T" } }],
    }),
  );
  const logger = pino({ level: "silent" });
  const metrics = new HubMetrics(false);
  const accounts = new CloudAccounts(config.accounts, config.clusters, {
    registry: new ProviderRegistry([simulatedProvider]),
    refresh: { periodMs: 60_000, cacheScope: "account" },
    maxConcurrentRouteWrites: 4,
    clock: systemClock,
    logger,
    metrics,
    env,
  });
  const hub = startHub(config, accounts, metrics, logger);
  const { fleet, queue, calls } = hub;
  let verified = 0;
  hub.onReconciled((key) => {
    if (key.kind === "service-verify") verified++;
  });
  const services = () => [...(fleet.view("c1")?.services.values() ?? [])];
  try {
    fleet.setConnected("c1", true);
    fleet.replace(
      "c1",
      nodes,
      Array.from({ length: SERVICES }, (_, i) =>
        Service.fromPartial({
          namespace: "default",
          name: `s${i}`,
          uid: `uid-s${i}`,
          resourceVersion: "1",
          type: "LoadBalancer",
          ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
          externalTrafficPolicy: "Cluster",
          ipFamilies: ["IPv4"],
          sessionAffinity: "None",
        }),
      ),
    );
    await waitFor("every Service to have its ingress", () => services().every((s) => s.ingress.length > 0));
    await waitFor("the queue to drain", () => queue.len() === 0 && queue.processingLen() === 0);
    expect(cloud.inventory("acme").loadBalancers).toHaveLength(SERVICES);

    // One load balancer vanishes out of band while the agent is away.
    const gone = services()[3];
    await accounts.cloudFor("c1")?.provider.loadBalancers?.ensureDeleted({
      cluster: "c1",
      serviceUid: gone?.uid ?? "",
    });
    expect(cloud.inventory("acme").loadBalancers).toHaveLength(SERVICES - 1);
    const listsBefore = await calls("lb.list");
    const listenerListsBefore = await calls("listener.list");
    const verifiedBefore = verified;

    fleet.setConnected("c1", false);
    fleet.setConnected("c1", true);
    fleet.replace("c1", nodes, services());
    await waitFor(
      "the vanished load balancer to be ensured again",
      () => cloud.inventory("acme").loadBalancers.length === SERVICES,
    );
    await waitFor("the queue to drain", () => queue.len() === 0 && queue.processingLen() === 0);

    expect(verified).toBe(verifiedBefore + 1);
    // The listing (one page) plus the one re-ensure's own lookup; the other Services cost nothing.
    expect((await calls("lb.list")) - listsBefore).toBe(2);
    expect((await calls("listener.list")) - listenerListsBefore).toBe(1);
  } finally {
    await hub.stop();
  }
});

test("a restarted hub adopts current load balancers from the account listing: no per-Service call, no mutation; a changed Service is ensured", async () => {
  const env: NodeJS.ProcessEnv = { KEY: cloud.createAccount("restart").apiKey };
  const instance = cloud.createInstance("restart", { name: "n0", region: REGION });
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
          name: "restart",
          provider: "simulated",
          region: REGION,
          endpoint: cloud.url,
          credentials: { env: "KEY" },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: "c1", account: "restart", token: { env: "T" } }],
    }),
  );
  const logger = pino({ level: "silent" });
  const bootHub = () => {
    const metrics = new HubMetrics(false);
    const accounts = new CloudAccounts(config.accounts, config.clusters, {
      registry: new ProviderRegistry([simulatedProvider]),
      refresh: { periodMs: 60_000, cacheScope: "account" },
      maxConcurrentRouteWrites: 4,
      clock: systemClock,
      logger,
      metrics,
      env,
    });
    return startHub(config, accounts, metrics, logger);
  };
  const first = bootHub();
  let services: Service[];
  try {
    first.fleet.setConnected("c1", true);
    first.fleet.replace(
      "c1",
      nodes,
      Array.from({ length: SERVICES }, (_, i) =>
        Service.fromPartial({
          namespace: "default",
          name: `s${i}`,
          uid: `uid-r${i}`,
          resourceVersion: "1",
          type: "LoadBalancer",
          ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
          externalTrafficPolicy: "Cluster",
          ipFamilies: ["IPv4"],
          sessionAffinity: "None",
        }),
      ),
    );
    const all = () => [...(first.fleet.view("c1")?.services.values() ?? [])];
    await waitFor("every Service to have its ingress", () => all().every((s) => s.ingress.length > 0));
    await waitFor("the queue to drain", () => first.queue.len() === 0 && first.queue.processingLen() === 0);
    services = all();
  } finally {
    await first.stop();
  }
  expect(cloud.inventory("restart").loadBalancers).toHaveLength(SERVICES);

  // The restarted hub sees the same Services (ingress and finalizer set), one with a new port.
  const changed = services.map((s, i) =>
    i === 5
      ? { ...s, resourceVersion: "99", ports: [{ ...s.ports[0], port: 8080 } as Service["ports"][number]] }
      : s,
  );
  const second = bootHub();
  try {
    let reconciled = 0;
    second.onReconciled((key) => {
      if (key.kind === "service") reconciled++;
    });
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", nodes, changed);
    await waitFor("every Service to be reconciled", () => reconciled >= SERVICES);
    await waitFor("the queue to drain", () => second.queue.len() === 0 && second.queue.processingLen() === 0);
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
