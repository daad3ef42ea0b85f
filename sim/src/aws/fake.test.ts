// The fake AWS through the official SDK clients (a response they cannot parse fails here), with
// every request and answer checked against the botocore models by the fake's spec hook.

import {
  AuthorizeSecurityGroupIngressCommand,
  CreateRouteCommand,
  CreateTagsCommand,
  DeleteRouteCommand,
  DeleteSecurityGroupCommand,
  DescribeInstancesCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  EC2Client,
  paginateDescribeSubnets,
  RevokeSecurityGroupIngressCommand,
} from "@aws-sdk/client-ec2";
import {
  CreateLoadBalancerCommand,
  CreateLoadBalancerPolicyCommand,
  DescribeLoadBalancersCommand,
  ElasticLoadBalancingClient,
} from "@aws-sdk/client-elastic-load-balancing";
import {
  DescribeTargetGroupsCommand,
  DescribeLoadBalancersCommand as DescribeV2LoadBalancersCommand,
  ElasticLoadBalancingV2Client,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { AwsFake } from "./fake.js";
import { startAwsWorld } from "./world.js";

let fake: AwsFake;
let clock = Date.now();
beforeAll(async () => {
  fake = await AwsFake.start({ now: () => clock });
});
afterEach(() => {
  fake.faults.reset();
  fake.spec.assertClean();
});
afterAll(() => fake?.close());

const REGION = "us-east-1";

function clients(credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }) {
  const config = { region: REGION, endpoint: fake.url, credentials, maxAttempts: 1 };
  return {
    sts: new STSClient(config),
    ec2: new EC2Client(config),
    elb: new ElasticLoadBalancingClient(config),
    elbv2: new ElasticLoadBalancingV2Client(config),
  };
}

/** The SDK's error for a call, with the code (modeled errors carry it as Code) and status the fake answered. */
async function failure(
  call: Promise<unknown>,
): Promise<{ name: string; code: string; status?: number; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = err as {
      name: string;
      Code?: string;
      message: string;
      $metadata?: { httpStatusCode?: number };
    };
    return {
      name: e.name,
      code: e.Code ?? e.name,
      message: e.message,
      ...(e.$metadata?.httpStatusCode !== undefined && { status: e.$metadata.httpStatusCode }),
    };
  }
  throw new Error("the call succeeded");
}

describe("STS against the botocore STS model", () => {
  test("AssumeRole: the role's temporary keys, usable until they expire", async () => {
    const caller = fake.createAccount("caller");
    const owner = fake.createAccount("owner");
    const vpc = fake.createVpc(owner.accountId, REGION);
    const subnet = fake.createSubnet(owner.accountId, REGION, { vpcId: vpc });
    const inst = fake.createInstance(owner.accountId, REGION, subnet);
    const role = fake.createRole(owner.accountId, "fleet", {
      externalId: "ext-1",
      trustedAccounts: [caller.accountId],
    });
    const { sts } = clients(caller);
    const out = await sts.send(
      new AssumeRoleCommand({
        RoleArn: role,
        RoleSessionName: "fleet-ccm",
        ExternalId: "ext-1",
        DurationSeconds: 900,
      }),
    );
    const c = out.Credentials!;
    expect(c.AccessKeyId).toMatch(/^ASIA/);
    expect(c.Expiration?.getTime()).toBe(Math.floor(clock / 1000) * 1000 + 900_000);
    expect(out.AssumedRoleUser).toEqual({
      AssumedRoleId: `AROA${owner.accountId}:fleet-ccm`,
      Arn: `arn:aws:sts::${owner.accountId}:assumed-role/fleet/fleet-ccm`,
    });
    const { ec2 } = clients({
      accessKeyId: c.AccessKeyId!,
      secretAccessKey: c.SecretAccessKey!,
      sessionToken: c.SessionToken!,
    });
    const found = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [inst.id] }));
    expect(found.Reservations?.[0]?.Instances?.[0]?.InstanceId).toBe(inst.id);
    clock += 900_000;
    expect(await failure(ec2.send(new DescribeInstancesCommand({ InstanceIds: [inst.id] })))).toMatchObject({
      name: "ExpiredToken",
      status: 400,
    });
    clock -= 900_000;
    const ops = fake.log.requests({ account: caller.accountId }).map((r) => r.operation);
    expect(ops).toContain("sts.AssumeRole");
    expect(fake.spec.problems()).toEqual([]);
  });

  test("refusals in STS's envelope: AccessDenied 403, the model's bounds as ValidationError 400", async () => {
    const caller = fake.createAccount("caller2");
    const role = fake.createRole(caller.accountId, "r", { externalId: "x-1", trustedAccounts: [] });
    const { sts } = clients(caller);
    expect(
      await failure(
        sts.send(new AssumeRoleCommand({ RoleArn: role, RoleSessionName: "s1", ExternalId: "x-1" })),
      ),
    ).toMatchObject({ name: "AccessDenied", status: 403 });
    // The SDK sends what it is given; the fake refuses what the model bounds (DurationSeconds >= 900).
    expect(
      await failure(
        sts.send(new AssumeRoleCommand({ RoleArn: role, RoleSessionName: "s1", DurationSeconds: 60 })),
      ),
    ).toMatchObject({
      name: "ValidationError",
      status: 400,
      message: expect.stringContaining("DurationSeconds"),
    });
    expect(
      await failure(sts.send(new AssumeRoleCommand({ RoleArn: role, RoleSessionName: "bad name" }))),
    ).toMatchObject({ name: "ValidationError", status: 400 });
    // Those requests are outside the model: the spec hook says so, and names the parameter.
    expect(fake.spec.problems().map((p) => `${p.where} ${p.operation}: ${p.message}`)).toEqual([
      "request sts.AssumeRole: DurationSeconds: 60 outside 900..43200",
    ]);
    fake.spec.reset();
  });
});

describe("AWS's error envelopes and throttling, per service", () => {
  test("every code the provider decides by, with AWS's status, through the SDK", async () => {
    const world = await startAwsWorld("codes", { fake });
    const c = clients(world.keys);
    const node = world.instance("codes-1");
    const rule = {
      GroupId: world.nodeGroup,
      IpPermissions: [{ IpProtocol: "tcp", FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: "10.1.0.0/16" }] }],
    };
    await c.ec2.send(new AuthorizeSecurityGroupIngressCommand(rule));
    const route = {
      RouteTableId: world.routeTable,
      DestinationCidrBlock: "10.244.0.0/24",
      InstanceId: node.id,
    };
    await c.ec2.send(new CreateRouteCommand(route));
    await c.elb.send(
      new CreateLoadBalancerCommand({
        LoadBalancerName: "codes",
        Subnets: [...world.subnets],
        Listeners: [{ Protocol: "TCP", LoadBalancerPort: 80, InstanceProtocol: "TCP", InstancePort: 30080 }],
      }),
    );
    const policy = {
      LoadBalancerName: "codes",
      PolicyName: "k8s-proxyprotocol-enabled",
      PolicyTypeName: "ProxyProtocolPolicyType",
      PolicyAttributes: [{ AttributeName: "ProxyProtocol", AttributeValue: "true" }],
    };
    await c.elb.send(new CreateLoadBalancerPolicyCommand(policy));
    const missing = `i-${"0".repeat(16)}1`;
    const cases: Array<[string, () => Promise<unknown>, string, number]> = [
      [
        "ec2",
        () => c.ec2.send(new DescribeInstancesCommand({ InstanceIds: [missing] })),
        "InvalidInstanceID.NotFound",
        400,
      ],
      [
        "ec2",
        () => c.ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: ["sg-0000000000000dead"] })),
        "InvalidGroup.NotFound",
        400,
      ],
      [
        "ec2",
        () => c.ec2.send(new AuthorizeSecurityGroupIngressCommand(rule)),
        "InvalidPermission.Duplicate",
        400,
      ],
      [
        "ec2",
        () =>
          c.ec2.send(
            new RevokeSecurityGroupIngressCommand({
              ...rule,
              IpPermissions: [
                { IpProtocol: "udp", FromPort: 1, ToPort: 1, IpRanges: [{ CidrIp: "10.9.0.0/16" }] },
              ],
            }),
          ),
        "InvalidPermission.NotFound",
        400,
      ],
      [
        "ec2",
        () => c.ec2.send(new DeleteSecurityGroupCommand({ GroupId: world.nodeGroup })),
        "DependencyViolation",
        400,
      ],
      ["ec2", () => c.ec2.send(new CreateRouteCommand(route)), "RouteAlreadyExists", 400],
      [
        "ec2",
        () =>
          c.ec2.send(
            new DeleteRouteCommand({ RouteTableId: world.routeTable, DestinationCidrBlock: "10.250.0.0/24" }),
          ),
        "InvalidRoute.NotFound",
        400,
      ],
      [
        "elb",
        () => c.elb.send(new DescribeLoadBalancersCommand({ LoadBalancerNames: ["nope"] })),
        "LoadBalancerNotFound",
        400,
      ],
      ["elb", () => c.elb.send(new CreateLoadBalancerPolicyCommand(policy)), "DuplicatePolicyName", 400],
      [
        "elbv2",
        () => c.elbv2.send(new DescribeV2LoadBalancersCommand({ Names: ["nope"] })),
        "LoadBalancerNotFound",
        400,
      ],
      [
        "elbv2",
        () => c.elbv2.send(new DescribeTargetGroupsCommand({ Names: ["nope"] })),
        "TargetGroupNotFound",
        400,
      ],
    ];
    // One at a time, each answer's own failure.
    for (const [service, call, code, status] of cases) {
      const e = await failure(call());
      // Modeled query errors reach the caller under the model's shape name; their Code is the wire code.
      expect([service, e.code, e.status]).toEqual([service, code, status]);
      expect(fake.log.requests({ account: world.accountId }).some((r) => r.outcome === String(status))).toBe(
        true,
      );
    }
    // Each answer's code and status was checked against the service's model (afterEach).
    expect(fake.spec.problems()).toEqual([]);
  });

  test("throttling: EC2 503 RequestLimitExceeded, ELB, ELBv2 and STS 400 Throttling, each in its envelope", async () => {
    const acct = fake.createAccount("throttled");
    const c = clients(acct);
    const role = fake.createRole(acct.accountId, "self", { trustedAccounts: [acct.accountId] });
    const calls = () => ({
      ec2: c.ec2.send(new DescribeInstancesCommand({})),
      elb: c.elb.send(new DescribeLoadBalancersCommand({})),
      elbv2: c.elbv2.send(new DescribeV2LoadBalancersCommand({})),
      sts: c.sts.send(new AssumeRoleCommand({ RoleArn: role, RoleSessionName: "s1" })),
    });
    const expected = {
      ec2: { name: "RequestLimitExceeded", status: 503 },
      elb: { name: "Throttling", status: 400 },
      elbv2: { name: "Throttling", status: 400 },
      sts: { name: "Throttling", status: 400 },
    };
    // Injected throttling, and the per-account request bucket: the same answers.
    fake.setFaults({ throttleRate: 1 }, acct.accountId);
    for (const [service, call] of Object.entries(calls()))
      expect([service, await failure(call)]).toEqual([
        service,
        expect.objectContaining(expected[service as "ec2"]),
      ]);
    fake.faults.reset();
    fake.setRateLimit(acct.accountId, REGION, 0.001, 1);
    await c.ec2.send(new DescribeInstancesCommand({}));
    for (const [service, call] of Object.entries(calls()))
      expect([service, await failure(call)]).toEqual([
        service,
        expect.objectContaining(expected[service as "ec2"]),
      ]);
    fake.setRateLimit(acct.accountId, REGION, 0, 0);
    // The answers were checked against the models, envelopes and namespaces included.
    expect(fake.spec.problems()).toEqual([]);
  });
});

describe("EC2's Describe* shape: ids that must exist, filters, MaxResults/NextToken pages", () => {
  test("subnets, VPCs, security groups and route tables through the SDK and its paginator", async () => {
    const acct = fake.createAccount("describe");
    const { ec2 } = clients(acct);
    const vpc = fake.createVpc(acct.accountId, REGION, { tags: { team: "blue" } });
    const otherVpc = fake.createVpc(acct.accountId, REGION);
    const subnets = Array.from({ length: 7 }, (_, n) =>
      fake.createSubnet(acct.accountId, REGION, {
        vpcId: n < 6 ? vpc : otherVpc,
        az: `${REGION}${"ab"[n % 2]}`,
        tags: n % 3 === 0 ? { "kubernetes.io/role/elb": "1" } : {},
      }),
    );
    const pages: string[][] = [];
    for await (const page of paginateDescribeSubnets(
      { client: ec2, pageSize: 5 },
      { Filters: [{ Name: "vpc-id", Values: [vpc] }] },
    ))
      pages.push((page.Subnets ?? []).map((s) => s.SubnetId!));
    expect(pages).toEqual([subnets.slice(0, 5), subnets.slice(5, 6)]);
    const paged = await ec2.send(new DescribeVpcsCommand({ MaxResults: 5 }));
    expect(paged.Vpcs?.map((v) => v.VpcId)).toEqual([vpc, otherVpc]);
    expect(paged.NextToken).toBeUndefined();
    // tag:, tag-key and wildcards, on every operation; filters AND, values OR.
    const tagged = await ec2.send(
      new DescribeVpcsCommand({ Filters: [{ Name: "tag:team", Values: ["bl*", "red"] }] }),
    );
    expect(tagged.Vpcs?.map((v) => v.VpcId)).toEqual([vpc]);
    const { Subnets } = await ec2.send(
      new DescribeSubnetsCommand({
        Filters: [
          { Name: "tag-key", Values: ["kubernetes.io/role/elb"] },
          { Name: "availability-zone", Values: [`${REGION}a`] },
        ],
      }),
    );
    expect(Subnets?.map((s) => s.SubnetId)).toEqual([subnets[0], subnets[6]]);
    expect(
      await failure(ec2.send(new DescribeVpcsCommand({ VpcIds: [vpc, "vpc-0000000000000dead"] }))),
    ).toMatchObject({ name: "InvalidVpcID.NotFound", status: 400 });
    expect(
      await failure(ec2.send(new DescribeVpcsCommand({ Filters: [{ Name: "owner", Values: ["x"] }] }))),
    ).toMatchObject({ name: "InvalidParameterValue", message: "The filter 'owner' is invalid" });
    // Outside the model's bounds: refused, and the spec hook names it.
    expect(await failure(ec2.send(new DescribeRouteTablesCommand({ MaxResults: 101 })))).toMatchObject({
      name: "InvalidParameterValue",
    });
    expect(fake.spec.problems().map((p) => p.message)).toEqual(["MaxResults: 101 outside 5..100"]);
    fake.spec.reset();
    const nodes = fake.createSecurityGroup(acct.accountId, REGION, { vpcId: vpc, name: "nodes" });
    const lb = fake.createSecurityGroup(acct.accountId, REGION, { vpcId: vpc, name: "lb" });
    fake.state.securityGroups.replace(
      { ...fake.state.securityGroups.get(nodes)!, ingress: [{ protocol: "tcp", groupId: lb }] },
      clock,
    );
    const referencing = await ec2.send(
      new DescribeSecurityGroupsCommand({ Filters: [{ Name: "ip-permission.group-id", Values: [lb] }] }),
    );
    expect(referencing.SecurityGroups?.map((g) => g.GroupId)).toEqual([nodes]);
    expect(
      await failure(ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: ["sg-0000000000000dead"] }))),
    ).toMatchObject({ name: "InvalidGroup.NotFound" });
    // CreateTags checks every id before it tags any.
    expect(
      await failure(
        ec2.send(
          new CreateTagsCommand({
            Resources: [vpc, "vpc-0000000000000dead"],
            Tags: [{ Key: "k", Value: "v" }],
          }),
        ),
      ),
    ).toMatchObject({ name: "InvalidID" });
    expect(fake.state.vpcs.get(vpc)?.tags).toEqual({ team: "blue" });
  });
});

describe("security group rules, as EC2 keeps them", () => {
  test("descriptions, IPv6 ranges, ICMP type and code, protocol numbers; one rule per protocol, ports and source whatever its description", async () => {
    const acct = fake.createAccount("rules");
    const { ec2 } = clients(acct);
    const vpc = fake.createVpc(acct.accountId, REGION);
    const g = fake.createSecurityGroup(acct.accountId, REGION, { vpcId: vpc, name: "nodes" });
    await ec2.send(
      new AuthorizeSecurityGroupIngressCommand({
        GroupId: g,
        IpPermissions: [
          {
            IpProtocol: "6",
            FromPort: 30080,
            ToPort: 30080,
            IpRanges: [{ CidrIp: "203.0.113.0/24", Description: "kubernetes.io/rule/nlb/client=a1" }],
            Ipv6Ranges: [{ CidrIpv6: "2001:db8::/64", Description: "kubernetes.io/rule/nlb/client=a1" }],
          },
          { IpProtocol: "tcp", FromPort: 30080, ToPort: 30080, IpRanges: [{ CidrIp: "10.0.0.0/24" }] },
          {
            IpProtocol: "ICMP",
            FromPort: 3,
            ToPort: 4,
            IpRanges: [{ CidrIp: "203.0.113.0/24", Description: "kubernetes.io/rule/nlb/mtu" }],
          },
          { IpProtocol: "icmpv6", Ipv6Ranges: [{ CidrIpv6: "2001:db8::/64" }] },
        ],
      }),
    );
    const described = async () =>
      (await ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: [g] }))).SecurityGroups?.[0]
        ?.IpPermissions;
    // Grouped by protocol and ports, the sources together, protocols by name.
    expect(await described()).toEqual([
      {
        IpProtocol: "tcp",
        FromPort: 30080,
        ToPort: 30080,
        IpRanges: [
          { CidrIp: "203.0.113.0/24", Description: "kubernetes.io/rule/nlb/client=a1" },
          { CidrIp: "10.0.0.0/24" },
        ],
        Ipv6Ranges: [{ CidrIpv6: "2001:db8::/64", Description: "kubernetes.io/rule/nlb/client=a1" }],
        PrefixListIds: [],
        UserIdGroupPairs: [],
      },
      {
        IpProtocol: "icmp",
        FromPort: 3,
        ToPort: 4,
        IpRanges: [{ CidrIp: "203.0.113.0/24", Description: "kubernetes.io/rule/nlb/mtu" }],
        Ipv6Ranges: [],
        PrefixListIds: [],
        UserIdGroupPairs: [],
      },
      {
        IpProtocol: "icmpv6",
        FromPort: -1,
        ToPort: -1,
        IpRanges: [],
        Ipv6Ranges: [{ CidrIpv6: "2001:db8::/64" }],
        PrefixListIds: [],
        UserIdGroupPairs: [],
      },
    ]);
    // The same rule under another description is the same rule.
    expect(
      await failure(
        ec2.send(
          new AuthorizeSecurityGroupIngressCommand({
            GroupId: g,
            IpPermissions: [
              {
                IpProtocol: "tcp",
                FromPort: 30080,
                ToPort: 30080,
                IpRanges: [{ CidrIp: "10.0.0.0/24", Description: "kubernetes.io/rule/nlb/client=a2" }],
              },
            ],
          }),
        ),
      ),
    ).toMatchObject({ name: "InvalidPermission.Duplicate", status: 400 });
    expect(
      await failure(
        ec2.send(
          new AuthorizeSecurityGroupIngressCommand({
            GroupId: g,
            IpPermissions: [
              {
                IpProtocol: "tcp",
                FromPort: 1,
                ToPort: 1,
                IpRanges: [{ CidrIp: "10.0.0.0/8", Description: "not <ok>" }],
              },
            ],
          }),
        ),
      ),
    ).toMatchObject({ name: "InvalidParameterValue", status: 400 });
    // A revoke names the rule, its description needed not.
    await ec2.send(
      new RevokeSecurityGroupIngressCommand({
        GroupId: g,
        IpPermissions: [
          { IpProtocol: "icmp", FromPort: 3, ToPort: 4, IpRanges: [{ CidrIp: "203.0.113.0/24" }] },
          { IpProtocol: "tcp", FromPort: 30080, ToPort: 30080, Ipv6Ranges: [{ CidrIpv6: "2001:db8::/64" }] },
        ],
      }),
    );
    expect((await described())?.map((p) => [p.IpProtocol, p.IpRanges?.length, p.Ipv6Ranges?.length])).toEqual(
      [
        ["tcp", 2, 0],
        ["icmpv6", 0, 1],
      ],
    );
    expect(fake.spec.problems()).toEqual([]);
  });
});

describe("eventual consistency, as EC2 documents it", () => {
  test("a just-created instance is missing from DescribeInstances, by id and in lists, for a while", async () => {
    const acct = fake.createAccount("eventual");
    const { ec2 } = clients(acct);
    const vpc = fake.createVpc(acct.accountId, REGION);
    const subnet = fake.createSubnet(acct.accountId, REGION, { vpcId: vpc });
    const old = fake.createInstance(acct.accountId, REGION, subnet);
    clock += 10_000;
    fake.setFaults({ staleReadMs: 2_000 }, acct.accountId);
    const fresh = fake.createInstance(acct.accountId, REGION, subnet);
    const listed = async () =>
      (await ec2.send(new DescribeInstancesCommand({}))).Reservations?.flatMap((r) =>
        (r.Instances ?? []).map((i) => i.InstanceId),
      );
    expect(await failure(ec2.send(new DescribeInstancesCommand({ InstanceIds: [fresh.id] })))).toMatchObject({
      code: "InvalidInstanceID.NotFound",
      status: 400,
    });
    expect(await listed()).toEqual([old.id]);
    // A change (stopped) shows the version before it meanwhile.
    fake.setInstanceState(old.id, "stopped");
    const seen = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [old.id] }));
    expect(seen.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe("running");
    clock += 2_000;
    expect(await listed()).toEqual([old.id, fresh.id]);
    const now = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [old.id, fresh.id] }));
    expect(now.Reservations?.map((r) => r.Instances?.[0]?.State?.Name)).toEqual(["stopped", "running"]);
  });
});
