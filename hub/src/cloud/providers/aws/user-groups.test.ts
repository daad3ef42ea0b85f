// A classic ELB with the groups `aws-load-balancer-security-groups` names (no managed group),
// against the fake AWS with the SDK: as cloud-provider-aws, each backend's cluster group admits
// the first user-given group (all traffic), the rule follows the backends, and delete revokes it
// from the cluster's groups; the user's group is never deleted, and rules on groups that are not
// the cluster's are never touched.

import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DescribeSecurityGroupsCommand,
  EC2Client,
  type IpPermission,
} from "@aws-sdk/client-ec2";
import {
  ConfigureHealthCheckCommand,
  ElasticLoadBalancingClient,
  CreateLoadBalancerCommand as ElbCreate,
  RegisterInstancesWithLoadBalancerCommand,
} from "@aws-sdk/client-elastic-load-balancing";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { CloudProvider, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName } from "./lb-network.js";
import { clusterTagKey, OWNED } from "./tags.js";
import { upstreamTags } from "./upstream.testkit.js";

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld("blue");
});
afterEach(() => world.fake.spec.assertClean());
afterAll(() => world.fake.close());

let n = 0;
const target = (adopt = false): ServiceTarget => ({
  cluster: "blue",
  network: world.vpcId,
  scope: adopt ? { adoptFrom: { vendorCcmClusterName: "blue" } } : {},
  serviceUid: `${String(++n).padStart(8, "0")}-aaaa-1111-bbbb-5f0c1a2b3c4d`,
});

const ec2 = () =>
  new EC2Client({ region: world.region, endpoint: world.fake.url, credentials: world.keys, maxAttempts: 1 });

async function provider(): Promise<{ p: CloudProvider; ops: string[] }> {
  const account = world.binding();
  const { provider, ops } = await bindRecorded(awsProvider, account, account.options);
  return { p: provider, ops };
}

/** A group of the VPC, made by hand (tagged as given). */
async function group(name: string, tags: Record<string, string> = {}): Promise<string> {
  const out = await ec2().send(
    new CreateSecurityGroupCommand({
      GroupName: `${name}-${++n}`,
      Description: name,
      VpcId: world.vpcId,
      ...(Object.keys(tags).length > 0 && {
        TagSpecifications: [
          {
            ResourceType: "security-group",
            Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
          },
        ],
      }),
    }),
  );
  return out.GroupId ?? "";
}

const allFrom = (groupId: string): IpPermission => ({
  IpProtocol: "-1",
  UserIdGroupPairs: [{ GroupId: groupId }],
});

/** The groups admitting `from` (all traffic), by id. */
async function admitting(from: string): Promise<string[]> {
  const out = await ec2().send(
    new DescribeSecurityGroupsCommand({ Filters: [{ Name: "ip-permission.group-id", Values: [from] }] }),
  );
  return (out.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : [])).sort();
}

const exists = async (id: string) =>
  (
    (await ec2().send(new DescribeSecurityGroupsCommand({ Filters: [{ Name: "group-id", Values: [id] }] })))
      .SecurityGroups ?? []
  ).length === 1;

test("a new classic ELB: the nodes' cluster group admits the first user-given group; it follows the backends; delete revokes it and keeps the group", async () => {
  const byo = await group("byo");
  const extra = await group("extra");
  // A hand-made rule on a group that is not the cluster's: never touched.
  const bastion = await group("bastion");
  await ec2().send(
    new AuthorizeSecurityGroupIngressCommand({ GroupId: bastion, IpPermissions: [allFrom(byo)] }),
  );
  const other = await group("other-nodes", { [clusterTagKey("blue")]: OWNED });
  const a = world.instance(`byo-${++n}`).id;
  const b = world.fake.createInstance(world.accountId, world.region, world.subnets[1]!, {
    privateDnsName: `byo-${++n}`,
    securityGroupIds: [other],
  }).id;
  const o = target();
  const spec = sampleLoadBalancerSpec([a], {
    serviceName: "default/web",
    annotations: { [`${A}security-groups`]: `${byo},${extra}` },
  });
  const { p, ops } = await provider();
  await settle(() => p.loadBalancers!.ensure(o, spec));
  expect(ops).not.toContain("sg.create");
  expect(await admitting(byo)).toEqual([bastion, world.nodeGroup].sort());
  expect(await admitting(extra)).toEqual([]);
  await p.loadBalancers!.updateBackends(o, [b]);
  expect(await admitting(byo)).toEqual([bastion, other].sort());
  await p.loadBalancers!.updateBackends(o, [a, b]);
  expect(await admitting(byo)).toEqual([bastion, other, world.nodeGroup].sort());
  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await admitting(byo)).toEqual([bastion]);
  expect(ops).not.toContain("sg.delete");
  for (const g of [byo, extra, bastion]) expect(await exists(g)).toBe(true);
});

test("adopted from cloud-provider-aws with a user-given group: its node rule kept, then revoked on delete", async () => {
  const byo = await group("byo");
  const a = world.instance(`byo-${++n}`).id;
  const o = target(true);
  const name = awsLoadBalancerName(o.serviceUid);
  // Upstream's classic ELB with the annotation's group, and its rule on the node group.
  const elb = new ElasticLoadBalancingClient({
    region: world.region,
    endpoint: world.fake.url,
    credentials: world.keys,
    maxAttempts: 1,
  });
  await elb.send(
    new ElbCreate({
      LoadBalancerName: name,
      Listeners: [
        { Protocol: "TCP", LoadBalancerPort: 80, InstanceProtocol: "TCP", InstancePort: 30080 },
        { Protocol: "TCP", LoadBalancerPort: 443, InstanceProtocol: "TCP", InstancePort: 30443 },
      ],
      Subnets: [...world.subnets],
      SecurityGroups: [byo],
      Tags: upstreamTags("blue", "default/web"),
    }),
  );
  await elb.send(
    new ConfigureHealthCheckCommand({
      LoadBalancerName: name,
      HealthCheck: {
        Target: "TCP:30080",
        Interval: 10,
        Timeout: 5,
        HealthyThreshold: 2,
        UnhealthyThreshold: 6,
      },
    }),
  );
  await elb.send(
    new RegisterInstancesWithLoadBalancerCommand({ LoadBalancerName: name, Instances: [{ InstanceId: a }] }),
  );
  await ec2().send(
    new AuthorizeSecurityGroupIngressCommand({ GroupId: world.nodeGroup, IpPermissions: [allFrom(byo)] }),
  );
  const { p, ops } = await provider();
  const spec = sampleLoadBalancerSpec([a], {
    serviceName: "default/web",
    annotations: { [`${A}security-groups`]: byo },
  });
  await settle(() => p.loadBalancers!.ensure(o, spec));
  expect(ops.filter((op) => /^sg\./.test(op) && op !== "sg.list")).toEqual([]);
  expect(await admitting(byo)).toEqual([world.nodeGroup]);
  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await admitting(byo)).toEqual([]);
  expect(await exists(byo)).toBe(true);
});

test("a node with a legacy KubernetesCluster=<cluster> group and another: the legacy one is its cluster group and admits the ELB; an unclassified group's rule never revoked", async () => {
  const legacy = await group("legacy-nodes", { KubernetesCluster: "blue" });
  const extra = await group("node-extra");
  const unclassified = await group("hand-made");
  const a = world.fake.createInstance(world.accountId, world.region, world.subnets[0]!, {
    privateDnsName: `legacy-${++n}`,
    securityGroupIds: [legacy, extra],
  }).id;
  const o = target();
  const { p } = await provider();
  await settle(() => p.loadBalancers!.ensure(o, sampleLoadBalancerSpec([a], { serviceName: "default/web" })));
  const elbGroup =
    world.fake.state.securityGroups
      .all(world.accountId)
      .find((g) => g.name === `k8s-elb-${awsLoadBalancerName(o.serviceUid)}`)?.id ?? "";
  expect(await admitting(elbGroup)).toEqual([legacy]);
  // A rule on a group neither tagged for the cluster nor a backend's: not fleet-ccm's to revoke.
  await ec2().send(
    new AuthorizeSecurityGroupIngressCommand({ GroupId: unclassified, IpPermissions: [allFrom(elbGroup)] }),
  );
  await settle(() =>
    p.loadBalancers!.ensure(
      o,
      sampleLoadBalancerSpec([a], { serviceName: "default/web", idleTimeoutSeconds: 61 }),
    ),
  );
  expect(await admitting(elbGroup)).toEqual([legacy, unclassified].sort());
  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await exists(elbGroup)).toBe(false);
});
