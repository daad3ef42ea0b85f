/**
 * The backend-service based external passthrough network load balancer
 * (`cloud.google.com/l4-rbs: enabled`), which GKE's ingress-gce L4 NetLB controller builds and
 * cloud-provider-gcp skips: the regional address `<lbName>` and the client firewall
 * `k8s-fw-<lbName>` exactly as the target-pool one (external-lb.ts: the same resources, so a
 * Service switching between the two keeps its IP), the cluster's instance groups
 * (instance-groups.ts, shared with the internal load balancers), a regional HTTP health check
 * (`k8s-<cluster>-node` on kube-proxy's port, or `<lbName>` on healthCheckNodePort for
 * externalTrafficPolicy Local: Compute takes only a regional one on an EXTERNAL backend
 * service) and its firewall for Google's checkers, the regional backend service `<lbName>`
 * (EXTERNAL, the Service's protocol) and the EXTERNAL forwarding rule `<lbName>` on it (the
 * name ingress-gce keeps, upstream's, so either controller finds the Service's rule). As the
 * other kinds: every step reads the cloud first and answers InProgress while its operation runs.
 */
import type * as Compute from "@google-cloud/compute";
import { CloudError, NeedsEnsureError } from "../../errors.js";
import type {
  InProgress,
  LbIngress,
  LoadBalancerSpec,
  LoadBalancerState,
  ProviderContext,
  ServiceTarget,
} from "../../provider.js";
import { checksHealthCheckNodePort, inProgress, lbOwner } from "../../provider.js";
import { type NetworkTier, parseGcpLbAnnotations } from "./annotations.js";
import type { GcpApi } from "./api.js";
import { hasReason } from "./errors.js";
import { ExternalLb } from "./external-lb.js";
import { ClusterGroups } from "./instance-groups.js";
import type { GcpInstances } from "./instances.js";
import { GcpLbBase, HC, HEALTH_CHECK_RANGES, tail, whyNotOwned } from "./lb-base.js";
import {
  gceFirewallName,
  gceLoadBalancerName,
  gceNodesHealthCheckName,
  gceRbsHealthCheckFirewallName,
  ownerDescription,
} from "./names.js";
import { getOrUndefined, type Step } from "./operations.js";
import type { GcpOptions } from "./options.js";

type HealthCheck = Compute.protos.google.cloud.compute.v1.IHealthCheck;
type BackendService = Compute.protos.google.cloud.compute.v1.IBackendService;
type Rule = Compute.protos.google.cloud.compute.v1.IForwardingRule;

/** A regional health check's name from its link (`…/regions/<r>/healthChecks/<name>`). */
const checkName = (link: string | null | undefined) =>
  tail(link).replace(/^regions\/[^/]+\/healthChecks\//, "");

export class RbsLb extends GcpLbBase {
  private readonly groups: ClusterGroups;
  /** The target-pool load balancer: its address and client firewall are this one's too. */
  private readonly pool: ExternalLb;

  constructor(ctx: ProviderContext, api: GcpApi, instances: GcpInstances, options: GcpOptions) {
    super(ctx, api, instances, options);
    this.groups = new ClusterGroups(ctx, api, instances, options);
    this.pool = new ExternalLb(ctx, api, instances, options);
  }

  // ---- reads ------------------------------------------------------------------------------------

  private getHealthCheck(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "regionHealthChecks.get",
            (c, o) =>
              c.regionHealthChecks.get(
                { project: this.api.project, region: this.region, healthCheck: name },
                o,
              ),
            signal,
          )
        )[0],
    );
  }

  /** The Service's EXTERNAL backend service, if it has one (an INTERNAL one is the internal kind's). */
  async backendService(target: ServiceTarget, signal?: AbortSignal): Promise<BackendService | undefined> {
    const bs = await this.getBackendService(gceLoadBalancerName(target.serviceUid), signal);
    return bs !== undefined && bs.loadBalancingScheme === "EXTERNAL" && this.ours(bs.description, target)
      ? bs
      : undefined;
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const name = gceLoadBalancerName(target.serviceUid);
    const bs = await this.backendService(target, signal);
    if (bs === undefined) return undefined;
    const rule = await this.getRule(name, signal);
    return {
      id: this.regional("forwardingRules", name),
      name,
      owner: lbOwner(target),
      ingress: rule?.IPAddress ? [{ ip: rule.IPAddress }] : [],
      backends: await this.groups.backendsOf(bs, signal),
    };
  }

  // ---- ensure -----------------------------------------------------------------------------------

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const ann = parseGcpLbAnnotations(spec.annotations);
    const tier: NetworkTier = ann.networkTier ?? "PREMIUM";
    const protocols = [...new Set(spec.listeners.map((l) => l.protocol))];
    const protocol = protocols[0];
    // A backend service has one protocol (mixed ones need L3_DEFAULT rules: not built).
    if (protocols.length !== 1 || (protocol !== "TCP" && protocol !== "UDP"))
      throw new CloudError(
        `gcp: a backend-service based network load balancer (cloud.google.com/l4-rbs) takes one protocol, TCP or UDP (the Service has ${protocols.join(", ")})`,
      );
    const lbName = gceLoadBalancerName(target.serviceUid);
    const description = ownerDescription(target, spec.serviceName);
    const existing = await this.getBackendService(lbName, signal);
    if (existing !== undefined) {
      const why = whyNotOwned(existing.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: backend service ${lbName} exists and is not this Service's: ${why}`);
      if (existing.loadBalancingScheme !== "EXTERNAL")
        throw new NeedsEnsureError(`gcp: backend service ${lbName} is still the internal load balancer's`);
    }
    const tags = await this.backendTags(target, spec.backends, signal);
    const network = this.networkUrl(target);

    // 1. The address, as the target-pool load balancer's (reserving the IP its rule holds, so
    // a switch from that one keeps it); rules and address of another tier go first.
    if (ann.networkTier !== undefined) {
      const step = await this.pool.deleteWrongTier(target, lbName, tier, signal);
      if (step !== undefined) return step;
    }
    const chosen = await this.pool.ensureAddress(target, spec, lbName, tier, description, signal);
    if (!("ip" in chosen)) return chosen;
    const { ip, userOwned } = chosen;

    // 2. A target-pool load balancer of the Service goes (the address and client firewall
    // stay) unless the rule is this kind's already (then nothing of the other is left: the
    // rule is made last); idempotent, so a switch interrupted anywhere is finished.
    const current = await this.getRule(lbName, signal);
    if (current?.backendService == null || current.loadBalancingScheme !== "EXTERNAL") {
      const step = await this.pool.ensureDeleted(target, signal, true);
      if (step !== undefined) return step;
    }

    // 3. The firewall for the clients.
    const fw = await this.pool.ensureClientFirewall(target, spec, ip, tags, signal);
    if (fw !== undefined) return fw;

    // 4. The cluster's instance groups with the backends.
    const groups = await this.groups.sync(target, spec.backends, signal);
    if (!Array.isArray(groups)) return groups as InProgress;

    // 5. The regional health check and its firewall.
    const local = checksHealthCheckNodePort(spec);
    const hcName = local ? lbName : gceNodesHealthCheckName(target.cluster);
    const hcPort = local ? spec.healthCheck.port : this.options.nodeHealthCheckPort;
    const hcStep = await this.ensureHealthCheck(
      hcName,
      {
        name: hcName,
        description: local ? description : JSON.stringify({ "kubernetes.io/cluster-id": target.cluster }),
        type: "HTTP",
        httpHealthCheck: { port: hcPort, requestPath: "/healthz" },
        ...HC,
      },
      signal,
    );
    if (hcStep !== undefined) return hcStep;
    const hcFw = await this.ensureFirewall(
      gceRbsHealthCheckFirewallName(target.cluster, lbName, !local),
      {
        description: local ? description : JSON.stringify({ "kubernetes.io/cluster-id": target.cluster }),
        network,
        sourceRanges: HEALTH_CHECK_RANGES,
        allowed: [{ IPProtocol: "tcp", ports: [String(hcPort)] }],
      },
      tags,
      signal,
      !local,
    );
    if (hcFw !== undefined) return hcFw;

    // 6. The rule goes first when it changes (Compute cannot change its address, ports, tier
    // or backend in place), then the backend service, then the rule.
    const ports = spec.listeners.map((l) => l.port);
    const want: Rule = {
      name: lbName,
      description,
      IPAddress: ip,
      IPProtocol: protocol,
      portRange: `${Math.min(...ports)}-${Math.max(...ports)}`,
      loadBalancingScheme: "EXTERNAL",
      backendService: this.regional("backendServices", lbName),
      networkTier: tier,
    };
    const rule = await this.getRule(lbName, signal);
    if (rule !== undefined) {
      const why = whyNotOwned(rule.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: forwarding rule ${lbName} exists and is not this Service's: ${why}`);
      if (!sameRule(rule, want)) {
        const step = await this.deleteRegional("forwardingRules", lbName, target, signal);
        return step ?? inProgress(this.options.operationPollMs, `forwarding rule ${lbName} replaced`);
      }
    }
    const bs = await this.ensureBackendService(
      lbName,
      {
        name: lbName,
        description,
        protocol,
        loadBalancingScheme: "EXTERNAL",
        healthChecks: [this.regional("healthChecks", hcName)],
        backends: groups.map((group) => ({ group, balancingMode: "CONNECTION" })),
        sessionAffinity: spec.sessionAffinity === "ClientIP" ? "CLIENT_IP" : "NONE",
      },
      existing,
      signal,
    );
    if (bs !== undefined) return bs;
    if (rule === undefined) {
      const step = await this.insert(
        "regions",
        this.regional("forwardingRules", lbName),
        () =>
          this.api.mutate(
            "forwardingRules.insert",
            (c, o) =>
              c.forwardingRules.insert(
                { project: this.api.project, region: this.region, forwardingRuleResource: want },
                o,
              ),
            signal,
          ),
        signal,
      );
      if (step !== undefined) return step;
    }

    // 7. The health check a previous externalTrafficPolicy used, once the backend service left it.
    const left = checkName(existing?.healthChecks?.[0]);
    if (existing !== undefined && left !== "" && left !== hcName) {
      const step = await this.deleteHealthCheckAndFirewall(target, left, signal);
      if (step !== undefined) return step;
    }
    // The Service's own address once the rule uses the user's.
    if (userOwned) {
      const step = await this.deleteRegional("addresses", lbName, target, signal);
      if (step !== undefined) return step;
    }
    return [{ ip }];
  }

  private async ensureHealthCheck(name: string, want: HealthCheck, signal?: AbortSignal): Promise<Step> {
    const hc = await this.getHealthCheck(name, signal);
    const link = this.regional("healthChecks", name);
    if (hc === undefined)
      return this.insert(
        "regions",
        link,
        () =>
          this.api.mutate(
            "regionHealthChecks.insert",
            (c, o) =>
              c.regionHealthChecks.insert(
                { project: this.api.project, region: this.region, healthCheckResource: want },
                o,
              ),
            signal,
          ),
        signal,
      );
    if (
      hc.type === want.type &&
      hc.httpHealthCheck?.port === want.httpHealthCheck?.port &&
      hc.httpHealthCheck?.requestPath === want.httpHealthCheck?.requestPath
    )
      return undefined;
    const pending = await this.ops.pending(`regions/${this.region}`, link, signal);
    if (pending !== undefined) return pending;
    return this.ops.after(
      await this.api.mutate(
        "regionHealthChecks.update",
        (c, o) =>
          c.regionHealthChecks.update(
            {
              project: this.api.project,
              region: this.region,
              healthCheck: name,
              healthCheckResource: { ...want, description: hc.description ?? want.description },
            },
            o,
          ),
        signal,
      ),
      signal,
    );
  }

  // ---- backends ---------------------------------------------------------------------------------

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const bs = await this.backendService(target, signal);
    if (bs === undefined) throw new NeedsEnsureError("gcp: the backend service is gone");
    const groups = await this.groups.sync(target, backends, signal);
    if (!Array.isArray(groups)) return groups as InProgress;
    return this.ensureBackendService(
      bs.name ?? gceLoadBalancerName(target.serviceUid),
      {
        name: bs.name ?? null,
        description: bs.description ?? null,
        protocol: bs.protocol ?? null,
        loadBalancingScheme: "EXTERNAL",
        healthChecks: bs.healthChecks ?? [],
        backends: groups.map((group) => ({ group, balancingMode: "CONNECTION" })),
        sessionAffinity: bs.sessionAffinity ?? null,
      },
      bs,
      signal,
    );
  }

  // ---- delete -----------------------------------------------------------------------------------

  /**
   * Deletes the Service's backend-service based load balancer: the rule, the backend service,
   * its health checks (the cluster's shared one only once no backend service uses it) and their
   * firewalls, the cluster's instance groups no other backend service uses, then the client
   * firewall and the address — unless `switching` to the target-pool one, which keeps those.
   */
  async ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    switching = false,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const rule = await this.getRule(lbName, signal);
    // An internal rule of the name is the internal kind's.
    if (rule?.backendService != null && rule.loadBalancingScheme === "EXTERNAL") {
      const step = await this.deleteRegional("forwardingRules", lbName, target, signal);
      if (step !== undefined) return step;
    }
    const bs = await this.backendService(target, signal);
    const hcName = checkName(bs?.healthChecks?.[0]);
    if (bs !== undefined) {
      const step = await this.deleteRegional("backendServices", lbName, target, signal);
      if (step !== undefined) return step;
    }
    for (const name of new Set([lbName, hcName === "" ? gceNodesHealthCheckName(target.cluster) : hcName])) {
      const step = await this.deleteHealthCheckAndFirewall(target, name, signal);
      if (step !== undefined) return step;
    }
    const groups = await this.groups.deleteUnused(target, signal);
    if (groups !== undefined) return groups;
    if (switching) return undefined;
    const fw = await this.deleteFirewall(gceFirewallName(lbName), target, signal);
    if (fw !== undefined) return fw;
    const address = await this.getAddress(lbName, signal);
    // An internal address of the name is the internal kind's.
    if (address !== undefined && address.addressType !== "INTERNAL")
      return this.deleteRegional("addresses", lbName, target, signal);
    return undefined;
  }

  /**
   * A regional health check and its firewall: the Service's own (`<lbName>`, its owner's) or
   * the cluster's shared one, which stays while a backend service uses it.
   */
  private async deleteHealthCheckAndFirewall(
    target: ServiceTarget,
    name: string,
    signal?: AbortSignal,
  ): Promise<Step> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const own = name === lbName;
    if (!own && name !== gceNodesHealthCheckName(target.cluster)) return undefined;
    const hc = await this.deleteOwned(
      "regions",
      "healthChecks",
      name,
      own ? target : undefined,
      () => this.getHealthCheck(name, signal),
      () =>
        this.api.mutate(
          "regionHealthChecks.delete",
          (c, o) =>
            c.regionHealthChecks.delete(
              { project: this.api.project, region: this.region, healthCheck: name },
              o,
            ),
          signal,
        ),
      signal,
    ).catch((err: unknown) => {
      if (hasReason(err, "resourceInUseByAnotherResource")) return "in-use" as const;
      throw err;
    });
    if (hc === "in-use") return undefined;
    if (hc !== undefined) return hc;
    return this.deleteFirewall(
      gceRbsHealthCheckFirewallName(target.cluster, lbName, !own),
      own ? target : undefined,
      signal,
    );
  }
}

/** Whether the forwarding rule is as wanted. */
function sameRule(rule: Rule, want: Rule): boolean {
  return (
    rule.IPAddress === want.IPAddress &&
    rule.IPProtocol === want.IPProtocol &&
    rule.portRange === want.portRange &&
    (rule.networkTier ?? "PREMIUM") === (want.networkTier ?? "PREMIUM") &&
    rule.loadBalancingScheme === "EXTERNAL" &&
    tail(rule.backendService) === tail(want.backendService)
  );
}
