// An asynchronous cloud account next to a synchronous one, through the service controller, the
// real work queue and ONE worker, against the simulated cloud on a loopback port (tests may
// import sim/; hub/src code never does).

import { Node, Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../sim/src/cloud/index.js";
import { parseHubConfig } from "../../config/load.js";
import { FINALIZER_LB_CLEANUP } from "../../k8s/well-known.js";
import { lbService, startServiceHarness, waitUntil } from "./harness.testkit.js";
import { SERVICE } from "./reconcile.js";

const REGION = "sim-east-1";
const POLLS = 4;
const POLL_MS = 250;
const FAST_SERVICES = 10;
const CLUSTER = "c1";
const TAINT = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };

let cloud: SimulatedCloud;
/** A simulated account, its key in KEY_<NAME>. */
const account = (name: string) => ({
  name,
  provider: "simulated",
  region: REGION,
  endpoint: cloud.url,
  credentials: { env: `KEY_${name.toUpperCase()}` },
  rateLimit: { perSecond: 1000, burst: 1000 },
});
/** A hub of one account and its one cluster, CLUSTER (token in T). */
const oneCluster = (name: string) =>
  parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [account(name)],
      clusters: [{ name: CLUSTER, account: name, token: { env: "T" } }],
    }),
  );
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

// A cluster created with its Services: each load balancer is built once, with every node, after
// the nodes being initialized got their providerIDs; while they join, the batched node-set syncs
// do not re-run the waiting Services.
test("Services created with their cluster's nodes: one ensure each with every node, no backend update, no pass per joining node", async () => {
  const env: NodeJS.ProcessEnv = { KEY_A: cloud.createAccount("a").apiKey, T: "t" };
  const ids = ["n0", "n1", "n2"].map((n) => cloud.createInstance("a", { name: n, region: REGION }).id);
  const node = (i: number, initialized: boolean): Node =>
    Node.fromPartial({
      name: `n${i}`,
      uid: `uid-n${i}`,
      resourceVersion: initialized ? "2" : "1",
      providerId: initialized ? `simulated://${REGION}/${ids[i]}` : "",
      taints: initialized ? [] : [TAINT],
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    });
  const config = oneCluster("a");
  const hub = await startServiceHarness({ config, env, logger: pino({ level: "silent" }) });
  const services: Service[] = [lbService("web-0", "uid-0"), lbService("web-1", "uid-1")];
  const all = () => [...(hub.fleet.view(CLUSTER)?.services.values() ?? [])];
  // Load-balancer calls only (the backends' instances are verified meanwhile).
  const lbCalls = async () =>
    Object.fromEntries(Object.entries(await hub.callsByOp()).filter(([op]) => !op.startsWith("instances.")));
  try {
    hub.fleet.setConnected(CLUSTER, true);
    hub.fleet.replace(CLUSTER, [node(0, true), node(1, false), node(2, false)], services);
    // Finalizers, then each Service waits (no cloud call) for n1 and n2.
    await waitUntil(
      "the Services to wait",
      () => hub.drained() && all().every((s) => s.finalizers.length > 0),
    );
    const waiting = hub.passes(SERVICE);
    expect(await lbCalls()).toEqual({});
    // n1 joins: its batched node-set sync (1 s) leaves the waiting Services alone (n2 still joins).
    hub.fleet.upsertNode(CLUSTER, node(1, true));
    await new Promise((r) => setTimeout(r, 1500));
    await waitUntil("the node-set sync", () => hub.drained());
    expect(hub.passes(SERVICE)).toBe(waiting);
    expect(await lbCalls()).toEqual({});
    // n2 joins: now every Service is built, once, with all three.
    hub.fleet.upsertNode(CLUSTER, node(2, true));
    await waitUntil("every ingress", () => all().every((s) => s.ingress.length > 0));
    const ops = await lbCalls();
    expect(ops["lb.create"]).toBe(2);
    expect(ops["pool.update"] ?? 0).toBe(0);
    const lbs = cloud.inventory("a");
    expect(lbs.pools.map((p) => [...p.members].sort())).toEqual([[...ids].sort(), [...ids].sort()]);
  } finally {
    await hub.stop();
  }
});

// A node-set change re-syncs the load balancers whose pass would read it: not a cluster's
// Services without one, not a Service whose own patch is still in flight (its report runs its
// next pass).
test("a node-set change runs a pass for each converged load balancer only: none for ClusterIP Services or a Service whose patch is in flight", async () => {
  const env: NodeJS.ProcessEnv = { KEY_B: cloud.createAccount("b").apiKey, T: "t" };
  const ids = ["m0", "m1"].map((n) => cloud.createInstance("b", { name: n, region: REGION }).id);
  const node = (i: number): Node =>
    Node.fromPartial({
      name: `m${i}`,
      uid: `uid-m${i}`,
      resourceVersion: "1",
      providerId: `simulated://${REGION}/${ids[i]}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    });
  const config = oneCluster("b");
  const hub = await startServiceHarness({
    config,
    env,
    logger: pino({ level: "silent" }),
    unapplied: new Set(["default/held"]),
  });
  const clusterIps = ["api", "dns", "metrics"].map((n) => lbService(n, `uid-${n}`, { type: "ClusterIP" }));
  const svc = (name: string) => hub.fleet.view(CLUSTER)?.services.get(`default/${name}`);
  try {
    hub.fleet.setConnected(CLUSTER, true);
    hub.fleet.replace(
      CLUSTER,
      [node(0)],
      [lbService("web", "uid-web"), lbService("held", "uid-held"), ...clusterIps],
    );
    await waitUntil("web's ingress", () => (svc("web")?.ingress.length ?? 0) > 0 && hub.drained());
    // held's finalizer patch was published and is not applied: it is in flight.
    expect(svc("held")?.finalizers).toEqual([]);
    const before = hub.passes(SERVICE);
    const updates = await hub.calls("pool.update");

    hub.fleet.upsertNode(CLUSTER, node(1));
    await new Promise((r) => setTimeout(r, 1500));
    await waitUntil("the node-set sync", () => hub.drained());

    // One pass, web's, which wrote the new backend; none for held or the ClusterIP Services.
    expect(hub.passes(SERVICE) - before).toBe(1);
    expect((await hub.calls("pool.update")) - updates).toBe(1);
    const pool = cloud.inventory("b").pools.find((p) => p.members.length > 0);
    expect([...(pool?.members ?? [])].sort()).toEqual([...ids].sort());
  } finally {
    await hub.stop();
  }
});
