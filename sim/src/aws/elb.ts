/**
 * Classic Elastic Load Balancing (2012-06-01) operations of the fake: named load balancers in
 * a VPC's subnets, listeners, a health check, registered instances, attributes, tags.
 */
import { encodeSeqToken, FakeError, parsePageSize, parseSeqToken } from "../fake-kit/index.js";
import type { Handler } from "./ec2.js";
import type { Decoded } from "./model.js";
import type { AwsQuotas } from "./quotas.js";
import {
  type AwsState,
  badRequest,
  type Caller,
  type ClassicLb,
  type ClassicListener,
  inScope,
  tagList,
  tagsFrom,
} from "./state.js";

const notFound = (name: string) =>
  badRequest("LoadBalancerNotFound", `There is no ACTIVE Load Balancer named '${name}'`);

function listenersOf(input: Decoded): ClassicListener[] {
  return ((input.Listeners ?? []) as Decoded[]).map((l) => ({
    protocol: String(l.Protocol).toUpperCase(),
    port: Number(l.LoadBalancerPort),
    instanceProtocol: String(l.InstanceProtocol ?? l.Protocol).toUpperCase(),
    instancePort: Number(l.InstancePort),
    ...(l.SSLCertificateId !== undefined && { certificateId: String(l.SSLCertificateId) }),
  }));
}

const sameListener = (a: ClassicListener, b: ClassicListener) =>
  a.protocol === b.protocol &&
  a.port === b.port &&
  a.instanceProtocol === b.instanceProtocol &&
  a.instancePort === b.instancePort &&
  a.certificateId === b.certificateId;

export function elbHandlers(
  state: AwsState,
  opts: { readonly eniLingerMs: () => number; readonly quotas: () => AwsQuotas },
): Record<string, Handler> {
  /** "Listeners per load balancer" and "Security groups per load balancer" of classic ELB (its model: a 409). */
  const withinQuotas = (listeners: number, groups: number) => {
    const q = opts.quotas();
    if (listeners > q.classicListenersPerLoadBalancer)
      throw new FakeError(
        409,
        "InvalidConfigurationRequest",
        `${listeners} listeners exceed the limit of ${q.classicListenersPerLoadBalancer} listeners per load balancer`,
      );
    if (groups > q.classicSecurityGroupsPerLoadBalancer)
      throw new FakeError(
        409,
        "InvalidConfigurationRequest",
        `${groups} security groups exceed the limit of ${q.classicSecurityGroupsPerLoadBalancer} security groups per load balancer`,
      );
  };
  const lb = (name: string, caller: Caller): ClassicLb => {
    const found = inScope(state.classicLbs.get(`${caller.account}/${caller.region}/${name}`), caller);
    if (found === undefined) throw notFound(name);
    return found;
  };
  const put = (next: ClassicLb, caller: Caller) => state.classicLbs.replace(next, caller.nowMs);
  const listenerXml = (l: ClassicListener) => ({
    Protocol: l.protocol,
    LoadBalancerPort: l.port,
    InstanceProtocol: l.instanceProtocol,
    InstancePort: l.instancePort,
    ...(l.certificateId !== undefined && { SSLCertificateId: l.certificateId }),
  });
  const describe = (l: ClassicLb) => ({
    LoadBalancerName: nameOf(l),
    DNSName: l.dnsName,
    // Route 53 alias target: the DNS name and ELB's hosted zone of the region (us-east-1's here).
    CanonicalHostedZoneName: l.dnsName,
    CanonicalHostedZoneNameID: "Z35SXDOTRQ7X7K",
    ListenerDescriptions: l.listeners.map((x) => ({
      Listener: listenerXml(x),
      PolicyNames: [...(l.listenerPolicies[String(x.port)] ?? [])],
    })),
    Policies: {
      AppCookieStickinessPolicies: [],
      LBCookieStickinessPolicies: [],
      OtherPolicies: Object.keys(l.policies),
    },
    BackendServerDescriptions: Object.entries(l.backendPolicies).map(([port, names]) => ({
      InstancePort: Number(port),
      PolicyNames: [...names],
    })),
    AvailabilityZones: [...l.availabilityZones],
    Subnets: [...l.subnets],
    VPCId: l.vpcId,
    Instances: l.instances.map((InstanceId) => ({ InstanceId })),
    HealthCheck: {
      Target: l.healthCheck.target,
      Interval: l.healthCheck.interval,
      Timeout: l.healthCheck.timeout,
      UnhealthyThreshold: l.healthCheck.unhealthyThreshold,
      HealthyThreshold: l.healthCheck.healthyThreshold,
    },
    SourceSecurityGroup: { OwnerAlias: l.account, GroupName: l.securityGroups[0] ?? "default" },
    SecurityGroups: [...l.securityGroups],
    CreatedTime: l.createdAt,
    Scheme: l.scheme,
  });

  return {
    CreateLoadBalancer(input, caller) {
      const name = String(input.LoadBalancerName ?? "");
      if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/.test(name))
        throw badRequest("ValidationError", `LoadBalancerName ${name} is not valid`);
      const listeners = listenersOf(input);
      const existing = inScope(state.classicLbs.get(`${caller.account}/${caller.region}/${name}`), caller);
      if (existing !== undefined) {
        // Idempotent for the same listeners, as AWS is.
        const same =
          existing.listeners.length === listeners.length &&
          listeners.every((l) => existing.listeners.some((e) => sameListener(e, l)));
        if (!same)
          throw badRequest("DuplicateLoadBalancerName", `Load Balancer named '${name}' already exists`);
        return { DNSName: existing.dnsName };
      }
      const subnets = (input.Subnets ?? []) as string[];
      if (subnets.length === 0) throw badRequest("ValidationError", "Subnets are required in a VPC");
      const found = subnets.map((id) => inScope(state.subnets.get(id), caller));
      const missing = subnets.find((_, n) => found[n] === undefined);
      if (missing !== undefined)
        throw badRequest("SubnetNotFound", `One or more subnets not found: ${missing}`);
      const groups = (input.SecurityGroups ?? []) as string[];
      for (const g of groups)
        if (inScope(state.securityGroups.get(g), caller) === undefined)
          throw badRequest("InvalidSecurityGroup", `security group ${g} not found`);
      withinQuotas(listeners.length, groups.length);
      const scheme = input.Scheme === "internal" ? "internal" : "internet-facing";
      const item: ClassicLb = {
        id: `${caller.account}/${caller.region}/${name}`,
        account: caller.account,
        region: caller.region,
        tags: tagsFrom(input.Tags),
        dnsName: `${scheme === "internal" ? "internal-" : ""}${name}-${caller.account.slice(-6)}.${caller.region}.elb.amazonaws.com`,
        scheme,
        vpcId: found[0]!.vpcId,
        subnets,
        availabilityZones: found.map((s) => s!.az),
        securityGroups: groups,
        listeners,
        healthCheck: {
          target: `TCP:${listeners[0]?.instancePort ?? 80}`,
          interval: 30,
          timeout: 5,
          healthyThreshold: 10,
          unhealthyThreshold: 2,
        },
        instances: [],
        idleTimeout: 60,
        crossZone: false,
        createdAt: new Date(caller.nowMs),
        policies: {},
        backendPolicies: {},
        listenerPolicies: {},
      };
      state.classicLbs.insert(item, caller.nowMs);
      return { DNSName: item.dnsName };
    },

    DescribeLoadBalancers(input, caller) {
      const names = (input.LoadBalancerNames ?? []) as string[];
      if (names.length > 0) return { LoadBalancerDescriptions: names.map((n) => describe(lb(n, caller))) };
      const size = parsePageSize(input.PageSize === undefined ? null : String(input.PageSize), {
        param: "PageSize",
        defaultSize: 400,
        max: 400,
        overMax: "refuse",
        code: "ValidationError",
      });
      const after = parseSeqToken(
        input.Marker === undefined ? null : String(input.Marker),
        "Marker",
        "InvalidNextToken",
      );
      const page = state.classicLbs.page(`${caller.account}/${caller.region}`, () => true, size, after);
      return {
        LoadBalancerDescriptions: page.items.map(describe),
        ...(page.nextAfterSeq !== undefined && { NextMarker: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    DeleteLoadBalancer(input, caller) {
      const id = `${caller.account}/${caller.region}/${String(input.LoadBalancerName ?? "")}`;
      const gone = inScope(state.classicLbs.get(id), caller);
      if (gone !== undefined) {
        state.classicLbs.remove(id, caller.nowMs);
        // Its network interfaces outlive it a while, holding its security groups.
        for (const g of gone.securityGroups) state.lingeringEnis.set(g, caller.nowMs + opts.eniLingerMs());
      }
      return {};
    },

    CreateLoadBalancerListeners(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const add = listenersOf(input);
      for (const x of add) {
        const clash = l.listeners.find((e) => e.port === x.port);
        if (clash !== undefined && !sameListener(clash, x))
          throw badRequest("DuplicateListener", `a listener already exists for port ${x.port}`);
      }
      const listeners = [...l.listeners, ...add.filter((x) => !l.listeners.some((e) => sameListener(e, x)))];
      withinQuotas(listeners.length, l.securityGroups.length);
      put({ ...l, listeners }, caller);
      return {};
    },

    DeleteLoadBalancerListeners(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const ports = (input.LoadBalancerPorts ?? []) as number[];
      put({ ...l, listeners: l.listeners.filter((e) => !ports.includes(e.port)) }, caller);
      return {};
    },

    ConfigureHealthCheck(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const h = input.HealthCheck as Decoded;
      const healthCheck = {
        target: String(h.Target),
        interval: Number(h.Interval),
        timeout: Number(h.Timeout),
        healthyThreshold: Number(h.HealthyThreshold),
        unhealthyThreshold: Number(h.UnhealthyThreshold),
      };
      if (healthCheck.timeout >= healthCheck.interval)
        throw badRequest("ValidationError", "HealthCheck Timeout must be less than Interval");
      put({ ...l, healthCheck }, caller);
      return {
        HealthCheck: {
          Target: healthCheck.target,
          Interval: healthCheck.interval,
          Timeout: healthCheck.timeout,
          UnhealthyThreshold: healthCheck.unhealthyThreshold,
          HealthyThreshold: healthCheck.healthyThreshold,
        },
      };
    },

    RegisterInstancesWithLoadBalancer(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const ids = ((input.Instances ?? []) as Decoded[]).map((i) => String(i.InstanceId));
      for (const id of ids) {
        const i = inScope(state.instances.get(id), caller);
        if (i === undefined || i.state === "terminated" || i.vpcId !== l.vpcId)
          throw badRequest(
            "InvalidInstance",
            `The instance ${id} is not in the load balancer's VPC or does not exist`,
          );
      }
      const instances = [...new Set([...l.instances, ...ids])];
      put({ ...l, instances }, caller);
      return { Instances: instances.map((InstanceId) => ({ InstanceId })) };
    },

    DeregisterInstancesFromLoadBalancer(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const ids = ((input.Instances ?? []) as Decoded[]).map((i) => String(i.InstanceId));
      const stranger = ids.find((id) => !l.instances.includes(id));
      if (stranger !== undefined)
        throw badRequest("InvalidInstance", `${stranger} is not registered with ${nameOf(l)}`);
      const instances = l.instances.filter((i) => !ids.includes(i));
      put({ ...l, instances }, caller);
      return { Instances: instances.map((InstanceId) => ({ InstanceId })) };
    },

    DescribeLoadBalancerAttributes(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      return {
        LoadBalancerAttributes: {
          CrossZoneLoadBalancing: { Enabled: l.crossZone },
          ConnectionSettings: { IdleTimeout: l.idleTimeout },
          ConnectionDraining: { Enabled: false, Timeout: 300 },
          AccessLog: { Enabled: false },
          AdditionalAttributes: [{ Key: "elb.http.desyncmitigationmode", Value: "defensive" }],
        },
      };
    },

    ModifyLoadBalancerAttributes(input, caller) {
      const name = String(input.LoadBalancerName);
      const l = lb(name, caller);
      const a = input.LoadBalancerAttributes as Decoded;
      const idle = (a.ConnectionSettings as Decoded | undefined)?.IdleTimeout;
      const cross = (a.CrossZoneLoadBalancing as Decoded | undefined)?.Enabled;
      const next = {
        ...l,
        ...(idle !== undefined && { idleTimeout: Number(idle) }),
        ...(cross !== undefined && { crossZone: cross === true }),
      };
      put(next, caller);
      return {
        LoadBalancerName: name,
        LoadBalancerAttributes: {
          CrossZoneLoadBalancing: { Enabled: next.crossZone },
          ConnectionSettings: { IdleTimeout: next.idleTimeout },
        },
      };
    },

    ApplySecurityGroupsToLoadBalancer(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const groups = (input.SecurityGroups ?? []) as string[];
      for (const g of groups)
        if (inScope(state.securityGroups.get(g), caller) === undefined)
          throw badRequest("InvalidSecurityGroup", `security group ${g} not found`);
      withinQuotas(l.listeners.length, groups.length);
      for (const g of l.securityGroups)
        if (!groups.includes(g)) state.lingeringEnis.set(g, caller.nowMs + opts.eniLingerMs());
      put({ ...l, securityGroups: groups }, caller);
      return { SecurityGroups: groups };
    },

    CreateLoadBalancerPolicy(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const attributes: Record<string, string> = {};
      for (const a of (input.PolicyAttributes ?? []) as Decoded[])
        attributes[String(a.AttributeName)] = String(a.AttributeValue);
      const name = String(input.PolicyName);
      if (l.policies[name] !== undefined)
        throw badRequest("DuplicatePolicyName", `policy ${name} already exists`);
      put(
        { ...l, policies: { ...l.policies, [name]: { type: String(input.PolicyTypeName), attributes } } },
        caller,
      );
      return {};
    },

    SetLoadBalancerPoliciesForBackendServer(input, caller) {
      const l = lb(String(input.LoadBalancerName), caller);
      const names = (input.PolicyNames ?? []) as string[];
      for (const n of names)
        if (l.policies[n] === undefined) throw badRequest("PolicyNotFound", `no policy ${n}`);
      const port = String(input.InstancePort);
      const backendPolicies = { ...l.backendPolicies, [port]: names };
      if (names.length === 0) delete backendPolicies[port];
      put({ ...l, backendPolicies }, caller);
      return {};
    },

    AddTags(input, caller) {
      const tags = tagsFrom(input.Tags);
      for (const n of (input.LoadBalancerNames ?? []) as string[]) {
        const l = lb(n, caller);
        put({ ...l, tags: { ...l.tags, ...tags } }, caller);
      }
      return {};
    },

    RemoveTags(input, caller) {
      const keys = ((input.Tags ?? []) as Decoded[]).map((t) => String(t.Key));
      for (const n of (input.LoadBalancerNames ?? []) as string[]) {
        const l = lb(n, caller);
        put(
          { ...l, tags: Object.fromEntries(Object.entries(l.tags).filter(([k]) => !keys.includes(k))) },
          caller,
        );
      }
      return {};
    },

    DescribeTags(input, caller) {
      const names = (input.LoadBalancerNames ?? []) as string[];
      if (names.length > 20)
        throw badRequest("ValidationError", "LoadBalancerNames: at most 20 names per DescribeTags");
      return {
        TagDescriptions: names.map((n) => ({ LoadBalancerName: n, Tags: tagList(lb(n, caller).tags) })),
      };
    },
  };
}

export function nameOf(l: ClassicLb): string {
  return l.id.slice(l.id.lastIndexOf("/") + 1);
}
