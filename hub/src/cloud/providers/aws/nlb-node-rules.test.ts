// The node-group rules of NLBs adopted from cloud-provider-aws, per upstream mode, against the
// fake AWS through the real SDK: built first exactly as upstream builds them (its default mode:
// an NLB without security groups, its client, health and path-MTU rules on the node group; its
// managed mode: an NLB with its own security group, and the same client rules), then adopted.

import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DescribeSecurityGroupsCommand,
  EC2Client,
} from "@aws-sdk/client-ec2";
import { AwsFake, type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { CloudProvider, LoadBalancerSpec, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName, ownerTags, securityGroupName, tagList } from "./lb-network.js";
import {
  nlbClientRule as client,
  nlbHealthRule as health,
  tcpFrom as tcp,
  type UpstreamService,
  upstreamNlb,
  upstreamNlbGroup,
  upstreamNlbNodeRules,
} from "./upstream.testkit.js";

let fake: AwsFake;
beforeAll(async () => {
  fake = await AwsFake.start();
});
afterEach(() => fake.spec.assertClean());
afterAll(() => fake.close());

let n = 0;
const uid = () => `${String(++n).padStart(8, "0")}-1111-2222-3333-5f0c1a2b3c4d`;

async function provider(world: AwsWorld): Promise<{ p: CloudProvider; ops: string[] }> {
  const account = world.binding();
  const { provider, ops } = await bindRecorded(awsProvider, account, account.options);
  return { p: provider, ops };
}

const sdk = (world: AwsWorld) => ({
  region: world.region,
  endpoint: world.fake.url,
  credentials: world.keys,
  maxAttempts: 1,
});

const MTU = "kubernetes.io/rule/nlb/mtu";
/** The world's subnets' CIDRs (startAwsWorld), where upstream's health rules admit the checks from. */
const SUBNET_CIDRS = ["10.0.0.0/24", "10.0.1.0/24"];
/** externalTrafficPolicy Local: upstream's health checks (and health rules) on healthCheckNodePort. */
const HEALTH_NODE_PORT = 32000;

/** Cluster blue, migrating from cloud-provider-aws run with --cluster-name blue (clusters[].adoptFrom). */
const migrating = (world: AwsWorld): ServiceTarget => ({
  cluster: "blue",
  network: world.vpcId,
  scope: { adoptFrom: { vendorCcmClusterName: "blue" } },
  serviceUid: uid(),
});

/** The Service as upstream was told it: ports 80 and 443 on 30080 and 30443, open to all. */
const web = (nodes: readonly string[]): UpstreamService => ({
  cluster: "blue",
  serviceName: "default/web",
  ports: [
    { port: 80, nodePort: 30080 },
    { port: 443, nodePort: 30443 },
  ],
  nodes,
});

/** A group's rules as `protocol from-to source description` lines, as DescribeSecurityGroups answers them. */
async function rules(world: AwsWorld, groupId: string): Promise<string[]> {
  const ec2 = new EC2Client(sdk(world));
  const out = await ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: [groupId] }));
  return (out.SecurityGroups?.[0]?.IpPermissions ?? [])
    .flatMap((p) => {
      const head = `${p.IpProtocol} ${p.FromPort ?? ""}-${p.ToPort ?? ""}`;
      return [
        ...(p.IpRanges ?? []).map((r) => `${head} ${r.CidrIp} ${r.Description ?? ""}`.trim()),
        ...(p.Ipv6Ranges ?? []).map((r) => `${head} ${r.CidrIpv6} ${r.Description ?? ""}`.trim()),
        ...(p.UserIdGroupPairs ?? []).map((g) => `${head} ${g.GroupId} ${g.Description ?? ""}`.trim()),
      ];
    })
    .sort();
}

/** externalTrafficPolicy Local: health checks on healthCheckNodePort 32000 (so upstream made health rules). */
function spec(backends: readonly string[], o: Partial<LoadBalancerSpec> = {}): LoadBalancerSpec {
  return sampleLoadBalancerSpec([...backends].sort(), {
    serviceName: "default/web",
    annotations: { [`${A}type`]: "nlb" },
    healthCheck: {
      protocol: "HTTP",
      port: HEALTH_NODE_PORT,
      path: "/healthz",
      intervalSeconds: 10,
      timeoutSeconds: 10,
      healthyThreshold: 2,
      unhealthyThreshold: 2,
    },
    ...o,
  });
}

/** Another Service's NLB rules on the node group, and a rule made by hand: never touched. */
async function othersRules(world: AwsWorld): Promise<{ other: string; expected: string[] }> {
  const other = awsLoadBalancerName(uid());
  const ec2 = new EC2Client(sdk(world));
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: world.nodeGroup,
      IpPermissions: [
        tcp(31000, "0.0.0.0/0", client(other)),
        ...SUBNET_CIDRS.map((c) => tcp(31500, c, health(other))),
        tcp(22, "10.0.0.0/8"),
      ],
    }),
  );
  return {
    other,
    expected: [
      `tcp 31000-31000 0.0.0.0/0 ${client(other)}`,
      ...SUBNET_CIDRS.map((c) => `tcp 31500-31500 ${c} ${health(other)}`),
      "tcp 22-22 10.0.0.0/8",
    ],
  };
}

test("upstream's default mode (an NLB without security groups): its node-group rules narrowed to the source ranges, a closed port's revoked, all of them on delete; another NLB's untouched", async () => {
  const world = await startAwsWorld("blue", { fake });
  const ec2 = new EC2Client(sdk(world));
  const o = migrating(world);
  const name = awsLoadBalancerName(o.serviceUid);
  const nodes = [world.instance("n1").id, world.instance("n2", { zone: 1 }).id];
  const { other, expected: others } = await othersRules(world);
  const lb = await upstreamNlb(world, name, web(nodes), undefined, HEALTH_NODE_PORT);
  // What upstream's updateInstanceSecurityGroupsForNLB wrote for it, no source ranges set.
  await upstreamNlbNodeRules(world, name, web(nodes), HEALTH_NODE_PORT);
  // What an earlier fleet-ccm made for it: a managed group it could not attach, admitted by the nodes.
  const stray = await ec2.send(
    new CreateSecurityGroupCommand({
      GroupName: securityGroupName(name),
      Description: "stray",
      VpcId: world.vpcId,
      TagSpecifications: [{ ResourceType: "security-group", Tags: tagList(ownerTags(o, "default/web")) }],
    }),
  );
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: world.nodeGroup,
      IpPermissions: [{ IpProtocol: "-1", UserIdGroupPairs: [{ GroupId: stray.GroupId }] }],
    }),
  );

  const { p, ops } = await provider(world);
  await settle(() => p.loadBalancers!.ensure(o, spec(nodes, { sourceRanges: ["203.0.113.0/24"] })));
  expect(ops).not.toContain("nlb.create");
  expect(ops).not.toContain("sg.create");
  expect(world.fake.state.v2Lbs.get(lb.arn)?.securityGroups).toEqual([]);
  expect(world.fake.state.securityGroups.get(stray.GroupId ?? "")).toBeUndefined();
  expect(await rules(world, world.nodeGroup)).toEqual(
    [
      ...others,
      `tcp 30080-30080 203.0.113.0/24 ${client(name)}`,
      `tcp 30443-30443 203.0.113.0/24 ${client(name)}`,
      ...SUBNET_CIDRS.map((c) => `tcp 32000-32000 ${c} ${health(name)}`),
      // The other NLB's clients still need theirs.
      `icmp 3-4 0.0.0.0/0 ${MTU}`,
      `icmp 3-4 203.0.113.0/24 ${MTU}`,
    ].sort(),
  );
  // No 0.0.0.0/0 on this Service's nodePorts any more.
  expect(
    (await rules(world, world.nodeGroup)).filter((r) => /^tcp 30(080|443)-.* 0\.0\.0\.0\/0/.test(r)),
  ).toEqual([]);
  // A second ensure changes nothing.
  const before = ops.length;
  await settle(() => p.loadBalancers!.ensure(o, spec(nodes, { sourceRanges: ["203.0.113.0/24"] })));
  expect(ops.slice(before).filter((op) => /\.(authorize|revoke)$/.test(op))).toEqual([]);

  // Port 443 closed: its rule goes; the health and MTU rules stay for port 80's.
  const onePort = spec(nodes, {
    sourceRanges: ["203.0.113.0/24"],
    listeners: [{ protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false }],
  });
  await settle(() => p.loadBalancers!.ensure(o, onePort));
  const afterClose = await rules(world, world.nodeGroup);
  expect(afterClose.filter((r) => r.includes("30443"))).toEqual([]);
  expect(afterClose).toContain(`tcp 30080-30080 203.0.113.0/24 ${client(name)}`);

  // A node joins and leaves: the rules stay on the node group they share.
  const n3 = world.instance("n3").id;
  await p.loadBalancers!.updateBackends(o, [...nodes, n3].sort());
  expect(await rules(world, world.nodeGroup)).toEqual(afterClose);

  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await rules(world, world.nodeGroup)).toEqual([...others, `icmp 3-4 0.0.0.0/0 ${MTU}`].sort());
  expect(world.resources().filter((r) => r.kind === "nlb-node-rule" && r.id.includes(`=${name}`))).toEqual(
    [],
  );
  expect(world.resources().filter((r) => r.id.includes(`=${other}`))).toHaveLength(3);
});

test("upstream's managed mode (an NLB with its own security group): our managed group takes over, upstream's node-group client rules for it go, a closed port's listener rule too, nothing of it after delete", async () => {
  const world = await startAwsWorld("blue", { fake });
  const o = migrating(world);
  const name = awsLoadBalancerName(o.serviceUid);
  const nodes = [world.instance("n1").id, world.instance("n2", { zone: 1 }).id];
  const { expected: others } = await othersRules(world);
  // Upstream's managed NLB group (k8s-<ns>-<name>-<hash>): the listener ports from anywhere.
  const upstreamGroup = await upstreamNlbGroup(world, name, web(nodes));
  const lb = await upstreamNlb(world, name, web(nodes), [upstreamGroup], HEALTH_NODE_PORT);
  // Upstream writes the node-group rules in this mode too.
  await upstreamNlbNodeRules(world, name, web(nodes), HEALTH_NODE_PORT);

  const { p } = await provider(world);
  await settle(() => p.loadBalancers!.ensure(o, spec(nodes, { sourceRanges: ["203.0.113.0/24"] })));
  const managed = world.fake.state.v2Lbs.get(lb.arn)?.securityGroups ?? [];
  expect(managed).toHaveLength(1);
  expect(world.fake.state.securityGroups.get(managed[0]!)?.name).toBe(securityGroupName(name));
  expect(await rules(world, managed[0]!)).toEqual(["tcp 443-443 203.0.113.0/24", "tcp 80-80 203.0.113.0/24"]);
  // The nodes admit our group; upstream's rules for this NLB would open its nodePorts wider.
  expect(await rules(world, world.nodeGroup)).toEqual(
    [...others, `-1 - ${managed[0]}`, `icmp 3-4 0.0.0.0/0 ${MTU}`].sort(),
  );

  const onePort = spec(nodes, {
    sourceRanges: ["203.0.113.0/24"],
    listeners: [{ protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false }],
  });
  await settle(() => p.loadBalancers!.ensure(o, onePort));
  expect(await rules(world, managed[0]!)).toEqual(["tcp 80-80 203.0.113.0/24"]);

  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await rules(world, world.nodeGroup)).toEqual([...others, `icmp 3-4 0.0.0.0/0 ${MTU}`].sort());
  expect(world.fake.state.securityGroups.get(managed[0]!)).toBeUndefined();
});

test("groups from the security-groups annotation (no group of ours): upstream's client and health rules, narrowed, on the node group; the last client of a range takes its MTU rule with it", async () => {
  const world = await startAwsWorld("blue", { fake });
  const ec2 = new EC2Client(sdk(world));
  const o: ServiceTarget = { cluster: "blue", network: world.vpcId, scope: {}, serviceUid: uid() };
  const name = awsLoadBalancerName(o.serviceUid);
  const nodes = [world.instance("n1").id];
  const own = await ec2.send(
    new CreateSecurityGroupCommand({ GroupName: "web-lb", Description: "mine", VpcId: world.vpcId }),
  );
  const annotated = (sourceRanges: string[]) =>
    spec(nodes, {
      sourceRanges,
      annotations: { [`${A}type`]: "nlb", [`${A}security-groups`]: own.GroupId ?? "" },
      healthCheck: { ...spec(nodes).healthCheck, protocol: "TCP", port: 30080 },
    });
  const { p } = await provider(world);
  // Anywhere on the traffic ports: the client rules cover the health checks (upstream's shortcut).
  await settle(() => p.loadBalancers!.ensure(o, annotated([])));
  expect(await rules(world, world.nodeGroup)).toEqual(
    [
      `icmp 3-4 0.0.0.0/0 ${MTU}`,
      `tcp 30080-30080 0.0.0.0/0 ${client(name)}`,
      `tcp 30443-30443 0.0.0.0/0 ${client(name)}`,
    ].sort(),
  );
  await settle(() => p.loadBalancers!.ensure(o, annotated(["198.51.100.0/24", "2001:db8::/64"])));
  expect(await rules(world, world.nodeGroup)).toEqual(
    [
      `icmp 3-4 198.51.100.0/24 ${MTU}`,
      `icmpv6 2-0 2001:db8::/64 ${MTU}`,
      `tcp 30080-30080 198.51.100.0/24 ${client(name)}`,
      `tcp 30080-30080 2001:db8::/64 ${client(name)}`,
      `tcp 30443-30443 198.51.100.0/24 ${client(name)}`,
      `tcp 30443-30443 2001:db8::/64 ${client(name)}`,
      ...SUBNET_CIDRS.flatMap((c) => [
        `tcp 30080-30080 ${c} ${health(name)}`,
        `tcp 30443-30443 ${c} ${health(name)}`,
      ]),
    ].sort(),
  );
  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await rules(world, world.nodeGroup)).toEqual([]);
});
