/**
 * Classic ELBs as cloud-provider-aws builds them (its default): listeners per Service port,
 * a health check, registered instances, attributes, proxy protocol by backend policy, the
 * managed security group and the node-group rules (lb-network.ts).
 */

import type { Instance } from "@aws-sdk/client-ec2";
import {
  AddTagsCommand,
  ApplySecurityGroupsToLoadBalancerCommand,
  ConfigureHealthCheckCommand,
  CreateLoadBalancerCommand,
  CreateLoadBalancerListenersCommand,
  CreateLoadBalancerPolicyCommand,
  DeleteLoadBalancerCommand,
  DeleteLoadBalancerListenersCommand,
  DeregisterInstancesFromLoadBalancerCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  type Listener,
  type LoadBalancerDescription,
  ModifyLoadBalancerAttributesCommand,
  paginateDescribeLoadBalancers,
  RegisterInstancesWithLoadBalancerCommand,
  SetLoadBalancerPoliciesForBackendServerCommand,
} from "@aws-sdk/client-elastic-load-balancing";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import type { LbOwner, LoadBalancerState, ServiceTarget } from "../../provider.js";
import { type AwsLbSettings, isSslPort } from "./annotations.js";
import type { AwsApi } from "./api.js";
import { hasCode } from "./errors.js";
import type { AwsLbSpec } from "./health.js";
import {
  awsLoadBalancerName,
  type EnsuredLb,
  type LbNetwork,
  type ListingPage,
  pathMtuRule,
  type Tags,
  tagList,
  tagsOf,
  tagsToAdd,
  whyNotOwned,
} from "./lb-network.js";

export const isGone = (err: unknown) => hasCode(err, "LoadBalancerNotFound", "AccessPointNotFoundException");

/** ELB's largest page (PageSize). */
const ELB_PAGE_MAX = 400;

/** Upstream's proxy protocol policy name. */
export const PROXY_PROTOCOL_POLICY = "k8s-proxyprotocol-enabled";

/** Upstream's backendProtocolMapping: the listener protocol for a TLS port by backend protocol. */
const SSL_LISTENER: Readonly<Record<string, string>> = {
  https: "HTTPS",
  http: "HTTPS",
  ssl: "SSL",
  tcp: "SSL",
};

export function classicListeners(spec: AwsLbSpec, s: AwsLbSettings): Listener[] {
  return spec.listeners.map((l) => {
    if (l.protocol === "UDP" || l.protocol === "SCTP")
      throw new CloudError(`a classic ELB cannot carry ${l.protocol} (port ${l.port}): use an NLB`);
    if (isSslPort(s, l.port, l.name)) {
      const backend = s.backendProtocol ?? "tcp";
      return {
        Protocol: s.backendProtocol === undefined ? "SSL" : (SSL_LISTENER[backend] ?? "SSL"),
        LoadBalancerPort: l.port,
        InstanceProtocol: s.backendProtocol === undefined ? "TCP" : backend.toUpperCase(),
        InstancePort: l.nodePort,
        SSLCertificateId: s.sslCert,
      };
    }
    if (l.protocol === "HTTPS")
      throw new CloudError(`port ${l.port} is HTTPS but the Service names no ssl-cert`);
    const http = l.protocol === "HTTP" || s.backendProtocol === "http";
    return {
      Protocol: http ? "HTTP" : "TCP",
      LoadBalancerPort: l.port,
      InstanceProtocol: http ? "HTTP" : "TCP",
      InstancePort: l.nodePort,
    };
  });
}

const listenerKey = (l: Listener) =>
  `${(l.Protocol ?? "").toUpperCase()}|${l.LoadBalancerPort}|${(l.InstanceProtocol ?? "").toUpperCase()}|${l.InstancePort}|${l.SSLCertificateId ?? ""}`;

function healthTarget(spec: AwsLbSpec, s: AwsLbSettings): string {
  const h = spec.healthCheck;
  const port =
    s.healthCheckPort === undefined || s.healthCheckPort === "traffic-port"
      ? s.healthCheckPort === "traffic-port"
        ? (spec.listeners[0]?.nodePort ?? h.port)
        : h.port
      : Number(s.healthCheckPort);
  // Upstream's target: protocol:port, and the path for HTTP and HTTPS (awsHealthCheck sets it).
  return `${h.protocol}:${port}${h.path}`;
}

/** ELB's target with its protocol in capitals (upstream writes the annotation's as given). */
const normalTarget = (t: string | undefined) => t?.replace(/^[^:]*/, (p) => p.toUpperCase());

export class ClassicElb {
  constructor(
    private readonly api: AwsApi,
    private readonly net: LbNetwork,
  ) {}

  /** The classic ELB of that name, or undefined when AWS says there is none. */
  private async describe(name: string, signal?: AbortSignal): Promise<LoadBalancerDescription | undefined> {
    try {
      const out = await this.api.call("elb.get", signal, (abortSignal) =>
        this.api.elb.send(new DescribeLoadBalancersCommand({ LoadBalancerNames: [name] }), { abortSignal }),
      );
      const lb = out.LoadBalancerDescriptions?.find((d) => d.LoadBalancerName === name);
      if (lb === undefined)
        throw new SuspectAnswerError(`DescribeLoadBalancers(${name}) answered without it`);
      return lb;
    } catch (err) {
      if (isGone(err)) return undefined;
      throw err;
    }
  }

  /**
   * The owner's classic ELB with its tags; CloudError, before any write, when the name is taken
   * by someone else or by cloud-provider-aws without the cluster's adoptFrom (whyNotOwned).
   */
  async find(
    owner: ServiceTarget,
    signal?: AbortSignal,
  ): Promise<{ lb: LoadBalancerDescription; tags: Tags } | undefined> {
    const name = awsLoadBalancerName(owner.serviceUid);
    const lb = await this.describe(name, signal);
    if (lb === undefined) return undefined;
    const tags = (await this.describeTags([name], signal)).get(name) ?? {};
    const why = whyNotOwned(tags, owner);
    if (why !== undefined) throw new CloudError(`load balancer ${name} exists but ${why}: not using it`);
    return { lb, tags };
  }

  state(owner: LbOwner, lb: LoadBalancerDescription): LoadBalancerState {
    return {
      id: lb.LoadBalancerName ?? "",
      name: lb.LoadBalancerName ?? "",
      owner,
      ingress: lb.DNSName ? [{ hostname: lb.DNSName }] : [],
      backends: (lb.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])).sort(),
    };
  }

  /** Everything but the digests, which the caller records last (EnsuredLb). */
  async ensure(
    owner: ServiceTarget,
    spec: AwsLbSpec,
    s: AwsLbSettings,
    found: { lb: LoadBalancerDescription; tags: Tags } | undefined,
    signal?: AbortSignal,
  ): Promise<EnsuredLb> {
    const wantListeners = classicListeners(spec, s);
    const base = await this.net.prepare(
      owner,
      spec,
      s,
      "ELB",
      found?.lb.VPCId,
      (cidr) => [
        ...spec.listeners.map((l) => ({ protocol: "tcp", fromPort: l.port, toPort: l.port, cidr })),
        // Upstream's ICMP "fragmentation needed", for path MTU discovery (ICMPv6's for IPv6).
        pathMtuRule(cidr),
      ],
      signal,
    );
    const { name, tags, groups } = base;
    let lb = found?.lb;
    if (lb === undefined) {
      const subnets = await this.net.subnets(base.vpcId, spec.internal, owner, s.subnets, signal);
      await this.api.call("elb.create", signal, (abortSignal) =>
        this.api.elb.send(
          new CreateLoadBalancerCommand({
            LoadBalancerName: name,
            Listeners: wantListeners,
            Subnets: subnets.map((x) => x.subnetId),
            SecurityGroups: [...groups],
            ...(spec.internal && { Scheme: "internal" }),
            Tags: tagList(tags),
          }),
          { abortSignal },
        ),
      );
      lb = await this.describe(name, signal);
      if (lb === undefined)
        throw new SuspectAnswerError(`load balancer ${name} not found right after its creation`);
    } else {
      if ((lb.Scheme === "internal") !== spec.internal)
        throw new CloudError(
          `load balancer ${name} is ${lb.Scheme}; AWS cannot change a scheme in place (delete the Service's load balancer to recreate it)`,
        );
      await this.tag(name, found?.tags ?? {}, tags, signal);
      await this.update(lb, wantListeners, groups, signal);
    }
    await this.ensureHealthCheck(name, lb, spec, s, signal);
    await this.ensureAttributes(name, spec, s, signal);
    await this.ensureProxyProtocol(name, lb, spec, signal);
    await this.syncInstances(lb, base.backends, signal);
    // With user-given groups (no managed one), upstream admits the first of them on the nodes.
    await this.net.finish(base, owner, signal, base.managedGroup ?? s.securityGroups?.[0]);
    return {
      ingress: lb.DNSName ? [{ hostname: lb.DNSName }] : [],
      ref: name,
      tags: { ...found?.tags, ...tags },
    };
  }

  /** AddTags of what `want` has and `have` lacks. */
  async tag(name: string, have: Readonly<Tags>, want: Readonly<Tags>, signal?: AbortSignal): Promise<void> {
    const add = tagsToAdd(have, want);
    if (add.length === 0) return;
    await this.api.call("elb.tag", signal, (abortSignal) =>
      this.api.elb.send(new AddTagsCommand({ LoadBalancerNames: [name], Tags: add }), { abortSignal }),
    );
  }

  private async update(
    lb: LoadBalancerDescription,
    want: readonly Listener[],
    groups: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const name = lb.LoadBalancerName ?? "";
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
    const kept = new Set(have.filter((l) => wantKeys.has(listenerKey(l))).map(listenerKey));
    const add = want.filter((l) => !kept.has(listenerKey(l)));
    if (add.length > 0)
      await this.api.call("elb.listeners.create", signal, (abortSignal) =>
        this.api.elb.send(
          new CreateLoadBalancerListenersCommand({ LoadBalancerName: name, Listeners: add }),
          {
            abortSignal,
          },
        ),
      );
    const current = [...(lb.SecurityGroups ?? [])].sort();
    if (current.join(",") !== [...groups].sort().join(","))
      await this.api.call("elb.securityGroups.apply", signal, (abortSignal) =>
        this.api.elb.send(
          new ApplySecurityGroupsToLoadBalancerCommand({
            LoadBalancerName: name,
            SecurityGroups: [...groups],
          }),
          { abortSignal },
        ),
      );
  }

  private async ensureHealthCheck(
    name: string,
    lb: LoadBalancerDescription,
    spec: AwsLbSpec,
    s: AwsLbSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const h = spec.healthCheck;
    // ELB wants the timeout below the interval.
    const timeout = Math.min(h.timeoutSeconds, Math.max(1, h.intervalSeconds - 1));
    const want = {
      Target: healthTarget(spec, s),
      Interval: h.intervalSeconds,
      Timeout: timeout,
      HealthyThreshold: h.healthyThreshold,
      UnhealthyThreshold: h.unhealthyThreshold,
    };
    const hc = lb.HealthCheck;
    if (
      hc !== undefined &&
      normalTarget(hc.Target) === want.Target &&
      hc.Interval === want.Interval &&
      hc.Timeout === want.Timeout &&
      hc.HealthyThreshold === want.HealthyThreshold &&
      hc.UnhealthyThreshold === want.UnhealthyThreshold
    )
      return;
    await this.api.call("elb.healthCheck.configure", signal, (abortSignal) =>
      this.api.elb.send(new ConfigureHealthCheckCommand({ LoadBalancerName: name, HealthCheck: want }), {
        abortSignal,
      }),
    );
  }

  private async ensureAttributes(
    name: string,
    spec: AwsLbSpec,
    s: AwsLbSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const out = await this.api.call("elb.attributes", signal, (abortSignal) =>
      this.api.elb.send(new DescribeLoadBalancerAttributesCommand({ LoadBalancerName: name }), {
        abortSignal,
      }),
    );
    const a = out.LoadBalancerAttributes;
    const idleOk = a?.ConnectionSettings?.IdleTimeout === spec.idleTimeoutSeconds;
    const crossOk = s.crossZone === undefined || a?.CrossZoneLoadBalancing?.Enabled === s.crossZone;
    if (idleOk && crossOk) return;
    await this.api.call("elb.attributes.modify", signal, (abortSignal) =>
      this.api.elb.send(
        new ModifyLoadBalancerAttributesCommand({
          LoadBalancerName: name,
          LoadBalancerAttributes: {
            ConnectionSettings: { IdleTimeout: spec.idleTimeoutSeconds },
            ...(s.crossZone !== undefined && { CrossZoneLoadBalancing: { Enabled: s.crossZone } }),
          },
        }),
        { abortSignal },
      ),
    );
  }

  /** Upstream's proxy protocol: one ProxyProtocolPolicyType policy, set on every instance port (or cleared). */
  private async ensureProxyProtocol(
    name: string,
    lb: LoadBalancerDescription,
    spec: AwsLbSpec,
    signal?: AbortSignal,
  ): Promise<void> {
    const want = spec.listeners.some((l) => l.proxyProtocol);
    const policies = lb.Policies?.OtherPolicies ?? [];
    if (want && !policies.includes(PROXY_PROTOCOL_POLICY)) {
      try {
        await this.api.call("elb.policy.create", signal, (abortSignal) =>
          this.api.elb.send(
            new CreateLoadBalancerPolicyCommand({
              LoadBalancerName: name,
              PolicyName: PROXY_PROTOCOL_POLICY,
              PolicyTypeName: "ProxyProtocolPolicyType",
              PolicyAttributes: [{ AttributeName: "ProxyProtocol", AttributeValue: "true" }],
            }),
            { abortSignal },
          ),
        );
      } catch (err) {
        if (!hasCode(err, "DuplicatePolicyName", "DuplicatePolicyNameException")) throw err;
      }
    }
    const byPort = new Map(
      (lb.BackendServerDescriptions ?? []).map((b) => [b.InstancePort, b.PolicyNames ?? []]),
    );
    const used = new Set(spec.listeners.map((l) => l.nodePort));
    const set = (port: number, policies: string[]) =>
      this.api.call("elb.policy.apply", signal, (abortSignal) =>
        this.api.elb.send(
          new SetLoadBalancerPoliciesForBackendServerCommand({
            LoadBalancerName: name,
            InstancePort: port,
            PolicyNames: policies,
          }),
          { abortSignal },
        ),
      );
    for (const port of [...used].sort((a, b) => a - b)) {
      const has = (byPort.get(port) ?? []).includes(PROXY_PROTOCOL_POLICY);
      if (has !== want) await set(port, want ? [PROXY_PROTOCOL_POLICY] : []);
    }
    // As upstream: the policies of an instance port no listener uses any more are cleared, so a
    // listener added on it later does not inherit them.
    for (const [port, names] of [...byPort].sort(([a], [b]) => (a ?? 0) - (b ?? 0)))
      if (port !== undefined && !used.has(port) && names.length > 0) await set(port, []);
  }

  async syncInstances(
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

  async updateBackends(
    owner: ServiceTarget,
    found: { lb: LoadBalancerDescription },
    backendIds: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const backends = await this.net.instances(backendIds, signal);
    await this.syncInstances(found.lb, backends, signal);
    const { LoadBalancerName: name, SecurityGroups: groups, VPCId: vpcId } = found.lb;
    await this.net.followBackends({ name, groups, vpcId }, owner, backends, signal, true);
  }

  /**
   * One page of the region's classic ELBs (DescribeLoadBalancers, resumed at `marker`) with
   * their tags (DescribeTags by 20 names), as the owned ones of the listing.
   */
  async listingPage(marker: string | undefined, signal?: AbortSignal): Promise<ListingPage> {
    const page = await this.api.onePage(
      paginateDescribeLoadBalancers,
      this.api.elb,
      "elb.list",
      {},
      { pageSize: ELB_PAGE_MAX, token: marker, signal },
    );
    return {
      lbs: (page.LoadBalancerDescriptions ?? []).map((d) => ({
        ref: d.LoadBalancerName ?? "",
        name: d.LoadBalancerName ?? "",
        dnsName: d.DNSName,
      })),
      ...(page.NextMarker && { next: page.NextMarker }),
    };
  }

  async describeTags(names: readonly string[], signal?: AbortSignal): Promise<Map<string, Tags>> {
    const out = await this.api.call("elb.tags", signal, (abortSignal) =>
      this.api.elb.send(new DescribeTagsCommand({ LoadBalancerNames: [...names] }), { abortSignal }),
    );
    return new Map(
      (out.TagDescriptions ?? []).flatMap((d) =>
        d.LoadBalancerName ? [[d.LoadBalancerName, tagsOf(d.Tags)] as const] : [],
      ),
    );
  }

  /**
   * The load balancer itself (its group goes after, see AwsLoadBalancers.ensureDeleted). With
   * user-given groups, first the rule admitting the first of them on the cluster's groups, as
   * upstream's delete revokes it; the user's groups themselves stay.
   */
  async deleteLoadBalancer(owner: ServiceTarget, signal?: AbortSignal): Promise<void> {
    const found = await this.find(owner, signal);
    if (found === undefined) return;
    const name = awsLoadBalancerName(owner.serviceUid);
    const { SecurityGroups: groups } = found.lb;
    const admitted = await this.net.nodeRuleGroup({ name, groups }, owner, true, signal);
    if (admitted?.managed === false) await this.net.revokeNodeRules(admitted.id, signal, owner);
    await this.api.call("elb.delete", signal, (abortSignal) =>
      this.api.elb.send(new DeleteLoadBalancerCommand({ LoadBalancerName: name }), { abortSignal }),
    );
  }
}
