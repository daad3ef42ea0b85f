/**
 * Network load balancers as cloud-provider-aws builds them (`aws-load-balancer-type: nlb`):
 * internet-facing or internal, a target group per Service port with instance targets on the
 * nodePort (health checks on the traffic port, or on healthCheckNodePort for
 * externalTrafficPolicy Local), a listener per port forwarding to it, and upstream's managed
 * security group mode. Target groups are found through the load balancer's listeners, so
 * upstream's are adopted; ours are named from (owner, port, nodePort, protocol), so an
 * interrupted create is found again by name.
 */
import { createHash } from "node:crypto";
import type { Instance } from "@aws-sdk/client-ec2";
import {
  AddTagsCommand,
  CreateListenerCommand,
  CreateLoadBalancerCommand,
  CreateTargetGroupCommand,
  DeleteListenerCommand,
  DeleteLoadBalancerCommand,
  DeleteTargetGroupCommand,
  DeregisterTargetsCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  DescribeTargetGroupAttributesCommand,
  DescribeTargetGroupsCommand,
  DescribeTargetHealthCommand,
  type Listener,
  type LoadBalancer,
  ModifyListenerCommand,
  ModifyLoadBalancerAttributesCommand,
  ModifyTargetGroupAttributesCommand,
  ModifyTargetGroupCommand,
  paginateDescribeListeners,
  paginateDescribeLoadBalancers,
  paginateDescribeTargetGroups,
  RegisterTargetsCommand,
  SetSecurityGroupsCommand,
  type TargetGroup,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { CloudError, OperationFailedError, SuspectAnswerError } from "../../errors.js";
import { FAILURE_REPORTED_TAG } from "../../naming.js";
import {
  type InProgress,
  inProgress,
  type LbListener,
  type LbOwner,
  type LoadBalancerState,
  type ServiceTarget,
} from "../../provider.js";
import { AWS_ANNOTATION_PREFIX, type AwsLbSettings, isSslPort } from "./annotations.js";
import { type AwsApi, allPages } from "./api.js";
import { hasCode } from "./errors.js";
import type { AwsLbSpec } from "./health.js";
import {
  awsLoadBalancerName,
  type EnsuredLb,
  type LbNetwork,
  type ListingPage,
  ownedBy,
  type Tags,
  tagList,
  tagsByBatch,
  tagsOf,
  tagsToAdd,
  whyNotOwned,
} from "./lb-network.js";
import { type NlbNodePort, NlbNodeRules, nlbNodeRules } from "./nlb-node-rules.js";

const PROVISIONING_POLL_MS = 5_000;
/** A load balancer or target group that is not (any more). */
export const isGone = (err: unknown) =>
  hasCode(
    err,
    "LoadBalancerNotFound",
    "LoadBalancerNotFoundException",
    "TargetGroupNotFound",
    "TargetGroupNotFoundException",
  );

/** ELBv2's largest page (PageSize). */
const ELBV2_PAGE_MAX = 400;

/** Our target group names: k8s-<owner hash>-<port>-<nodePort>-<t|u|s>, unique per owner and listener. */
function ownerHash(owner: LbOwner): string {
  return createHash("sha256").update(`${owner.cluster}\u0000${owner.serviceUid}`).digest("hex").slice(0, 12);
}

export function targetGroupName(owner: LbOwner, port: number, nodePort: number, protocol: string): string {
  return `k8s-${ownerHash(owner)}-${port}-${nodePort}-${protocol.toLowerCase()[0]}`;
}

interface WantedListener {
  readonly port: number;
  readonly nodePort: number;
  /** Listener protocol. */
  readonly protocol: "TCP" | "UDP" | "TLS";
  /** Target group protocol (TLS for an ssl backend). */
  readonly targetProtocol: "TCP" | "UDP" | "TLS";
  readonly certificate?: string;
}

function wantedListeners(spec: AwsLbSpec, s: AwsLbSettings): WantedListener[] {
  return spec.listeners.map((l: LbListener) => {
    if (l.protocol === "SCTP")
      throw new CloudError(`an NLB carries TCP, UDP and TLS, not SCTP (port ${l.port})`);
    if (l.protocol === "UDP")
      return { port: l.port, nodePort: l.nodePort, protocol: "UDP", targetProtocol: "UDP" };
    if (isSslPort(s, l.port, l.name))
      return {
        port: l.port,
        nodePort: l.nodePort,
        protocol: "TLS",
        targetProtocol: s.backendProtocol === "ssl" ? "TLS" : "TCP",
        ...(s.sslCert !== undefined && { certificate: s.sslCert }),
      };
    if (l.protocol === "HTTPS")
      throw new CloudError(`port ${l.port} is HTTPS but the Service names no ssl-cert`);
    return { port: l.port, nodePort: l.nodePort, protocol: "TCP", targetProtocol: "TCP" };
  });
}

interface HealthWant {
  readonly HealthCheckProtocol: "TCP" | "HTTP" | "HTTPS";
  readonly HealthCheckPort: string;
  readonly HealthCheckPath?: string;
  readonly HealthCheckIntervalSeconds: number;
  readonly HealthCheckTimeoutSeconds: number;
  readonly HealthyThresholdCount: number;
  readonly UnhealthyThresholdCount: number;
}

function healthOf(spec: AwsLbSpec, s: AwsLbSettings): HealthWant {
  const h = spec.healthCheck;
  // As upstream's buildNLBHealthCheckConfiguration, which refuses any other protocol.
  if (h.protocol === "SSL")
    throw new CloudError(
      `${AWS_ANNOTATION_PREFIX}healthcheck-protocol: SSL: an NLB checks TCP, HTTP or HTTPS`,
    );
  // externalTrafficPolicy Local checks healthCheckNodePort; otherwise each target group its
  // own traffic port, whatever the protocol (upstream's default port).
  const port = s.healthCheckPort ?? (h.local ? String(h.port) : "traffic-port");
  return {
    HealthCheckProtocol: h.protocol,
    HealthCheckPort: port,
    ...(h.protocol !== "TCP" && { HealthCheckPath: h.path }),
    HealthCheckIntervalSeconds: h.intervalSeconds,
    HealthCheckTimeoutSeconds: Math.min(h.timeoutSeconds, h.intervalSeconds),
    HealthyThresholdCount: h.healthyThreshold,
    UnhealthyThresholdCount: h.unhealthyThreshold,
  };
}

function healthDiffers(tg: TargetGroup, want: HealthWant): boolean {
  return (
    tg.HealthCheckProtocol !== want.HealthCheckProtocol ||
    tg.HealthCheckPort !== want.HealthCheckPort ||
    (want.HealthCheckPath !== undefined && tg.HealthCheckPath !== want.HealthCheckPath) ||
    tg.HealthCheckIntervalSeconds !== want.HealthCheckIntervalSeconds ||
    tg.HealthCheckTimeoutSeconds !== want.HealthCheckTimeoutSeconds ||
    tg.HealthyThresholdCount !== want.HealthyThresholdCount ||
    tg.UnhealthyThresholdCount !== want.UnhealthyThresholdCount
  );
}

const forwardsTo = (l: Listener): string | undefined =>
  l.DefaultActions?.find((a) => a.Type === "forward")?.TargetGroupArn ??
  l.DefaultActions?.[0]?.ForwardConfig?.TargetGroups?.[0]?.TargetGroupArn;

export class Nlb {
  private readonly nodeRules: NlbNodeRules;

  constructor(
    private readonly api: AwsApi,
    private readonly net: LbNetwork,
  ) {
    this.nodeRules = new NlbNodeRules(net);
  }

  /** The owner's NLB with its tags; CloudError, before any write, as ClassicElb.find. */
  async find(
    owner: ServiceTarget,
    signal?: AbortSignal,
  ): Promise<{ lb: LoadBalancer; tags: Tags } | undefined> {
    const name = awsLoadBalancerName(owner.serviceUid);
    let lb: LoadBalancer | undefined;
    try {
      const out = await this.api.call("nlb.get", signal, (abortSignal) =>
        this.api.elbv2.send(new DescribeLoadBalancersCommand({ Names: [name] }), { abortSignal }),
      );
      lb = out.LoadBalancers?.find((l) => l.LoadBalancerName === name);
      if (lb?.LoadBalancerArn === undefined)
        throw new SuspectAnswerError(`DescribeLoadBalancers(${name}) answered without it`);
    } catch (err) {
      if (isGone(err)) return undefined;
      throw err;
    }
    const arn = lb.LoadBalancerArn;
    const tags = (await this.describeTags([arn], signal)).get(arn) ?? {};
    const why = whyNotOwned(tags, owner);
    if (why !== undefined) throw new CloudError(`load balancer ${name} exists but ${why}: not using it`);
    return { lb, tags };
  }

  private listeners(lbArn: string, signal?: AbortSignal): Promise<Listener[]> {
    return allPages(
      paginateDescribeListeners(
        { client: this.api.paged(this.api.elbv2, "nlb.listeners", signal), pageSize: ELBV2_PAGE_MAX },
        { LoadBalancerArn: lbArn },
      ),
      (page) => page.Listeners,
    );
  }

  /**
   * The target groups the load balancer's listeners use. Some AWS-compatible endpoints answer
   * TargetGroupNotFound rather than [] on this filter for one with none yet: on this filter
   * alone that means none (the load balancer's own absence is LoadBalancerNotFound).
   */
  private async attachedGroups(lbArn: string, signal?: AbortSignal): Promise<TargetGroup[]> {
    try {
      return await allPages(
        paginateDescribeTargetGroups(
          { client: this.api.paged(this.api.elbv2, "nlb.targetGroups", signal), pageSize: ELBV2_PAGE_MAX },
          { LoadBalancerArn: lbArn },
        ),
        (page) => page.TargetGroups,
      );
    } catch (err) {
      if (hasCode(err, "TargetGroupNotFound", "TargetGroupNotFoundException")) return [];
      throw err;
    }
  }

  private async targets(tgArn: string, signal?: AbortSignal): Promise<{ Id: string; Port?: number }[]> {
    const out = await this.api.call("nlb.targets", signal, (abortSignal) =>
      this.api.elbv2.send(new DescribeTargetHealthCommand({ TargetGroupArn: tgArn }), { abortSignal }),
    );
    return (out.TargetHealthDescriptions ?? []).flatMap((d) =>
      d.Target?.Id === undefined
        ? []
        : [{ Id: d.Target.Id, ...(d.Target.Port !== undefined && { Port: d.Target.Port }) }],
    );
  }

  async state(owner: LbOwner, lb: LoadBalancer, signal?: AbortSignal): Promise<LoadBalancerState> {
    const groups =
      lb.LoadBalancerArn === undefined ? [] : await this.attachedGroups(lb.LoadBalancerArn, signal);
    const ids = new Set<string>();
    for (const tg of groups)
      if (tg.TargetGroupArn !== undefined)
        for (const t of await this.targets(tg.TargetGroupArn, signal)) ids.add(t.Id);
    return {
      id: lb.LoadBalancerArn ?? "",
      name: lb.LoadBalancerName ?? "",
      owner,
      ingress: lb.DNSName ? [{ hostname: lb.DNSName }] : [],
      backends: [...ids].sort(),
    };
  }

  /** Everything but the digests, which the caller records last (EnsuredLb); in progress while provisioning. */
  async ensure(
    owner: ServiceTarget,
    spec: AwsLbSpec,
    s: AwsLbSettings,
    found: { lb: LoadBalancer; tags: Tags } | undefined,
    signal?: AbortSignal,
  ): Promise<EnsuredLb | InProgress> {
    if (found?.lb.State?.Code === "failed") return this.replaceFailed(owner, found, signal);
    const want = wantedListeners(spec, s);
    const health = healthOf(spec, s);
    // Made without security groups (upstream's default mode): AWS cannot add any, so no managed
    // group for it; its node-group rules admit the clients instead.
    const groupless = found !== undefined && (found.lb.SecurityGroups ?? []).length === 0;
    const base = await this.net.prepare(
      owner,
      spec,
      s,
      "NLB",
      found?.lb.VpcId,
      groupless
        ? undefined
        : (cidr) =>
            want.map((l) => ({
              protocol: l.protocol === "UDP" ? "udp" : "tcp",
              fromPort: l.port,
              toPort: l.port,
              cidr,
            })),
      signal,
    );
    const { name, tags, groups, vpcId, backends } = base;
    if (groupless) await this.dropUnattachedGroups(owner, name, signal);
    let lb = found?.lb;
    if (lb === undefined) {
      const subnets = await this.net.subnets(vpcId, spec.internal, owner, s.subnets, signal);
      const eips = s.eipAllocations;
      if (eips !== undefined && (spec.internal || eips.length !== subnets.length))
        throw new CloudError(
          `eip-allocations: ${spec.internal ? "an internal NLB takes none" : `${eips.length} allocations for ${subnets.length} subnets (one per subnet)`}`,
        );
      const out = await this.api.call("nlb.create", signal, (abortSignal) =>
        this.api.elbv2.send(
          new CreateLoadBalancerCommand({
            Name: name,
            Type: "network",
            Scheme: spec.internal ? "internal" : "internet-facing",
            SubnetMappings: subnets.map((x, n) => ({
              SubnetId: x.subnetId,
              ...(eips?.[n] !== undefined && { AllocationId: eips[n] }),
            })),
            SecurityGroups: [...groups],
            Tags: tagList(tags),
          }),
          { abortSignal },
        ),
      );
      lb = out.LoadBalancers?.[0];
      if (lb?.LoadBalancerArn === undefined)
        throw new SuspectAnswerError(`CreateLoadBalancer(${name}) answered no ARN`);
    } else {
      if ((lb.Scheme === "internal") !== spec.internal)
        throw new CloudError(
          `load balancer ${name} is ${lb.Scheme}; AWS cannot change a scheme in place (delete the Service's load balancer to recreate it)`,
        );
      await this.tag(lb.LoadBalancerArn ?? "", found?.tags ?? {}, tags, signal);
      await this.updateLb(lb, groups, signal);
    }
    const lbArn = lb.LoadBalancerArn ?? "";
    if (s.crossZone !== undefined) await this.ensureCrossZone(lbArn, s.crossZone, signal);

    const listeners = await this.listeners(lbArn, signal);
    const attached = await this.attachedGroups(lbArn, signal);
    const keep = new Set<string>();
    for (const w of want) {
      const current = listeners.find((l) => l.Port === w.port);
      const currentTg = attached.find(
        (t) => t.TargetGroupArn === (current === undefined ? undefined : forwardsTo(current)),
      );
      const reusable =
        currentTg !== undefined && currentTg.Protocol === w.targetProtocol && currentTg.Port === w.nodePort
          ? currentTg
          : undefined;
      const tg = reusable ?? (await this.ensureTargetGroup(owner, w, vpcId, tags, health, signal));
      const tgArn = tg.TargetGroupArn ?? "";
      keep.add(tgArn);
      if (healthDiffers(tg, health))
        await this.api.call("nlb.targetGroup.modify", signal, (abortSignal) =>
          this.api.elbv2.send(new ModifyTargetGroupCommand({ TargetGroupArn: tgArn, ...health }), {
            abortSignal,
          }),
        );
      await this.ensureTargetGroupAttributes(tgArn, spec, s, signal);
      await this.syncTargets(tgArn, backends, signal);
      if (current === undefined) {
        await this.api.call("nlb.listener.create", signal, (abortSignal) =>
          this.api.elbv2.send(
            new CreateListenerCommand({
              LoadBalancerArn: lbArn,
              Port: w.port,
              Protocol: w.protocol,
              DefaultActions: [{ Type: "forward", TargetGroupArn: tgArn }],
              ...(w.certificate !== undefined && { Certificates: [{ CertificateArn: w.certificate }] }),
            }),
            { abortSignal },
          ),
        );
      } else if (
        forwardsTo(current) !== tgArn ||
        current.Protocol !== w.protocol ||
        (current.Certificates?.[0]?.CertificateArn ?? undefined) !== w.certificate
      ) {
        const listenerArn = current.ListenerArn ?? "";
        await this.api.call("nlb.listener.modify", signal, (abortSignal) =>
          this.api.elbv2.send(
            new ModifyListenerCommand({
              ListenerArn: listenerArn,
              Protocol: w.protocol,
              DefaultActions: [{ Type: "forward", TargetGroupArn: tgArn }],
              ...(w.certificate !== undefined && { Certificates: [{ CertificateArn: w.certificate }] }),
            }),
            { abortSignal },
          ),
        );
      }
    }
    for (const l of listeners)
      if (!want.some((w) => w.port === l.Port) && l.ListenerArn !== undefined) {
        const listenerArn = l.ListenerArn;
        await this.api.call("nlb.listener.delete", signal, (abortSignal) =>
          this.api.elbv2.send(new DeleteListenerCommand({ ListenerArn: listenerArn }), { abortSignal }),
        );
      }
    for (const tg of attached)
      if (tg.TargetGroupArn !== undefined && !keep.has(tg.TargetGroupArn))
        await this.deleteTargetGroup(tg.TargetGroupArn, signal);
    await this.net.finish(base, owner, signal);
    // With our managed group on it, the nodes admit that group (finish): upstream's client and
    // health rules for it would only open the nodePorts wider, so they go.
    await this.nodeRules.sync(
      name,
      owner,
      backends,
      base.managedGroup === undefined
        ? await this.upstreamNodeRules(name, lb, spec, want, health, signal)
        : [],
      signal,
    );
    if (lb.State?.Code === "provisioning" || lb.State?.Code === "failed") {
      const fresh = await this.find(owner, signal);
      if (fresh?.lb.State?.Code === "provisioning")
        return inProgress(PROVISIONING_POLL_MS, `network load balancer ${name} provisioning`);
      if (fresh?.lb.State?.Code === "failed") return this.replaceFailed(owner, fresh, signal);
    }
    return {
      ingress: lb.DNSName ? [{ hostname: lb.DNSName }] : [],
      ref: lbArn,
      tags: { ...found?.tags, ...tags },
    };
  }

  /**
   * An NLB AWS could not set up (state `failed`): the first ensure to see it records in the
   * cloud that it reported the failure (a tag any replica reads) and throws
   * OperationFailedError; the next one deletes it, and the one after that builds a new one.
   */
  private async replaceFailed(
    owner: ServiceTarget,
    found: { lb: LoadBalancer; tags: Tags },
    signal?: AbortSignal,
  ): Promise<InProgress> {
    const name = found.lb.LoadBalancerName ?? "";
    if (found.tags[FAILURE_REPORTED_TAG] !== "true") {
      await this.tag(found.lb.LoadBalancerArn ?? "", found.tags, { [FAILURE_REPORTED_TAG]: "true" }, signal);
      throw new OperationFailedError(
        `network load balancer ${name} could not be set up (state failed: ${found.lb.State?.Reason ?? "AWS gave no reason"}); the next sync replaces it`,
      );
    }
    await this.deleteLoadBalancer(owner, signal);
    return inProgress(0, `network load balancer ${name} failed to provision: deleted, to be built again`);
  }

  /** AddTags of what `want` has and `have` lacks. */
  async tag(arn: string, have: Readonly<Tags>, want: Readonly<Tags>, signal?: AbortSignal): Promise<void> {
    const add = tagsToAdd(have, want);
    if (add.length === 0) return;
    await this.api.call("nlb.tag", signal, (abortSignal) =>
      this.api.elbv2.send(new AddTagsCommand({ ResourceArns: [arn], Tags: add }), { abortSignal }),
    );
  }

  /**
   * Upstream's client and health rules for the load balancer: its listeners' nodePorts from the
   * source ranges (anywhere when none: 0.0.0.0/0, and ::/0 for a dualstack one), its
   * health-check ports from its subnets' CIDRs.
   */
  private async upstreamNodeRules(
    name: string,
    lb: LoadBalancer,
    spec: AwsLbSpec,
    want: readonly WantedListener[],
    health: HealthWant,
    signal?: AbortSignal,
  ) {
    const fixed = Number.parseInt(health.HealthCheckPort, 10);
    const ports: NlbNodePort[] = want.map((w) => ({
      protocol: w.protocol === "UDP" ? "udp" : "tcp",
      nodePort: w.nodePort,
      healthPort: Number.isNaN(fixed) ? w.nodePort : fixed,
    }));
    const anywhere = lb.IpAddressType?.startsWith("dualstack") ? ["0.0.0.0/0", "::/0"] : ["0.0.0.0/0"];
    const subnetIds = (lb.AvailabilityZones ?? []).flatMap((z) => (z.SubnetId ? [z.SubnetId] : []));
    const subnets = subnetIds.length === 0 ? [] : await this.net.subnetsById(subnetIds, signal);
    if (subnets.length !== subnetIds.length)
      throw new SuspectAnswerError(
        `DescribeSubnets answered ${subnets.length} of ${name}'s ${subnetIds.length} subnets`,
      );
    return nlbNodeRules(
      name,
      ports,
      spec.sourceRanges.length > 0 ? spec.sourceRanges : anywhere,
      subnets.flatMap((x) => (x.CidrBlock ? [x.CidrBlock] : [])),
    );
  }

  /**
   * A managed group made for an NLB that cannot take it (an earlier fleet-ccm did so for an
   * adopted one without groups): its node-group rules revoked and the group deleted; one AWS
   * still holds goes with the Service's delete. Only one fleet-ccm made (its owner tags): an
   * upstream `k8s-elb-<name>` may still serve a classic ELB that a type change left.
   */
  private async dropUnattachedGroups(
    owner: ServiceTarget,
    name: string,
    signal?: AbortSignal,
  ): Promise<void> {
    const stray = await this.net.ownedGroups(name, owner, signal, { ours: true });
    for (const g of stray) await this.net.revokeNodeRules(g, signal);
    await this.net.deleteGroups(stray, signal);
  }

  private async updateLb(lb: LoadBalancer, groups: readonly string[], signal?: AbortSignal): Promise<void> {
    const arn = lb.LoadBalancerArn ?? "";
    const current = [...(lb.SecurityGroups ?? [])].sort();
    // An NLB made without security groups (upstream's legacy mode) cannot get any: leave it so.
    if (current.length > 0 && current.join(",") !== [...groups].sort().join(","))
      await this.api.call("nlb.securityGroups.apply", signal, (abortSignal) =>
        this.api.elbv2.send(
          new SetSecurityGroupsCommand({ LoadBalancerArn: arn, SecurityGroups: [...groups] }),
          {
            abortSignal,
          },
        ),
      );
  }

  private async ensureCrossZone(lbArn: string, enabled: boolean, signal?: AbortSignal): Promise<void> {
    const key = "load_balancing.cross_zone.enabled";
    const out = await this.api.call("nlb.attributes", signal, (abortSignal) =>
      this.api.elbv2.send(new DescribeLoadBalancerAttributesCommand({ LoadBalancerArn: lbArn }), {
        abortSignal,
      }),
    );
    if (out.Attributes?.find((a) => a.Key === key)?.Value === String(enabled)) return;
    await this.api.call("nlb.attributes.modify", signal, (abortSignal) =>
      this.api.elbv2.send(
        new ModifyLoadBalancerAttributesCommand({
          LoadBalancerArn: lbArn,
          Attributes: [{ Key: key, Value: String(enabled) }],
        }),
        { abortSignal },
      ),
    );
  }

  /** Ours by name (an interrupted create's is found again), created with its tags in one call. */
  private async ensureTargetGroup(
    owner: LbOwner,
    w: WantedListener,
    vpcId: string,
    tags: Tags,
    health: HealthWant,
    signal?: AbortSignal,
  ): Promise<TargetGroup> {
    const name = targetGroupName(owner, w.port, w.nodePort, w.targetProtocol);
    try {
      const out = await this.api.call("nlb.targetGroup.get", signal, (abortSignal) =>
        this.api.elbv2.send(new DescribeTargetGroupsCommand({ Names: [name] }), { abortSignal }),
      );
      const tg = out.TargetGroups?.[0];
      if (tg !== undefined) return tg;
    } catch (err) {
      if (!hasCode(err, "TargetGroupNotFound", "TargetGroupNotFoundException")) throw err;
    }
    const out = await this.api.call("nlb.targetGroup.create", signal, (abortSignal) =>
      this.api.elbv2.send(
        new CreateTargetGroupCommand({
          Name: name,
          Protocol: w.targetProtocol,
          Port: w.nodePort,
          VpcId: vpcId,
          TargetType: "instance",
          ...health,
          Tags: tagList(tags),
        }),
        { abortSignal },
      ),
    );
    const tg = out.TargetGroups?.[0];
    if (tg?.TargetGroupArn === undefined)
      throw new SuspectAnswerError(`CreateTargetGroup(${name}) answered no ARN`);
    return tg;
  }

  /** proxy_protocol_v2.enabled from the spec, and the target-group-attributes annotation, as upstream. */
  private async ensureTargetGroupAttributes(
    tgArn: string,
    spec: AwsLbSpec,
    s: AwsLbSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const want: Record<string, string> = {
      ...s.targetGroupAttributes,
      "proxy_protocol_v2.enabled": String(spec.listeners.some((l) => l.proxyProtocol)),
    };
    const out = await this.api.call("nlb.targetGroup.attributes", signal, (abortSignal) =>
      this.api.elbv2.send(new DescribeTargetGroupAttributesCommand({ TargetGroupArn: tgArn }), {
        abortSignal,
      }),
    );
    const have = Object.fromEntries((out.Attributes ?? []).map((a) => [a.Key ?? "", a.Value ?? ""]));
    const change = Object.entries(want).filter(([k, v]) => have[k] !== v);
    if (change.length === 0) return;
    await this.api.call("nlb.targetGroup.attributes.modify", signal, (abortSignal) =>
      this.api.elbv2.send(
        new ModifyTargetGroupAttributesCommand({
          TargetGroupArn: tgArn,
          Attributes: change.map(([Key, Value]) => ({ Key, Value })),
        }),
        { abortSignal },
      ),
    );
  }

  private async syncTargets(
    tgArn: string,
    backends: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<void> {
    const have = await this.targets(tgArn, signal);
    const want = new Set(backends.flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])));
    const add = [...want].filter((id) => !have.some((t) => t.Id === id)).sort();
    const remove = have.filter((t) => !want.has(t.Id));
    if (add.length > 0)
      await this.api.call("nlb.targets.register", signal, (abortSignal) =>
        this.api.elbv2.send(
          new RegisterTargetsCommand({ TargetGroupArn: tgArn, Targets: add.map((Id) => ({ Id })) }),
          {
            abortSignal,
          },
        ),
      );
    if (remove.length > 0)
      await this.api.call("nlb.targets.deregister", signal, (abortSignal) =>
        this.api.elbv2.send(new DeregisterTargetsCommand({ TargetGroupArn: tgArn, Targets: remove }), {
          abortSignal,
        }),
      );
  }

  private async deleteTargetGroup(tgArn: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.api.call("nlb.targetGroup.delete", signal, (abortSignal) =>
        this.api.elbv2.send(new DeleteTargetGroupCommand({ TargetGroupArn: tgArn }), { abortSignal }),
      );
    } catch (err) {
      if (!hasCode(err, "TargetGroupNotFound", "TargetGroupNotFoundException")) throw err;
    }
  }

  async updateBackends(
    owner: ServiceTarget,
    found: { lb: LoadBalancer },
    backendIds: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const backends = await this.net.instances(backendIds, signal);
    for (const tg of await this.attachedGroups(found.lb.LoadBalancerArn ?? "", signal))
      if (tg.TargetGroupArn !== undefined) await this.syncTargets(tg.TargetGroupArn, backends, signal);
    const { LoadBalancerName: name, SecurityGroups: groups, VpcId: vpcId } = found.lb;
    await this.net.followBackends({ name, groups, vpcId }, owner, backends, signal);
    await this.nodeRules.sync(
      name ?? awsLoadBalancerName(owner.serviceUid),
      owner,
      backends,
      "follow",
      signal,
    );
  }

  /**
   * One page of the region's ELBv2 load balancers (DescribeLoadBalancers, resumed at `marker`),
   * the network ones with their tags (DescribeTags by 20 ARNs), as the owned ones of the listing.
   */
  async listingPage(marker: string | undefined, signal?: AbortSignal): Promise<ListingPage> {
    const page = await this.api.onePage(
      paginateDescribeLoadBalancers,
      this.api.elbv2,
      "nlb.list",
      {},
      { pageSize: ELBV2_PAGE_MAX, token: marker, signal },
    );
    return {
      lbs: (page.LoadBalancers ?? [])
        .filter((l) => l.Type === "network")
        .map((l) => ({ ref: l.LoadBalancerArn ?? "", name: l.LoadBalancerName ?? "", dnsName: l.DNSName })),
      ...(page.NextMarker && { next: page.NextMarker }),
    };
  }

  async describeTags(arns: readonly string[], signal?: AbortSignal): Promise<Map<string, Tags>> {
    const out = await this.api.call("nlb.tags", signal, (abortSignal) =>
      this.api.elbv2.send(new DescribeTagsCommand({ ResourceArns: [...arns] }), { abortSignal }),
    );
    return new Map(
      (out.TagDescriptions ?? []).flatMap((d) =>
        d.ResourceArn ? [[d.ResourceArn, tagsOf(d.Tags)] as const] : [],
      ),
    );
  }

  /**
   * The load balancer (its listeners with it) and its target groups: attached ones, and ours
   * by name that an interrupted create left unattached. Before it goes, its node-group rules
   * (on its targets' groups and the cluster's tagged ones; the cluster's alone once it is gone,
   * as upstream). Its group goes after.
   */
  async deleteLoadBalancer(owner: ServiceTarget, signal?: AbortSignal): Promise<void> {
    const found = await this.find(owner, signal);
    const targetGroups = new Set<string>();
    const targets = new Set<string>();
    if (found !== undefined) {
      const lbArn = found.lb.LoadBalancerArn ?? "";
      for (const tg of await this.attachedGroups(lbArn, signal))
        if (tg.TargetGroupArn) targetGroups.add(tg.TargetGroupArn);
      // Its listeners' too: an adopted load balancer's groups (upstream's names) are found by no
      // name of ours, and an endpoint's answer by load balancer may leave them out.
      for (const l of await this.listeners(lbArn, signal)) {
        const arn = forwardsTo(l);
        if (arn !== undefined) targetGroups.add(arn);
      }
      for (const arn of targetGroups) {
        try {
          for (const t of await this.targets(arn, signal)) targets.add(t.Id);
        } catch (err) {
          if (!isGone(err)) throw err;
        }
      }
    }
    const instances = targets.size === 0 ? [] : await this.net.instances([...targets], signal);
    await this.nodeRules.sync(awsLoadBalancerName(owner.serviceUid), owner, instances, [], signal);
    if (found !== undefined) {
      const lbArn = found.lb.LoadBalancerArn ?? "";
      await this.api.call("nlb.delete", signal, (abortSignal) =>
        this.api.elbv2.send(new DeleteLoadBalancerCommand({ LoadBalancerArn: lbArn }), { abortSignal }),
      );
    }
    for (const arn of await this.orphanTargetGroups(owner, signal)) targetGroups.add(arn);
    for (const arn of targetGroups) await this.deleteTargetGroup(arn, signal);
  }

  /** Our target groups by name prefix (one paged list of the region's), checked by their tags. */
  private async orphanTargetGroups(owner: ServiceTarget, signal?: AbortSignal): Promise<string[]> {
    const prefix = `k8s-${ownerHash(owner)}-`;
    const all = await allPages(
      paginateDescribeTargetGroups(
        { client: this.api.paged(this.api.elbv2, "nlb.targetGroups.list", signal), pageSize: ELBV2_PAGE_MAX },
        {},
      ),
      (page) => page.TargetGroups,
    );
    const candidates = all.flatMap((tg) =>
      tg.TargetGroupName?.startsWith(prefix) && tg.TargetGroupArn !== undefined ? [tg.TargetGroupArn] : [],
    );
    const tags = await tagsByBatch(candidates, (arns) => this.describeTags(arns, signal), isGone);
    return candidates.filter((arn) => {
      const t = tags.get(arn);
      return t !== undefined && ownedBy(t, owner);
    });
  }
}
