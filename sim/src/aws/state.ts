/**
 * The fake AWS's truth: accounts, keys and roles, and per account and region the EC2 and
 * load-balancer tables. Handlers (ec2.ts, elb.ts, elbv2.ts) apply AWS's rules around them.
 */
import { FakeError, ResourceTable, type TableItem } from "../fake-kit/index.js";

export type InstanceStateName =
  | "pending"
  | "running"
  | "shutting-down"
  | "terminated"
  | "stopping"
  | "stopped";

export const STATE_CODES: Readonly<Record<InstanceStateName, number>> = {
  pending: 0,
  running: 16,
  "shutting-down": 32,
  terminated: 48,
  stopping: 64,
  stopped: 80,
};

export interface Regional extends TableItem {
  /** The owning AWS account id. */
  readonly account: string;
  readonly region: string;
}

export interface Ec2Instance extends Regional {
  readonly state: InstanceStateName;
  readonly type: string;
  readonly imageId: string;
  readonly architecture: "x86_64" | "arm64";
  readonly az: string;
  readonly vpcId: string;
  readonly subnetId: string;
  readonly privateIp: string;
  readonly privateDns: string;
  readonly publicIp?: string;
  readonly publicDns?: string;
  readonly securityGroupIds: readonly string[];
  readonly sourceDestCheck: boolean;
  readonly launchTime: Date;
}

/** An EBS volume: in one Availability Zone, attached to at most one instance here. */
export interface EbsVolume extends Regional {
  readonly az: string;
  readonly sizeGiB: number;
  readonly state: "creating" | "available" | "in-use" | "deleting" | "deleted" | "error";
  readonly volumeType: string;
  readonly attachedTo?: { readonly instanceId: string; readonly device: string; readonly at: Date };
  readonly createdAt: Date;
}

export interface Vpc extends Regional {
  readonly cidr: string;
}

/** An Elastic IP allocation; associated while an instance or interface (an NLB's, say) holds it. */
export interface ElasticIp extends Regional {
  readonly publicIp: string;
  readonly associationId?: string;
}

export interface Subnet extends Regional {
  readonly vpcId: string;
  readonly az: string;
  readonly cidr: string;
}

/**
 * One ingress rule as EC2 stores it: a protocol (tcp, udp, icmp, icmpv6 by name, else a number
 * or -1) and port range (for icmp and icmpv6: the type and code) from one IPv4 CIDR, one IPv6
 * CIDR or one group; the description is the rule's note, not part of what identifies it.
 */
export interface IngressRule {
  readonly protocol: string;
  readonly fromPort?: number;
  readonly toPort?: number;
  readonly cidr?: string;
  readonly cidrIpv6?: string;
  readonly groupId?: string;
  readonly description?: string;
}

export interface SecurityGroup extends Regional {
  readonly vpcId: string;
  readonly name: string;
  readonly description: string;
  readonly ingress: readonly IngressRule[];
}

export interface Ec2Route {
  readonly cidr: string;
  readonly instanceId?: string;
  readonly gatewayId?: string;
  readonly origin: "CreateRouteTable" | "CreateRoute";
}

export interface RouteTable extends Regional {
  readonly vpcId: string;
  readonly routes: readonly Ec2Route[];
  /** The VPC's main route table (the one every subnet without its own association uses). */
  readonly main: boolean;
  /** Subnets explicitly associated with it. */
  readonly subnetIds: readonly string[];
}

export interface ClassicListener {
  readonly protocol: string;
  readonly port: number;
  readonly instanceProtocol: string;
  readonly instancePort: number;
  readonly certificateId?: string;
}

export interface ClassicHealthCheck {
  readonly target: string;
  readonly interval: number;
  readonly timeout: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

export interface ClassicLb extends Regional {
  /** id = name: classic load balancers are named, not numbered. */
  readonly dnsName: string;
  readonly scheme: "internet-facing" | "internal";
  readonly vpcId: string;
  readonly subnets: readonly string[];
  readonly availabilityZones: readonly string[];
  readonly securityGroups: readonly string[];
  readonly listeners: readonly ClassicListener[];
  readonly healthCheck: ClassicHealthCheck;
  readonly instances: readonly string[];
  readonly idleTimeout: number;
  readonly crossZone: boolean;
  readonly createdAt: Date;
  readonly policies: Readonly<
    Record<string, { readonly type: string; readonly attributes: Record<string, string> }>
  >;
  /** Backend instance port → policy names (proxy protocol). */
  readonly backendPolicies: Readonly<Record<string, readonly string[]>>;
  /** Load balancer port → policy names (SSL negotiation). */
  readonly listenerPolicies: Readonly<Record<string, readonly string[]>>;
}

export interface V2Lb extends Regional {
  /** id = ARN. */
  readonly name: string;
  readonly dnsName: string;
  readonly scheme: "internet-facing" | "internal";
  readonly type: "network" | "application";
  readonly vpcId: string;
  readonly subnets: readonly { readonly subnetId: string; readonly allocationId?: string }[];
  readonly securityGroups: readonly string[];
  readonly state: "provisioning" | "active";
  readonly activeAtMs: number;
  /** Provisioning ends in `failed` (AWS: "the load balancer could not be set up"), not `active`. */
  readonly fails?: boolean;
  readonly createdAt: Date;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface TargetGroup extends Regional {
  /** id = ARN. */
  readonly name: string;
  readonly protocol: string;
  readonly port: number;
  readonly vpcId: string;
  readonly targetType: string;
  readonly healthCheck: {
    readonly protocol: string;
    readonly port: string;
    readonly path?: string;
    readonly interval: number;
    readonly timeout: number;
    readonly healthyThreshold: number;
    readonly unhealthyThreshold: number;
  };
  readonly targets: readonly { readonly id: string; readonly port: number }[];
  readonly attributes: Readonly<Record<string, string>>;
}

export interface V2Listener extends Regional {
  /** id = ARN. */
  readonly lbArn: string;
  readonly protocol: string;
  readonly port: number;
  readonly targetGroupArn: string;
  readonly certificates: readonly string[];
}

export interface Account {
  readonly id: string;
  readonly name: string;
}

export interface AccessKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly accountId: string;
  /** Temporary credentials from AssumeRole. */
  readonly sessionToken?: string;
  readonly expiresAtMs?: number;
  readonly roleArn?: string;
}

export interface Role {
  readonly arn: string;
  readonly accountId: string;
  readonly externalId?: string;
  /** Accounts whose principals may assume it. */
  readonly trustedAccounts: readonly string[];
}

export const scopeOf = (i: Regional): string => `${i.account}/${i.region}`;

export class AwsState {
  private seq = 0;
  private readonly next = (): number => ++this.seq;
  readonly accounts = new Map<string, Account>();
  readonly keys = new Map<string, AccessKey>();
  readonly roles = new Map<string, Role>();

  readonly instances = new ResourceTable<Ec2Instance>(this.next, scopeOf, {
    dns: (i) => `${scopeOf(i)}/${i.privateDns}`,
  });
  readonly vpcs = new ResourceTable<Vpc>(this.next, scopeOf);
  readonly volumes = new ResourceTable<EbsVolume>(this.next, scopeOf);
  readonly subnets = new ResourceTable<Subnet>(this.next, scopeOf);
  readonly addresses = new ResourceTable<ElasticIp>(this.next, scopeOf);
  readonly securityGroups = new ResourceTable<SecurityGroup>(this.next, scopeOf);
  readonly routeTables = new ResourceTable<RouteTable>(this.next, scopeOf);
  readonly classicLbs = new ResourceTable<ClassicLb>(this.next, scopeOf);
  readonly v2Lbs = new ResourceTable<V2Lb>(this.next, scopeOf);
  readonly targetGroups = new ResourceTable<TargetGroup>(this.next, scopeOf);
  readonly listeners = new ResourceTable<V2Listener>(this.next, scopeOf);
  /**
   * Security groups a deleted load balancer's network interfaces still use, until when: AWS
   * answers DependencyViolation to DeleteSecurityGroup meanwhile.
   */
  readonly lingeringEnis = new Map<string, number>();

  /** A counter for ids: hex, as AWS's, never reused. */
  hexId(prefix: string, digits = 17): string {
    const n = this.next();
    return `${prefix}-${n.toString(16).padStart(digits, "0")}`;
  }

  /** The EC2 table holding `id`, by its prefix. */
  taggable(id: string): ResourceTable<Ec2Instance | Vpc | Subnet | SecurityGroup | RouteTable> | undefined {
    const prefix = id.slice(0, id.indexOf("-"));
    const table = {
      i: this.instances,
      vpc: this.vpcs,
      subnet: this.subnets,
      sg: this.securityGroups,
      rtb: this.routeTables,
    }[prefix];
    return table as ResourceTable<Ec2Instance | Vpc | Subnet | SecurityGroup | RouteTable> | undefined;
  }
}

/** The caller: an account and the region its request was signed for. */
export interface Caller {
  readonly account: string;
  readonly region: string;
  readonly nowMs: number;
  readonly staleReadMs: number;
}

export function inScope<T extends Regional>(item: T | undefined, caller: Caller): T | undefined {
  return item !== undefined && item.account === caller.account && item.region === caller.region
    ? item
    : undefined;
}

/** A 400 in the vendor's words. */
export function badRequest(code: string, message: string): FakeError {
  return new FakeError(400, code, message);
}

/** EC2 filter values: exact, with `*` and `?` wildcards. */
export function wildcard(value: string): RegExp {
  const escaped = value
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`);
}

export type TagList = readonly { readonly Key?: unknown; readonly Value?: unknown }[];

/** A request's tag list as a record. */
export function tagsFrom(list: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of (Array.isArray(list) ? list : []) as TagList)
    if (typeof t.Key === "string") out[t.Key] = typeof t.Value === "string" ? t.Value : "";
  return out;
}

export function tagList(tags: Readonly<Record<string, string>>): { Key: string; Value: string }[] {
  return Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
}
