// A restarted hub adopts the AWS load balancers it left current from the account listing
// (DescribeLoadBalancers and DescribeTags of ELB and ELBv2): no per-Service lookup, no write.
// The service controller as the hub runs it, against the fake AWS on a loopback port.

import { Node, Service } from "@fleet-ccm/proto";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseHubConfig } from "../../../config/load.js";
import { startServiceHarness } from "../../../reconcilers/service/harness.testkit.js";
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

function services(): Service[] {
  return Array.from({ length: SERVICES }, (_, i) =>
    Service.fromPartial({
      namespace: "default",
      name: `s${i}`,
      uid: `0000000${i}-1111-2222-3333-444455556666`,
      resourceVersion: "1",
      type: "LoadBalancer",
      ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
      externalTrafficPolicy: "Cluster",
      ipFamilies: ["IPv4"],
      sessionAffinity: "None",
      ...(i % 2 === 1 && { annotations: { [`${AWS_ANNOTATION_PREFIX}type`]: "nlb" } }),
    }),
  );
}

function setup() {
  const instance = world.instance("ip-10-0-0-10.ec2.internal");
  const nodes = [
    Node.fromPartial({
      name: instance.privateDns,
      uid: "uid-n0",
      resourceVersion: "1",
      providerId: `aws:///${instance.az}/${instance.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    }),
  ];
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
      clusters: [{ name: CLUSTER, account: "aws", token: { env: "T" } }],
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

async function waitFor(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The backend node's own check (once per node, not per Service): its instance and the zone ids. */
const NODE_CHECK = new Set(["instances.get", "instances.batch", "zones.list"]);

test("a restarted hub adopts unchanged classic ELBs and NLBs with listing calls only", async () => {
  const { nodes, boot, reconciled } = setup();
  const first = boot();
  let left: Service[];
  try {
    first.fleet.setConnected(CLUSTER, true);
    first.fleet.replace(CLUSTER, nodes, services());
    const all = () => [...(first.fleet.view(CLUSTER)?.services.values() ?? [])];
    await waitFor("every Service to have its ingress", () => all().every((s) => s.ingress.length > 0));
    await waitFor("the queue to drain", () => first.drained());
    left = all();
  } finally {
    await first.stop();
  }
  expect(world.fake.classicLoadBalancers(world.accountId)).toHaveLength(SERVICES / 2);
  expect(world.fake.networkLoadBalancers(world.accountId)).toHaveLength(SERVICES / 2);
  const firstCalls = await first.callsByOp();

  const second = boot();
  try {
    second.fleet.setConnected(CLUSTER, true);
    reconciled.n = 0;
    second.fleet.replace(CLUSTER, nodes, left);
    await waitFor("every Service to be reconciled", () => reconciled.n >= SERVICES);
    await waitFor("the queue to drain", () => second.drained());
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
