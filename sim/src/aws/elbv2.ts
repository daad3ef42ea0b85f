/**
 * Elastic Load Balancing v2 (2015-12-01) operations of the fake, for network load balancers:
 * load balancers in a VPC's subnets (provisioning, then active), target groups with instance
 * targets, listeners forwarding to one target group, attributes and tags. A target group in
 * use by a listener cannot be deleted (ResourceInUse); deleting a load balancer deletes its
 * listeners, as AWS does.
 */
import { encodeSeqToken, parsePageSize, parseSeqToken } from "../fake-kit/index.js";
import type { Handler } from "./ec2.js";
import type { Decoded } from "./model.js";
import type { AwsQuotas } from "./quotas.js";
import {
  type AwsState,
  badRequest,
  type Caller,
  inScope,
  type TargetGroup,
  tagList,
  tagsFrom,
  type V2Lb,
  type V2Listener,
} from "./state.js";

const lbNotFound = () => badRequest("LoadBalancerNotFound", "One or more load balancers not found");
const tgNotFound = () => badRequest("TargetGroupNotFound", "One or more target groups not found");
const listenerNotFound = () => badRequest("ListenerNotFound", "One or more listeners not found");

function pageOf(input: Decoded): { size: number; after: number | undefined } {
  const size = parsePageSize(input.PageSize === undefined ? null : String(input.PageSize), {
    param: "PageSize",
    defaultSize: 400,
    max: 400,
    overMax: "refuse",
    code: "ValidationError",
  });
  return {
    size,
    after: parseSeqToken(
      input.Marker === undefined ? null : String(input.Marker),
      "Marker",
      "ValidationError",
    ),
  };
}

function attributesOf(list: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of (Array.isArray(list) ? list : []) as Decoded[]) out[String(a.Key)] = String(a.Value ?? "");
  return out;
}

export function elbv2Handlers(
  state: AwsState,
  opts: {
    readonly eniLingerMs: () => number;
    readonly provisioningMs: () => number;
    /** Whether the next NLB created fails to provision (counts one down per create). */
    readonly nextCreateFails?: () => boolean;
    readonly quotas: () => AwsQuotas;
    /** Some AWS-compatible endpoints: TargetGroupNotFound, not [], by LoadBalancerArn when it has none. */
    readonly noTargetGroupsNotFound?: () => boolean;
  },
): Record<string, Handler> {
  /** NLB "Security groups per load balancer". */
  const groupsWithinQuota = (groups: readonly string[]) => {
    const max = opts.quotas().nlbSecurityGroupsPerLoadBalancer;
    if (groups.length > max)
      throw badRequest(
        "InvalidConfigurationRequest",
        `${groups.length} security groups exceed the limit of ${max} security groups per load balancer`,
      );
  };
  /** NLB "Load balancers per target group": a target group forwarded to by another load balancer's listener. */
  const associationWithinQuota = (targetGroupArn: string, lbArn: string, c: Caller) => {
    const others = new Set(
      state.listeners
        .inScope(scope(c))
        .filter((x) => x.targetGroupArn === targetGroupArn && x.lbArn !== lbArn)
        .map((x) => x.lbArn),
    );
    const max = opts.quotas().loadBalancersPerTargetGroup;
    if (others.size + 1 > max)
      throw badRequest(
        "TargetGroupAssociationLimit",
        `target group ${targetGroupArn} is already used by ${others.size} load balancer(s); the limit is ${max} load balancers per target group`,
      );
  };
  const scope = (c: Caller) => `${c.account}/${c.region}`;
  const lb = (arn: string, c: Caller): V2Lb => {
    const found = inScope(state.v2Lbs.get(arn), c);
    if (found === undefined) throw lbNotFound();
    return found;
  };
  const tg = (arn: string, c: Caller): TargetGroup => {
    const found = inScope(state.targetGroups.get(arn), c);
    if (found === undefined) throw tgNotFound();
    return found;
  };
  const listener = (arn: string, c: Caller): V2Listener => {
    const found = inScope(state.listeners.get(arn), c);
    if (found === undefined) throw listenerNotFound();
    return found;
  };
  /** The state as a read sees it: provisioning until its time is up. */
  const lbXml = (l: V2Lb, c: Caller) => ({
    LoadBalancerArn: l.id,
    DNSName: l.dnsName,
    CanonicalHostedZoneId: "Z26RNL4JYFTOTI",
    CreatedTime: l.createdAt,
    LoadBalancerName: l.name,
    Scheme: l.scheme,
    VpcId: l.vpcId,
    State:
      c.nowMs < l.activeAtMs
        ? { Code: "provisioning" }
        : l.fails === true
          ? {
              Code: "failed",
              Reason: "The load balancer could not be set up: insufficient capacity in a subnet",
            }
          : { Code: "active" },
    Type: l.type,
    AvailabilityZones: l.subnets.map((s) => ({
      SubnetId: s.subnetId,
      ZoneName: state.subnets.get(s.subnetId)?.az ?? "",
      LoadBalancerAddresses: s.allocationId === undefined ? [] : [{ AllocationId: s.allocationId }],
    })),
    SecurityGroups: [...l.securityGroups],
    IpAddressType: "ipv4",
  });
  const tgXml = (t: TargetGroup) => ({
    TargetGroupArn: t.id,
    TargetGroupName: t.name,
    Protocol: t.protocol,
    Port: t.port,
    VpcId: t.vpcId,
    HealthCheckProtocol: t.healthCheck.protocol,
    HealthCheckPort: t.healthCheck.port,
    HealthCheckEnabled: true,
    HealthCheckIntervalSeconds: t.healthCheck.interval,
    HealthCheckTimeoutSeconds: t.healthCheck.timeout,
    HealthyThresholdCount: t.healthCheck.healthyThreshold,
    UnhealthyThresholdCount: t.healthCheck.unhealthyThreshold,
    ...(t.healthCheck.path !== undefined && { HealthCheckPath: t.healthCheck.path }),
    LoadBalancerArns: state.listeners
      .all(t.account)
      .filter((l) => l.targetGroupArn === t.id)
      .map((l) => l.lbArn)
      .filter((arn, n, all) => all.indexOf(arn) === n),
    TargetType: t.targetType,
    IpAddressType: "ipv4",
  });
  const listenerXml = (l: V2Listener) => ({
    ListenerArn: l.id,
    LoadBalancerArn: l.lbArn,
    Port: l.port,
    Protocol: l.protocol,
    Certificates: l.certificates.map((CertificateArn) => ({ CertificateArn })),
    DefaultActions: [
      {
        Type: "forward",
        TargetGroupArn: l.targetGroupArn,
        ForwardConfig: { TargetGroups: [{ TargetGroupArn: l.targetGroupArn, Weight: 1 }] },
      },
    ],
  });
  const forwardTarget = (input: Decoded, c: Caller): string => {
    const actions = (input.DefaultActions ?? []) as Decoded[];
    const forward = actions.find((a) => a.Type === "forward");
    const arn =
      forward?.TargetGroupArn ??
      ((forward?.ForwardConfig as Decoded | undefined)?.TargetGroups as Decoded[] | undefined)?.[0]
        ?.TargetGroupArn;
    if (actions.length !== 1 || arn === undefined)
      throw badRequest("ValidationError", "a network load balancer listener takes one forward action");
    tg(String(arn), c);
    return String(arn);
  };
  const healthOf = (input: Decoded, base?: TargetGroup["healthCheck"]): TargetGroup["healthCheck"] => ({
    protocol: String(input.HealthCheckProtocol ?? base?.protocol ?? "TCP"),
    port: String(input.HealthCheckPort ?? base?.port ?? "traffic-port"),
    ...((input.HealthCheckPath ?? base?.path) !== undefined && {
      path: String(input.HealthCheckPath ?? base?.path),
    }),
    interval: Number(input.HealthCheckIntervalSeconds ?? base?.interval ?? 30),
    timeout: Number(input.HealthCheckTimeoutSeconds ?? base?.timeout ?? 10),
    healthyThreshold: Number(input.HealthyThresholdCount ?? base?.healthyThreshold ?? 5),
    unhealthyThreshold: Number(input.UnhealthyThresholdCount ?? base?.unhealthyThreshold ?? 2),
  });
  const arn = (c: Caller, kind: string, name: string) =>
    `arn:aws:elasticloadbalancing:${c.region}:${c.account}:${kind}/${name}/${state.hexId("x", 16).slice(2)}`;

  return {
    CreateLoadBalancer(input, c) {
      const name = String(input.Name ?? "");
      if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/.test(name) || name.startsWith("internal-"))
        throw badRequest("ValidationError", `load balancer name '${name}' is not valid`);
      const type = input.Type === undefined ? "application" : String(input.Type);
      if (type !== "network")
        throw badRequest("ValidationError", "this fake serves network load balancers only");
      const existing = state.v2Lbs.inScope(scope(c)).find((l) => l.name === name);
      if (existing !== undefined)
        throw badRequest("DuplicateLoadBalancerName", "A load balancer with the same name already exists");
      const mappings = [
        ...((input.Subnets ?? []) as string[]).map((subnetId) => ({ subnetId })),
        ...((input.SubnetMappings ?? []) as Decoded[]).map((m) => ({
          subnetId: String(m.SubnetId),
          ...(m.AllocationId !== undefined && { allocationId: String(m.AllocationId) }),
        })),
      ];
      if (mappings.length === 0) throw badRequest("ValidationError", "at least one subnet is required");
      const subnets = mappings.map((m) => inScope(state.subnets.get(m.subnetId), c));
      if (subnets.some((s) => s === undefined))
        throw badRequest("SubnetNotFound", "One or more subnets not found");
      const zones = subnets.map((s) => s!.az);
      if (new Set(zones).size !== zones.length)
        throw badRequest(
          "InvalidConfigurationRequest",
          "A load balancer cannot be attached to multiple subnets in the same Availability Zone",
        );
      const groups = (input.SecurityGroups ?? []) as string[];
      for (const g of groups)
        if (inScope(state.securityGroups.get(g), c) === undefined)
          throw badRequest("InvalidSecurityGroup", `security group ${g} not found`);
      groupsWithinQuota(groups);
      const scheme = input.Scheme === "internal" ? "internal" : "internet-facing";
      const item: V2Lb = {
        id: arn(c, "loadbalancer/net", name),
        account: c.account,
        region: c.region,
        tags: tagsFrom(input.Tags),
        name,
        dnsName: `${name}-${state.hexId("x", 10).slice(2)}.elb.${c.region}.amazonaws.com`,
        scheme,
        type: "network",
        vpcId: subnets[0]!.vpcId,
        subnets: mappings,
        securityGroups: groups,
        state: "provisioning",
        activeAtMs: c.nowMs + opts.provisioningMs(),
        ...(opts.nextCreateFails?.() === true && { fails: true }),
        createdAt: new Date(c.nowMs),
        attributes: { "load_balancing.cross_zone.enabled": "false" },
      };
      state.v2Lbs.insert(item, c.nowMs);
      return { LoadBalancers: [lbXml(item, c)] };
    },

    DescribeLoadBalancers(input, c) {
      const names = (input.Names ?? []) as string[];
      const arns = (input.LoadBalancerArns ?? []) as string[];
      if (names.length > 0 || arns.length > 0) {
        const all = state.v2Lbs.inScope(scope(c));
        const found = [
          ...names.map((n) => all.find((l) => l.name === n)),
          ...arns.map((a) => inScope(state.v2Lbs.get(a), c)),
        ];
        if (found.some((l) => l === undefined)) throw lbNotFound();
        return { LoadBalancers: found.map((l) => lbXml(l!, c)) };
      }
      const { size, after } = pageOf(input);
      const page = state.v2Lbs.page(scope(c), () => true, size, after);
      return {
        LoadBalancers: page.items.map((l) => lbXml(l, c)),
        ...(page.nextAfterSeq !== undefined && { NextMarker: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    DeleteLoadBalancer(input, c) {
      const l = inScope(state.v2Lbs.get(String(input.LoadBalancerArn)), c);
      if (l === undefined) return {};
      for (const x of state.listeners.inScope(scope(c)))
        if (x.lbArn === l.id) state.listeners.remove(x.id, c.nowMs);
      state.v2Lbs.remove(l.id, c.nowMs);
      for (const g of l.securityGroups) state.lingeringEnis.set(g, c.nowMs + opts.eniLingerMs());
      return {};
    },

    SetSecurityGroups(input, c) {
      const l = lb(String(input.LoadBalancerArn), c);
      const groups = (input.SecurityGroups ?? []) as string[];
      if (l.securityGroups.length === 0 && groups.length > 0)
        throw badRequest(
          "InvalidConfigurationRequest",
          "security groups cannot be added to a network load balancer created without them",
        );
      for (const g of groups)
        if (inScope(state.securityGroups.get(g), c) === undefined)
          throw badRequest("InvalidSecurityGroup", `security group ${g} not found`);
      groupsWithinQuota(groups);
      state.v2Lbs.replace({ ...l, securityGroups: groups }, c.nowMs);
      return { SecurityGroupIds: groups };
    },

    DescribeLoadBalancerAttributes(input, c) {
      const l = lb(String(input.LoadBalancerArn), c);
      return { Attributes: Object.entries(l.attributes).map(([Key, Value]) => ({ Key, Value })) };
    },

    ModifyLoadBalancerAttributes(input, c) {
      const l = lb(String(input.LoadBalancerArn), c);
      const attributes = { ...l.attributes, ...attributesOf(input.Attributes) };
      state.v2Lbs.replace({ ...l, attributes }, c.nowMs);
      return { Attributes: Object.entries(attributes).map(([Key, Value]) => ({ Key, Value })) };
    },

    CreateTargetGroup(input, c) {
      const name = String(input.Name ?? "");
      if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/.test(name))
        throw badRequest("ValidationError", `target group name '${name}' is not valid`);
      const vpcId = String(input.VpcId ?? "");
      if (inScope(state.vpcs.get(vpcId), c) === undefined)
        throw badRequest("ValidationError", `VPC ${vpcId} not found`);
      const protocol = String(input.Protocol ?? "");
      const port = Number(input.Port);
      const targetType = String(input.TargetType ?? "instance");
      const existing = state.targetGroups.inScope(scope(c)).find((t) => t.name === name);
      if (existing !== undefined) {
        // Idempotent with the same settings, as AWS is.
        if (existing.protocol === protocol && existing.port === port && existing.vpcId === vpcId)
          return { TargetGroups: [tgXml(existing)] };
        throw badRequest(
          "DuplicateTargetGroupName",
          "A target group with the same name exists, but with different settings",
        );
      }
      const maxGroups = opts.quotas().targetGroupsPerRegion;
      if (state.targetGroups.inScope(scope(c)).length >= maxGroups)
        throw badRequest(
          "TooManyTargetGroups",
          `You've reached the limit of ${maxGroups} target groups per Region for your account`,
        );
      const item: TargetGroup = {
        id: arn(c, "targetgroup", name),
        account: c.account,
        region: c.region,
        tags: tagsFrom(input.Tags),
        name,
        protocol,
        port,
        vpcId,
        targetType,
        healthCheck: healthOf(input),
        targets: [],
        attributes: { "proxy_protocol_v2.enabled": "false", "deregistration_delay.timeout_seconds": "300" },
      };
      state.targetGroups.insert(item, c.nowMs);
      return { TargetGroups: [tgXml(item)] };
    },

    DescribeTargetGroups(input, c) {
      const names = (input.Names ?? []) as string[];
      const arns = (input.TargetGroupArns ?? []) as string[];
      const all = state.targetGroups.inScope(scope(c));
      if (names.length > 0 || arns.length > 0) {
        const found = [
          ...names.map((n) => all.find((t) => t.name === n)),
          ...arns.map((a) => inScope(state.targetGroups.get(a), c)),
        ];
        if (found.some((t) => t === undefined)) throw tgNotFound();
        return { TargetGroups: found.map((t) => tgXml(t!)) };
      }
      const lbArn = input.LoadBalancerArn === undefined ? undefined : String(input.LoadBalancerArn);
      if (lbArn !== undefined) lb(lbArn, c);
      const attached =
        lbArn === undefined
          ? undefined
          : new Set(
              state.listeners
                .inScope(scope(c))
                .filter((l) => l.lbArn === lbArn)
                .map((l) => l.targetGroupArn),
            );
      if (attached !== undefined && attached.size === 0 && opts.noTargetGroupsNotFound?.() === true)
        throw tgNotFound();
      const { size, after } = pageOf(input);
      const page = state.targetGroups.page(
        scope(c),
        (t) => attached === undefined || attached.has(t.id),
        size,
        after,
      );
      return {
        TargetGroups: page.items.map(tgXml),
        ...(page.nextAfterSeq !== undefined && { NextMarker: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    ModifyTargetGroup(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      const next = { ...t, healthCheck: healthOf(input, t.healthCheck) };
      state.targetGroups.replace(next, c.nowMs);
      return { TargetGroups: [tgXml(next)] };
    },

    DeleteTargetGroup(input, c) {
      const t = inScope(state.targetGroups.get(String(input.TargetGroupArn)), c);
      if (t === undefined) return {};
      if (state.listeners.inScope(scope(c)).some((l) => l.targetGroupArn === t.id))
        throw badRequest(
          "ResourceInUse",
          `Target group '${t.id}' is currently in use by a listener or a rule`,
        );
      state.targetGroups.remove(t.id, c.nowMs);
      return {};
    },

    DescribeTargetGroupAttributes(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      return { Attributes: Object.entries(t.attributes).map(([Key, Value]) => ({ Key, Value })) };
    },

    ModifyTargetGroupAttributes(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      const attributes = { ...t.attributes, ...attributesOf(input.Attributes) };
      state.targetGroups.replace({ ...t, attributes }, c.nowMs);
      return { Attributes: Object.entries(attributes).map(([Key, Value]) => ({ Key, Value })) };
    },

    RegisterTargets(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      const add = ((input.Targets ?? []) as Decoded[]).map((x) => ({
        id: String(x.Id),
        port: Number(x.Port ?? t.port),
      }));
      for (const x of add) {
        const i = inScope(state.instances.get(x.id), c);
        if (i === undefined || i.state === "terminated" || i.vpcId !== t.vpcId)
          throw badRequest(
            "InvalidTarget",
            `The following targets are not in a running state or not in the target group's VPC: ${x.id}`,
          );
      }
      const targets = [
        ...t.targets.filter((h) => !add.some((x) => x.id === h.id && x.port === h.port)),
        ...add,
      ];
      state.targetGroups.replace({ ...t, targets }, c.nowMs);
      return {};
    },

    DeregisterTargets(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      const gone = ((input.Targets ?? []) as Decoded[]).map((x) => ({
        id: String(x.Id),
        port: Number(x.Port ?? t.port),
      }));
      const targets = t.targets.filter((h) => !gone.some((x) => x.id === h.id && x.port === h.port));
      state.targetGroups.replace({ ...t, targets }, c.nowMs);
      return {};
    },

    DescribeTargetHealth(input, c) {
      const t = tg(String(input.TargetGroupArn), c);
      return {
        TargetHealthDescriptions: t.targets.map((x) => ({
          Target: { Id: x.id, Port: x.port },
          HealthCheckPort: t.healthCheck.port === "traffic-port" ? String(x.port) : t.healthCheck.port,
          TargetHealth: { State: "healthy" },
          AdministrativeOverride: {
            State: "no_override",
            Reason: "AdministrativeOverride.NoOverride",
            Description: "No override is currently active on target",
          },
        })),
      };
    },

    CreateListener(input, c) {
      const l = lb(String(input.LoadBalancerArn), c);
      const port = Number(input.Port);
      const protocol = String(input.Protocol ?? "TCP");
      const targetGroupArn = forwardTarget(input, c);
      const certificates = ((input.Certificates ?? []) as Decoded[]).map((x) => String(x.CertificateArn));
      if (protocol === "TLS" && certificates.length === 0)
        throw badRequest("ValidationError", "A certificate is required for a TLS listener");
      const existing = state.listeners.inScope(scope(c)).find((x) => x.lbArn === l.id && x.port === port);
      if (existing !== undefined) {
        if (existing.protocol === protocol && existing.targetGroupArn === targetGroupArn)
          return { Listeners: [listenerXml(existing)] };
        throw badRequest(
          "DuplicateListener",
          "A listener already exists on this port for this load balancer",
        );
      }
      const maxListeners = opts.quotas().nlbListenersPerLoadBalancer;
      if (state.listeners.inScope(scope(c)).filter((x) => x.lbArn === l.id).length >= maxListeners)
        throw badRequest(
          "TooManyListeners",
          `You've reached the limit of ${maxListeners} listeners per load balancer`,
        );
      associationWithinQuota(targetGroupArn, l.id, c);
      const t = tg(targetGroupArn, c);
      if (t.protocol !== (protocol === "TLS" ? "TCP" : protocol) && !(t.protocol === "TCP_UDP"))
        throw badRequest(
          "IncompatibleProtocols",
          `listener protocol ${protocol} does not match target group protocol ${t.protocol}`,
        );
      const item: V2Listener = {
        id: `${l.id.replace(":loadbalancer/", ":listener/")}/${state.hexId("x", 16).slice(2)}`,
        account: c.account,
        region: c.region,
        tags: tagsFrom(input.Tags),
        lbArn: l.id,
        protocol,
        port,
        targetGroupArn,
        certificates,
      };
      state.listeners.insert(item, c.nowMs);
      return { Listeners: [listenerXml(item)] };
    },

    DescribeListeners(input, c) {
      const arns = (input.ListenerArns ?? []) as string[];
      if (arns.length > 0) return { Listeners: arns.map((a) => listenerXml(listener(a, c))) };
      const lbArn = String(input.LoadBalancerArn ?? "");
      lb(lbArn, c);
      const { size, after } = pageOf(input);
      const page = state.listeners.page(scope(c), (l) => l.lbArn === lbArn, size, after);
      return {
        Listeners: page.items.map(listenerXml),
        ...(page.nextAfterSeq !== undefined && { NextMarker: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    ModifyListener(input, c) {
      const l = listener(String(input.ListenerArn), c);
      if (input.DefaultActions !== undefined) associationWithinQuota(forwardTarget(input, c), l.lbArn, c);
      const next: V2Listener = {
        ...l,
        ...(input.Port !== undefined && { port: Number(input.Port) }),
        ...(input.Protocol !== undefined && { protocol: String(input.Protocol) }),
        ...(input.DefaultActions !== undefined && { targetGroupArn: forwardTarget(input, c) }),
        ...(input.Certificates !== undefined && {
          certificates: ((input.Certificates ?? []) as Decoded[]).map((x) => String(x.CertificateArn)),
        }),
      };
      state.listeners.replace(next, c.nowMs);
      return { Listeners: [listenerXml(next)] };
    },

    DeleteListener(input, c) {
      const l = listener(String(input.ListenerArn), c);
      state.listeners.remove(l.id, c.nowMs);
      return {};
    },

    AddTags(input, c) {
      const tags = tagsFrom(input.Tags);
      for (const a of (input.ResourceArns ?? []) as string[]) {
        const table = taggableTable(a);
        const item = table === undefined ? undefined : inScope(table.get(a), c);
        if (table === undefined || item === undefined)
          throw a.includes(":targetgroup/") ? tgNotFound() : lbNotFound();
        table.replace({ ...item, tags: { ...item.tags, ...tags } } as never, c.nowMs);
      }
      return {};
    },

    RemoveTags(input, c) {
      const keys = (input.TagKeys ?? []) as string[];
      for (const a of (input.ResourceArns ?? []) as string[]) {
        const table = taggableTable(a);
        const item = table === undefined ? undefined : inScope(table.get(a), c);
        if (table === undefined || item === undefined)
          throw a.includes(":targetgroup/") ? tgNotFound() : lbNotFound();
        table.replace(
          {
            ...item,
            tags: Object.fromEntries(Object.entries(item.tags).filter(([k]) => !keys.includes(k))),
          } as never,
          c.nowMs,
        );
      }
      return {};
    },

    DescribeTags(input, c) {
      const arns = (input.ResourceArns ?? []) as string[];
      if (arns.length > 20) throw badRequest("ValidationError", "ResourceArns: at most 20 per DescribeTags");
      return {
        TagDescriptions: arns.map((a) => {
          const table = taggableTable(a);
          const item = table === undefined ? undefined : inScope(table.get(a), c);
          if (item === undefined) throw a.includes(":targetgroup/") ? tgNotFound() : lbNotFound();
          return { ResourceArn: a, Tags: tagList(item.tags) };
        }),
      };
    },
  };

  function taggableTable(a: string) {
    if (a.includes(":loadbalancer/")) return state.v2Lbs;
    if (a.includes(":targetgroup/")) return state.targetGroups;
    if (a.includes(":listener/")) return state.listeners;
    return undefined;
  }
}
