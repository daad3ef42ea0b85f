// loadBalancerSourceRanges of ::/0 alone, as the hub passes it (a range, not "open"), against the
// fake AWS with the SDK: the managed group of a classic ELB and of an NLB, and the node-group
// client rules of an NLB without security groups, admit IPv6 only; never IPv4's 0.0.0.0/0.

import { DescribeSecurityGroupsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { Service } from "@fleet-ccm/proto";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { parseLbAnnotations } from "../../../reconcilers/service/annotations.js";
import { loadBalancerSpec } from "../../../reconcilers/service/predicates.js";
import { settle } from "../../conformance/conformance.testkit.js";
import type { CloudProvider, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName, securityGroupName } from "./lb-network.js";
import { type UpstreamService, upstreamNlb, upstreamNlbNodeRules } from "./upstream.testkit.js";

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld("blue");
});
afterEach(() => world.fake.spec.assertClean());
afterAll(() => world.fake.close());

let n = 0;
const target = (): ServiceTarget => ({
  cluster: "blue",
  network: world.vpcId,
  scope: { adoptFrom: { vendorCcmClusterName: "blue" } },
  serviceUid: `${String(++n).padStart(8, "0")}-7777-8888-9999-5f0c1a2b3c4d`,
});

async function provider(): Promise<CloudProvider> {
  const account = world.binding();
  return (await bindRecorded(awsProvider, account, account.options)).provider;
}

/** default/web, port 443 on nodePort 30443, open to ::/0 alone, specified as the hub does. */
function service(backends: readonly string[], annotations: Record<string, string> = {}) {
  const svc = Service.fromPartial({
    namespace: "default",
    name: "web",
    annotations,
    ports: [{ name: "https", protocol: "TCP", port: 443, nodePort: 30443 }],
    loadBalancerSourceRanges: ["::/0"],
  });
  const spec = loadBalancerSpec(svc, parseLbAnnotations(annotations, awsProvider.lbSettings), backends);
  return { spec, hints: { annotations, ingress: [] } };
}

/** A group's rules as `protocol from-to source description` lines, as DescribeSecurityGroups answers them. */
async function rules(groupId: string): Promise<string[]> {
  const ec2 = new EC2Client({
    region: world.region,
    endpoint: world.fake.url,
    credentials: world.keys,
    maxAttempts: 1,
  });
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

const managedGroup = (name: string) =>
  world.fake.state.securityGroups.all(world.accountId).find((g) => g.name === securityGroupName(name))?.id ??
  "";

test("::/0 alone: the managed group of a classic ELB and of an NLB admits IPv6 only", async () => {
  const p = await provider();
  const backends = [world.instance(`v6-${++n}`).id];
  const kinds: Record<string, string>[] = [{}, { [`${A}type`]: "nlb" }];
  for (const annotations of kinds) {
    const o = target();
    const svc = service(backends, annotations);
    await settle(() => p.loadBalancers!.ensure(o, svc.spec, undefined, svc.hints));
    const name = awsLoadBalancerName(o.serviceUid);
    // A classic ELB adds its path-MTU rule: ICMPv6 "packet too big" for an IPv6 range.
    expect(await rules(managedGroup(name))).toEqual(
      annotations[`${A}type`] === undefined ? ["icmpv6 2-0 ::/0", "tcp 443-443 ::/0"] : ["tcp 443-443 ::/0"],
    );
    await settle(() => p.loadBalancers!.ensureDeleted(o));
  }
});

test("::/0 alone: an NLB without security groups gets IPv6 client rules on the node group, and health rules", async () => {
  const o = target();
  const name = awsLoadBalancerName(o.serviceUid);
  const backends = [world.instance(`v6-${++n}`).id];
  const upstream: UpstreamService = {
    cluster: "blue",
    serviceName: "default/web",
    ports: [{ port: 443, nodePort: 30443 }],
    nodes: backends,
  };
  await upstreamNlb(world, name, upstream, undefined);
  await upstreamNlbNodeRules(world, name, upstream);
  const p = await provider();
  const svc = service(backends, { [`${A}type`]: "nlb" });
  await settle(() => p.loadBalancers!.ensure(o, svc.spec, undefined, svc.hints));
  expect(await rules(world.nodeGroup)).toEqual([
    "icmpv6 2-0 ::/0 kubernetes.io/rule/nlb/mtu",
    `tcp 30443-30443 10.0.0.0/24 kubernetes.io/rule/nlb/health=${name}`,
    `tcp 30443-30443 10.0.1.0/24 kubernetes.io/rule/nlb/health=${name}`,
    `tcp 30443-30443 ::/0 kubernetes.io/rule/nlb/client=${name}`,
  ]);
  await settle(() => p.loadBalancers!.ensureDeleted(o));
  expect(await rules(world.nodeGroup)).toEqual([]);
});
