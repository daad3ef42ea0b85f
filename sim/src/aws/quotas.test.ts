// AWS's default quotas in the fake, through the official SDK clients: each refusal with AWS's
// error code and status (the spec hook checks each code against the botocore models).

import { AuthorizeSecurityGroupIngressCommand, EC2Client } from "@aws-sdk/client-ec2";
import {
  CreateLoadBalancerCommand,
  CreateLoadBalancerListenersCommand,
  ElasticLoadBalancingClient,
} from "@aws-sdk/client-elastic-load-balancing";
import {
  CreateListenerCommand,
  CreateTargetGroupCommand,
  CreateLoadBalancerCommand as CreateV2LoadBalancerCommand,
  ElasticLoadBalancingV2Client,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { AwsFake } from "./fake.js";
import { AWS_DEFAULT_QUOTAS } from "./quotas.js";

let fake: AwsFake;
beforeAll(async () => {
  fake = await AwsFake.start();
});
afterEach(() => {
  fake.quotas = AWS_DEFAULT_QUOTAS;
  fake.spec.assertClean();
});
afterAll(() => fake.close());

const REGION = "us-east-1";

function setup(name: string) {
  const keys = fake.createAccount(name);
  const config = { region: REGION, endpoint: fake.url, credentials: keys, maxAttempts: 1 };
  const vpcId = fake.createVpc(keys.accountId, REGION);
  const subnetId = fake.createSubnet(keys.accountId, REGION, { vpcId });
  return {
    keys,
    vpcId,
    subnetId,
    ec2: new EC2Client(config),
    elb: new ElasticLoadBalancingClient(config),
    elbv2: new ElasticLoadBalancingV2Client(config),
  };
}

async function failure(call: Promise<unknown>): Promise<{ code: string; status?: number }> {
  try {
    await call;
  } catch (err) {
    const e = err as { name: string; Code?: string; $metadata?: { httpStatusCode?: number } };
    return {
      code: e.Code ?? e.name,
      ...(e.$metadata?.httpStatusCode !== undefined && { status: e.$metadata.httpStatusCode }),
    };
  }
  throw new Error("the call succeeded");
}

const ports = (n: number, from = 1000) => Array.from({ length: n }, (_, i) => from + i);

describe("AWS's default quotas", () => {
  test("classic ELB: 100 listeners per load balancer, then InvalidConfigurationRequest 409", async () => {
    const { elb, subnetId } = setup("clb-quota");
    const listener = (port: number) => ({
      Protocol: "TCP",
      LoadBalancerPort: port,
      InstanceProtocol: "TCP",
      InstancePort: port,
    });
    expect(
      await failure(
        elb.send(
          new CreateLoadBalancerCommand({
            LoadBalancerName: "big",
            Subnets: [subnetId],
            Listeners: ports(101).map(listener),
          }),
        ),
      ),
    ).toEqual({ code: "InvalidConfigurationRequest", status: 409 });
    await elb.send(
      new CreateLoadBalancerCommand({
        LoadBalancerName: "full",
        Subnets: [subnetId],
        Listeners: ports(100).map(listener),
      }),
    );
    expect(
      await failure(
        elb.send(
          new CreateLoadBalancerListenersCommand({ LoadBalancerName: "full", Listeners: [listener(80)] }),
        ),
      ),
    ).toEqual({ code: "InvalidConfigurationRequest", status: 409 });
  });

  test("NLB: 50 listeners per load balancer (TooManyListeners), 1 load balancer per target group, a raised quota", async () => {
    const { elbv2, subnetId, vpcId } = setup("nlb-quota");
    const lb = async (name: string) =>
      (
        await elbv2.send(
          new CreateV2LoadBalancerCommand({ Name: name, Type: "network", Subnets: [subnetId] }),
        )
      ).LoadBalancers![0]!.LoadBalancerArn!;
    const tg = async (port: number) =>
      (
        await elbv2.send(
          new CreateTargetGroupCommand({ Name: `tg-${port}`, Protocol: "TCP", Port: port, VpcId: vpcId }),
        )
      ).TargetGroups![0]!.TargetGroupArn!;
    const listen = (lbArn: string, port: number, tgArn: string) =>
      elbv2.send(
        new CreateListenerCommand({
          LoadBalancerArn: lbArn,
          Protocol: "TCP",
          Port: port,
          DefaultActions: [{ Type: "forward", TargetGroupArn: tgArn }],
        }),
      );
    const a = await lb("a");
    for (const p of ports(50)) await listen(a, p, await tg(p));
    const extra = await tg(2000);
    expect(await failure(listen(a, 2000, extra))).toEqual({ code: "TooManyListeners", status: 400 });
    const b = await lb("b");
    expect(await failure(listen(b, 1000, await tg(1000)))).toEqual({
      code: "TargetGroupAssociationLimit",
      status: 400,
    });
    fake.quotas = { ...AWS_DEFAULT_QUOTAS, nlbListenersPerLoadBalancer: 51 };
    await listen(a, 2000, extra);
  });

  test("NLB: target groups per Region (TooManyTargetGroups)", async () => {
    const { elbv2, vpcId } = setup("tg-quota");
    fake.quotas = { ...AWS_DEFAULT_QUOTAS, targetGroupsPerRegion: 2 };
    const create = (name: string) =>
      elbv2.send(new CreateTargetGroupCommand({ Name: name, Protocol: "TCP", Port: 80, VpcId: vpcId }));
    await create("one");
    await create("two");
    // The same one again is no new target group.
    await create("two");
    expect(await failure(create("three"))).toEqual({ code: "TooManyTargetGroups", status: 400 });
  });

  test("VPC: 60 inbound rules per security group, each source a rule (RulesPerSecurityGroupLimitExceeded)", async () => {
    const { ec2, keys, vpcId } = setup("sg-quota");
    const groupId = fake.createSecurityGroup(keys.accountId, REGION, { vpcId, name: "g" });
    const allow = (fromPort: number, n: number) =>
      ec2.send(
        new AuthorizeSecurityGroupIngressCommand({
          GroupId: groupId,
          IpPermissions: ports(n, fromPort).map((p) => ({
            IpProtocol: "tcp",
            FromPort: p,
            ToPort: p,
            IpRanges: [{ CidrIp: "10.1.0.0/16" }, { CidrIp: "10.2.0.0/16" }],
          })),
        }),
      );
    await allow(1000, 30);
    expect(await failure(allow(2000, 1))).toEqual({
      code: "RulesPerSecurityGroupLimitExceeded",
      status: 400,
    });
    expect(fake.state.securityGroups.get(groupId)?.ingress).toHaveLength(60);
  });
});
