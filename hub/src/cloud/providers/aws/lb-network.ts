/**
 * What classic ELBs and NLBs share, as cloud-provider-aws does it: names, ownership tags, the
 * backends' instances, the subnets chosen per zone, the managed security group
 * `k8s-elb-<name>` open to the source ranges on the listener ports, and the ingress rule from
 * it on each backend's cluster security group. Every step is one idempotent call found again
 * by name or tag on the next run.
 */
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DeleteSecurityGroupCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type Filter,
  type Instance,
  type IpPermission,
  RevokeSecurityGroupIngressCommand,
  type SecurityGroup,
  type Subnet,
} from "@aws-sdk/client-ec2";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import { type InProgress, inProgress, type LbOwner, type ProviderContext } from "../../provider.js";
import type { AwsApi } from "./api.js";
import { hasCode } from "./errors.js";
import { clusterTagKey, OWNED, SERVICE_NAME_TAG } from "./tags.js";

/** Upstream's GetLoadBalancerName: "a" + the uid without dashes, at most 32 characters. */
export function awsLoadBalancerName(serviceUid: string): string {
  return `a${serviceUid.replace(/-/g, "")}`.slice(0, 32);
}

export function securityGroupName(lbName: string): string {
  return `k8s-elb-${lbName}`;
}

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

/** Whether tags say the resource is `owner`'s: our tags, or upstream's cluster tag on the owner's name. */
export function ownedBy(tags: Tags, owner: LbOwner): boolean {
  if (tags[OWNER_TAG_SERVICE_UID] !== undefined)
    return tags[OWNER_TAG_SERVICE_UID] === owner.serviceUid && tags[OWNER_TAG_CLUSTER] === owner.cluster;
  return tags[clusterTagKey(owner.cluster)] === OWNED;
}

/** The owner the tags record, if they are ours. */
export function ownerOf(tags: Tags): LbOwner | undefined {
  const serviceUid = tags[OWNER_TAG_SERVICE_UID];
  const cluster = tags[OWNER_TAG_CLUSTER];
  return serviceUid !== undefined && cluster !== undefined ? { cluster, serviceUid } : undefined;
}

export interface Rule {
  readonly protocol: string;
  readonly fromPort?: number;
  readonly toPort?: number;
  readonly cidr?: string;
  readonly groupId?: string;
}

const ruleKey = (r: Rule) =>
  `${r.protocol}|${r.fromPort ?? ""}|${r.toPort ?? ""}|${r.cidr ?? ""}|${r.groupId ?? ""}`;

function rulesOf(perms: readonly IpPermission[] | undefined): Rule[] {
  const out: Rule[] = [];
  for (const p of perms ?? []) {
    const base = {
      protocol: p.IpProtocol ?? "-1",
      ...(p.IpProtocol !== "-1" && p.FromPort !== undefined && { fromPort: p.FromPort }),
      ...(p.IpProtocol !== "-1" && p.ToPort !== undefined && { toPort: p.ToPort }),
    };
    for (const r of p.IpRanges ?? []) if (r.CidrIp !== undefined) out.push({ ...base, cidr: r.CidrIp });
    for (const g of p.UserIdGroupPairs ?? [])
      if (g.GroupId !== undefined) out.push({ ...base, groupId: g.GroupId });
  }
  return out;
}

function permissionsOf(rules: readonly Rule[]): IpPermission[] {
  return rules.map((r) => ({
    IpProtocol: r.protocol,
    ...(r.fromPort !== undefined && { FromPort: r.fromPort }),
    ...(r.toPort !== undefined && { ToPort: r.toPort }),
    ...(r.cidr !== undefined && { IpRanges: [{ CidrIp: r.cidr }] }),
    ...(r.groupId !== undefined && { UserIdGroupPairs: [{ GroupId: r.groupId }] }),
  }));
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
    for (let n = 0; n < ids.length; n += 200) {
      const page = await this.api.call("lb.instances", signal, (abortSignal) =>
        this.api.ec2.send(
          new DescribeInstancesCommand({ Filters: [{ Name: "instance-id", Values: ids.slice(n, n + 200) }] }),
          { abortSignal },
        ),
      );
      for (const r of page.Reservations ?? []) out.push(...(r.Instances ?? []));
    }
    return out.filter((i) => i.State?.Name !== "terminated");
  }

  /** The load balancer's VPC: the account's network, else the backends'. */
  vpcOf(backends: readonly Instance[]): string | undefined {
    return this.ctx.account.network ?? backends.find((i) => i.VpcId)?.VpcId;
  }

  async securityGroups(filters: Filter[], signal?: AbortSignal): Promise<SecurityGroup[]> {
    const out: SecurityGroup[] = [];
    let token: string | undefined;
    do {
      const page = await this.api.call("sg.list", signal, (abortSignal) =>
        this.api.ec2.send(
          new DescribeSecurityGroupsCommand({
            Filters: filters,
            ...(token !== undefined && { NextToken: token }),
          }),
          { abortSignal },
        ),
      );
      out.push(...(page.SecurityGroups ?? []));
      token = page.NextToken === "" ? undefined : page.NextToken;
    } while (token !== undefined);
    return out;
  }

  /**
   * The annotation's subnets, or upstream's choice: one per zone of the VPC, preferring the
   * role tag (kubernetes.io/role/elb or internal-elb), then the cluster tag, then the lowest id.
   */
  async subnets(
    vpcId: string,
    internal: boolean,
    cluster: string,
    annotated: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<{ subnetId: string; zone: string }[]> {
    const out = await this.api.call("subnets.list", signal, (abortSignal) =>
      this.api.ec2.send(
        new DescribeSubnetsCommand(
          annotated !== undefined
            ? { SubnetIds: [...annotated] }
            : { Filters: [{ Name: "vpc-id", Values: [vpcId] }] },
        ),
        { abortSignal },
      ),
    );
    const all = out.Subnets ?? [];
    if (annotated !== undefined)
      return all.flatMap((s) =>
        s.SubnetId ? [{ subnetId: s.SubnetId, zone: s.AvailabilityZone ?? "" }] : [],
      );
    const role = internal ? SUBNET_ROLE_INTERNAL_ELB : SUBNET_ROLE_ELB;
    const score = (s: Subnet) => {
      const tags = tagsOf(s.Tags);
      return (tags[role] !== undefined ? 2 : 0) + (tags[clusterTagKey(cluster)] !== undefined ? 1 : 0);
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

  /** The load balancer's own group: found by name in the VPC, created with its tags in one call, its rules diffed to `want`. */
  async ensureLbGroup(
    lbName: string,
    vpcId: string,
    owner: LbOwner,
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
    if (group !== undefined && !ownedBy(tagsOf(group.Tags), owner))
      throw new CloudError(
        `security group ${groupName} in ${vpcId} exists but is not cluster ${owner.cluster}'s`,
      );
    let groupId = group?.GroupId;
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
  }

  /**
   * Upstream's updateInstanceSecurityGroupsForLoadBalancer: all traffic from the load
   * balancer's group into each backend's cluster group (the one tagged for the cluster, or the
   * only one it has), and no such rule where no backend is any more.
   */
  async ensureNodeRules(
    lbGroupId: string,
    vpcId: string,
    cluster: string,
    backends: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<void> {
    const ids = [
      ...new Set(
        backends.flatMap((i) => (i.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []))),
      ),
    ];
    const groups =
      ids.length === 0 ? [] : await this.securityGroups([{ Name: "group-id", Values: ids }], signal);
    const byId = new Map(groups.map((g) => [g.GroupId ?? "", g]));
    const wanted = new Set<string>();
    for (const i of backends) {
      const mine = (i.SecurityGroups ?? []).flatMap((g) => {
        const found = g.GroupId === undefined ? undefined : byId.get(g.GroupId);
        return found === undefined ? [] : [found];
      });
      const tagged = mine.filter((g) => tagsOf(g.Tags)[clusterTagKey(cluster)] !== undefined);
      const pick =
        tagged.length === 1 ? tagged[0] : tagged.length === 0 && mine.length === 1 ? mine[0] : undefined;
      if (pick?.GroupId !== undefined) wanted.add(pick.GroupId);
      else
        this.ctx.logger.warn(
          { instance: i.InstanceId, cluster },
          "no single cluster security group on the instance: no ingress rule from the load balancer",
        );
    }
    const referencing = await this.securityGroups(
      [
        { Name: "ip-permission.group-id", Values: [lbGroupId] },
        { Name: "vpc-id", Values: [vpcId] },
      ],
      signal,
    );
    for (const g of referencing)
      if (g.GroupId !== undefined && !wanted.has(g.GroupId))
        await this.syncRules(g.GroupId, [fromGroup(lbGroupId)], [], signal);
    const have = new Set(referencing.map((g) => g.GroupId));
    for (const id of [...wanted].sort())
      if (!have.has(id)) await this.syncRules(id, [], [fromGroup(lbGroupId)], signal);
  }

  /** The owner's managed groups (by name), found wherever they are. */
  async ownedGroups(lbName: string, owner: LbOwner, signal?: AbortSignal): Promise<string[]> {
    const groups = await this.securityGroups(
      [{ Name: "group-name", Values: [securityGroupName(lbName)] }],
      signal,
    );
    return groups
      .filter((g) => ownedBy(tagsOf(g.Tags), owner))
      .flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  }

  /** Every node-group rule that lets `groupId` in, revoked (before the load balancer goes, as upstream). */
  async revokeNodeRules(groupId: string, signal?: AbortSignal): Promise<void> {
    const referencing = await this.securityGroups(
      [{ Name: "ip-permission.group-id", Values: [groupId] }],
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
