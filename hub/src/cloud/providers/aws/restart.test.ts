// A restarted hub adopts the AWS load balancers it left current from the account listing
// (DescribeLoadBalancers and DescribeTags of ELB and ELBv2): no per-Service lookup, no write.
// The service controller as the hub runs it, against the fake AWS on a loopback port.

import { Node, type Service } from "@fleet-ccm/proto";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseHubConfig } from "../../../config/load.js";
import {
  convergeAndStop,
  lbService,
  startServiceHarness,
  waitUntil,
} from "../../../reconcilers/service/harness.testkit.js";
import { AWS_ANNOTATION_PREFIX } from "./annotations.js";
import { awsProvider } from "./index.js";

const CLUSTER = "restart";
/** Half classic ELBs, half NLBs. */
const SERVICES = 8;

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld(CLUSTER);
  world.fake.nlbProvisioningMs = 0;
});
afterAll(() => world.fake.close());

function services(prefix: number): Service[] {
  return Array.from({ length: SERVICES }, (_, i) =>
    lbService(`s${i}`, `${prefix}000000${i}-1111-2222-3333-444455556666`, {
      ...(i % 2 === 1 && { annotations: { [`${AWS_ANNOTATION_PREFIX}type`]: "nlb" } }),
    }),
  );
}

function nodeOf(name: string): Node {
  const instance = world.instance(name);
  return Node.fromPartial({
    name: instance.privateDns,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `aws:///${instance.az}/${instance.id}`,
    conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
  });
}

function setup(cluster: string) {
  const nodes = [nodeOf(`ip-10-0-0-10.${cluster}.internal`)];
  const env: NodeJS.ProcessEnv = { KEY: world.keys.accessKeyId, SECRET: world.keys.secretAccessKey };
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [
        {
          name: "aws",
          provider: "aws",
          region: world.region,
          endpoint: world.fake.url,
          credentials: { accessKeyId: { env: "KEY" }, secretAccessKey: { env: "SECRET" } },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: cluster, account: "aws", token: { env: "T" } }],
    }),
  );
  const reconciled = { n: 0 };
  const boot = () =>
    startServiceHarness({
      config,
      env,
      logger: pino({ level: "silent" }),
      providers: [awsProvider],
      onOutcome: (key) => {
        if (key.kind === "service") reconciled.n++;
      },
    });
  return { nodes, boot, reconciled };
}

const NODE_CHECK = new Set(["instances.get", "instances.batch", "zones.list"]);

test("a restarted hub adopts unchanged classic ELBs and NLBs with listing calls only", async () => {
  const { nodes, boot, reconciled } = setup(CLUSTER);
  const first = await boot();
  const left = await convergeAndStop(first, CLUSTER, nodes, services(0));
  expect(world.fake.classicLoadBalancers(world.accountId)).toHaveLength(SERVICES / 2);
  expect(world.fake.networkLoadBalancers(world.accountId)).toHaveLength(SERVICES / 2);
  const firstCalls = await first.callsByOp();

  const second = await boot();
  try {
    second.fleet.setConnected(CLUSTER, true);
    reconciled.n = 0;
    second.fleet.replace(CLUSTER, nodes, left);
    await waitUntil("every Service to be reconciled", () => reconciled.n >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const calls = await second.callsByOp();
    const lbCalls = Object.fromEntries(Object.entries(calls).filter(([op]) => !NODE_CHECK.has(op)));
    // One page of each kind, one DescribeTags per kind (4 load balancers each): nothing else.
    expect(lbCalls).toEqual({ "elb.list": 1, "elb.tags": 1, "nlb.list": 1, "nlb.tags": 1 });
    expect((calls["instances.get"] ?? 0) + (calls["instances.batch"] ?? 0)).toBeLessThanOrEqual(nodes.length);
    const firstTotal = Object.values(firstCalls).reduce((a, b) => a + b, 0);
    expect(firstTotal).toBeGreaterThan(10 * SERVICES);
  } finally {
    await second.stop();
  }
});

test("a restarted hub whose node set changed meanwhile only updates the backends of AWS load balancers built from the same spec", async () => {
  const cluster = "restart-nodes";
  const { nodes, boot, reconciled } = setup(cluster);
  const left = await convergeAndStop(await boot(), cluster, nodes, services(1));
  const more = [...nodes, nodeOf(`ip-10-0-0-11.${cluster}.internal`)];
  const second = await boot();
  try {
    reconciled.n = 0;
    second.fleet.setConnected(cluster, true);
    second.fleet.replace(cluster, more, left);
    await waitUntil("every Service to be reconciled", () => reconciled.n >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const calls = await second.callsByOp();
    // No whole ensure (no health check, attributes, listeners or security-group rules of the
    // load balancer itself, no creation): registration of the new node on each one.
    for (const op of [
      "elb.create",
      "nlb.create",
      "elb.attributes",
      "nlb.listeners",
      "elb.healthCheck.configure",
    ])
      expect({ op, n: calls[op] ?? 0 }).toEqual({ op, n: 0 });
    expect(calls["elb.instances.register"]).toBe(SERVICES / 2);
    expect(calls["nlb.targets.register"]).toBe(SERVICES / 2);
  } finally {
    await second.stop();
  }
  const ids = more.map((n) => n.providerId.slice(n.providerId.lastIndexOf("/") + 1)).sort();
  const mine = world.fake
    .classicLoadBalancers(world.accountId)
    .filter((l) => l.tags["fleet-ccm.io/cluster"] === cluster);
  expect(mine).toHaveLength(SERVICES / 2);
  for (const lb of mine) expect([...lb.instances].sort()).toEqual(ids);
});
