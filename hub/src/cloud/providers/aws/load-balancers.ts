/**
 * Load balancers as cloud-provider-aws builds them, so each adopts the other's: a classic ELB
 * named `a` + the Service uid without dashes (32 characters), tagged
 * kubernetes.io/cluster/<cluster>=owned and kubernetes.io/service-name, with a managed
 * security group `k8s-elb-<name>` open to the source ranges on the listener ports and an
 * ingress rule from it on each backend's cluster security group. Our own owner tags are added
 * beside upstream's, so a restarted hub finds its owner again.
 *
 * Every step is one idempotent call found again by name or tag on the next run, so a crash at
 * any point leaves nothing a second ensure would duplicate.
 */
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DeleteSecurityGroupCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type Instance,
  type IpPermission,
  RevokeSecurityGroupIngressCommand,
  type SecurityGroup,
  type Subnet,
} from "@aws-sdk/client-ec2";
import {
  AddTagsCommand,
  ApplySecurityGroupsToLoadBalancerCommand,
  ConfigureHealthCheckCommand,
  CreateLoadBalancerCommand,
  CreateLoadBalancerListenersCommand,
  DeleteLoadBalancerCommand,
  DeleteLoadBalancerListenersCommand,
  DeregisterInstancesFromLoadBalancerCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  type Listener,
  type LoadBalancerDescription,
  ModifyLoadBalancerAttributesCommand,
  RegisterInstancesWithLoadBalancerCommand,
} from "@aws-sdk/client-elastic-load-balancing";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import {
  type InProgress,
  inProgress,
  type LbIngress,
  type LbOwner,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  type ProviderContext,
} from "../../provider.js";
import type { AwsApi } from "./api.js";
import { hasCode } from "./errors.js";
import type { AwsOptions } from "./index.js";
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

type Tags = Record<string, string>;

function tagsOf(list: readonly { Key?: string | undefined; Value?: string | undefined }[] | undefined): Tags {
  return Object.fromEntries(
    (list ?? []).flatMap((t) => (t.Key === undefined ? [] : [[t.Key, t.Value ?? ""]])),
  );
}

function ownerTags(owner: LbOwner, serviceName: string | undefined): Tags {
  return {
    [clusterTagKey(owner.cluster)]: OWNED,
    [OWNER_TAG_CLUSTER]: owner.cluster,
    [OWNER_TAG_SERVICE_UID]: owner.serviceUid,
    ...(serviceName !== undefined && { [SERVICE_NAME_TAG]: serviceName }),
  };
}

/** Whether tags say the resource is `owner`'s: our tags, or upstream's cluster tag on the owner's name. */
function ownedBy(tags: Tags, owner: LbOwner): boolean {
  if (tags[OWNER_TAG_SERVICE_UID] !== undefined)
    return tags[OWNER_TAG_SERVICE_UID] === owner.serviceUid && tags[OWNER_TAG_CLUSTER] === owner.cluster;
  return tags[clusterTagKey(owner.cluster)] === OWNED;
}

interface Rule {
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

/** The classic listeners of a spec, as upstream maps Service ports. */
function classicListeners(spec: LoadBalancerSpec): Listener[] {
  return spec.listeners.map((l) => {
    if (l.protocol === "UDP" || l.protocol === "SCTP")
      throw new CloudError(`a classic ELB cannot carry ${l.protocol} (port ${l.port}): use an NLB`);
    return {
      Protocol: l.protocol,
      LoadBalancerPort: l.port,
      InstanceProtocol: l.protocol === "HTTPS" ? "HTTP" : l.protocol,
      InstancePort: l.nodePort,
    };
  });
}

const listenerKey = (l: Listener) =>
  `${(l.Protocol ?? "").toUpperCase()}|${l.LoadBalancerPort}|${(l.InstanceProtocol ?? "").toUpperCase()}|${l.InstancePort}|${l.SSLCertificateId ?? ""}`;

function healthTarget(spec: LoadBalancerSpec): string {
  const h = spec.healthCheck;
  return h.protocol === "HTTP" ? `HTTP:${h.port}${h.path || "/"}` : `TCP:${h.port}`;
}

export class AwsLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: false,
    proxyProtocol: false,
    internal: true,
    protocols: ["TCP", "HTTP", "HTTPS"],
  };

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AwsApi,
    private readonly options: AwsOptions,
  ) {}

  // ---- reads -------------------------------------------------------------------------------------

  /** The classic ELB of that name, or undefined when AWS says there is none. */
  private async describeClassic(
    name: string,
    signal?: AbortSignal,
  ): Promise<LoadBalancerDescription | undefined> {
    try {
      const out = await this.api.call("elb.get", signal, (abortSignal) =>
        this.api.elb.send(new DescribeLoadBalancersCommand({ LoadBalancerNames: [name] }), { abortSignal }),
      );
      const lb = out.LoadBalancerDescriptions?.find((d) => d.LoadBalancerName === name);
      if (lb === undefined)
        throw new SuspectAnswerError(`DescribeLoadBalancers(${name}) answered without it`);
      return lb;
    } catch (err) {
      if (hasCode(err, "LoadBalancerNotFound", "AccessPointNotFoundException")) return undefined;
      throw err;
    }
  }

  private async classicTags(name: string, signal?: AbortSignal): Promise<Tags> {
    const out = await this.api.call("elb.tags", signal, (abortSignal) =>
      this.api.elb.send(new DescribeTagsCommand({ LoadBalancerNames: [name] }), { abortSignal }),
    );
    return tagsOf(out.TagDescriptions?.find((d) => d.LoadBalancerName === name)?.Tags);
  }

  /** The owner's classic ELB with its tags; CloudError when the name is taken by someone else. */
  private async findClassic(
    owner: LbOwner,
    signal?: AbortSignal,
  ): Promise<{ lb: LoadBalancerDescription; tags: Tags } | undefined> {
    const name = awsLoadBalancerName(owner.serviceUid);
    const lb = await this.describeClassic(name, signal);
    if (lb === undefined) return undefined;
    const tags = await this.classicTags(name, signal);
    if (!ownedBy(tags, owner))
      throw new CloudError(
        `load balancer ${name} exists but is not cluster ${owner.cluster}'s (tags say otherwise)`,
      );
    return { lb, tags };
  }

  async get(owner: LbOwner, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const found = await this.findClassic(owner, signal);
    if (found === undefined) return undefined;
    const { lb } = found;
    return {
      id: lb.LoadBalancerName ?? "",
      name: lb.LoadBalancerName ?? "",
      owner,
      ingress: lb.DNSName ? [{ hostname: lb.DNSName }] : [],
      backends: (lb.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])).sort(),
    };
  }

  private async instances(ids: readonly string[], signal?: AbortSignal): Promise<Instance[]> {
    if (ids.length === 0) return [];
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

  private async securityGroups(
    filters: { Name: string; Values: string[] }[],
    signal?: AbortSignal,
  ): Promise<SecurityGroup[]> {
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

  /** Upstream's subnet choice: one per zone of the VPC, preferring the role tag, then the cluster tag, then the lowest id. */
  private async subnets(
    vpcId: string,
    internal: boolean,
    cluster: string,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const out = await this.api.call("subnets.list", signal, (abortSignal) =>
      this.api.ec2.send(new DescribeSubnetsCommand({ Filters: [{ Name: "vpc-id", Values: [vpcId] }] }), {
        abortSignal,
      }),
    );
    const role = internal ? SUBNET_ROLE_INTERNAL_ELB : SUBNET_ROLE_ELB;
    const score = (s: Subnet) => {
      const tags = tagsOf(s.Tags);
      return (tags[role] !== undefined ? 2 : 0) + (tags[clusterTagKey(cluster)] !== undefined ? 1 : 0);
    };
    const byZone = new Map<string, Subnet>();
    for (const s of out.Subnets ?? []) {
      const zone = s.AvailabilityZone ?? "";
      const have = byZone.get(zone);
      if (
        have === undefined ||
        score(s) > score(have) ||
        (score(s) === score(have) && (s.SubnetId ?? "") < (have.SubnetId ?? ""))
      )
        byZone.set(zone, s);
    }
    const chosen = [...byZone.values()].flatMap((s) => (s.SubnetId ? [s.SubnetId] : [])).sort();
    if (chosen.length === 0) throw new CloudError(`VPC ${vpcId} has no subnets for a load balancer`);
    return chosen;
  }

  // ---- ensure ------------------------------------------------------------------------------------

  async ensure(
    owner: LbOwner,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const name = awsLoadBalancerName(owner.serviceUid);
    const wantListeners = classicListeners(spec);
    const tags = ownerTags(owner, spec.serviceName);
    const backends = await this.instances(spec.backends, signal);
    const vpcId = this.ctx.account.network ?? backends.find((i) => i.VpcId)?.VpcId;
    const found = await this.findClassic(owner, signal);
    const lbVpc = found?.lb.VPCId ?? vpcId;
    if (lbVpc === undefined)
      throw new CloudError(`load balancer ${name}: no VPC (set the account's network, or give it backends)`);

    const sgId = await this.ensureLbSecurityGroup(name, lbVpc, owner, tags, spec, signal);

    let lb = found?.lb;
    if (lb === undefined) {
      const subnets = await this.subnets(lbVpc, spec.internal, owner.cluster, signal);
      await this.api.call("elb.create", signal, (abortSignal) =>
        this.api.elb.send(
          new CreateLoadBalancerCommand({
            LoadBalancerName: name,
            Listeners: wantListeners,
            Subnets: subnets,
            SecurityGroups: [sgId],
            ...(spec.internal && { Scheme: "internal" }),
            Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
          }),
          { abortSignal },
        ),
      );
      lb = await this.describeClassic(name, signal);
      if (lb === undefined)
        throw new SuspectAnswerError(`load balancer ${name} not found right after its creation`);
    } else {
      await this.updateClassic(lb, found?.tags ?? {}, tags, wantListeners, sgId, signal);
    }

    const h = spec.healthCheck;
    const hc = lb.HealthCheck;
    if (
      hc?.Target !== healthTarget(spec) ||
      hc.Interval !== h.intervalSeconds ||
      hc.Timeout !== h.timeoutSeconds ||
      hc.HealthyThreshold !== h.healthyThreshold ||
      hc.UnhealthyThreshold !== h.unhealthyThreshold
    )
      await this.api.call("elb.healthCheck.configure", signal, (abortSignal) =>
        this.api.elb.send(
          new ConfigureHealthCheckCommand({
            LoadBalancerName: name,
            HealthCheck: {
              Target: healthTarget(spec),
              Interval: h.intervalSeconds,
              Timeout: Math.min(h.timeoutSeconds, h.intervalSeconds - 1),
              HealthyThreshold: h.healthyThreshold,
              UnhealthyThreshold: h.unhealthyThreshold,
            },
          }),
          { abortSignal },
        ),
      );

    await this.ensureAttributes(name, spec, signal);
    await this.syncInstances(lb, backends, signal);
    await this.ensureNodeRules(sgId, lbVpc, owner.cluster, backends, signal);
    return lb.DNSName ? [{ hostname: lb.DNSName }] : [];
  }

  private async updateClassic(
    lb: LoadBalancerDescription,
    haveTags: Tags,
    wantTags: Tags,
    want: readonly Listener[],
    sgId: string,
    signal?: AbortSignal,
  ): Promise<void> {
    const name = lb.LoadBalancerName ?? "";
    const missingTags = Object.entries(wantTags).filter(([k, v]) => haveTags[k] !== v);
    if (missingTags.length > 0)
      await this.api.call("elb.tag", signal, (abortSignal) =>
        this.api.elb.send(
          new AddTagsCommand({
            LoadBalancerNames: [name],
            Tags: missingTags.map(([Key, Value]) => ({ Key, Value })),
          }),
          { abortSignal },
        ),
      );
    const have = (lb.ListenerDescriptions ?? []).flatMap((d) => (d.Listener ? [d.Listener] : []));
    const wantKeys = new Set(want.map(listenerKey));
    const stale = have.filter((l) => !wantKeys.has(listenerKey(l)));
    if (stale.length > 0)
      await this.api.call("elb.listeners.delete", signal, (abortSignal) =>
        this.api.elb.send(
          new DeleteLoadBalancerListenersCommand({
            LoadBalancerName: name,
            LoadBalancerPorts: stale.flatMap((l) =>
              l.LoadBalancerPort === undefined ? [] : [l.LoadBalancerPort],
            ),
          }),
          { abortSignal },
        ),
      );
    const haveKeys = new Set(have.filter((l) => wantKeys.has(listenerKey(l))).map(listenerKey));
    const add = want.filter((l) => !haveKeys.has(listenerKey(l)));
    if (add.length > 0)
      await this.api.call("elb.listeners.create", signal, (abortSignal) =>
        this.api.elb.send(
          new CreateLoadBalancerListenersCommand({ LoadBalancerName: name, Listeners: add }),
          {
            abortSignal,
          },
        ),
      );
    const groups = lb.SecurityGroups ?? [];
    if (!groups.includes(sgId))
      await this.api.call("elb.securityGroups.apply", signal, (abortSignal) =>
        this.api.elb.send(
          new ApplySecurityGroupsToLoadBalancerCommand({ LoadBalancerName: name, SecurityGroups: [sgId] }),
          { abortSignal },
        ),
      );
  }

  private async ensureAttributes(name: string, spec: LoadBalancerSpec, signal?: AbortSignal): Promise<void> {
    const out = await this.api.call("elb.attributes", signal, (abortSignal) =>
      this.api.elb.send(new DescribeLoadBalancerAttributesCommand({ LoadBalancerName: name }), {
        abortSignal,
      }),
    );
    if (out.LoadBalancerAttributes?.ConnectionSettings?.IdleTimeout === spec.idleTimeoutSeconds) return;
    await this.api.call("elb.attributes.modify", signal, (abortSignal) =>
      this.api.elb.send(
        new ModifyLoadBalancerAttributesCommand({
          LoadBalancerName: name,
          LoadBalancerAttributes: { ConnectionSettings: { IdleTimeout: spec.idleTimeoutSeconds } },
        }),
        { abortSignal },
      ),
    );
  }

  private async syncInstances(
    lb: LoadBalancerDescription,
    backends: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<void> {
    const name = lb.LoadBalancerName ?? "";
    const have = new Set((lb.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])));
    const want = new Set(backends.flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])));
    const add = [...want].filter((id) => !have.has(id)).sort();
    const remove = [...have].filter((id) => !want.has(id)).sort();
    if (add.length > 0)
      await this.api.call("elb.instances.register", signal, (abortSignal) =>
        this.api.elb.send(
          new RegisterInstancesWithLoadBalancerCommand({
            LoadBalancerName: name,
            Instances: add.map((InstanceId) => ({ InstanceId })),
          }),
          { abortSignal },
        ),
      );
    if (remove.length > 0)
      await this.api.call("elb.instances.deregister", signal, (abortSignal) =>
        this.api.elb.send(
          new DeregisterInstancesFromLoadBalancerCommand({
            LoadBalancerName: name,
            Instances: remove.map((InstanceId) => ({ InstanceId })),
          }),
          { abortSignal },
        ),
      );
  }

  /** The load balancer's own group: found by name in the VPC, created with its tags in one call, rules diffed. */
  private async ensureLbSecurityGroup(
    lbName: string,
    vpcId: string,
    owner: LbOwner,
    tags: Tags,
    spec: LoadBalancerSpec,
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
            Description: `Security group for Kubernetes ELB ${lbName}${spec.serviceName ? ` (${spec.serviceName})` : ""}`,
            VpcId: vpcId,
            TagSpecifications: [
              {
                ResourceType: "security-group",
                Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
              },
            ],
          }),
          { abortSignal },
        ),
      );
      groupId = out.GroupId;
      if (groupId === undefined)
        throw new SuspectAnswerError(`CreateSecurityGroup(${groupName}) answered no id`);
    }
    const ranges = spec.sourceRanges.length > 0 ? spec.sourceRanges : ["0.0.0.0/0"];
    const want: Rule[] = [];
    for (const l of spec.listeners)
      for (const cidr of ranges)
        want.push({ protocol: l.protocol === "UDP" ? "udp" : "tcp", fromPort: l.port, toPort: l.port, cidr });
    await this.syncRules(groupId, rulesOf(group?.IpPermissions), want, signal);
    return groupId;
  }

  private async syncRules(
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
            {
              abortSignal,
            },
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
            {
              abortSignal,
            },
          ),
        );
      } catch (err) {
        if (!hasCode(err, "InvalidPermission.NotFound")) throw err;
      }
    }
  }

  /**
   * Upstream's updateInstanceSecurityGroupsForLoadBalancer: all traffic from the load
   * balancer's group into each backend's cluster group (the one tagged for the cluster, or
   * the only one it has), and no such rule where no backend is any more.
   */
  private async ensureNodeRules(
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
      const mine = (i.SecurityGroups ?? [])
        .flatMap((g) => (g.GroupId ? [byId.get(g.GroupId)] : []))
        .filter((g) => g !== undefined);
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
    const rule: Rule = { protocol: "-1", groupId: lbGroupId };
    for (const g of referencing)
      if (g.GroupId !== undefined && !wanted.has(g.GroupId))
        await this.syncRules(g.GroupId, [rule], [], signal);
    const have = new Set(referencing.map((g) => g.GroupId));
    for (const id of [...wanted].sort()) if (!have.has(id)) await this.syncRules(id, [], [rule], signal);
  }

  // ---- backends ----------------------------------------------------------------------------------

  async updateBackends(
    owner: LbOwner,
    backendIds: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const found = await this.findClassic(owner, signal);
    if (found === undefined)
      throw new CloudError(`load balancer ${awsLoadBalancerName(owner.serviceUid)} does not exist`);
    const backends = await this.instances(backendIds, signal);
    await this.syncInstances(found.lb, backends, signal);
    const groupId = found.lb.SecurityGroups?.[0];
    if (groupId !== undefined && found.lb.VPCId !== undefined)
      await this.ensureNodeRules(groupId, found.lb.VPCId, owner.cluster, backends, signal);
    return undefined;
  }

  // ---- delete ------------------------------------------------------------------------------------

  async ensureDeleted(owner: LbOwner, signal?: AbortSignal): Promise<undefined | InProgress> {
    const name = awsLoadBalancerName(owner.serviceUid);
    const found = await this.findClassic(owner, signal);
    const groups = (
      await this.securityGroups([{ Name: "group-name", Values: [securityGroupName(name)] }], signal)
    ).filter((g) => ownedBy(tagsOf(g.Tags), owner));
    for (const g of groups) {
      if (g.GroupId === undefined) continue;
      const referencing = await this.securityGroups(
        [{ Name: "ip-permission.group-id", Values: [g.GroupId] }],
        signal,
      );
      for (const r of referencing)
        if (r.GroupId !== undefined)
          await this.syncRules(r.GroupId, [{ protocol: "-1", groupId: g.GroupId }], [], signal);
    }
    if (found !== undefined)
      await this.api.call("elb.delete", signal, (abortSignal) =>
        this.api.elb.send(new DeleteLoadBalancerCommand({ LoadBalancerName: name }), { abortSignal }),
      );
    for (const g of groups) {
      if (g.GroupId === undefined) continue;
      try {
        await this.api.call("sg.delete", signal, (abortSignal) =>
          this.api.ec2.send(new DeleteSecurityGroupCommand({ GroupId: g.GroupId }), { abortSignal }),
        );
      } catch (err) {
        if (hasCode(err, "InvalidGroup.NotFound")) continue;
        // The load balancer's network interfaces still hold it: AWS releases them in a while.
        if (hasCode(err, "DependencyViolation"))
          return inProgress(
            this.options.dependencyRetryMs,
            `security group ${g.GroupId} still in use by the deleted load balancer's interfaces`,
          );
        throw err;
      }
    }
    return undefined;
  }
}
