// An asynchronous cloud account next to a synchronous one, through the service controller, the
// real work queue and ONE worker, against the simulated cloud on a loopback port (tests may
// import sim/; hub/src code never does).

import { Node, Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../sim/src/cloud/index.js";
import { parseHubConfig } from "../../config/load.js";
import { FINALIZER_LB_CLEANUP } from "../../k8s/well-known.js";
import { startServiceHarness } from "./harness.testkit.js";

const REGION = "sim-east-1";
const POLLS = 4;
const POLL_MS = 250;
const FAST_SERVICES = 10;

let cloud: SimulatedCloud;
beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 11 });
});
afterAll(async () => {
  await cloud.close();
});

test("an asynchronous load balancer converges with no failure Event, while another account's Services converge at full speed on the same single worker", async () => {
  const env: NodeJS.ProcessEnv = {};
  const nodes = new Map<string, Node[]>();
  for (const [account, cluster] of [
    ["slow", "c-slow"],
    ["fast", "c-fast"],
  ] as const) {
    env[`KEY_${account.toUpperCase()}`] = cloud.createAccount(account).apiKey;
    // The slow account's load balancers are PENDING_CREATE for POLLS reads, the cloud asking
    // for POLL_MS between them: the cloud's setting, which any replica reads alike.
    if (account === "slow") cloud.setLoadBalancerAsync(account, { polls: POLLS, pollMs: POLL_MS });
    const instance = cloud.createInstance(account, { name: `${cluster}-n0`, region: REGION });
    nodes.set(cluster, [
      Node.fromPartial({
        name: `${cluster}-n0`,
        uid: `uid-${cluster}-n0`,
        resourceVersion: "1",
        providerId: `simulated://${REGION}/${instance.id}`,
        conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
      }),
    ]);
  }
  const account = (name: string) => ({
    name,
    provider: "simulated",
    region: REGION,
    endpoint: cloud.url,
    credentials: { env: `KEY_${name.toUpperCase()}` },
    rateLimit: { perSecond: 1000, burst: 1000 },
  });
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [account("slow"), account("fast")],
      clusters: [
        { name: "c-slow", account: "slow", token: { env: "T" } },
        { name: "c-fast", account: "fast", token: { env: "T" } },
      ],
    }),
  );
  const warnings: string[] = [];
  const ensuring = new Map<string, number>();
  const convergedAt = new Map<string, number>();
  const started = Date.now();
  const hub = await startServiceHarness({
    config,
    env,
    logger: pino({ level: "silent" }),
    concurrency: 1,
    onOutcome: (key, out) => {
      for (const e of out.events ?? []) {
        if (e.type === "Warning") warnings.push(`${key.cluster} ${e.reason}: ${e.message}`);
        if (e.reason === "EnsuringLoadBalancer") ensuring.set(key.name, (ensuring.get(key.name) ?? 0) + 1);
      }
    },
    onApplied: (cluster, svc) => {
      if (svc.ingress.length > 0)
        convergedAt.set(`${cluster}/${svc.namespace}/${svc.name}`, Date.now() - started);
    },
  });
  const { fleet } = hub;
  const svc = (name: string) =>
    Service.fromPartial({
      namespace: "default",
      name,
      uid: `uid-${name}`,
      resourceVersion: "1",
      type: "LoadBalancer",
      ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
      externalTrafficPolicy: "Cluster",
      ipFamilies: ["IPv4"],
      sessionAffinity: "None",
    });
  try {
    fleet.setConnected("c-slow", true);
    fleet.setConnected("c-fast", true);
    fleet.replace("c-slow", nodes.get("c-slow") ?? [], [svc("slow-0")]);
    fleet.replace(
      "c-fast",
      nodes.get("c-fast") ?? [],
      Array.from({ length: FAST_SERVICES }, (_, i) => svc(`fast-${i}`)),
    );
    const deadline = Date.now() + 20_000;
    while (convergedAt.size < FAST_SERVICES + 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));

    expect(warnings).toEqual([]);
    const slow = convergedAt.get("c-slow/default/slow-0");
    const fast = [...convergedAt].filter(([k]) => k.startsWith("c-fast/")).map(([, ms]) => ms);
    expect(fast).toHaveLength(FAST_SERVICES);
    expect(slow).toBeDefined();
    // The slow load balancer needed POLLS polls POLL_MS apart; the fast account did not wait for them.
    expect(slow ?? 0).toBeGreaterThanOrEqual(POLLS * POLL_MS);
    expect(Math.max(...fast)).toBeLessThan(slow ?? 0);
    // One Ensuring Event per sync, not one per poll.
    expect(ensuring.get("default/slow-0")).toBe(1);
    expect(cloud.inventory("slow").loadBalancers).toHaveLength(1);
    expect(cloud.inventory("fast").loadBalancers).toHaveLength(FAST_SERVICES);
    expect(fleet.view("c-slow")?.services.get("default/slow-0")?.finalizers).toEqual([FINALIZER_LB_CLEANUP]);
  } finally {
    await hub.stop();
  }
});
