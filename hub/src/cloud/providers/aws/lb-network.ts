/**
 * What classic ELBs and NLBs share, as cloud-provider-aws does it: names, ownership tags, the
 * backends' instances, the subnets chosen per zone, the managed security group
 * `k8s-elb-<name>` open to the source ranges on the listener ports, and the ingress rule from
 * it on each backend's cluster security group; and the account listing of ours (tags read by
 * 20) with the digest tags a sync records last. Every step is one idempotent call found again
 * by name or tag on the next run.
 */
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  CreateTagsCommand,
  DeleteSecurityGroupCommand,
  DescribeAddressesCommand,
  type Filter,
  type Instance,
  type IpPermission,
  paginateDescribeInstances,
  paginateDescribeSecurityGroups,
  paginateDescribeSubnets,
  RevokeSecurityGroupIngressCommand,
  type SecurityGroup,
  type Subnet,
} from "@aws-sdk/client-ec2";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import {
  backendsDigest,
  DIGEST_TAG_BACKENDS,
  DIGEST_TAG_SPEC,
  loadBalancerSpecDigest,
  OWNER_TAG_CLUSTER,
  OWNER_TAG_SERVICE_UID,
} from "../../naming.js";
import {
  type BackendAnnotations,
  type ClusterTarget,
  type InProgress,
  inProgress,
  type LbIngress,
  type LbOwner,
  type LoadBalancerSpec,
  type OwnedLoadBalancer,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import type { AwsLbSettings } from "./annotations.js";
import { type AwsApi, allPages } from "./api.js";
import { hasCode } from "./errors.js";
import { checkScope } from "./scope.js";
import { clusterTagKey, clusterTagKeys, hasClusterTag, OWNED, SERVICE_NAME_TAG } from "./tags.js";

/** Upstream's GetLoadBalancerName: "a" + the uid without dashes, at most 32 characters. */
export function awsLoadBalancerName(serviceUid: string): string {
  return `a${serviceUid.replace(/-/g, "")}`.slice(0, 32);
}

export function securityGroupName(lbName: string): string {
  return `k8s-elb-${lbName}`;
}

/** EC2's largest page (MaxResults) and most values of one filter. */
const EC2_PAGE_MAX = 1000;
const FILTER_VALUES_MAX = 200;

const SUBNET_ROLE_ELB = "kubernetes.io/role/elb";
const SUBNET_ROLE_INTERNAL_ELB = "kubernetes.io/role/internal-elb";

export type Tags = Record<string, string>;

export function tagsOf(
  list: readonly { Key?: string | undefined; Value?: string | undefined }[] | undefined,
): Tags {
  return Object.fromEntries(
    (list ?? []).flatMap((t) => (t.Key === undefined ? [] : [[t.Key, t.Value ?? ""]])),
  );
}

export function tagList(tags: Tags): { Key: string; Value: string }[] {
  return Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
}

/** Upstream's tags (cluster owned, service name) and ours (cluster, Service uid), plus the user's. */
export function ownerTags(owner: LbOwner, serviceName: string | undefined, extra: Readonly<Tags> = {}): Tags {
  return {
    ...extra,
    [clusterTagKey(owner.cluster)]: OWNED,
    [OWNER_TAG_CLUSTER]: owner.cluster,
    [OWNER_TAG_SERVICE_UID]: owner.serviceUid,
    ...(serviceName !== undefined && { [SERVICE_NAME_TAG]: serviceName }),
  };
}

/**
 * Why a resource found by the Service's name (its load balancer, its `k8s-elb-<name>` group, a
 * target group) is not the Service's to change, or undefined when it is: fleet-ccm's owner tags
 * for this Service, or none of them and, when the operator opted in for the cluster
 * (scope.adoptFrom), upstream's `kubernetes.io/cluster/<vendorCcmClusterName>: owned`, as
 * cloud-provider-aws tags what it makes. A name is no proof: it derives from a Service uid, which
 * an (untrusted) agent reports, so a tenant's Service never takes over a load balancer by it.
 */
export function whyNotOwned(tags: Tags, target: ServiceTarget): string | undefined {
  if (tags[OWNER_TAG_SERVICE_UID] !== undefined || tags[OWNER_TAG_CLUSTER] !== undefined)
    return tags[OWNER_TAG_SERVICE_UID] === target.serviceUid && tags[OWNER_TAG_CLUSTER] === target.cluster
      ? undefined
      : `belongs to another Service (cluster ${tags[OWNER_TAG_CLUSTER] ?? "?"})`;
  const vendor = target.scope.adoptFrom?.vendorCcmClusterName;
  if (vendor === undefined)
    return `carries no fleet-ccm owner tags, and cluster ${target.cluster} has no adoptFrom in the hub's configuration to adopt what cloud-provider-aws made`;
  if (tags[clusterTagKey(vendor)] !== OWNED)
    return `carries no fleet-ccm owner tags, nor ${clusterTagKey(vendor)}: ${OWNED} as cloud-provider-aws tags what it makes for the cluster adoptFrom names`;
  return undefined;
}

/** Whether the resource is the Service's: fleet-ccm's for it, or the vendor CCM's it may adopt (whyNotOwned). */
export function ownedBy(tags: Tags, target: ServiceTarget): boolean {
  return whyNotOwned(tags, target) === undefined;
}

/** The owner the tags record, if they are ours. */
export function ownerOf(tags: Tags): LbOwner | undefined {
  const serviceUid = tags[OWNER_TAG_SERVICE_UID];
  const cluster = tags[OWNER_TAG_CLUSTER];
  return serviceUid !== undefined && cluster !== undefined ? { cluster, serviceUid } : undefined;
}

/** The digest tags `ensure` records last, once the cloud matches `spec`. */
export function specDigestTags(spec: LoadBalancerSpec): Tags {
  return {
    [DIGEST_TAG_SPEC]: loadBalancerSpecDigest(spec),
    [DIGEST_TAG_BACKENDS]: backendsDigest(spec.backends, spec.backendAnnotations),
  };
}

/**
 * The digest tag `updateBackends` records last. AWS reads no node annotations, but the digest
 * is of what the hub asked for, so a restarted hub compares like with like.
 */
export function backendsDigestTags(backends: readonly string[], annotations?: BackendAnnotations): Tags {
  return { [DIGEST_TAG_BACKENDS]: backendsDigest(backends, annotations) };
}

/** The tags of `want` that `have` lacks or holds with another value. */
export function tagsToAdd(have: Readonly<Tags>, want: Readonly<Tags>): { Key: string; Value: string }[] {
  return Object.entries(want).flatMap(([Key, Value]) => (have[Key] === Value ? [] : [{ Key, Value }]));
}

/**
 * A load balancer of the account listing as the contract's owned one: ours only when our owner
 * tags and upstream's cluster tag are on it and its name is the one derived from them (one
 * cloud-provider-aws made and nobody adopted yet is not ours).
 */
export function ownedListing(
  id: string,
  name: string,
  dnsName: string | undefined,
  tags: Tags,
): OwnedLoadBalancer | undefined {
  const owner = ownerOf(tags);
  if (owner === undefined || owner.cluster === "" || owner.serviceUid === "") return undefined;
  if (name !== awsLoadBalancerName(owner.serviceUid) || tags[clusterTagKey(owner.cluster)] !== OWNED)
    return undefined;
  const specDigest = tags[DIGEST_TAG_SPEC];
  const backends = tags[DIGEST_TAG_BACKENDS];
  return {
    id,
    name,
    owner,
    ingress: dnsName ? [{ hostname: dnsName }] : [],
    ...(specDigest !== undefined && { specDigest }),
    ...(backends !== undefined && { backendsDigest: backends }),
  };
}

/** What either kind's ensure made: the ingress, the load balancer's name (ELB) or ARN (NLB) and its tags now. */
export interface EnsuredLb {
  readonly ingress: readonly LbIngress[];
  readonly ref: string;
  readonly tags: Tags;
}

/** Names and ARNs per DescribeTags call, on ELB and ELBv2 alike. */
const DESCRIBE_TAGS_MAX = 20;

/** A DescribeTags of one kind: tags by name (ELB) or ARN (ELBv2). */
export type DescribeTags = (refs: readonly string[]) => Promise<ReadonlyMap<string, Tags>>;

/**
 * Tags of many load balancers or target groups, 20 a call; when one of a batch went since it
 * was listed (`gone`), the batch is asked one by one and the gone left out.
 */
export async function tagsByBatch(
  refs: readonly string[],
  describe: DescribeTags,
  gone: (err: unknown) => boolean,
): Promise<Map<string, Tags>> {
  const out = new Map<string, Tags>();
  for (let n = 0; n < refs.length; n += DESCRIBE_TAGS_MAX) {
    const batch = refs.slice(n, n + DESCRIBE_TAGS_MAX);
    try {
      for (const [ref, tags] of await describe(batch)) out.set(ref, tags);
    } catch (err) {
      if (!gone(err)) throw err;
      for (const ref of batch) {
        try {
          for (const [r, tags] of await describe([ref])) out.set(r, tags);
        } catch (e) {
          if (!gone(e)) throw e;
        }
      }
    }
  }
  return out;
}

/** One page of a kind's listing: its load balancers (`ref`: name or ARN, also the id) and the next marker. */
export interface ListingPage {
  readonly lbs: readonly {
    readonly ref: string;
    readonly name: string;
    readonly dnsName: string | undefined;
  }[];
  readonly next?: string;
}

/** The owned among one listing page's load balancers. */
export async function ownedAmong(
  lbs: ListingPage["lbs"],
  describe: DescribeTags,
  gone: (err: unknown) => boolean,
): Promise<OwnedLoadBalancer[]> {
  // Ours are named "a" + the Service uid: no other is worth a DescribeTags.
  const candidates = lbs.filter((l) => l.ref !== "" && l.name.startsWith("a"));
  const tags = await tagsByBatch(
    candidates.map((l) => l.ref),
    describe,
    gone,
  );
  return candidates.flatMap((l) => {
    const t = tags.get(l.ref);
    const item = t === undefined ? undefined : ownedListing(l.ref, l.name, l.dnsName, t);
    return item === undefined ? [] : [item];
  });
}

/**
 * What both kinds build first, as upstream: the name, the owner tags, the backends' instances,
 * the VPC (the existing load balancer's, else the account's or the backends'), and, unless the
 * security-groups annotation replaces it, the managed group `k8s-elb-<name>` open to the
 * source ranges with `rules`; then the extra groups.
 */
export interface LbBase {
  readonly name: string;
  readonly tags: Tags;
  readonly backends: readonly Instance[];
  readonly vpcId: string;
  /** The managed group (first of `groups`), when there is one. */
  readonly managedGroup: string | undefined;
  readonly groups: readonly string[];
}

/** One ingress rule: from one CIDR (IPv4 or IPv6) or one group; the description is EC2's note, not the rule's identity. */
export interface Rule {
  readonly protocol: string;
  readonly fromPort?: number;
  readonly toPort?: number;
  readonly cidr?: string;
  readonly groupId?: string;
  readonly description?: string;
}

/** What EC2 knows a rule by (protocol, ports, source): two rules equal here are one to EC2. */
export const ruleKey = (r: Rule) =>
  `${r.protocol}|${r.fromPort ?? ""}|${r.toPort ?? ""}|${r.cidr ?? ""}|${r.groupId ?? ""}`;

const isIpv6 = (cidr: string) => cidr.includes(":");

/**
 * Upstream's path-MTU rule from `cidr`: ICMP "fragmentation needed" (type 3, code 4); for an
 * IPv6 range ICMPv6 "packet too big" (type 2, code 0), its IPv6 counterpart.
 */
export const pathMtuRule = (cidr: string): Rule =>
  isIpv6(cidr)
    ? { protocol: "icmpv6", fromPort: 2, toPort: 0, cidr }
    : { protocol: "icmp", fromPort: 3, toPort: 4, cidr };

/** A group's permissions as one-source rules (EC2 groups sources by protocol and ports). */
export function rulesOf(perms: readonly IpPermission[] | undefined): Rule[] {
  const out: Rule[] = [];
  for (const p of perms ?? []) {
    const base = {
      protocol: p.IpProtocol ?? "-1",
      ...(p.IpProtocol !== "-1" && p.FromPort !== undefined && { fromPort: p.FromPort }),
      ...(p.IpProtocol !== "-1" && p.ToPort !== undefined && { toPort: p.ToPort }),
    };
    const note = (d: string | undefined) => (d === undefined ? {} : { description: d });
    for (const r of p.IpRanges ?? [])
      if (r.CidrIp !== undefined) out.push({ ...base, cidr: r.CidrIp, ...note(r.Description) });
    for (const r of p.Ipv6Ranges ?? [])
      if (r.CidrIpv6 !== undefined) out.push({ ...base, cidr: r.CidrIpv6, ...note(r.Description) });
    for (const g of p.UserIdGroupPairs ?? [])
      if (g.GroupId !== undefined) out.push({ ...base, groupId: g.GroupId, ...note(g.Description) });
  }
  return out;
}

function permissionsOf(rules: readonly Rule[]): IpPermission[] {
  return rules.map((r) => {
    const note = r.description === undefined ? {} : { Description: r.description };
    return {
      IpProtocol: r.protocol,
      ...(r.fromPort !== undefined && { FromPort: r.fromPort }),
      ...(r.toPort !== undefined && { ToPort: r.toPort }),
      ...(r.cidr !== undefined &&
        (isIpv6(r.cidr)
          ? { Ipv6Ranges: [{ CidrIpv6: r.cidr, ...note }] }
          : { IpRanges: [{ CidrIp: r.cidr, ...note }] })),
      ...(r.groupId !== undefined && { UserIdGroupPairs: [{ GroupId: r.groupId, ...note }] }),
    };
  });
}

/** All traffic from the load balancer's group, on a node's group (upstream's instance security group rule). */
const fromGroup = (groupId: string): Rule => ({ protocol: "-1", groupId });

export class LbNetwork {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AwsApi,
    private readonly dependencyRetryMs: number,
  ) {}

  /** The backends' instances (filtered by id: a vanished one is left out, never an error); terminated ones dropped. */
  async instances(ids: readonly string[], signal?: AbortSignal): Promise<Instance[]> {
    const out: Instance[] = [];
    for (let n = 0; n < ids.length; n += FILTER_VALUES_MAX) {
      const reservations = await allPages(
        paginateDescribeInstances(
          { client: this.api.paged(this.api.ec2, "lb.instances", signal), pageSize: EC2_PAGE_MAX },
          { Filters: [{ Name: "instance-id", Values: ids.slice(n, n + FILTER_VALUES_MAX) }] },
        ),
        (page) => page.Reservations,
      );
      for (const r of reservations) out.push(...(r.Instances ?? []));
    }
    return out.filter((i) => i.State?.Name !== "terminated");
  }

  /**
   * The shared first steps of `ensure` (LbBase); `rules` are the managed group's for one source
   * CIDR, undefined for a load balancer that can take no group (an NLB made without any).
   */
  async prepare(
    owner: ServiceTarget,
    spec: Pick<LoadBalancerSpec, "serviceName" | "backends" | "sourceRanges">,
    s: AwsLbSettings,
    kind: "ELB" | "NLB",
    existingVpc: string | undefined,
    rules: ((cidr: string) => Rule[]) | undefined,
    signal?: AbortSignal,
  ): Promise<LbBase> {
    const name = awsLoadBalancerName(owner.serviceUid);
    const tags = ownerTags(owner, spec.serviceName, s.additionalTags);
    const backends = await this.instances(spec.backends, signal);
    const vpcId = existingVpc ?? vpcOf(owner.network, backends);
    if (vpcId === undefined)
      throw new CloudError(
        `load balancer ${name}: no VPC (set the cluster's or the account's network, or give it backends)`,
      );
    // Before the first write: what the annotations name must be the cluster's.
    await checkScope(
      owner,
      s,
      vpcId,
      {
        groups: (ids) => this.securityGroups([{ Name: "group-id", Values: [...ids] }], signal),
        subnets: (ids) => this.subnetsById(ids, signal),
        addresses: async (ids) =>
          (
            await this.api.call("eip.list", signal, (abortSignal) =>
              this.api.ec2.send(
                new DescribeAddressesCommand({ Filters: [{ Name: "allocation-id", Values: [...ids] }] }),
                { abortSignal },
              ),
            )
          ).Addresses ?? [],
      },
      existingVpc === undefined,
    );
    const groups = [...(s.securityGroups ?? [])];
    let managedGroup: string | undefined;
    if (s.securityGroups === undefined && rules !== undefined) {
      const ranges = spec.sourceRanges.length > 0 ? spec.sourceRanges : ["0.0.0.0/0"];
      const description = `Security group for Kubernetes ${kind} ${name}${spec.serviceName ? ` (${spec.serviceName})` : ""}`;
      managedGroup = await this.ensureLbGroup(
        name,
        vpcId,
        owner,
        tags,
        description,
        ranges.flatMap(rules),
        signal,
      );
      groups.unshift(managedGroup);
    }
    groups.push(...s.extraSecurityGroups.filter((g) => !groups.includes(g)));
    return { name, tags, backends, vpcId, managedGroup, groups };
  }

  /**
   * The shared last step: the node-group rules admitting `admit`, the managed group when there
   * is one (a classic ELB with user-given groups passes the first of them, as upstream).
   */
  async finish(
    base: LbBase,
    cluster: ClusterTarget,
    signal?: AbortSignal,
    admit = base.managedGroup,
  ): Promise<void> {
    if (admit !== undefined) await this.ensureNodeRules(admit, base.vpcId, cluster, base.backends, signal);
  }

  /**
   * After a backend change: the node-group rules from the load balancer's node-rule group
   * (nodeRuleGroup), if it has one.
   */
  async followBackends(
    lb: { name: string | undefined; groups: readonly string[] | undefined; vpcId: string | undefined },
    owner: ServiceTarget,
    backends: readonly Instance[],
    signal?: AbortSignal,
    userGroups = false,
  ): Promise<void> {
    const group = await this.nodeRuleGroup(lb, owner, userGroups, signal);
    if (group !== undefined && lb.vpcId !== undefined)
      await this.ensureNodeRules(group.id, lb.vpcId, owner, backends, signal);
  }

  /**
   * The group the nodes' groups admit for a load balancer: its managed group; else, with
   * `userGroups` (a classic ELB's user-given groups, whose first upstream admits), the first of
   * its groups that a cluster group admits (all traffic from it), as an ensure or upstream left it.
   */
  async nodeRuleGroup(
    lb: { name: string | undefined; groups: readonly string[] | undefined },
    owner: ServiceTarget,
    userGroups: boolean,
    signal?: AbortSignal,
  ): Promise<{ id: string; managed: boolean } | undefined> {
    const groups = lb.groups ?? [];
    const managed = (await this.ownedGroups(lb.name ?? "", owner, signal)).find((g) => groups.includes(g));
    if (managed !== undefined) return { id: managed, managed: true };
    if (!userGroups || groups.length === 0) return undefined;
    const admitting = await this.securityGroups(
      [
        { Name: "ip-permission.group-id", Values: [...groups] },
        { Name: "tag-key", Values: clusterTagKeys(owner) },
      ],
      signal,
    );
    const admitted = new Set(
      admitting.flatMap((g) =>
        rulesOf(g.IpPermissions)
          .filter((r) => r.protocol === "-1")
          .map((r) => r.groupId),
      ),
    );
    const id = groups.find((g) => admitted.has(g));
    return id === undefined ? undefined : { id, managed: false };
  }

  async securityGroups(filters: Filter[], signal?: AbortSignal): Promise<SecurityGroup[]> {
    return allPages(
      paginateDescribeSecurityGroups(
        { client: this.api.paged(this.api.ec2, "sg.list", signal), pageSize: EC2_PAGE_MAX },
        { Filters: filters },
      ),
      (page) => page.SecurityGroups,
    );
  }

  /** Subnets by id (a filter, so an unknown id is left out rather than an error). */
  subnetsById(ids: readonly string[], signal?: AbortSignal): Promise<Subnet[]> {
    return allPages(
      paginateDescribeSubnets(
        { client: this.api.paged(this.api.ec2, "subnets.list", signal), pageSize: EC2_PAGE_MAX },
        { Filters: [{ Name: "subnet-id", Values: [...ids] }] },
      ),
      (page) => page.Subnets,
    );
  }

  /**
   * The annotation's subnets, or upstream's choice: one per zone of the VPC, preferring the
   * role tag (kubernetes.io/role/elb or internal-elb), then the cluster tag, then the lowest id.
   */
  async subnets(
    vpcId: string,
    internal: boolean,
    cluster: ClusterTarget,
    annotated: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<{ subnetId: string; zone: string }[]> {
    // By id, no page size: EC2 answers those subnets whole.
    const all = await allPages(
      paginateDescribeSubnets(
        {
          client: this.api.paged(this.api.ec2, "subnets.list", signal),
          ...(annotated === undefined && { pageSize: EC2_PAGE_MAX }),
        },
        annotated !== undefined
          ? { SubnetIds: [...annotated] }
          : { Filters: [{ Name: "vpc-id", Values: [vpcId] }] },
      ),
      (page) => page.Subnets,
    );
    if (annotated !== undefined)
      return all.flatMap((s) =>
        s.SubnetId ? [{ subnetId: s.SubnetId, zone: s.AvailabilityZone ?? "" }] : [],
      );
    const role = internal ? SUBNET_ROLE_INTERNAL_ELB : SUBNET_ROLE_ELB;
    const keys = clusterTagKeys(cluster);
    const score = (s: Subnet) => {
      const tags = tagsOf(s.Tags);
      return (tags[role] !== undefined ? 2 : 0) + (keys.some((k) => tags[k] !== undefined) ? 1 : 0);
    };
    const byZone = new Map<string, Subnet>();
    for (const s of all) {
      const zone = s.AvailabilityZone ?? "";
      const have = byZone.get(zone);
      if (
        have === undefined ||
        score(s) > score(have) ||
        (score(s) === score(have) && (s.SubnetId ?? "") < (have.SubnetId ?? ""))
      )
        byZone.set(zone, s);
    }
    const chosen = [...byZone.values()]
      .flatMap((s) => (s.SubnetId ? [{ subnetId: s.SubnetId, zone: s.AvailabilityZone ?? "" }] : []))
      .sort((a, b) => a.subnetId.localeCompare(b.subnetId));
    if (chosen.length === 0) throw new CloudError(`VPC ${vpcId} has no subnets for a load balancer`);
    return chosen;
  }

  /**
   * The load balancer's own group: found by name in the VPC (upstream's, adopted, gets our owner
   * tags beside its own), created with its tags in one call, its rules diffed to `want`.
   */
  async ensureLbGroup(
    lbName: string,
    vpcId: string,
    owner: ServiceTarget,
    tags: Tags,
    description: string,
    want: readonly Rule[],
    signal?: AbortSignal,
  ): Promise<string> {
    const groupName = securityGroupName(lbName);
    const [group] = await this.securityGroups(
      [
        { Name: "group-name", Values: [groupName] },
        { Name: "vpc-id", Values: [vpcId] },
      ],
      signal,
    );
    const why = group === undefined ? undefined : whyNotOwned(tagsOf(group.Tags), owner);
    if (why !== undefined)
      throw new CloudError(`security group ${groupName} in ${vpcId} ${why}: not using it`);
    let groupId = group?.GroupId;
    if (groupId !== undefined && ownerOf(tagsOf(group?.Tags)) === undefined) {
      // Adopted (adoptFrom): ours from now on, so it needs no opt-in any more.
      const id = groupId;
      await this.api.call("sg.tag", signal, (abortSignal) =>
        this.api.ec2.send(new CreateTagsCommand({ Resources: [id], Tags: tagList(tags) }), { abortSignal }),
      );
    }
    if (groupId === undefined) {
      const out = await this.api.call("sg.create", signal, (abortSignal) =>
        this.api.ec2.send(
          new CreateSecurityGroupCommand({
            GroupName: groupName,
            Description: description,
            VpcId: vpcId,
            TagSpecifications: [{ ResourceType: "security-group", Tags: tagList(tags) }],
          }),
          { abortSignal },
        ),
      );
      groupId = out.GroupId;
      if (groupId === undefined)
        throw new SuspectAnswerError(`CreateSecurityGroup(${groupName}) answered no id`);
    }
    await this.syncRules(groupId, rulesOf(group?.IpPermissions), want, signal);
    return groupId;
  }

  /**
   * The group's rules among `have` made `want`: the ones to go revoked first, then the new
   * ones authorized, so a narrowing never leaves the group more open than before, not even
   * for a moment (and frees the quota the new ones need).
   */
  async syncRules(
    groupId: string,
    have: readonly Rule[],
    want: readonly Rule[],
    signal?: AbortSignal,
  ): Promise<void> {
    const haveKeys = new Set(have.map(ruleKey));
    const wantKeys = new Set(want.map(ruleKey));
    const add = want.filter((r) => !haveKeys.has(ruleKey(r)));
    const remove = have.filter((r) => !wantKeys.has(ruleKey(r)));
    if (remove.length > 0) {
      try {
        await this.api.call("sg.ingress.revoke", signal, (abortSignal) =>
          this.api.ec2.send(
            new RevokeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: permissionsOf(remove) }),
            { abortSignal },
          ),
        );
      } catch (err) {
        if (!hasCode(err, "InvalidPermission.NotFound")) throw err;
      }
    }
    if (add.length > 0) {
      try {
        await this.api.call("sg.ingress.authorize", signal, (abortSignal) =>
          this.api.ec2.send(
            new AuthorizeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: permissionsOf(add) }),
            { abortSignal },
          ),
        );
      } catch (err) {
        // A lost answer made them already; the next ensure diffs again.
        if (!hasCode(err, "InvalidPermission.Duplicate")) throw err;
      }
    }
  }

  /**
   * Each backend's cluster security group as upstream picks it (findSecurityGroupForInstance):
   * the one of its groups tagged kubernetes.io/cluster/<cluster> or KubernetesCluster=<cluster>
   * (or, with adoptFrom, the vendor CCM's cluster), else its only group; an
   * instance with several of either is left out with a warning. Each group once, as described.
   */
  async nodeGroups(
    cluster: ClusterTarget,
    backends: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<SecurityGroup[]> {
    const ids = [
      ...new Set(
        backends.flatMap((i) => (i.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []))),
      ),
    ];
    const groups =
      ids.length === 0 ? [] : await this.securityGroups([{ Name: "group-id", Values: ids }], signal);
    const byId = new Map(groups.map((g) => [g.GroupId ?? "", g]));
    const picked = new Map<string, SecurityGroup>();
    for (const i of backends) {
      const mine = (i.SecurityGroups ?? []).flatMap((g) => {
        const found = g.GroupId === undefined ? undefined : byId.get(g.GroupId);
        return found === undefined ? [] : [found];
      });
      const tagged = mine.filter((g) => hasClusterTag(tagsOf(g.Tags), cluster));
      const pick =
        tagged.length === 1 ? tagged[0] : tagged.length === 0 && mine.length === 1 ? mine[0] : undefined;
      if (pick?.GroupId !== undefined) picked.set(pick.GroupId, pick);
      else
        this.ctx.logger.warn(
          { instance: i.InstanceId, cluster: cluster.cluster },
          "no single cluster security group on the instance: no ingress rule for the load balancer",
        );
    }
    return [...picked.values()];
  }

  /**
   * Upstream's updateInstanceSecurityGroupsForLoadBalancer: all traffic from the load
   * balancer's group into each backend's cluster group (the one tagged for the cluster, or the
   * only one it has), and no such rule where no backend is any more.
   */
  async ensureNodeRules(
    lbGroupId: string,
    vpcId: string,
    cluster: ClusterTarget,
    backends: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<void> {
    const wanted = new Set((await this.nodeGroups(cluster, backends, signal)).map((g) => g.GroupId ?? ""));
    const referencing = await this.securityGroups(
      [
        { Name: "ip-permission.group-id", Values: [lbGroupId] },
        { Name: "vpc-id", Values: [vpcId] },
      ],
      signal,
    );
    // As upstream, revoked only from the cluster's groups (never the group's own self-reference):
    // another group's rule is not ours to judge.
    for (const g of referencing)
      if (
        g.GroupId !== undefined &&
        g.GroupId !== lbGroupId &&
        !wanted.has(g.GroupId) &&
        hasClusterTag(tagsOf(g.Tags), cluster)
      )
        await this.syncRules(g.GroupId, [fromGroup(lbGroupId)], [], signal);
    const have = new Set(referencing.map((g) => g.GroupId));
    for (const id of [...wanted].sort())
      if (!have.has(id)) await this.syncRules(id, [], [fromGroup(lbGroupId)], signal);
  }

  /** The owner's managed groups (by name), found wherever they are; `ours`: only those carrying fleet-ccm's owner tags. */
  async ownedGroups(
    lbName: string,
    owner: ServiceTarget,
    signal?: AbortSignal,
    only: { ours?: boolean } = {},
  ): Promise<string[]> {
    const groups = await this.securityGroups(
      [{ Name: "group-name", Values: [securityGroupName(lbName)] }],
      signal,
    );
    return groups
      .filter((g) => ownedBy(tagsOf(g.Tags), owner) && (!only.ours || ownerOf(tagsOf(g.Tags)) !== undefined))
      .flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  }

  /**
   * Every node-group rule that lets `groupId` in, revoked (before the load balancer goes, as
   * upstream); with `cluster` (a group that stays: a user-given one), only the cluster's groups',
   * as upstream's delete revokes them.
   */
  async revokeNodeRules(groupId: string, signal?: AbortSignal, cluster?: ClusterTarget): Promise<void> {
    const referencing = await this.securityGroups(
      [
        { Name: "ip-permission.group-id", Values: [groupId] },
        ...(cluster === undefined ? [] : [{ Name: "tag-key", Values: clusterTagKeys(cluster) }]),
      ],
      signal,
    );
    for (const r of referencing)
      if (r.GroupId !== undefined && r.GroupId !== groupId)
        await this.syncRules(r.GroupId, [fromGroup(groupId)], [], signal);
  }

  /** The groups deleted, last of all; DependencyViolation while AWS releases the load balancer's interfaces is in progress. */
  async deleteGroups(groupIds: readonly string[], signal?: AbortSignal): Promise<undefined | InProgress> {
    for (const id of groupIds) {
      try {
        await this.api.call("sg.delete", signal, (abortSignal) =>
          this.api.ec2.send(new DeleteSecurityGroupCommand({ GroupId: id }), { abortSignal }),
        );
      } catch (err) {
        if (hasCode(err, "InvalidGroup.NotFound")) continue;
        if (hasCode(err, "DependencyViolation"))
          return inProgress(
            this.dependencyRetryMs,
            `security group ${id} is still in use while AWS releases the deleted load balancer's network interfaces`,
          );
        throw err;
      }
    }
    return undefined;
  }
}

/** A new load balancer's VPC: the cluster's network (ClusterTarget.network), else its backends'. */
export function vpcOf(network: string | undefined, backends: readonly Instance[]): string | undefined {
  if (network !== undefined && network !== "") return network;
  return backends.find((i) => i.VpcId)?.VpcId;
}
