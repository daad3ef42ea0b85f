import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import {
  type ConformanceFixture,
  describeProviderConformance,
  type VendorMode,
} from "../../conformance/conformance.testkit.js";
import type { LbOwner, LoadBalancerSpec } from "../../provider.js";
import { AWS_ANNOTATION_PREFIX, awsProvider } from "./index.js";
import { awsLoadBalancerName } from "./lb-network.js";
import { NLB_CLIENT_RULE, NLB_HEALTH_RULE } from "./nlb-node-rules.js";
import { clusterTagKey } from "./tags.js";
import {
  type UpstreamService,
  upstreamClassicElb,
  upstreamNlb,
  upstreamNlbGroup,
  upstreamNlbNodeRules,
} from "./upstream.testkit.js";
import { EBS_CSI_DRIVER } from "./volumes.js";

/** cloud-provider-aws's ways of building a Service's load balancer, every fixture adopting each. */
const VENDOR_MODES = ["classic ELB", "NLB, no security groups", "NLB, managed security group"] as const;

/** One ingress rule of the fake's security groups, as far as exposure reads it. */
interface IngressRule {
  readonly protocol: string;
  readonly fromPort?: number;
  readonly toPort?: number;
  readonly cidr?: string;
  readonly cidrIpv6?: string;
}

/**
 * What one rule lets in on `ports`, as "<port> <CIDR>": a TCP/UDP (or all-protocol) rule from a
 * CIDR on each of the ports its range covers; an ICMP rule from a CIDR as "icmp:<type>-<code>
 * <CIDR>" (path-MTU messages reach the load balancer too). A rule from a group admits that
 * group's members, no address range: what reaches them is counted through that group's own
 * rules (the load balancer's), so it adds no entry.
 */
function admitted(rule: IngressRule, ports: readonly number[]): string[] {
  const cidr = rule.cidr ?? rule.cidrIpv6;
  if (cidr === undefined) return [];
  if (
    rule.protocol === "icmp" ||
    rule.protocol === "icmpv6" ||
    rule.protocol === "1" ||
    rule.protocol === "58"
  )
    return [`icmp:${rule.fromPort ?? ""}-${rule.toPort ?? ""} ${cidr}`];
  const all = rule.protocol === "-1";
  return ports
    .filter((p) => all || ((rule.fromPort ?? 0) <= p && p <= (rule.toPort ?? 65535)))
    .map((p) => `${p} ${cidr}`);
}

/**
 * What the cloud lets reach a Service's load balancer now, from the fake's truth. A classic
 * ELB, or an NLB with security groups, admits on its listener ports what its groups' rules admit
 * (the load balancer's groups, while it exists: a group attached to nothing admits nothing). An
 * NLB without groups filters nothing itself: clients reach the nodes' nodePorts directly (client
 * IPs preserved), so what admits them is the node groups' rules naming it (upstream's client and
 * health rules, on the nodePorts and health ports), and those admit traffic whether the NLB is
 * still there or not. The path-MTU rules name no load balancer (shared by all NLBs of a group)
 * and are not counted.
 */
function exposureOf(world: AwsWorld, name: string): string[] {
  const { fake, accountId } = world;
  const groups = (ids: readonly string[]) =>
    ids.flatMap((id) => {
      const g = fake.state.securityGroups.get(id);
      return g === undefined ? [] : [g];
    });
  const out: string[] = [];
  const classic = fake.classicLoadBalancers(accountId).find((lb) => lb.id.endsWith(`/${name}`));
  if (classic !== undefined) {
    const ports = classic.listeners.map((l) => l.port);
    for (const g of groups(classic.securityGroups))
      for (const r of g.ingress) out.push(...admitted(r, ports));
  }
  const nlb = fake.networkLoadBalancers(accountId).find((lb) => lb.name === name);
  if (nlb !== undefined) {
    const ports = fake.state.listeners
      .all(accountId)
      .filter((l) => l.lbArn === nlb.id)
      .map((l) => l.port);
    for (const g of groups(nlb.securityGroups)) for (const r of g.ingress) out.push(...admitted(r, ports));
  }
  const named = new Set([`${NLB_CLIENT_RULE}=${name}`, `${NLB_HEALTH_RULE}=${name}`]);
  for (const g of fake.state.securityGroups.all(accountId))
    for (const r of g.ingress)
      if (named.has(r.description ?? "") && r.fromPort !== undefined) out.push(...admitted(r, [r.fromPort]));
  return [...new Set(out)].sort();
}

/** cloud-provider-aws's modes, built through the SDK as it builds them (upstream.testkit.ts). */
function vendorModes(world: AwsWorld): VendorMode[] {
  const service = (owner: LbOwner, spec: LoadBalancerSpec, cluster: string): UpstreamService => ({
    cluster,
    serviceName: `default/svc-${owner.serviceUid}`,
    ports: spec.listeners.map((l) => ({ port: l.port, nodePort: l.nodePort })),
    nodes: spec.backends,
  });
  const nlbAnnotations = { [`${AWS_ANNOTATION_PREFIX}type`]: "nlb" };
  // Upstream admits NLB health checks from the load balancer's subnets.
  const healthRanges = world.subnets.flatMap((id) => {
    const cidr = world.fake.state.subnets.get(id)?.cidr;
    return cidr === undefined ? [] : [cidr];
  });
  return [
    {
      mode: "classic ELB",
      async build(owner, spec, cluster) {
        const name = awsLoadBalancerName(owner.serviceUid);
        const dnsName = await upstreamClassicElb(world, name, service(owner, spec, cluster));
        return { ingress: [{ hostname: dnsName }], exposure: () => exposureOf(world, name) };
      },
    },
    {
      mode: "NLB, no security groups",
      async build(owner, spec, cluster) {
        const name = awsLoadBalancerName(owner.serviceUid);
        const svc = service(owner, spec, cluster);
        const { dnsName } = await upstreamNlb(world, name, svc, undefined);
        await upstreamNlbNodeRules(world, name, svc);
        return {
          ingress: [{ hostname: dnsName }],
          annotations: nlbAnnotations,
          exposure: () => exposureOf(world, name),
          healthRanges,
        };
      },
    },
    {
      mode: "NLB, managed security group",
      async build(owner, spec, cluster) {
        const name = awsLoadBalancerName(owner.serviceUid);
        const svc = service(owner, spec, cluster);
        const group = await upstreamNlbGroup(world, name, svc);
        const { dnsName } = await upstreamNlb(world, name, svc, [group]);
        // Upstream writes its node-group rules in this mode too.
        await upstreamNlbNodeRules(world, name, svc);
        return {
          ingress: [{ hostname: dnsName }],
          annotations: nlbAnnotations,
          exposure: () => exposureOf(world, name),
          healthRanges,
        };
      },
    },
  ];
}

/** A second VPC of the account: its subnets, nodes' group and route table tagged for a cluster as upstream wants them. */
function otherNetwork(world: AwsWorld) {
  const { fake, accountId, region } = world;
  const vpcId = fake.createVpc(accountId, region, { cidr: "10.8.0.0/16" });
  const subnets: string[] = [];
  let group = "";
  return {
    network: vpcId,
    prepareCluster(cluster: string) {
      for (const n of [0, 1])
        subnets.push(
          fake.createSubnet(accountId, region, {
            vpcId,
            az: `${region}${"ab"[n]}`,
            cidr: `10.8.${n}.0/24`,
            tags: { "kubernetes.io/role/elb": "1", [clusterTagKey(cluster)]: "shared" },
          }),
        );
      group = fake.createSecurityGroup(accountId, region, {
        vpcId,
        name: `${cluster}-nodes`,
        tags: { [clusterTagKey(cluster)]: "owned" },
      });
      fake.createRouteTable(accountId, region, {
        vpcId,
        tags: { [clusterTagKey(cluster)]: "owned" },
        subnetIds: subnets,
      });
    },
    createInstance(name: string) {
      const i = fake.createInstance(accountId, region, subnets[0]!, {
        privateDnsName: name,
        securityGroupIds: [group],
      });
      return { instanceID: i.id, providerID: `aws:///${i.az}/${i.id}` };
    },
  };
}

function fixture(
  options: Record<string, unknown> = {},
  fakeOptions: { nlbProvisioningMs?: number; eniLingerMs?: number } = {},
): ConformanceFixture {
  return {
    vendorModes: VENDOR_MODES,
    async start() {
      const world = await startAwsWorld("conf");
      world.fake.nlbProvisioningMs = fakeOptions.nlbProvisioningMs ?? 0;
      world.fake.eniLingerMs = fakeOptions.eniLingerMs ?? 0;
      const { fake } = world;
      return {
        factory: awsProvider,
        account: () => world.binding(),
        options: { ...world.binding().options, ...options },
        isMutation: (op) =>
          /\.(create|delete|modify|configure|register|deregister|authorize|revoke|tag|apply)$/.test(op),
        createInstance: ({ name, inScope }) => {
          const i = world.instance(name, { inScope });
          return { instanceID: i.id, providerID: `aws:///${i.az}/${i.id}` };
        },
        terminateInstance: (id) => fake.setInstanceState(id, "terminated"),
        disks: {
          zonal: true,
          create: ({ sizeGiB, inScope, ownerCluster, attachedTo }) => {
            const az = inScope ? `${world.region}a` : `${world.otherRegion.region}a`;
            const v = fake.createVolume(world.accountId, az, {
              sizeGiB,
              ...(attachedTo !== undefined && { attachedTo }),
              ...(ownerCluster !== undefined && {
                tags: { [`kubernetes.io/cluster/${ownerCluster}`]: "owned" },
              }),
            });
            return { id: v.id, source: "csi", csiDriver: EBS_CSI_DRIVER, handle: v.id };
          },
          missing: () => ({
            id: `vol-${"f".repeat(17)}`,
            source: "awsElasticBlockStore",
            csiDriver: "",
            handle: `aws://${world.region}a/vol-${"f".repeat(17)}`,
          }),
        },
        missingProviderID: () => `aws:///${world.region}a/i-${"f".repeat(17)}`,
        instancePageSize: 50,
        // DescribeLoadBalancers (400 a page), then DescribeTags by 20.
        listOwnedReadsPerPage: 21,
        throttle: (seconds) =>
          fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, world.accountId),
        failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, world.accountId),
        clearFaults: () => fake.faults.reset(),
        resources: () => world.resources(),
        backendPorts: (o) => {
          const name = awsLoadBalancerName(o.serviceUid);
          const classic = fake.classicLoadBalancers(world.accountId).find((lb) => lb.id.endsWith(`/${name}`));
          const nlb = fake.networkLoadBalancers(world.accountId).find((lb) => lb.name === name);
          const groups = new Set(
            fake.state.listeners
              .all(world.accountId)
              .filter((l) => l.lbArn === nlb?.id)
              .map((l) => l.targetGroupArn),
          );
          const ports = [
            ...(classic !== undefined && classic.instances.length > 0
              ? classic.listeners.map((l) => l.instancePort)
              : []),
            ...fake.state.targetGroups
              .all(world.accountId)
              .filter((tg) => groups.has(tg.id) && tg.targets.length > 0)
              .map((tg) => tg.port),
          ];
          return [...new Set(ports)].sort((a, b) => a - b);
        },
        otherNetwork: otherNetwork(world),
        // NLBs provision asynchronously; a classic ELB is ready at once.
        ...(options["defaultLoadBalancerType"] === "nlb" && {
          failNextCreates: (n: number) => fake.failNextNlbCreates(n),
        }),
        vendorModes: vendorModes(world),
        createForeignRoute: (cidr) =>
          fake.addRoute(world.routeTable, { cidr, gatewayId: "igw-0a1b2c3d4e5f60718" }),
        close: async () => {
          fake.spec.assertClean();
          await fake.close();
        },
      };
    },
  };
}

describeProviderConformance("aws (classic ELB)", fixture());
describeProviderConformance("aws (NLB)", fixture({ defaultLoadBalancerType: "nlb" }));
describeProviderConformance(
  "aws (NLB provisioning, security groups held after delete)",
  fixture({ defaultLoadBalancerType: "nlb" }, { nlbProvisioningMs: 400, eniLingerMs: 200 }),
  { inProgress: true },
);
