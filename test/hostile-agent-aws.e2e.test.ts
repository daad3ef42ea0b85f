/**
 * Cross-cluster reach on AWS: two clusters in one AWS account, each in its own VPC (the fake
 * AWS, the hub and agents as their own processes). A Service of the hostile cluster naming the
 * victim's managed security group, or a subnet of the victim's VPC, is refused with a Warning
 * Event naming why, with no AWS call that changes anything; the victim's Service still deletes
 * (its group is attached to nothing of the hostile cluster's). A Service of the hostile cluster
 * whose uid names a classic ELB cloud-provider-aws built for the victim is refused too: a name
 * derived from a uid (which agents report) is no proof, and the hostile cluster has no adoptFrom.
 * And a classic ELB and an NLB that cloud-provider-aws built with its defaults, in a cluster
 * whose hub config has adoptFrom, are adopted with their health checks as they were.
 */
import {
  ConfigureHealthCheckCommand,
  ElasticLoadBalancingClient,
  CreateLoadBalancerCommand as ElbCreate,
} from "@aws-sdk/client-elastic-load-balancing";
import {
  CreateListenerCommand,
  CreateTargetGroupCommand,
  ElasticLoadBalancingV2Client,
  CreateLoadBalancerCommand as NlbCreate,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { AwsLocalCloud } from "../cli/src/aws-cloud.js";
import { type LocalCloud, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { upstreamClassicElb } from "../hub/src/cloud/providers/aws/upstream.testkit.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const A = "service.beta.kubernetes.io/aws-load-balancer-";
const UID_TAG = "fleet-ccm.io/service-uid";
// AwsLocalCloud alternates accounts: the first and third clusters share the keys' account.
const HOSTILE = "cluster-001";
const VICTIM = "cluster-003";
/** Migrating from cloud-provider-aws run with --cluster-name cluster-002: clusters[].adoptFrom. */
const MIGRATING = "cluster-002";

/** The fake AWS as the fleet's cloud, with clusters[].adoptFrom in the hub config for `adoptFrom`'s clusters. */
function withAdoptFrom(cloud: AwsLocalCloud, adoptFrom: Readonly<Record<string, string>>): LocalCloud {
  return {
    provider: cloud.provider,
    accountsConfig: () => cloud.accountsConfig(),
    clusterConfig: (c) => {
      const vendor = adoptFrom[c];
      return {
        ...cloud.clusterConfig(c),
        ...(vendor !== undefined && { adoptFrom: { vendorCcmClusterName: vendor } }),
      };
    },
    addMachine: (c, i) => cloud.addMachine(c, i),
    totalCalls: () => cloud.totalCalls(),
    close: () => cloud.close(),
  };
}

interface KubeEvent {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
}
interface KubeService {
  metadata: { uid: string };
  spec?: { ports?: { nodePort?: number }[] };
  status?: { loadBalancer?: { ingress?: { hostname?: string }[] } };
}

let aws: AwsLocalCloud;
let f: LocalFleet;
let grpcPort = 0;

beforeAll(async () => {
  aws = await AwsLocalCloud.start(["cluster-001", "cluster-002", "cluster-003"]);
  f = await LocalFleet.start({
    clusters: 3,
    nodesPerCluster: 0,
    logger,
    cloud: withAdoptFrom(aws, { [MIGRATING]: MIGRATING }),
  });
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
  expect(
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${hub.httpPort}/readyz`).catch(() => undefined))?.status === 200,
      20_000,
    ),
  ).toBe(true);
  grpcPort = hub.grpcPort;
  for (const c of [HOSTILE, VICTIM]) f.spawnAgentProcess(c, hub.grpcPort);
  for (const c of [HOSTILE, VICTIM]) f.addNodes(c, 2);
  expect(await waitFor(() => f.progress().initialized === 4, 30_000)).toBe(true);
}, 90_000);

afterAll(async () => {
  await f?.stop();
});

const service = (c: string, name: string, annotations: Record<string, string> = {}) =>
  f.cluster(c).kube.create("Service", {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", annotations },
    spec: {
      type: "LoadBalancer",
      selector: { app: name },
      ports: [{ name: "http", port: 80, targetPort: 8080 }],
    },
  });
const get = (c: string, n: string) =>
  f.cluster(c).kube.get("Service", "default", n) as unknown as KubeService | undefined;
const warnings = (c: string, n: string) =>
  (f.cluster(c).kube.list("Event", "default") as KubeEvent[]).filter(
    (e) => e.type === "Warning" && e.involvedObject?.name === n,
  );

test("the victim's managed security group and a subnet of its VPC, named by the hostile cluster: refused, no write; the victim still deletes", async () => {
  expect(aws.world(HOSTILE).accountId).toBe(aws.world(VICTIM).accountId);
  const account = aws.world(VICTIM).accountId;
  service(VICTIM, "web");
  expect(
    await waitFor(() => get(VICTIM, "web")?.status?.loadBalancer?.ingress?.[0] !== undefined, 30_000),
  ).toBe(true);
  const victimUid = get(VICTIM, "web")?.metadata.uid ?? "";
  const victimGroup = aws.fake.state.securityGroups
    .all(account)
    .find((g) => g.tags[UID_TAG] === victimUid && g.name.startsWith("k8s-elb-"));
  expect(victimGroup).toBeDefined();
  const groupId = victimGroup?.id ?? "";

  // Nothing changes in the account from here on but what the victim's delete does.
  const mark = aws.fake.log.mark();
  const writes = () =>
    aws.fake.log
      .requests({ account, afterSeq: mark })
      .filter((r) => !/\.(Describe|AssumeRole|GetCallerIdentity)/.test(r.operation))
      .map((r) => r.operation);
  service(HOSTILE, "steal-group", { [`${A}extra-security-groups`]: groupId });
  service(HOSTILE, "steal-subnet", {
    [`${A}type`]: "nlb",
    [`${A}subnets`]: aws.world(VICTIM).subnets[0] ?? "",
  });
  expect(
    await waitFor(
      () =>
        warnings(HOSTILE, "steal-group").some((e) =>
          e.message?.includes(
            `security group ${groupId} is in ${aws.world(VICTIM).vpcId}, not the cluster's VPC ${aws.world(HOSTILE).vpcId}`,
          ),
        ) &&
        warnings(HOSTILE, "steal-subnet").some((e) =>
          e.message?.includes(
            `subnet ${aws.world(VICTIM).subnets[0]} is in ${aws.world(VICTIM).vpcId}, not the cluster's VPC`,
          ),
        ),
      30_000,
    ),
  ).toBe(true);
  expect(writes()).toEqual([]);
  for (const n of ["steal-group", "steal-subnet"])
    expect(get(HOSTILE, n)?.status?.loadBalancer?.ingress ?? []).toEqual([]);
  const hostileUids = new Set(["steal-group", "steal-subnet"].map((n) => get(HOSTILE, n)?.metadata.uid));
  expect(aws.fake.classicLoadBalancers().filter((l) => hostileUids.has(l.tags[UID_TAG]))).toEqual([]);
  expect(aws.fake.networkLoadBalancers().filter((l) => hostileUids.has(l.tags[UID_TAG]))).toEqual([]);

  // The victim's Service deletes: its load balancer and its group go.
  f.cluster(VICTIM).kube.delete("Service", "default", "web");
  expect(
    await waitFor(
      () => get(VICTIM, "web") === undefined && aws.fake.state.securityGroups.get(groupId) === undefined,
      30_000,
    ),
  ).toBe(true);
  expect(aws.fake.classicLoadBalancers().filter((l) => l.tags[UID_TAG] === victimUid)).toEqual([]);
}, 120_000);

test("a Service of the hostile cluster whose uid names the victim's classic ELB made by cloud-provider-aws: refused (no adoptFrom), nothing changes", async () => {
  const account = aws.world(VICTIM).accountId;
  // Held before any AWS call (a bad annotation) until the victim's ELB of that name exists.
  service(HOSTILE, "steal-elb", { [`${A}healthcheck-interval`]: "1" });
  expect(
    await waitFor(
      () => warnings(HOSTILE, "steal-elb").some((e) => e.message?.includes("healthcheck-interval")),
      30_000,
    ),
  ).toBe(true);
  const uid = get(HOSTILE, "steal-elb")?.metadata.uid ?? "";
  const name = `a${uid.replace(/-/g, "")}`.slice(0, 32);
  const w = aws.world(VICTIM);
  const dnsName = await upstreamClassicElb(
    {
      region: w.region,
      vpcId: w.vpcId,
      subnets: w.subnets,
      nodeGroup: w.nodeGroup,
      keys: aws.fake.createAccessKey(account),
      fake: { url: aws.fake.url },
    },
    name,
    { cluster: VICTIM, serviceName: "default/web", ports: [{ port: 80, nodePort: 30080 }], nodes: [] },
  );
  const victimElb = () => aws.fake.classicLoadBalancers(account).find((l) => l.id.endsWith(`/${name}`));
  const before = JSON.stringify(victimElb());
  const mark = aws.fake.log.mark();
  const writes = () =>
    aws.fake.log
      .requests({ account, afterSeq: mark })
      .filter((r) => !/\.(Describe|AssumeRole|GetCallerIdentity)/.test(r.operation))
      .map((r) => r.operation);
  f.cluster(HOSTILE).kube.patch("Service", "default", "steal-elb", "merge", {
    metadata: { annotations: { [`${A}healthcheck-interval`]: null } },
  });
  expect(
    await waitFor(
      () =>
        warnings(HOSTILE, "steal-elb").some(
          (e) => e.message?.includes(`load balancer ${name}`) && e.message.includes("has no adoptFrom"),
        ),
      30_000,
    ),
  ).toBe(true);
  expect(writes()).toEqual([]);
  expect(JSON.stringify(victimElb())).toBe(before);
  expect(victimElb()?.tags[UID_TAG]).toBeUndefined();
  expect(get(HOSTILE, "steal-elb")?.status?.loadBalancer?.ingress ?? []).toEqual([]);
  expect(victimElb()?.dnsName).toBe(dnsName);
}, 90_000);

test("a classic ELB and an NLB cloud-provider-aws built with its defaults, the cluster's adoptFrom naming its cluster: adopted with their health checks unchanged", async () => {
  // cluster-002 (the role's account, NLBs by default): Services first, its agent later, so
  // the load balancers exist as upstream left them when the hub first sees the Services.
  const c = MIGRATING;
  const w = aws.world(c);
  service(c, "old-classic");
  service(c, "old-nlb", { [`${A}type`]: "nlb" });
  const uid = (n: string) => get(c, n)?.metadata.uid ?? "";
  const nodePort = (n: string) => get(c, n)?.spec?.ports?.[0]?.nodePort ?? 0;
  const name = (n: string) => `a${uid(n).replace(/-/g, "")}`.slice(0, 32);
  const key = aws.fake.createAccessKey(w.accountId);
  const sdk = {
    region: w.region,
    endpoint: aws.fake.url,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
  };
  const tags = (n: string) => [
    { Key: `kubernetes.io/cluster/${c}`, Value: "owned" },
    { Key: "kubernetes.io/service-name", Value: `default/${n}` },
  ];
  const elb = new ElasticLoadBalancingClient(sdk);
  await elb.send(
    new ElbCreate({
      LoadBalancerName: name("old-classic"),
      Listeners: [
        {
          Protocol: "TCP",
          LoadBalancerPort: 80,
          InstanceProtocol: "TCP",
          InstancePort: nodePort("old-classic"),
        },
      ],
      Subnets: [...w.subnets],
      Tags: tags("old-classic"),
    }),
  );
  await elb.send(
    new ConfigureHealthCheckCommand({
      LoadBalancerName: name("old-classic"),
      HealthCheck: {
        Target: `TCP:${nodePort("old-classic")}`,
        Interval: 10,
        Timeout: 5,
        HealthyThreshold: 2,
        UnhealthyThreshold: 6,
      },
    }),
  );
  const v2 = new ElasticLoadBalancingV2Client(sdk);
  const lb = (
    await v2.send(
      new NlbCreate({
        Name: name("old-nlb"),
        Type: "network",
        Subnets: [...w.subnets],
        Tags: tags("old-nlb"),
      }),
    )
  ).LoadBalancers?.[0];
  const tg = (
    await v2.send(
      new CreateTargetGroupCommand({
        Name: "k8s-default-oldnlb-0a1b2c3d4e",
        Protocol: "TCP",
        Port: nodePort("old-nlb"),
        VpcId: w.vpcId,
        TargetType: "instance",
        HealthCheckProtocol: "TCP",
        HealthCheckPort: "traffic-port",
        HealthCheckIntervalSeconds: 30,
        HealthCheckTimeoutSeconds: 10,
        HealthyThresholdCount: 3,
        UnhealthyThresholdCount: 3,
        Tags: tags("old-nlb"),
      }),
    )
  ).TargetGroups?.[0];
  await v2.send(
    new CreateListenerCommand({
      LoadBalancerArn: lb?.LoadBalancerArn,
      Port: 80,
      Protocol: "TCP",
      DefaultActions: [{ Type: "forward", TargetGroupArn: tg?.TargetGroupArn }],
    }),
  );
  const mark = aws.fake.log.mark();
  f.spawnAgentProcess(c, grpcPort);
  f.addNodes(c, 2);
  const adopted = (n: string) =>
    [...aws.fake.classicLoadBalancers(w.accountId), ...aws.fake.networkLoadBalancers(w.accountId)].some(
      (l) => l.tags[UID_TAG] === uid(n) && l.tags["fleet-ccm.io/spec-digest"] !== undefined,
    );
  expect(await waitFor(() => adopted("old-classic") && adopted("old-nlb"), 45_000)).toBe(true);
  const ops = aws.fake.log.requests({ account: w.accountId, afterSeq: mark }).map((r) => r.operation);
  expect(ops).not.toContain("elb.CreateLoadBalancer");
  expect(ops).not.toContain("elbv2.CreateLoadBalancer");
  expect(ops).not.toContain("elb.ConfigureHealthCheck");
  expect(ops).not.toContain("elbv2.ModifyTargetGroup");
  const classic = aws.fake
    .classicLoadBalancers(w.accountId)
    .find((l) => l.tags[UID_TAG] === uid("old-classic"));
  expect(classic?.healthCheck).toEqual({
    target: `TCP:${nodePort("old-classic")}`,
    interval: 10,
    timeout: 5,
    healthyThreshold: 2,
    unhealthyThreshold: 6,
  });
  expect(aws.fake.state.targetGroups.get(tg?.TargetGroupArn ?? "")?.healthCheck).toMatchObject({
    protocol: "TCP",
    port: "traffic-port",
    interval: 30,
    timeout: 10,
    healthyThreshold: 3,
    unhealthyThreshold: 3,
  });
}, 120_000);
