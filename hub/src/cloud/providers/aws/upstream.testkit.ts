// Load balancers built exactly as cloud-provider-aws builds them, through the AWS SDK against an
// AWS endpoint (the fake), for the tests that adopt them: its classic ELB (with its k8s-elb-<name>
// group and the node-group rule admitting it), its NLB without security groups (its default
// mode: client, health and path-MTU rules on the node group) and its NLB with a managed security
// group. Hub code, testkits included, never imports the simulators: the world is structural.
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DescribeSubnetsCommand,
  EC2Client,
  type IpPermission,
} from "@aws-sdk/client-ec2";
import {
  ConfigureHealthCheckCommand,
  ElasticLoadBalancingClient,
  CreateLoadBalancerCommand as ElbCreate,
  RegisterInstancesWithLoadBalancerCommand,
} from "@aws-sdk/client-elastic-load-balancing";
import {
  CreateListenerCommand,
  CreateTargetGroupCommand,
  ElasticLoadBalancingV2Client,
  CreateLoadBalancerCommand as NlbCreate,
  RegisterTargetsCommand,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { securityGroupName } from "./lb-network.js";
import { NLB_MTU_RULE } from "./nlb-node-rules.js";
import { clusterTagKey, OWNED, SERVICE_NAME_TAG } from "./tags.js";

/** What the builders need of an AWS account set up for a cluster (the fake's AwsWorld has it). */
export interface UpstreamWorld {
  readonly region: string;
  readonly vpcId: string;
  readonly subnets: readonly string[];
  /** The nodes' security group, where upstream writes its node rules. */
  readonly nodeGroup: string;
  readonly keys: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly fake: { readonly url: string };
}

/** One Service port as upstream sees it: the listener port and the nodePort behind it. */
export interface UpstreamPort {
  readonly port: number;
  readonly nodePort: number;
}

/** What upstream is told for the Service: its cluster (--cluster-name), name, ports and nodes. */
export interface UpstreamService {
  readonly cluster: string;
  /** namespace/name (kubernetes.io/service-name). */
  readonly serviceName: string;
  readonly ports: readonly UpstreamPort[];
  readonly nodes: readonly string[];
  /** Its loadBalancerSourceRanges; none: 0.0.0.0/0, as upstream opens it. */
  readonly sourceRanges?: readonly string[];
}

const sdk = (w: UpstreamWorld) => ({
  region: w.region,
  endpoint: w.fake.url,
  credentials: { accessKeyId: w.keys.accessKeyId, secretAccessKey: w.keys.secretAccessKey },
  maxAttempts: 1,
});

/** Upstream's tags on what it makes for a Service. */
export function upstreamTags(cluster: string, serviceName: string): { Key: string; Value: string }[] {
  return [
    { Key: clusterTagKey(cluster), Value: OWNED },
    { Key: SERVICE_NAME_TAG, Value: serviceName },
  ];
}

export const nlbClientRule = (lb: string) => `kubernetes.io/rule/nlb/client=${lb}`;
export const nlbHealthRule = (lb: string) => `kubernetes.io/rule/nlb/health=${lb}`;

export const tcpFrom = (port: number, cidr: string, description?: string): IpPermission => ({
  IpProtocol: "tcp",
  FromPort: port,
  ToPort: port,
  IpRanges: [{ CidrIp: cidr, ...(description !== undefined && { Description: description }) }],
});

/** ICMP "fragmentation needed" from `cidr`, upstream's path-MTU rule. */
export const fragNeededFrom = (cidr: string, description?: string): IpPermission => ({
  IpProtocol: "icmp",
  FromPort: 3,
  ToPort: 4,
  IpRanges: [{ CidrIp: cidr, ...(description !== undefined && { Description: description }) }],
});

const rangesOf = (svc: UpstreamService) =>
  svc.sourceRanges !== undefined && svc.sourceRanges.length > 0 ? svc.sourceRanges : ["0.0.0.0/0"];

/**
 * Upstream's classic ELB (its default): the group k8s-elb-<name> tagged for the cluster, open to
 * the source ranges on the listener ports (and ICMP fragmentation-needed), the ELB with a TCP
 * listener per port in the VPC's subnets, its default health check (TCP on the first nodePort,
 * 10/5/2/6), the nodes registered, and the node group admitting the ELB's group. Its DNS name.
 */
export async function upstreamClassicElb(
  w: UpstreamWorld,
  name: string,
  svc: UpstreamService,
): Promise<string> {
  const ec2 = new EC2Client(sdk(w));
  const tags = upstreamTags(svc.cluster, svc.serviceName);
  const group = await ec2.send(
    new CreateSecurityGroupCommand({
      GroupName: securityGroupName(name),
      Description: `Security group for Kubernetes ELB ${name} (${svc.serviceName})`,
      VpcId: w.vpcId,
      TagSpecifications: [{ ResourceType: "security-group", Tags: tags.slice(0, 1) }],
    }),
  );
  const groupId = group.GroupId ?? "";
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: groupId,
      IpPermissions: rangesOf(svc).flatMap((cidr) => [
        ...svc.ports.map((p) => tcpFrom(p.port, cidr)),
        fragNeededFrom(cidr),
      ]),
    }),
  );
  const elb = new ElasticLoadBalancingClient(sdk(w));
  const made = await elb.send(
    new ElbCreate({
      LoadBalancerName: name,
      Listeners: svc.ports.map((p) => ({
        Protocol: "TCP",
        LoadBalancerPort: p.port,
        InstanceProtocol: "TCP",
        InstancePort: p.nodePort,
      })),
      Subnets: [...w.subnets],
      SecurityGroups: [groupId],
      Tags: tags,
    }),
  );
  await elb.send(
    new ConfigureHealthCheckCommand({
      LoadBalancerName: name,
      HealthCheck: {
        Target: `TCP:${svc.ports[0]?.nodePort ?? 0}`,
        Interval: 10,
        Timeout: 5,
        HealthyThreshold: 2,
        UnhealthyThreshold: 6,
      },
    }),
  );
  if (svc.nodes.length > 0)
    await elb.send(
      new RegisterInstancesWithLoadBalancerCommand({
        LoadBalancerName: name,
        Instances: svc.nodes.map((InstanceId) => ({ InstanceId })),
      }),
    );
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: w.nodeGroup,
      IpPermissions: [{ IpProtocol: "-1", UserIdGroupPairs: [{ GroupId: groupId }] }],
    }),
  );
  return made.DNSName ?? "";
}

/**
 * Upstream's NLB: a target group per port on its nodePort (upstream's k8s-<ns>-<name>-<hash>
 * names, health checks on the traffic port, 30/10/3/3; `healthCheckPort` for
 * externalTrafficPolicy Local), the nodes registered, a TCP listener forwarding to it; `groups`
 * on the load balancer (none: its default mode). Its ARN and DNS name.
 */
export async function upstreamNlb(
  w: UpstreamWorld,
  name: string,
  svc: UpstreamService,
  groups: readonly string[] | undefined,
  healthCheckPort?: number,
): Promise<{ arn: string; dnsName: string }> {
  const v2 = new ElasticLoadBalancingV2Client(sdk(w));
  const tags = upstreamTags(svc.cluster, svc.serviceName);
  const lb = (
    await v2.send(
      new NlbCreate({
        Name: name,
        Type: "network",
        Subnets: [...w.subnets],
        Tags: tags,
        ...(groups !== undefined && { SecurityGroups: [...groups] }),
      }),
    )
  ).LoadBalancers?.[0];
  const short = svc.serviceName.replace(/[^a-z0-9]/gi, "").slice(0, 16);
  for (const p of svc.ports) {
    const tg = (
      await v2.send(
        new CreateTargetGroupCommand({
          Name: `k8s-${short}-${p.nodePort}${name.slice(1, 7)}`.slice(0, 32),
          Protocol: "TCP",
          Port: p.nodePort,
          VpcId: w.vpcId,
          TargetType: "instance",
          HealthCheckProtocol: "TCP",
          HealthCheckPort: healthCheckPort === undefined ? "traffic-port" : String(healthCheckPort),
          HealthCheckIntervalSeconds: 30,
          HealthCheckTimeoutSeconds: 10,
          HealthyThresholdCount: 3,
          UnhealthyThresholdCount: 3,
          Tags: tags,
        }),
      )
    ).TargetGroups?.[0];
    if (svc.nodes.length > 0)
      await v2.send(
        new RegisterTargetsCommand({
          TargetGroupArn: tg?.TargetGroupArn,
          Targets: svc.nodes.map((Id) => ({ Id })),
        }),
      );
    await v2.send(
      new CreateListenerCommand({
        LoadBalancerArn: lb?.LoadBalancerArn,
        Port: p.port,
        Protocol: "TCP",
        DefaultActions: [{ Type: "forward", TargetGroupArn: tg?.TargetGroupArn }],
      }),
    );
  }
  return { arn: lb?.LoadBalancerArn ?? "", dnsName: lb?.DNSName ?? "" };
}

/**
 * Upstream's updateInstanceSecurityGroupsForNLB on the node group: client rules from the source
 * ranges on each nodePort, health rules from the subnets' CIDRs on the health-check port (left
 * out where a client rule from 0.0.0.0/0 covers it), the path-MTU rule from each client range.
 */
export async function upstreamNlbNodeRules(
  w: UpstreamWorld,
  name: string,
  svc: UpstreamService,
  healthCheckPort?: number,
): Promise<void> {
  const ec2 = new EC2Client(sdk(w));
  const ranges = rangesOf(svc);
  const subnets = await ec2.send(new DescribeSubnetsCommand({ SubnetIds: [...w.subnets] }));
  const subnetCidrs = (subnets.Subnets ?? []).flatMap((s) => (s.CidrBlock ? [s.CidrBlock] : []));
  const healthPorts = [...new Set(svc.ports.map((p) => healthCheckPort ?? p.nodePort))];
  const openPorts = new Set(ranges.includes("0.0.0.0/0") ? svc.ports.map((p) => p.nodePort) : []);
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: w.nodeGroup,
      IpPermissions: [
        ...svc.ports.flatMap((p) => ranges.map((cidr) => tcpFrom(p.nodePort, cidr, nlbClientRule(name)))),
        ...healthPorts
          .filter((port) => !openPorts.has(port))
          .flatMap((port) => subnetCidrs.map((cidr) => tcpFrom(port, cidr, nlbHealthRule(name)))),
        ...ranges.map((cidr) => fragNeededFrom(cidr, NLB_MTU_RULE)),
      ],
    }),
  );
}

/**
 * Upstream's managed NLB group (k8s-<ns>-<name>-<hash>, tagged for the cluster): the listener
 * ports from the source ranges. Its id.
 */
export async function upstreamNlbGroup(
  w: UpstreamWorld,
  name: string,
  svc: UpstreamService,
): Promise<string> {
  const ec2 = new EC2Client(sdk(w));
  const short = svc.serviceName.replace(/[^a-z0-9]/gi, "").slice(0, 16);
  const group = await ec2.send(
    new CreateSecurityGroupCommand({
      GroupName: `k8s-${short}-${name.slice(1, 11)}`,
      Description: "[k8s] Managed SecurityGroup for LoadBalancer",
      VpcId: w.vpcId,
      TagSpecifications: [
        { ResourceType: "security-group", Tags: upstreamTags(svc.cluster, svc.serviceName).slice(0, 1) },
      ],
    }),
  );
  await ec2.send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: group.GroupId,
      IpPermissions: rangesOf(svc).flatMap((cidr) => svc.ports.map((p) => tcpFrom(p.port, cidr))),
    }),
  );
  return group.GroupId ?? "";
}
