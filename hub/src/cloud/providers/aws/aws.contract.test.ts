// The aws provider's own behaviour against the fake AWS, beyond the conformance suite: the
// wire (SigV4, error codes and statuses, pages, eventual consistency), credentials (rotation,
// an assumed role refreshed and expiring mid-run), batching, throttling storms, adoption of
// what cloud-provider-aws makes, every supported annotation, and routes.

import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import {
  ConfigureHealthCheckCommand,
  ElasticLoadBalancingClient,
  AddTagsCommand as ElbAddTags,
  CreateLoadBalancerCommand as ElbCreate,
  DeleteLoadBalancerCommand as ElbDelete,
  DescribeLoadBalancersCommand as ElbDescribe,
} from "@aws-sdk/client-elastic-load-balancing";
import {
  CreateListenerCommand,
  CreateTargetGroupCommand,
  ElasticLoadBalancingV2Client,
  CreateLoadBalancerCommand as NlbCreate,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { type AwsWorld, startAwsWorld, waitFor } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { type Clock, systemClock } from "../../../util/clock.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { credentialNames, parseOptions } from "../../bind-provider.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import {
  CloudError,
  ForbiddenError,
  ImplementedElsewhereError,
  InstanceNotFoundError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { backendsDigest, loadBalancerSpecDigest, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import { type CloudProvider, type LoadBalancerSpec, lbOwner, type ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName, securityGroupName } from "./lb-network.js";
import { LABEL_ZONE_ID } from "./provider-id.js";
import { upstreamClassicElb, upstreamNlb, upstreamNlbNodeRules } from "./upstream.testkit.js";

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld("blue");
});
afterEach(() => {
  world.fake.faults.reset();
  world.fake.spec.assertClean();
});
afterAll(() => world.fake.close());

async function provider(
  binding: Parameters<AwsWorld["binding"]>[0] = {},
  clock: Clock = systemClock,
): Promise<{ p: CloudProvider; ops: string[] }> {
  const account = world.binding(binding);
  const { provider, ops } = await bindRecorded(awsProvider, account, account.options, { clock });
  return { p: provider, ops };
}

const sdkConfig = () => ({
  region: world.region,
  endpoint: world.fake.url,
  credentials: world.keys,
  maxAttempts: 1,
});

let uid = 0;
const owner = (): ServiceTarget => ({
  cluster: "blue",
  network: world.vpcId,
  scope: {},
  serviceUid: `${String(++uid).padStart(8, "0")}-aaaa-bbbb-cccc-5f0c1a2b3c4d`,
});
/** A Service of cluster blue while it migrates from cloud-provider-aws (--cluster-name `vendor`): clusters[].adoptFrom. */
const adopting = (vendor = "blue"): ServiceTarget => ({
  ...owner(),
  scope: { adoptFrom: { vendorCcmClusterName: vendor } },
});
const lbs = (p: CloudProvider) => p.loadBalancers!;

describe("the fake's wire, with the SDK as client", () => {
  test("SigV4 with the account's secret: a wrong secret or an unknown key is refused", async () => {
    const ec2 = new EC2Client({ ...sdkConfig(), credentials: { ...world.keys, secretAccessKey: "wrong" } });
    await expect(ec2.send(new DescribeInstancesCommand({}))).rejects.toMatchObject({
      name: "SignatureDoesNotMatch",
      $metadata: { httpStatusCode: 403 },
    });
    const stranger = new EC2Client({
      ...sdkConfig(),
      credentials: { accessKeyId: "AKIANOBODY", secretAccessKey: "x" },
    });
    await expect(stranger.send(new DescribeInstancesCommand({}))).rejects.toMatchObject({
      name: "AuthFailure",
      $metadata: { httpStatusCode: 401 },
    });
    const { p } = await provider({
      secret: (n = "") => (n === "secretAccessKey" ? "wrong" : world.keys.accessKeyId),
    });
    await expect(p.instances.listPage(undefined)).rejects.toBeInstanceOf(ForbiddenError);
  });

  test("EC2's codes: NotFound and Malformed ids, MaxResults with ids, throttling as 503 RequestLimitExceeded", async () => {
    const ec2 = new EC2Client(sdkConfig());
    await expect(
      ec2.send(new DescribeInstancesCommand({ InstanceIds: [`i-${"0".repeat(17)}`] })),
    ).rejects.toMatchObject({
      name: "InvalidInstanceID.NotFound",
      $metadata: { httpStatusCode: 400 },
    });
    await expect(ec2.send(new DescribeInstancesCommand({ InstanceIds: ["i-nope"] }))).rejects.toMatchObject({
      name: "InvalidInstanceID.Malformed",
    });
    const i = world.instance("wire-1");
    await expect(
      ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id], MaxResults: 5 })),
    ).rejects.toMatchObject({
      name: "InvalidParameterCombination",
    });
    world.fake.setRateLimit(world.accountId, world.region, 1, 1);
    try {
      await ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id] }));
      await expect(ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id] }))).rejects.toMatchObject({
        name: "RequestLimitExceeded",
        $metadata: { httpStatusCode: 503 },
      });
      const elb = new ElasticLoadBalancingClient(sdkConfig());
      world.fake.setFaults({ throttleRate: 1 }, world.accountId);
      await expect(elb.send(new ElbDescribe({}))).rejects.toMatchObject({
        name: "Throttling",
        $metadata: { httpStatusCode: 400 },
      });
    } finally {
      world.fake.setRateLimit(world.accountId, world.region, 0, 0);
    }
    const log = world.fake.log.requests({ account: world.accountId, operation: /DescribeInstances/ });
    expect(log.at(-1)?.outcome).toBe("503");
  });

  test("eventual consistency: a new instance is missing from DescribeInstances for a while", async () => {
    world.fake.setFaults({ staleReadMs: 300 }, world.accountId);
    const { p } = await provider();
    const i = world.instance("fresh-1");
    const pid = `aws:///${i.az}/${i.id}`;
    expect(await p.instances.findByName("fresh-1")).toEqual([]);
    await expect(p.instances.getByProviderID(pid)).rejects.toBeInstanceOf(InstanceNotFoundError);
    await waitFor(async () => (await p.instances.findByName("fresh-1")).length === 1, 5_000, 50);
    expect((await p.instances.getByProviderID(pid)).instanceID).toBe(i.id);
  });
});

describe("instances", () => {
  test("providerIDs as upstream: aws:///<az>/<id>, aws:////<id>, a bare id; another region's zone is not ours", async () => {
    const { p } = await provider();
    const id = "i-0123456789abcdef0";
    expect(p.instances.parseProviderID(`aws:///us-east-1a/${id}`)).toBe(id);
    expect(p.instances.parseProviderID(`aws:////${id}`)).toBe(id);
    expect(p.instances.parseProviderID(id)).toBe(id);
    expect(p.instances.parseProviderID(`aws:///eu-west-1a/${id}`)).toBeUndefined();
    expect(p.instances.parseProviderID(`gce://p/z/${id}`)).toBeUndefined();
    expect(p.instances.parseProviderID("aws:///us-east-1a/fargate-10.0.0.1")).toBeUndefined();
  });

  test("metadata: type, zone, region, zone id label, VPC, tags, addresses in upstream's order, states", async () => {
    const { p } = await provider();
    const i = world.instance("meta-1", { zone: 1 });
    expect((await p.instances.findByName("meta-1"))[0]?.providerID).toBe(`aws:///${world.region}b/${i.id}`);
    // A node's own accepted form is answered as asked (the lifecycle compares it).
    const meta = await p.instances.getByProviderID(`aws:////${i.id}`);
    expect(meta).toMatchObject({
      providerID: `aws:////${i.id}`,
      instanceID: i.id,
      name: "meta-1",
      instanceType: "m5.large",
      region: world.region,
      zone: `${world.region}b`,
      network: world.vpcId,
      state: "running",
      additionalLabels: { [LABEL_ZONE_ID]: "use1-az2" },
    });
    expect(meta.addresses).toEqual([
      { type: "InternalIP", address: i.privateIp },
      { type: "ExternalIP", address: i.publicIp },
      { type: "InternalDNS", address: "meta-1" },
      { type: "Hostname", address: "meta-1" },
      { type: "ExternalDNS", address: i.publicDns },
    ]);
    world.fake.setInstanceState(i.id, "stopped");
    expect((await p.instances.getByProviderID(i.id)).state).toBe("stopped");
    // Upstream's InstanceShutdownByProviderID: shut down only when stopped; the transitional
    // states are neither shut down nor gone.
    world.fake.setInstanceState(i.id, "stopping");
    expect((await p.instances.getByProviderID(i.id)).state).toBe("unknown");
    world.fake.setInstanceState(i.id, "shutting-down");
    expect((await p.instances.getByProviderID(i.id)).state).toBe("unknown");
    world.fake.setInstanceState(i.id, "terminated");
    expect((await p.instances.getByProviderID(i.id)).state).toBe("terminated");
  });

  test("lookups together are one DescribeInstances; only a direct lookup of the missing one says not found", async () => {
    const { p, ops } = await provider();
    const made = Array.from({ length: 40 }, (_, n) => world.instance(`batch-${n}`));
    const missing = `aws:///${world.region}a/i-${"e".repeat(17)}`;
    const mark = world.fake.log.mark();
    const answers = await Promise.all(
      [...made.map((i) => `aws:///${i.az}/${i.id}`), missing].map((pid) =>
        p.instances.getByProviderID(pid).catch((e: unknown) => e),
      ),
    );
    expect(answers.slice(0, 40).map((m) => (m as { instanceID: string }).instanceID)).toEqual(
      made.map((i) => i.id),
    );
    expect(answers[40]).toBeInstanceOf(InstanceNotFoundError);
    expect(ops.filter((o) => o === "instances.batch")).toHaveLength(1);
    expect(ops.filter((o) => o === "instances.get")).toHaveLength(1);
    expect(world.fake.log.requests({ afterSeq: mark, operation: /DescribeInstances$/ })).toHaveLength(2);
  });

  test("findByName reads every page; the SDK's NextToken round-trips", async () => {
    for (let n = 0; n < 120; n++) world.instance("same-name");
    const { p, ops } = await provider();
    expect(await p.instances.findByName("same-name")).toHaveLength(120);
    expect(ops.filter((o) => o === "instances.findByName")).toHaveLength(3);
  });

  test("a throttling storm: ThrottledError without a Retry-After (AWS sends none), never a not found", async () => {
    const { p } = await provider();
    const i = world.instance("storm-1");
    world.fake.setRateLimit(world.accountId, world.region, 2, 3);
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => p.instances.findByName("storm-1").catch((e: unknown) => e)),
      );
      const throttled = answers.filter((a) => a instanceof ThrottledError);
      expect(throttled.length).toBeGreaterThan(10);
      for (const t of throttled) expect((t as ThrottledError).retryAfterMs).toBeUndefined();
      expect(answers.filter((a) => Array.isArray(a) && a[0]?.instanceID === i.id).length).toBeGreaterThan(0);
      expect(
        answers.some((a) => a instanceof InstanceNotFoundError || (Array.isArray(a) && a.length === 0)),
      ).toBe(false);
    } finally {
      world.fake.setRateLimit(world.accountId, world.region, 0, 0);
    }
  });
});

describe("credentials", () => {
  test("keys are read per request: a rotated key is used at once, the old one revoked", async () => {
    const { p } = await provider();
    await p.instances.listPage(undefined);
    const old = world.keys;
    const fresh = world.fake.createAccessKey(world.accountId);
    world.keys = { accessKeyId: fresh.accessKeyId, secretAccessKey: fresh.secretAccessKey };
    world.fake.revokeAccessKey(old.accessKeyId);
    try {
      await p.instances.listPage(undefined);
      const last = world.fake.log.requests({ account: world.accountId }).at(-1);
      expect(last?.outcome).toBe("200");
    } finally {
      world.keys = { accessKeyId: fresh.accessKeyId, secretAccessKey: fresh.secretAccessKey };
    }
  });

  test("an assumed role: refreshed before it expires, assumed again when its session ends early", async () => {
    let offset = 0;
    const clock: Clock = { ...systemClock, now: () => Date.now() + offset };
    const fake = world.fake;
    const other = await startAwsWorld("green", { fake });
    const role = fake.createRole(other.accountId, "fleet-ccm", {
      externalId: "ext-1",
      trustedAccounts: [world.accountId],
    });
    const i = other.instance("role-1");
    const binding: Parameters<AwsWorld["binding"]>[0] = {
      network: other.vpcId,
      credentialNames: ["accessKeyId", "secretAccessKey", "roleArn", "externalId"],
      secret: (n = "") =>
        ({ secretAccessKey: world.keys.secretAccessKey, roleArn: role, externalId: "ext-1" })[n] ??
        world.keys.accessKeyId,
      options: { durationSeconds: 900 },
    };
    const { p, ops } = await provider(binding, clock);
    expect((await p.instances.getByProviderID(i.id)).instanceID).toBe(i.id);
    expect(fake.log.requests({ account: other.accountId }).at(-1)?.outcome).toBe("200");
    await p.instances.getByProviderID(i.id);
    expect(ops.filter((o) => o === "sts.AssumeRole")).toHaveLength(1);
    // 900 s sessions are refreshed 180 s before they end.
    offset = 721_000;
    await p.instances.getByProviderID(i.id);
    expect(ops.filter((o) => o === "sts.AssumeRole")).toHaveLength(2);
    fake.expireRoleSessions(role);
    await expect(p.instances.getByProviderID(i.id)).rejects.toBeInstanceOf(TransientCloudError);
    expect((await p.instances.getByProviderID(i.id)).instanceID).toBe(i.id);
    expect(ops.filter((o) => o === "sts.AssumeRole")).toHaveLength(3);
    // A role that does not trust us (or a wrong external id) is a refusal, not a retry.
    const { p: denied } = await provider({
      ...binding,
      secret: (n = "") =>
        ({ secretAccessKey: world.keys.secretAccessKey, roleArn: role, externalId: "wrong" })[n] ??
        world.keys.accessKeyId,
    });
    await expect(denied.instances.listPage(undefined)).rejects.toBeInstanceOf(ForbiddenError);
  });

  test("credential names and options are checked naming the field", () => {
    const names = (n: string[]) => () => credentialNames(awsProvider.credentials, n);
    expect(names(["accessKeyId"])).toThrow("credentials.secretAccessKey: required");
    expect(names(["accessKeyId", "secretAccessKey", "token"])).toThrow("credentials.token");
    expect(names(["accessKeyId", "secretAccessKey", "externalId"])).toThrow(
      "credentials.externalId: only with credentials.roleArn",
    );
    expect(names([""])).toThrow("credentials: takes named credentials");
    expect(() => parseOptions(awsProvider, { durationSeconds: 60 })).toThrow("options.durationSeconds");
    expect(() => parseOptions(awsProvider, { defaultLoadBalancerType: "alb" })).toThrow(
      "options.defaultLoadBalancerType",
    );
  });
});

describe("load balancers", () => {
  const nodes = () => [world.instance(`lb-${++uid}`), world.instance(`lb-${++uid}`, { zone: 1 })];
  const spec = (
    backends: readonly string[],
    annotations: Record<string, string> = {},
    o: Partial<LoadBalancerSpec> = {},
  ) =>
    sampleLoadBalancerSpec([...backends].sort(), {
      serviceName: "default/web",
      ...(Object.keys(annotations).length > 0 && { annotations: annotations }),
      ...o,
    });

  test("adopts a classic ELB made the way cloud-provider-aws makes it, with the cluster's adoptFrom", async () => {
    const o = adopting();
    const name = awsLoadBalancerName(o.serviceUid);
    const ns = nodes();
    const dnsName = await upstreamClassicElb(world, name, {
      cluster: "blue",
      serviceName: "default/web",
      ports: [{ port: 80, nodePort: 30080 }],
      nodes: ns.map((n) => n.id),
    });
    const group = () =>
      world.fake.state.securityGroups.all(world.accountId).find((g) => g.name === securityGroupName(name));
    const groupId = group()?.id ?? "";
    const { p, ops } = await provider();
    expect((await lbs(p).get(o))?.owner).toEqual(lbOwner(o));
    const [ingress] = await settle(() => lbs(p).ensure(o, spec(ns.map((n) => n.id))));
    expect(ingress?.hostname).toBe(dnsName);
    expect(ops).not.toContain("elb.create");
    expect(ops).not.toContain("sg.create");
    expect(ops).toContain("elb.tag");
    const all = world.fake.classicLoadBalancers(world.accountId).filter((l) => l.id.endsWith(`/${name}`));
    expect(all).toHaveLength(1);
    expect(all[0]?.tags[OWNER_TAG_SERVICE_UID]).toBe(o.serviceUid);
    expect(all[0]?.listeners.map((l) => l.port).sort()).toEqual([443, 80]);
    // Upstream's group is the managed one now, ours: it needs no opt-in any more.
    expect(all[0]?.securityGroups).toEqual([groupId]);
    expect(group()?.tags[OWNER_TAG_SERVICE_UID]).toBe(o.serviceUid);
    await settle(() => lbs(p).ensure({ ...o, scope: {} }, spec(ns.map((n) => n.id))));
    await settle(() => lbs(p).ensureDeleted(o));
    expect(world.resources().filter((r) => r.id.includes(name) || r.id.includes(groupId))).toEqual([]);
    expect(group()).toBeUndefined();
  });

  test.each([
    ["no adoptFrom", undefined, "has no adoptFrom"],
    ["adoptFrom naming another vendor cluster", "green", "kubernetes.io/cluster/green: owned"],
  ] as const)(
    "a classic ELB and an NLB cloud-provider-aws made for the Service's name, %s: refused, no write",
    async (_what, vendor, why) => {
      const ns = nodes().map((n) => n.id);
      const target = (): ServiceTarget => (vendor === undefined ? owner() : adopting(vendor));
      const classic = target();
      const nlb = target();
      const svc = {
        cluster: "blue",
        serviceName: "default/web",
        ports: [{ port: 80, nodePort: 30080 }],
        nodes: ns,
      };
      await upstreamClassicElb(world, awsLoadBalancerName(classic.serviceUid), svc);
      await upstreamNlb(world, awsLoadBalancerName(nlb.serviceUid), svc, undefined);
      await upstreamNlbNodeRules(world, awsLoadBalancerName(nlb.serviceUid), svc);
      const { p } = await provider();
      const mark = world.fake.log.mark();
      const calls: [string, () => Promise<unknown>][] = [];
      for (const [o, annotations] of [
        [classic, {}],
        [nlb, { [`${A}type`]: "nlb" }],
      ] as const)
        calls.push(
          [
            `ensure ${o.serviceUid}`,
            () => lbs(p).ensure(o, spec(ns, annotations, { sourceRanges: ["10.0.0.0/8"] })),
          ],
          [`updateBackends ${o.serviceUid}`, () => lbs(p).updateBackends(o, ns.slice(0, 1))],
          [`ensureDeleted ${o.serviceUid}`, () => lbs(p).ensureDeleted(o)],
          [`get ${o.serviceUid}`, () => lbs(p).get(o)],
        );
      for (const [call, run] of calls) {
        const err = await run().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect({ call, err }).toEqual({ call, err: expect.any(CloudError) });
        expect((err as Error).message).toContain(why);
      }
      const writes = world.fake.log
        .requests({ account: world.accountId, afterSeq: mark })
        .filter((r) => !/\.Describe/.test(r.operation));
      expect(writes).toEqual([]);
      // Both are still upstream's, as it left them.
      for (const o of [classic, nlb]) {
        const name = awsLoadBalancerName(o.serviceUid);
        const lb = [
          ...world.fake.classicLoadBalancers(world.accountId),
          ...world.fake.networkLoadBalancers(world.accountId),
        ].find((l) => l.id.endsWith(`/${name}`) || ("name" in l && l.name === name));
        expect(lb?.tags[OWNER_TAG_SERVICE_UID]).toBeUndefined();
        await settle(() =>
          lbs(p).ensureDeleted({ ...o, scope: { adoptFrom: { vendorCcmClusterName: "blue" } } }),
        );
      }
    },
  );

  test("adopts an NLB made the way cloud-provider-aws makes it, keeping its target group", async () => {
    const o = adopting();
    const name = awsLoadBalancerName(o.serviceUid);
    const ns = nodes();
    const v2 = new ElasticLoadBalancingV2Client(sdkConfig());
    const tags = [
      { Key: "kubernetes.io/cluster/blue", Value: "owned" },
      { Key: "kubernetes.io/service-name", Value: "default/web" },
    ];
    const lb = (
      await v2.send(new NlbCreate({ Name: name, Type: "network", Subnets: [...world.subnets], Tags: tags }))
    ).LoadBalancers?.[0];
    const tg = (
      await v2.send(
        new CreateTargetGroupCommand({
          Name: "k8s-default-web-0a1b2c3d4e",
          Protocol: "TCP",
          Port: 30080,
          VpcId: world.vpcId,
          TargetType: "instance",
          Tags: tags,
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
    const { p, ops } = await provider();
    const s = spec(
      ns.map((n) => n.id),
      { [`${A}type`]: "nlb" },
      {
        listeners: [{ protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false }],
      },
    );
    await settle(() => lbs(p).ensure(o, s));
    expect(ops).not.toContain("nlb.create");
    expect(ops).not.toContain("nlb.targetGroup.create");
    const group = world.fake.state.targetGroups.get(tg?.TargetGroupArn ?? "");
    expect(group?.targets.map((t) => t.id).sort()).toEqual(ns.map((n) => n.id).sort());
    // An NLB made without security groups stays so (AWS cannot add them later).
    expect(world.fake.state.v2Lbs.get(lb?.LoadBalancerArn ?? "")?.securityGroups).toEqual([]);
    await settle(() => lbs(p).ensureDeleted(o));
    expect(world.fake.state.targetGroups.get(tg?.TargetGroupArn ?? "")).toBeUndefined();
  });

  test("adoption keeps the health checks cloud-provider-aws built (its defaults per kind); a unified key still wins", async () => {
    const ns = nodes().map((n) => n.id);
    const tags = [
      { Key: "kubernetes.io/cluster/blue", Value: "owned" },
      { Key: "kubernetes.io/service-name", Value: "default/web" },
    ];
    // A classic ELB as upstream leaves it: TCP on the first node port, 10/5/2/6.
    const classic = adopting();
    const elbName = awsLoadBalancerName(classic.serviceUid);
    const elb = new ElasticLoadBalancingClient(sdkConfig());
    await elb.send(
      new ElbCreate({
        LoadBalancerName: elbName,
        Listeners: [
          { Protocol: "TCP", LoadBalancerPort: 80, InstanceProtocol: "TCP", InstancePort: 30080 },
          { Protocol: "TCP", LoadBalancerPort: 443, InstanceProtocol: "TCP", InstancePort: 30443 },
        ],
        Subnets: [...world.subnets],
        Tags: tags,
      }),
    );
    const upstreamClassic = { Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6 };
    await elb.send(
      new ConfigureHealthCheckCommand({
        LoadBalancerName: elbName,
        HealthCheck: { Target: "TCP:30080", ...upstreamClassic },
      }),
    );
    // An NLB as upstream leaves it: TCP on the traffic port, 30/10/3/3.
    const nlb = adopting();
    const v2 = new ElasticLoadBalancingV2Client(sdkConfig());
    const lb = (
      await v2.send(
        new NlbCreate({
          Name: awsLoadBalancerName(nlb.serviceUid),
          Type: "network",
          Subnets: [...world.subnets],
          Tags: tags,
        }),
      )
    ).LoadBalancers?.[0];
    const upstreamNlb = {
      HealthCheckProtocol: "TCP" as const,
      HealthCheckPort: "traffic-port",
      HealthCheckIntervalSeconds: 30,
      HealthCheckTimeoutSeconds: 10,
      HealthyThresholdCount: 3,
      UnhealthyThresholdCount: 3,
    };
    const tg = (
      await v2.send(
        new CreateTargetGroupCommand({
          Name: "k8s-default-web-5e6f7a8b9c",
          Protocol: "TCP",
          Port: 30080,
          VpcId: world.vpcId,
          TargetType: "instance",
          ...upstreamNlb,
          Tags: tags,
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
    const { p, ops } = await provider();
    // No health check key: the hub's spec holds its own defaults (10/5/2/3), not upstream's.
    await settle(() => lbs(p).ensure(classic, spec(ns)));
    const nlbSpec = spec(
      ns,
      { [`${A}type`]: "nlb" },
      { listeners: [{ protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false }] },
    );
    await settle(() => lbs(p).ensure(nlb, nlbSpec));
    expect(ops).not.toContain("elb.healthCheck.configure");
    expect(ops).not.toContain("nlb.targetGroup.modify");
    const classicNow = () =>
      world.fake.classicLoadBalancers(world.accountId).find((l) => l.id.endsWith(`/${elbName}`));
    expect(classicNow()?.healthCheck).toMatchObject({
      target: "TCP:30080",
      interval: 10,
      timeout: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 6,
    });
    expect(world.fake.state.targetGroups.get(tg?.TargetGroupArn ?? "")?.healthCheck).toMatchObject({
      protocol: "TCP",
      port: "traffic-port",
      interval: 30,
      timeout: 10,
      healthyThreshold: 3,
      unhealthyThreshold: 3,
    });
    // A unified key the Service sets (seen in the hints' annotations) wins; the rest stay upstream's.
    const unified = { "lb.fleet-ccm.io/health-check-unhealthy-threshold": "4" };
    const base = spec(ns);
    await settle(() =>
      lbs(p).ensure(
        classic,
        { ...base, healthCheck: { ...base.healthCheck, unhealthyThreshold: 4 } },
        undefined,
        { annotations: unified, ingress: [] },
      ),
    );
    expect(classicNow()?.healthCheck).toMatchObject({ interval: 10, timeout: 5, unhealthyThreshold: 4 });
    for (const o of [classic, nlb]) await settle(() => lbs(p).ensureDeleted(o));
  });

  test("an endpoint answering TargetGroupNotFound by LoadBalancerArn for an NLB with none: an interrupted create finishes, and deletes", async () => {
    world.fake.noTargetGroupsNotFound = true;
    try {
      const ns = nodes().map((n) => n.id);
      const s = spec(ns, { [`${A}type`]: "nlb" });
      // The hub stops right after CreateLoadBalancer answered (a crash, a lost replica).
      const account = world.binding();
      const { provider: interrupted } = await bindRecorded(awsProvider, account, account.options, {
        after: (op, out) => {
          if (op === "nlb.create") throw new TransientCloudError("interrupted");
          return out;
        },
      });
      const kept = owner();
      const gone = owner();
      for (const o of [kept, gone])
        await expect(lbs(interrupted).ensure(o, s)).rejects.toThrow("interrupted");
      const { p } = await provider();
      // Deleted as it is, without a target group.
      await settle(() => lbs(p).ensureDeleted(gone));
      expect(world.resources().filter((r) => r.lbOwner?.serviceUid === gone.serviceUid)).toEqual([]);
      // Ensured again: finished, one target group per port.
      await settle(() => lbs(p).ensure(kept, s));
      const mine = () => world.resources().filter((r) => r.lbOwner?.serviceUid === kept.serviceUid);
      expect(mine().filter((r) => r.kind === "target-group")).toHaveLength(2);
      expect(mine().filter((r) => r.kind === "nlb-listener")).toHaveLength(2);
      await settle(() => lbs(p).ensureDeleted(kept));
      expect(mine()).toEqual([]);
    } finally {
      world.fake.noTargetGroupsNotFound = false;
    }
  });

  test("lost answers to mutations (made, then a 504): repeated ensures and deletes end with one of each, then nothing", async () => {
    const ns = nodes().map((n) => n.id);
    const { p } = await provider();
    const o = owner();
    const kinds = () =>
      world
        .resources()
        .filter((r) => r.lbOwner?.serviceUid === o.serviceUid)
        .map((r) => r.kind)
        .sort();
    world.fake.setFaults({ lostResponseRate: 0.5 }, world.accountId);
    let lost = 0;
    for (let n = 0; n < 50; n++) {
      const answer = await lbs(p)
        .ensure(o, spec(ns, { [`${A}type`]: "nlb" }))
        .catch((e: unknown) => e);
      if (!(answer instanceof Error)) break;
      expect(answer).toBeInstanceOf(TransientCloudError);
      lost++;
    }
    expect(lost).toBeGreaterThan(0);
    world.fake.faults.reset();
    expect(kinds()).toEqual([
      "nlb",
      "nlb-listener",
      "nlb-listener",
      "node-sg-rule",
      "security-group",
      "sg-ingress",
      "sg-ingress",
      "target-group",
      "target-group",
    ]);
    world.fake.setFaults({ lostResponseRate: 0.5 }, world.accountId);
    for (let n = 0; n < 50; n++) {
      const answer = await lbs(p)
        .ensureDeleted(o)
        .catch((e: unknown) => e);
      if (answer === undefined) break;
    }
    world.fake.faults.reset();
    await settle(() => lbs(p).ensureDeleted(o));
    expect(kinds()).toEqual([]);
    expect(world.fake.log.count({ account: world.accountId, fault: "lostResponse" })).toBeGreaterThan(0);
  });

  test("delete waits (in progress, no failure) while AWS still holds the security group; the group goes last", async () => {
    world.fake.eniLingerMs = 150;
    try {
      const { p } = await provider();
      const o = owner();
      await settle(() => lbs(p).ensure(o, spec(nodes().map((n) => n.id))));
      const first = await lbs(p).ensureDeleted(o);
      expect(first).toMatchObject({ kind: "in-progress", retryAfterMs: 20 });
      expect(
        world.fake
          .classicLoadBalancers(world.accountId)
          .some((l) => l.id.endsWith(awsLoadBalancerName(o.serviceUid))),
      ).toBe(false);
      await settle(() => lbs(p).ensureDeleted(o));
      expect(world.resources().filter((r) => r.lbOwner?.serviceUid === o.serviceUid)).toEqual([]);
    } finally {
      world.fake.eniLingerMs = 0;
    }
  });

  test("type: nlb by annotation or account default for new Services; an existing one keeps its kind; a changed annotation replaces it; external is elsewhere", async () => {
    const ns = nodes().map((n) => n.id);
    const { p } = await provider();
    await expect(lbs(p).ensure(owner(), spec(ns, { [`${A}type`]: "external" }))).rejects.toBeInstanceOf(
      ImplementedElsewhereError,
    );
    const classic = owner();
    await settle(() => lbs(p).ensure(classic, spec(ns)));
    const { p: nlbDefault, ops } = await provider({
      options: { ...world.binding().options, defaultLoadBalancerType: "nlb" },
    });
    await settle(() => lbs(nlbDefault).ensure(classic, spec(ns)));
    expect(ops).not.toContain("nlb.create");
    // The annotation changed to nlb: an NLB is built, then the classic ELB goes (not left behind).
    const name = awsLoadBalancerName(classic.serviceUid);
    const kinds = () =>
      world
        .resources()
        .filter((r) => r.lbOwner?.serviceUid === classic.serviceUid)
        .map((r) => r.kind);
    const [asNlb] = await settle(() => lbs(nlbDefault).ensure(classic, spec(ns, { [`${A}type`]: "nlb" })));
    expect(asNlb?.hostname).toContain(name);
    expect(kinds()).not.toContain("elb");
    expect(kinds()).toEqual(
      expect.arrayContaining(["nlb", "target-group", "nlb-listener", "security-group"]),
    );
    expect((await lbs(p).get(classic))?.id).toContain(":loadbalancer/net/");
    // And back: a classic ELB again, the NLB and its target groups deleted.
    await settle(() => lbs(p).ensure(classic, spec(ns, { [`${A}type`]: "classic" })));
    expect(kinds()).not.toEqual(expect.arrayContaining(["nlb"]));
    expect(kinds().filter((k) => k === "target-group" || k === "nlb-listener")).toEqual([]);
    expect(kinds()).toContain("elb");
    const fresh = owner();
    await settle(() => lbs(nlbDefault).ensure(fresh, spec(ns)));
    expect(ops).toContain("nlb.create");
    for (const o of [classic, fresh]) await settle(() => lbs(p).ensureDeleted(o));
  });

  test("classic annotations: ssl-cert and ssl-ports, backend-protocol, healthcheck-port, subnets, groups, tags, cross-zone, proxy protocol", async () => {
    const ns = nodes().map((n) => n.id);
    const extra = world.fake.createSecurityGroup(world.accountId, world.region, {
      vpcId: world.vpcId,
      name: "extra",
    });
    const cert = "arn:aws:acm:us-east-1:123456789012:certificate/abc";
    const o = owner();
    const { p } = await provider();
    const s = spec(
      ns,
      {
        [`${A}ssl-cert`]: cert,
        [`${A}ssl-ports`]: "https",
        [`${A}backend-protocol`]: "http",
        [`${A}healthcheck-port`]: "traffic-port",
        [`${A}subnets`]: world.subnets[1]!,
        [`${A}extra-security-groups`]: extra,
        [`${A}additional-resource-tags`]: "team=web,env=prod",
        [`${A}cross-zone-load-balancing-enabled`]: "true",
      },
      {
        listeners: [
          { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: true },
          { protocol: "TCP", port: 443, nodePort: 30443, proxyProtocol: true, name: "https" },
        ],
        internal: true,
      },
    );
    await settle(() => lbs(p).ensure(o, s));
    const lb = world.fake
      .classicLoadBalancers(world.accountId)
      .find((l) => l.id.endsWith(awsLoadBalancerName(o.serviceUid)));
    expect(lb?.listeners).toEqual([
      { protocol: "HTTP", port: 80, instanceProtocol: "HTTP", instancePort: 30080 },
      { protocol: "HTTPS", port: 443, instanceProtocol: "HTTP", instancePort: 30443, certificateId: cert },
    ]);
    expect(lb).toMatchObject({ scheme: "internal", subnets: [world.subnets[1]], crossZone: true });
    expect(lb?.healthCheck.target).toBe("TCP:30080");
    expect(lb?.securityGroups).toHaveLength(2);
    expect(lb?.securityGroups).toContain(extra);
    expect(lb?.tags).toMatchObject({ team: "web", env: "prod", "kubernetes.io/service-name": "default/web" });
    expect(lb?.backendPolicies).toEqual({
      "30080": ["k8s-proxyprotocol-enabled"],
      "30443": ["k8s-proxyprotocol-enabled"],
    });
    // A port removed: its instance port's policy goes with its listener (as upstream).
    await settle(() => lbs(p).ensure(o, { ...s, listeners: s.listeners.filter((l) => l.port === 80) }));
    const trimmed = world.fake
      .classicLoadBalancers(world.accountId)
      .find((l) => l.id.endsWith(awsLoadBalancerName(o.serviceUid)));
    expect(trimmed?.listeners.map((l) => l.port)).toEqual([80]);
    expect(trimmed?.backendPolicies).toEqual({ "30080": ["k8s-proxyprotocol-enabled"] });
    // security-groups replaces the managed group: none is made, none is deleted.
    const own = world.fake.createSecurityGroup(world.accountId, world.region, {
      vpcId: world.vpcId,
      name: "own",
    });
    const o2 = owner();
    await settle(() => lbs(p).ensure(o2, spec(ns, { [`${A}security-groups`]: own })));
    const lb2 = world.fake
      .classicLoadBalancers(world.accountId)
      .find((l) => l.id.endsWith(awsLoadBalancerName(o2.serviceUid)));
    expect(lb2?.securityGroups).toEqual([own]);
    for (const x of [o, o2]) await settle(() => lbs(p).ensureDeleted(x));
    expect(world.fake.state.securityGroups.get(own)).toBeDefined();
    expect(world.fake.state.securityGroups.get(extra)).toBeDefined();
  });

  test("NLB annotations: TLS on ssl-ports, UDP, eip-allocations, target-group-attributes, Local health checks, proxy protocol v2", async () => {
    const ns = nodes().map((n) => n.id);
    const cert = "arn:aws:acm:us-east-1:123456789012:certificate/tls";
    const eips = [0, 1].map(() => world.fake.createAddress(world.accountId, world.region));
    const o = owner();
    const { p } = await provider();
    const s = spec(
      ns,
      {
        [`${A}type`]: "nlb",
        [`${A}ssl-cert`]: cert,
        [`${A}ssl-ports`]: "443",
        [`${A}eip-allocations`]: eips.join(","),
        [`${A}target-group-attributes`]: "deregistration_delay.timeout_seconds=30",
      },
      {
        listeners: [
          { protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false },
          { protocol: "TCP", port: 443, nodePort: 30443, proxyProtocol: false },
        ],
        healthCheck: {
          ...sampleLoadBalancerSpec([]).healthCheck,
          protocol: "HTTP",
          port: 32000,
          path: "/healthz",
        },
      },
    );
    await settle(() => lbs(p).ensure(o, s));
    const lb = world.fake
      .networkLoadBalancers(world.accountId)
      .find((l) => l.name === awsLoadBalancerName(o.serviceUid));
    expect(lb?.subnets.map((x) => x.allocationId)).toEqual(eips);
    const listeners = world.fake.state.listeners.all(world.accountId).filter((l) => l.lbArn === lb?.id);
    expect(listeners.map((l) => [l.port, l.protocol, l.certificates]).sort()).toEqual([
      [443, "TLS", [cert]],
      [53, "UDP", []],
    ]);
    const groups = listeners.map((l) => world.fake.state.targetGroups.get(l.targetGroupArn));
    for (const g of groups) {
      expect(g?.healthCheck).toMatchObject({ protocol: "HTTP", port: "32000", path: "/healthz" });
      expect(g?.attributes["deregistration_delay.timeout_seconds"]).toBe("30");
      expect(g?.targets.map((t) => t.id).sort()).toEqual([...ns].sort());
    }
    expect(groups.map((g) => [g?.protocol, g?.port]).sort()).toEqual([
      ["TCP", 30443],
      ["UDP", 30053],
    ]);
    // Proxy protocol on: one attribute per target group, nothing recreated.
    const { p: again, ops } = await provider();
    await settle(() =>
      lbs(again).ensure(o, { ...s, listeners: s.listeners.map((l) => ({ ...l, proxyProtocol: true })) }),
    );
    expect(ops.filter((x) => x === "nlb.targetGroup.attributes.modify")).toHaveLength(2);
    expect(ops).not.toContain("nlb.targetGroup.create");
    await settle(() => lbs(p).ensureDeleted(o));
    await expect(
      lbs(p).ensure(owner(), spec(ns, { [`${A}type`]: "nlb", [`${A}eip-allocations`]: eips[0]! })),
    ).rejects.toThrow("1 allocations for 2 subnets");
    await expect(lbs(p).ensure(owner(), spec(ns, { [`${A}type`]: "alb" }))).rejects.toBeInstanceOf(
      CloudError,
    );
  });

  test("listOwned: ours of both kinds with their digests, across pages; upstream's unadopted, foreign and vanished ones left out", async () => {
    const ns = nodes().map((n) => n.id);
    const { p } = await provider();
    const classic = owner();
    const nlb = owner();
    const classicSpec = spec(ns);
    const nlbSpec = spec(ns, { [`${A}type`]: "nlb" });
    await settle(() => lbs(p).ensure(classic, classicSpec));
    await settle(() => lbs(p).ensure(nlb, nlbSpec));
    // More than a page of classic ELBs (400): most foreign by name, 22 named like ours (two
    // DescribeTags batches), one made by cloud-provider-aws and not adopted.
    const elb = new ElasticLoadBalancingClient(sdkConfig());
    const make = (name: string, tags: { Key: string; Value: string }[] = []) =>
      elb.send(
        new ElbCreate({
          LoadBalancerName: name,
          Listeners: [
            { Protocol: "TCP", LoadBalancerPort: 80, InstanceProtocol: "TCP", InstancePort: 30080 },
          ],
          Subnets: [...world.subnets],
          ...(tags.length > 0 && { Tags: tags }),
        }),
      );
    const foreign = Array.from({ length: 380 }, (_, n) => `other-${n}`);
    const lookalikes = Array.from({ length: 22 }, (_, n) => `a${String(n).padStart(31, "f")}`);
    const upstream = awsLoadBalancerName(owner().serviceUid);
    for (let n = 0; n < foreign.length; n += 40)
      await Promise.all(foreign.slice(n, n + 40).map((x) => make(x)));
    await Promise.all(lookalikes.map((x) => make(x)));
    await make(upstream, [{ Key: "kubernetes.io/cluster/blue", Value: "owned" }]);
    // One look-alike goes between its listing and its tags.
    const vanishing = lookalikes[3] ?? "";
    let vanished = false;
    const account = world.binding();
    const { provider: listing, ops } = await bindRecorded(awsProvider, account, account.options, {
      before: async (op) => {
        if (op !== "elb.tags" || vanished) return;
        vanished = true;
        await elb.send(new ElbDelete({ LoadBalancerName: vanishing }));
      },
    });
    const items = [];
    let pages = 0;
    for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
      const page = await lbs(listing).listOwned!(token);
      items.push(...page.items);
      token = page.nextPageToken;
      pages++;
    }
    const mine = items.filter((i) => i.owner.cluster === "blue");
    expect(mine.map((i) => i.owner).sort((a, b) => a.serviceUid.localeCompare(b.serviceUid))).toEqual(
      [classic, nlb].map(lbOwner).sort((a, b) => a.serviceUid.localeCompare(b.serviceUid)),
    );
    for (const [o, sp] of [
      [classic, classicSpec],
      [nlb, nlbSpec],
    ] as const)
      expect(mine.find((i) => i.owner.serviceUid === o.serviceUid)).toMatchObject({
        name: awsLoadBalancerName(o.serviceUid),
        specDigest: loadBalancerSpecDigest(sp),
        backendsDigest: backendsDigest(sp.backends),
        ingress: [{ hostname: expect.stringContaining(awsLoadBalancerName(o.serviceUid)) }],
      });
    // Two classic pages and one NLB page, each one DescribeLoadBalancers through the hub's call path.
    expect(pages).toBe(3);
    expect(ops.filter((o) => o === "elb.list")).toHaveLength(2);
    expect(ops.filter((o) => o === "nlb.list")).toHaveLength(1);
    expect(ops.every((o) => o.endsWith(".list") || o.endsWith(".tags"))).toBe(true);
    // The look-alikes' batch failed on the vanished one and was asked one by one.
    expect(ops.filter((o) => o === "elb.tags").length).toBeGreaterThan(2);
    // The upstream load balancer is adopted only by its own Service's ensure.
    expect(items.map((i) => i.name)).not.toContain(upstream);

    // An unchanged ensure writes no tag; updateBackends records the new backends' digest.
    const { p: again, ops: againOps } = await provider();
    await settle(() => lbs(again).ensure(classic, classicSpec));
    expect(againOps).not.toContain("elb.tag");
    await lbs(again).updateBackends(nlb, [ns[0]!]);
    const page = await lbs(again).listOwned!("nlb:");
    expect(page.items.find((i) => i.owner.serviceUid === nlb.serviceUid)?.backendsDigest).toBe(
      backendsDigest([ns[0]!]),
    );

    for (const name of [...foreign, ...lookalikes.filter((x) => x !== vanishing), upstream])
      await elb.send(new ElbDelete({ LoadBalancerName: name }));
    await settle(() => lbs(p).ensureDeleted(classic));
    await settle(() => lbs(p).ensureDeleted(nlb));
  });

  test("updateBackends on both kinds registers and deregisters, and the node-group rule follows", async () => {
    const ns = nodes().map((n) => n.id);
    const { p } = await provider();
    for (const type of ["classic", "nlb"]) {
      const o = owner();
      await settle(() => lbs(p).ensure(o, spec(ns, type === "nlb" ? { [`${A}type`]: "nlb" } : {})));
      await lbs(p).updateBackends(o, [ns[0]!]);
      expect((await lbs(p).get(o))?.backends).toEqual([ns[0]]);
      await settle(() => lbs(p).ensureDeleted(o));
    }
    // Nothing left referencing deleted groups on the nodes' group.
    const nodeGroup = world.fake.state.securityGroups.get(world.nodeGroup);
    for (const r of nodeGroup?.ingress ?? [])
      expect(world.fake.state.securityGroups.get(r.groupId ?? "")).toBeDefined();
  });

  test.each([
    // ELB/ELBv2 TagValue: at most 256 characters.
    [`${A}additional-resource-tags`, `team=${"v".repeat(64 * 1024)}`],
    // TagKey: at most 128.
    [`${A}additional-resource-tags`, `${"k".repeat(129)}=v`],
    // TargetGroupAttributeKey: [a-zA-Z0-9._], at most 256.
    [`${A}target-group-attributes`, "bad key!=1"],
    // A port is 1..65535.
    [`${A}healthcheck-port`, "99999"],
    [`${A}ssl-cert`, "not-an-arn"],
    [`${A}type`, "alb"],
  ])("%s (case %#): an AnnotationError naming it, before any AWS call", async (key, value) => {
    const ns = nodes().map((n) => n.id);
    const { p, ops } = await provider();
    const annotations = { [key]: value };
    expect(() => lbs(p).checkAnnotations?.(annotations)).toThrow(AnnotationError);
    const err = await lbs(p)
      .ensure(owner(), spec(ns, annotations))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnnotationError);
    expect((err as AnnotationError).annotation).toBe(key);
    expect((err as Error).message.length).toBeLessThan(400);
    expect(ops).toEqual([]);
  });
});

describe("routes", () => {
  test("a blackholed route of the cluster is listed as its own and replaced; source/dest check turned off once", async () => {
    const { p, ops } = await provider();
    const node = world.instance("route-1");
    const gone = world.instance("route-gone");
    world.fake.addRoute(world.routeTable, { cidr: "10.244.9.0/24", instanceId: gone.id });
    world.fake.setInstanceState(gone.id, "terminated");
    const blue = { cluster: "blue", network: world.vpcId, scope: {} };
    const listed = await p.routes!.list(blue);
    expect(listed.find((r) => r.destinationCIDR === "10.244.9.0/24")).toMatchObject({
      targetInstanceID: gone.id,
      ownerCluster: "blue",
    });
    await p.routes!.create(blue, { destinationCIDR: "10.244.9.0/24", targetInstanceID: node.id });
    expect(world.fake.instance(node.id)?.sourceDestCheck).toBe(false);
    await p.routes!.create(blue, { destinationCIDR: "10.244.10.0/24", targetInstanceID: node.id });
    expect(ops.filter((o) => o === "routes.sourceDestCheck.modify")).toHaveLength(1);
    const table = world.fake.state.routeTables.get(world.routeTable);
    expect(
      table?.routes
        .filter((r) => r.instanceId === node.id)
        .map((r) => r.cidr)
        .sort(),
    ).toEqual(["10.244.10.0/24", "10.244.9.0/24"]);
    await expect(
      p.routes!.create(
        { ...blue, cluster: "nobody" },
        { destinationCIDR: "10.244.9.0/24", targetInstanceID: gone.id },
      ),
    ).rejects.toThrow("0 route tables tagged kubernetes.io/cluster/nobody");
    for (const r of (await p.routes!.list(blue)).filter((r) => r.targetInstanceID === node.id))
      await p.routes!.delete(blue, r);
  });
});

describe("the SDK request classes the provider uses are the fake's", () => {
  test("ELB AddTags round-trips through the model", async () => {
    const elb = new ElasticLoadBalancingClient(sdkConfig());
    await expect(
      elb.send(new ElbAddTags({ LoadBalancerNames: ["nobody"], Tags: [{ Key: "k", Value: "v" }] })),
    ).rejects.toMatchObject({
      name: "AccessPointNotFoundException",
      $metadata: { httpStatusCode: 400 },
    });
  });
});
