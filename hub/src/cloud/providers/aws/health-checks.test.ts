// Health checks from cloud-provider-aws's healthcheck-* annotations, through the hub's own parse
// of the Service (the spec the hub hands the provider), against the fake AWS with the SDK:
// upstream's HTTPS and SSL checks, a path that counts only for HTTP(S), an NLB's traffic port.
// Adopted load balancers are built first exactly as upstream builds them for those annotations.

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
import { Service } from "@fleet-ccm/proto";
import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { parseLbAnnotations } from "../../../reconcilers/service/annotations.js";
import { loadBalancerSpec } from "../../../reconcilers/service/predicates.js";
import { settle } from "../../conformance/conformance.testkit.js";
import { CloudError } from "../../errors.js";
import type { CloudProvider, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName } from "./lb-network.js";
import { upstreamTags } from "./upstream.testkit.js";

let world: AwsWorld;
beforeAll(async () => {
  world = await startAwsWorld("blue");
});
afterEach(() => world.fake.spec.assertClean());
afterAll(() => world.fake.close());

let n = 0;
const target = (adopt: boolean): ServiceTarget => ({
  cluster: "blue",
  network: world.vpcId,
  scope: adopt ? { adoptFrom: { vendorCcmClusterName: "blue" } } : {},
  serviceUid: `${String(++n).padStart(8, "0")}-4444-5555-6666-5f0c1a2b3c4d`,
});

const sdk = () => ({
  region: world.region,
  endpoint: world.fake.url,
  credentials: world.keys,
  maxAttempts: 1,
});

async function provider(): Promise<{ p: CloudProvider; ops: string[] }> {
  const account = world.binding();
  const { provider, ops } = await bindRecorded(awsProvider, account, account.options);
  return { p: provider, ops };
}

/** The Service default/web (port 443 on nodePort 30443), parsed and specified as the hub does. */
function service(annotations: Record<string, string>, o: Partial<Service> = {}) {
  const svc = Service.fromPartial({
    namespace: "default",
    name: "web",
    annotations,
    ports: [{ name: "https", protocol: "TCP", port: 443, nodePort: 30443 }],
    ...o,
  });
  const backends = [world.instance(`hc-${++n}`).id];
  const spec = loadBalancerSpec(svc, parseLbAnnotations(annotations, awsProvider.lbSettings), backends);
  return { spec, hints: { annotations, ingress: [] } };
}

async function ensure(p: CloudProvider, o: ServiceTarget, svc: ReturnType<typeof service>) {
  return settle(() => p.loadBalancers!.ensure(o, svc.spec, undefined, svc.hints));
}

const classicCheck = (name: string) =>
  world.fake.classicLoadBalancers(world.accountId).find((l) => l.id.endsWith(`/${name}`))?.healthCheck;

/** Upstream's classic ELB for the Service (TCP 443 → 30443) with the health check it configured. */
async function upstreamElb(name: string, healthTarget: string): Promise<void> {
  const elb = new ElasticLoadBalancingClient(sdk());
  await elb.send(
    new ElbCreate({
      LoadBalancerName: name,
      Listeners: [{ Protocol: "TCP", LoadBalancerPort: 443, InstanceProtocol: "TCP", InstancePort: 30443 }],
      Subnets: [...world.subnets],
      Tags: upstreamTags("blue", "default/web"),
    }),
  );
  await elb.send(
    new ConfigureHealthCheckCommand({
      LoadBalancerName: name,
      HealthCheck: {
        Target: healthTarget,
        Interval: 10,
        Timeout: 5,
        HealthyThreshold: 2,
        UnhealthyThreshold: 6,
      },
    }),
  );
}

/** Upstream's NLB for the Service without security groups, its target group checked as given. */
async function upstreamNlb(
  name: string,
  health: { HealthCheckProtocol: "TCP" | "HTTP" | "HTTPS"; HealthCheckPath?: string },
): Promise<string> {
  const v2 = new ElasticLoadBalancingV2Client(sdk());
  const tags = upstreamTags("blue", "default/web");
  const lb = (
    await v2.send(new NlbCreate({ Name: name, Type: "network", Subnets: [...world.subnets], Tags: tags }))
  ).LoadBalancers?.[0];
  const tg = (
    await v2.send(
      new CreateTargetGroupCommand({
        Name: `k8s-default-web-${name.slice(1, 11)}`,
        Protocol: "TCP",
        Port: 30443,
        VpcId: world.vpcId,
        TargetType: "instance",
        ...health,
        HealthCheckPort: "traffic-port",
        HealthCheckIntervalSeconds: 30,
        HealthCheckTimeoutSeconds: 10,
        HealthyThresholdCount: 3,
        UnhealthyThresholdCount: 3,
        Tags: tags,
      }),
    )
  ).TargetGroups?.[0];
  await v2.send(
    new CreateListenerCommand({
      LoadBalancerArn: lb?.LoadBalancerArn,
      Port: 443,
      Protocol: "TCP",
      DefaultActions: [{ Type: "forward", TargetGroupArn: tg?.TargetGroupArn }],
    }),
  );
  return tg?.TargetGroupArn ?? "";
}

describe("healthcheck-protocol HTTPS and SSL", () => {
  test("a classic ELB upstream checks by HTTPS (or SSL) keeps its check on adoption; a new one gets it", async () => {
    const https = { [`${A}healthcheck-protocol`]: "HTTPS", [`${A}healthcheck-path`]: "/ready" };
    const ssl = { [`${A}healthcheck-protocol`]: "SSL", [`${A}healthcheck-path`]: "/ready" };
    for (const [annotations, upstreamTarget] of [
      [https, "HTTPS:30443/ready"],
      [ssl, "SSL:30443"],
    ] as const) {
      const adopted = target(true);
      await upstreamElb(awsLoadBalancerName(adopted.serviceUid), upstreamTarget);
      const { p, ops } = await provider();
      await ensure(p, adopted, service(annotations));
      expect(ops).not.toContain("elb.healthCheck.configure");
      expect(classicCheck(awsLoadBalancerName(adopted.serviceUid))?.target).toBe(upstreamTarget);
      const fresh = target(false);
      await ensure(p, fresh, service(annotations));
      expect(classicCheck(awsLoadBalancerName(fresh.serviceUid))).toMatchObject({
        target: upstreamTarget,
        interval: 10,
        timeout: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 6,
      });
      for (const o of [adopted, fresh]) await settle(() => p.loadBalancers!.ensureDeleted(o));
    }
  });

  test("a classic ELB behind backend-protocol ssl keeps upstream's default SSL check", async () => {
    const o = target(true);
    await upstreamElb(awsLoadBalancerName(o.serviceUid), "SSL:30443");
    const { p, ops } = await provider();
    await ensure(p, o, service({ [`${A}backend-protocol`]: "ssl" }));
    expect(ops).not.toContain("elb.healthCheck.configure");
    expect(classicCheck(awsLoadBalancerName(o.serviceUid))?.target).toBe("SSL:30443");
    await settle(() => p.loadBalancers!.ensureDeleted(o));
  });

  test("an NLB target group upstream checks by HTTPS keeps its check on adoption; a new one gets it; SSL is refused", async () => {
    const annotations = {
      [`${A}type`]: "nlb",
      [`${A}healthcheck-protocol`]: "HTTPS",
      [`${A}healthcheck-path`]: "/ready",
    };
    const adopted = target(true);
    const tg = await upstreamNlb(awsLoadBalancerName(adopted.serviceUid), {
      HealthCheckProtocol: "HTTPS",
      HealthCheckPath: "/ready",
    });
    const { p, ops } = await provider();
    await ensure(p, adopted, service(annotations));
    expect(ops).not.toContain("nlb.targetGroup.modify");
    expect(ops).not.toContain("nlb.targetGroup.create");
    expect(world.fake.state.targetGroups.get(tg)?.healthCheck).toMatchObject({
      protocol: "HTTPS",
      port: "traffic-port",
      path: "/ready",
    });
    const fresh = target(false);
    await ensure(p, fresh, service(annotations));
    const made = world.fake.state.targetGroups
      .all(world.accountId)
      .find((t) => t.tags["kubernetes.io/service-name"] === "default/web" && t.id !== tg);
    expect(made?.healthCheck).toMatchObject({ protocol: "HTTPS", port: "traffic-port", path: "/ready" });
    // Upstream's buildNLBHealthCheckConfiguration refuses SSL: so does fleet-ccm, before any write.
    const mark = world.fake.log.mark();
    await expect(
      p.loadBalancers!.ensure(
        target(false),
        service({ ...annotations, [`${A}healthcheck-protocol`]: "SSL" }).spec,
      ),
    ).rejects.toBeInstanceOf(CloudError);
    const writes = world.fake.log
      .requests({ account: world.accountId, afterSeq: mark })
      .filter((r) => !/\.Describe/.test(r.operation));
    expect(writes).toEqual([]);
    for (const o of [adopted, fresh]) await settle(() => p.loadBalancers!.ensureDeleted(o));
  });
});

describe("healthcheck-path and the NLB's health-check port", () => {
  test("a path without an HTTP(S) protocol leaves a classic ELB's TCP check as upstream made it", async () => {
    const o = target(true);
    await upstreamElb(awsLoadBalancerName(o.serviceUid), "TCP:30443");
    const { p, ops } = await provider();
    await ensure(p, o, service({ [`${A}healthcheck-path`]: "/ready" }));
    expect(ops).not.toContain("elb.healthCheck.configure");
    expect(classicCheck(awsLoadBalancerName(o.serviceUid))?.target).toBe("TCP:30443");
    // With HTTP, the path counts (upstream's HTTP:<port><path>).
    await ensure(p, o, service({ [`${A}healthcheck-path`]: "/ready", [`${A}healthcheck-protocol`]: "HTTP" }));
    expect(classicCheck(awsLoadBalancerName(o.serviceUid))?.target).toBe("HTTP:30443/ready");
    await settle(() => p.loadBalancers!.ensureDeleted(o));
  });

  test("an NLB's HTTP check (not Local) is on each target group's traffic port, as upstream's", async () => {
    const annotations = { [`${A}type`]: "nlb", [`${A}healthcheck-protocol`]: "HTTP" };
    const adopted = target(true);
    const tg = await upstreamNlb(awsLoadBalancerName(adopted.serviceUid), {
      HealthCheckProtocol: "HTTP",
      HealthCheckPath: "/",
    });
    const { p, ops } = await provider();
    await ensure(p, adopted, service(annotations));
    expect(ops).not.toContain("nlb.targetGroup.modify");
    expect(world.fake.state.targetGroups.get(tg)?.healthCheck).toMatchObject({ port: "traffic-port" });
    const fresh = target(false);
    const ports = [
      { name: "http", protocol: "TCP", port: 80, nodePort: 30080 },
      { name: "https", protocol: "TCP", port: 443, nodePort: 30443 },
    ];
    await ensure(p, fresh, service(annotations, { ports }));
    const made = world.fake.state.targetGroups
      .all(world.accountId)
      .filter((t) => t.tags["kubernetes.io/service-name"] === "default/web" && t.id !== tg);
    expect(made.map((t) => [t.port, t.healthCheck.protocol, t.healthCheck.port]).sort()).toEqual([
      [30080, "HTTP", "traffic-port"],
      [30443, "HTTP", "traffic-port"],
    ]);
    for (const o of [adopted, fresh]) await settle(() => p.loadBalancers!.ensureDeleted(o));
  });
});
