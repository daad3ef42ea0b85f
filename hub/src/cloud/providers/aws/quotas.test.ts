// A Service beyond one of AWS's default quotas (the provider's capabilities.quotas) is refused
// by the service controller before any call, with a Warning Event naming the quota: the fake
// AWS would refuse it half-built (TooManyListeners after 50 NLB listeners, and so on).

import { type ClusterEvent, Node, type Service } from "@fleet-ccm/proto";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseHubConfig } from "../../../config/load.js";
import { lbService, startServiceHarness, waitUntil } from "../../../reconcilers/service/harness.testkit.js";
import { AWS_ANNOTATION_PREFIX, awsLbCapabilities } from "./annotations.js";
import { awsProvider } from "./index.js";

const CLUSTER = "quotas";
const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld(CLUSTER);
});
afterAll(() => world.fake.close());

function withPorts(name: string, n: number, over: Partial<Service> = {}): Service {
  return lbService(name, `0000000${name.length}-1111-2222-3333-${name.padEnd(12, "0").slice(0, 12)}`, {
    ports: Array.from({ length: n }, (_, i) => ({
      name: `p${i}`,
      protocol: "TCP",
      port: 1000 + i,
      nodePort: 30000 + i,
    })),
    finalizers: [FINALIZER],
    ...over,
  });
}

test("a 51-port NLB, a 101-port classic ELB and 64 classic rules: refused with the quota in the Event, no cloud call", async () => {
  const instance = world.instance(`ip-10-0-0-10.${CLUSTER}.internal`);
  const nodes = [
    Node.fromPartial({
      name: instance.privateDns,
      uid: "uid-n1",
      resourceVersion: "1",
      providerId: `aws:///${instance.az}/${instance.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    }),
  ];
  const services = [
    withPorts("nlbbig", 51, { annotations: { [`${AWS_ANNOTATION_PREFIX}type`]: "nlb" } }),
    withPorts("clbbig", 101),
    // 31 listeners are within the classic quota; 2 source ranges × (31 ports + the ICMP rule) = 64 rules are not.
    withPorts("clbrules", 31, { loadBalancerSourceRanges: ["203.0.113.0/24", "198.51.100.0/24"] }),
    // The managed group and 5 more: 6 security groups.
    withPorts("clbgroups", 1, {
      annotations: {
        [`${AWS_ANNOTATION_PREFIX}extra-security-groups`]: "sg-01,sg-02,sg-03,sg-04,sg-05",
      },
    }),
  ];
  const env: NodeJS.ProcessEnv = { KEY: world.keys.accessKeyId, SECRET: world.keys.secretAccessKey };
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      // The hub's own bound on ports is not what refuses them here.
      limits: { maxServicePorts: 200 },
      accounts: [
        {
          name: "aws",
          provider: "aws",
          region: world.region,
          endpoint: world.fake.url,
          credentials: { accessKeyId: { env: "KEY" }, secretAccessKey: { env: "SECRET" } },
        },
      ],
      clusters: [{ name: CLUSTER, account: "aws", token: { env: "T" } }],
    }),
  );
  const events = new Map<string, ClusterEvent[]>();
  const before = world.fake.log.count({ account: world.accountId });
  const hub = await startServiceHarness({
    config,
    env,
    logger: pino({ level: "silent" }),
    providers: [awsProvider],
    onOutcome: (key, out) => {
      if (key.kind === "service")
        events.set(key.name, [...(events.get(key.name) ?? []), ...(out.events ?? [])]);
    },
  });
  try {
    hub.fleet.setConnected(CLUSTER, true);
    hub.fleet.replace(CLUSTER, nodes, services);
    await waitUntil("every Service to be reconciled", () => events.size === services.length);
    await waitUntil("the queue to drain", () => hub.drained());
    const messages = (name: string) =>
      (events.get(`default/${name}`) ?? []).map((e) => `${e.type} ${e.reason}: ${e.message}`);
    expect(messages("nlbbig")).toEqual([
      "Warning SyncLoadBalancerFailed: Error syncing load balancer: the Service needs 51 listeners per Network Load Balancer (one per port); provider aws allows 50",
    ]);
    expect(messages("clbbig")).toEqual([
      "Warning SyncLoadBalancerFailed: Error syncing load balancer: the Service needs 101 listeners per Classic Load Balancer (one per port); provider aws allows 100",
    ]);
    expect(messages("clbrules")).toEqual([
      "Warning SyncLoadBalancerFailed: Error syncing load balancer: the Service needs 64 inbound rules per security group (one per port and source range); provider aws allows 60",
    ]);
    expect(messages("clbgroups")).toEqual([
      "Warning SyncLoadBalancerFailed: Error syncing load balancer: the Service needs 6 security groups per Classic Load Balancer (as its annotations name them); provider aws allows 5",
    ]);
    expect(await hub.callsByOp()).toEqual({});
    expect(world.fake.log.count({ account: world.accountId })).toBe(before);
    expect(world.fake.classicLoadBalancers(world.accountId)).toEqual([]);
    expect(world.fake.networkLoadBalancers(world.accountId)).toEqual([]);
  } finally {
    await hub.stop();
  }
});

test("security-groups naming the groups: no managed group, so no rule quota; the listener quota stays", () => {
  const quotas = awsLbCapabilities("nlb").quotas!;
  const named = { [`${AWS_ANNOTATION_PREFIX}security-groups`]: "sg-01" };
  expect(quotas(named).map((q) => q.name)).toEqual([
    "listeners per Network Load Balancer",
    "security groups per Network Load Balancer",
  ]);
  expect(quotas({}).map((q) => q.name)).toEqual([
    "listeners per Network Load Balancer",
    "inbound rules per security group",
    "security groups per Network Load Balancer",
  ]);
  expect(quotas({ [`${AWS_ANNOTATION_PREFIX}type`]: "classic" })[0]).toMatchObject({ limit: 100 });
  // An annotation checkAnnotations refuses: no quota here (the refusal names the annotation).
  expect(quotas({ [`${AWS_ANNOTATION_PREFIX}type`]: "bogus" })).toEqual([]);
});
