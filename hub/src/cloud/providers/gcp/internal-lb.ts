/**
 * The internal passthrough load balancer cloud-provider-gcp builds (gce_loadbalancer_internal.go)
 * for `networking.gke.io/load-balancer-type: Internal`, with its names: the cluster's unmanaged
 * instance group `k8s-ig--<cluster>` in each zone with backends (shared by every internal
 * Service of the cluster, deleted with the last one), a health check (`k8s-<cluster>-node` on
 * kube-proxy's port, or `<lbName>` on healthCheckNodePort for externalTrafficPolicy Local) and
 * its firewall for Google's checkers (`k8s-<cluster>-node-hc` or `<lbName>-hc`), an internal
 * address `<lbName>` on the subnetwork (kept for the load balancer's life, as the external
 * one's), the firewall `k8s-fw-<lbName>`, the regional backend service `<lbName>` (INTERNAL,
 * the instance groups) and the INTERNAL forwarding rule `<lbName>` on the subnetwork with the
 * Service ports (all ports past five), global access on request. As the external path: every
 * step reads the cloud first and answers InProgress while its operation runs.
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
import { parseGcpLbAnnotations } from "./annotations.js";
import type { GcpApi } from "./api.js";
import { hasReason } from "./errors.js";
import { ClusterGroups } from "./instance-groups.js";
import type { GcpInstances } from "./instances.js";
import { GcpLbBase, HC, HEALTH_CHECK_RANGES, sameSet, tail, whyNotOwned } from "./lb-base.js";
import {
  gceFirewallName,
  gceInternalHealthCheckFirewallName,
  gceLoadBalancerName,
  gceNodesHealthCheckName,
  ownerDescription,
} from "./names.js";
import { getOrUndefined, type Step } from "./operations.js";
import type { GcpOptions } from "./options.js";

type HealthCheck = Compute.protos.google.cloud.compute.v1.IHealthCheck;
type Rule = Compute.protos.google.cloud.compute.v1.IForwardingRule;

/** Upstream's maxL4ILBPorts: more ports than this take every port. */
const MAX_PORTS = 5;
export class InternalLb extends GcpLbBase {
  private readonly groups: ClusterGroups;

  constructor(ctx: ProviderContext, api: GcpApi, instances: GcpInstances, options: GcpOptions) {
    super(ctx, api, instances, options);
    this.groups = new ClusterGroups(ctx, api, instances, options);
  }

  // ---- reads ------------------------------------------------------------------------------------

  private getHealthCheck(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "healthChecks.get",
            (c, o) => c.healthChecks.get({ project: this.api.project, healthCheck: name }, o),
            signal,
          )
        )[0],
    );
  }

  private async subnetworkUrl(target: ServiceTarget, subnet: string | undefined, signal?: AbortSignal) {
    const network = this.networkUrl(target);
    const name = subnet ?? this.options.subnetwork;
    if (name !== undefined) {
      const sub = await getOrUndefined(
        async () =>
          (
            await this.api.call(
              "subnetworks.get",
              (c, o) =>
                c.subnetworks.get({ project: this.api.project, region: this.region, subnetwork: name }, o),
              signal,
            )
          )[0],
      );
      if (sub === undefined)
        throw new CloudError(`gcp: subnetwork ${name} does not exist in region ${this.region}`);
      if (tail(sub.network) !== tail(network))
        throw new CloudError(`gcp: subnetwork ${name} is in network ${tail(sub.network)}, not the cluster's`);
      return sub.selfLink ?? this.regional("subnetworks", name);
    }
    const [subs] = await this.api.call(
      "subnetworks.list",
      (c, o) =>
        c.subnetworks.list(
          {
            project: this.api.project,
            region: this.region,
            filter: `network = "${network}"`,
            maxResults: 500,
          },
          o,
        ),
      signal,
    );
    const only = subs.filter((s) => tail(s.network) === tail(network));
    // Several: an auto-mode network's own (named as the network), else the operator names one.
    const chosen = only.length === 1 ? only[0] : only.find((s) => s.name === network.split("/").pop());
    if (chosen === undefined)
      throw new CloudError(
        `gcp: the cluster's network has ${only.length} subnetworks in ${this.region}: name one (options.subnetwork or ${"networking.gke.io/internal-load-balancer-subnet"})`,
      );
    return chosen.selfLink ?? this.regional("subnetworks", chosen.name ?? "");
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const name = gceLoadBalancerName(target.serviceUid);
    const bs = await this.getBackendService(name, signal);
    if (bs === undefined || !this.ours(bs.description, target)) return undefined;
    const rule = await this.getRule(name, signal);
    const backends = await this.groups.backendsOf(bs, signal);
    return {
      id: this.regional("forwardingRules", name),
      name,
      owner: lbOwner(target),
      ingress: rule?.IPAddress ? [{ ip: rule.IPAddress }] : [],
      backends,
    };
  }

  // ---- ensure -----------------------------------------------------------------------------------

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const ann = parseGcpLbAnnotations(spec.annotations);
    const protocols = [...new Set(spec.listeners.map((l) => l.protocol))];
    const protocol = protocols[0];
    if (protocols.length !== 1 || (protocol !== "TCP" && protocol !== "UDP"))
      throw new CloudError(
        `gcp: an internal load balancer takes one protocol, TCP or UDP (the Service has ${protocols.join(", ")})`,
      );
    const lbName = gceLoadBalancerName(target.serviceUid);
    const description = ownerDescription(target, spec.serviceName);
    const existing = await this.getBackendService(lbName, signal);
    if (existing !== undefined) {
      const why = whyNotOwned(existing.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: backend service ${lbName} exists and is not this Service's: ${why}`);
    }
    const tags = await this.backendTags(target, spec.backends, signal);
    const network = this.networkUrl(target);

    // 1. The cluster's instance groups with the backends.
    const groups = await this.groups.sync(target, spec.backends, signal);
    if (!Array.isArray(groups)) return groups as InProgress;

    // 2. The health check and its firewall.
    const local = checksHealthCheckNodePort(spec);
    const hcName = local ? lbName : gceNodesHealthCheckName(target.cluster);
    const hcPort = local ? spec.healthCheck.port : this.options.nodeHealthCheckPort;
    const hcStep = await this.ensureHealthCheck(
      hcName,
      {
        name: hcName,
        // Upstream: the Service's name on its own check, none on the shared one.
        description: local ? description : "",
        type: "HTTP",
        httpHealthCheck: { port: hcPort, requestPath: "/healthz" },
        ...HC,
      },
      signal,
    );
    if (hcStep !== undefined) return hcStep;
    const hcFw = await this.ensureFirewall(
      gceInternalHealthCheckFirewallName(target.cluster, lbName, !local),
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

    // 3. The internal address on the subnetwork.
    const subnetwork = await this.subnetworkUrl(target, ann.subnet, signal);
    const address = await this.ensureInternalAddress(target, spec, lbName, subnetwork, description, signal);
    if (typeof address !== "string") return address;
    const ip = address;

    // 4. The firewall for the clients.
    const ports = [...new Set(spec.listeners.map((l) => l.port))].sort((a, b) => a - b).map(String);
    const fw = await this.ensureFirewall(
      gceFirewallName(lbName),
      {
        description: ownerDescription(target, spec.serviceName, { "kubernetes.io/service-ip": ip }),
        network,
        sourceRanges: spec.sourceRanges.length > 0 ? [...spec.sourceRanges] : ["0.0.0.0/0"],
        destinationRanges: [ip],
        allowed: [{ IPProtocol: protocol.toLowerCase(), ports: [...ports].sort() }],
      },
      tags,
      signal,
    );
    if (fw !== undefined) return fw;

    // 5. The forwarding rule goes first when it changes (a backend service's protocol cannot
    // change under its rule), then the backend service, then the rule.
    const bsLink = this.regional("backendServices", lbName);
    const want: Rule = {
      name: lbName,
      description,
      IPAddress: ip,
      IPProtocol: protocol,
      ...(ports.length > MAX_PORTS ? { allPorts: true } : { ports }),
      loadBalancingScheme: "INTERNAL",
      backendService: bsLink,
      subnetwork,
      network,
      ...(ann.allowGlobalAccess && { allowGlobalAccess: true }),
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
        loadBalancingScheme: "INTERNAL",
        healthChecks: [this.global("healthChecks", hcName)],
        backends: groups.map((group) => ({ group })),
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
    // The health check a previous externalTrafficPolicy used, once the backend service left it.
    const left = tail(existing?.healthChecks?.[0]).replace(/^global\/healthChecks\//, "");
    if (existing !== undefined && left !== "" && left !== hcName) {
      const step = await this.deleteHealthCheckAndFirewall(target, left, signal);
      if (step !== undefined) return step;
    }
    return [{ ip }];
  }

  private async ensureHealthCheck(name: string, want: HealthCheck, signal?: AbortSignal): Promise<Step> {
    const hc = await this.getHealthCheck(name, signal);
    const link = this.global("healthChecks", name);
    if (hc === undefined)
      return this.insert(
        "global",
        link,
        () =>
          this.api.mutate(
            "healthChecks.insert",
            (c, o) => c.healthChecks.insert({ project: this.api.project, healthCheckResource: want }, o),
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
    const pending = await this.ops.pending("global", link, signal);
    if (pending !== undefined) return pending;
    return this.ops.after(
      await this.api.mutate(
        "healthChecks.update",
        (c, o) =>
          c.healthChecks.update(
            {
              project: this.api.project,
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

  /**
   * The internal address `<lbName>` on the subnetwork: the user's reserved one when
   * loadBalancerIP names it (never deleted), else the Service's own, reserved with
   * loadBalancerIP or with the IP the rule holds (an adopted or ephemeral one), kept for the
   * load balancer's life; one on another subnetwork goes (after its rule) and is made anew.
   */
  private async ensureInternalAddress(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    lbName: string,
    subnetwork: string,
    description: string,
    signal?: AbortSignal,
  ): Promise<string | InProgress> {
    const requested = spec.loadBalancerIP === "" ? undefined : spec.loadBalancerIP;
    let own = await this.getAddress(lbName, signal);
    if (own !== undefined) {
      const why = whyNotOwned(own.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: address ${lbName} exists and is not this Service's: ${why}`);
      if (
        tail(own.subnetwork) !== tail(subnetwork) ||
        (requested !== undefined && own.address !== requested)
      ) {
        const rule = await this.deleteRegional("forwardingRules", lbName, target, signal);
        if (rule !== undefined) return rule;
        const step = await this.deleteRegional("addresses", lbName, target, signal);
        if (step !== undefined) return step;
        own = undefined;
      }
    }
    if (own?.address != null) return own.address;
    if (requested !== undefined) {
      const [found] = await this.api.call(
        "addresses.list",
        (c, o) =>
          c.addresses.list(
            {
              project: this.api.project,
              region: this.region,
              filter: `address = "${requested}"`,
              maxResults: 500,
            },
            o,
          ),
        signal,
      );
      const user = found.find((a) => a.address === requested);
      if (user !== undefined) {
        if (user.addressType !== "INTERNAL")
          throw new CloudError(`gcp: loadBalancerIP ${requested} is an external address (${user.name})`);
        return requested;
      }
    }
    const rule = await this.getRule(lbName, signal);
    const keep = requested ?? (tail(rule?.subnetwork) === tail(subnetwork) ? rule?.IPAddress : undefined);
    const step = await this.insert(
      "regions",
      this.regional("addresses", lbName),
      () =>
        this.api.mutate(
          "addresses.insert",
          (c, o) =>
            c.addresses.insert(
              {
                project: this.api.project,
                region: this.region,
                addressResource: {
                  name: lbName,
                  description,
                  addressType: "INTERNAL",
                  purpose: "GCE_ENDPOINT",
                  subnetwork,
                  ...(keep != null && { address: keep }),
                },
              },
              o,
            ),
          signal,
        ),
      signal,
    );
    if (step !== undefined) return step;
    const made = await this.getAddress(lbName, signal);
    return made?.address ?? inProgress(this.options.operationPollMs, `address ${lbName} reserving`);
  }

  // ---- backends ---------------------------------------------------------------------------------

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const bs = await this.getBackendService(lbName, signal);
    if (bs === undefined || !this.ours(bs.description, target))
      throw new NeedsEnsureError("gcp: the backend service is gone");
    const groups = await this.groups.sync(target, backends, signal);
    if (!Array.isArray(groups)) return groups as InProgress;
    return this.ensureBackendService(
      lbName,
      { ...bs, backends: groups.map((group) => ({ group })) },
      bs,
      signal,
    );
  }

  // ---- delete -----------------------------------------------------------------------------------

  async ensureDeleted(target: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const rule = await this.deleteRegional("forwardingRules", lbName, target, signal);
    if (rule !== undefined) return rule;
    const bs = await this.getBackendService(lbName, signal);
    const hcName = tail(bs?.healthChecks?.[0]).replace(/^global\/healthChecks\//, "");
    const bsStep = await this.deleteRegional("backendServices", lbName, target, signal);
    if (bsStep !== undefined) return bsStep;
    const address = await this.deleteRegional("addresses", lbName, target, signal);
    if (address !== undefined) return address;
    const fw = await this.deleteFirewall(gceFirewallName(lbName), target, signal);
    if (fw !== undefined) return fw;
    // The Service's own check (Local), then the cluster's shared one if no backend service uses it.
    for (const name of new Set([
      lbName,
      ...(hcName === "" ? [gceNodesHealthCheckName(target.cluster)] : [hcName]),
    ])) {
      const step = await this.deleteHealthCheckAndFirewall(target, name, signal);
      if (step !== undefined) return step;
    }
    // The cluster's instance groups, unless another Service's backend service uses them.
    return this.groups.deleteUnused(target, signal);
  }

  /**
   * A health check and its firewall: the Service's own (`<lbName>`, its owner's) or the
   * cluster's shared one, which stays while a backend service uses it (upstream: in use).
   */
  private async deleteHealthCheckAndFirewall(
    target: ServiceTarget,
    name: string,
    signal?: AbortSignal,
  ): Promise<Step> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const own = name === lbName;
    const vendor = target.scope.adoptFrom?.vendorCcmClusterName;
    // The shared check of this cluster, or (adopting) of the vendor cluster.
    const cluster = [target.cluster, ...(vendor === undefined ? [] : [vendor])].find(
      (c) => name === gceNodesHealthCheckName(c),
    );
    if (!own && cluster === undefined) return undefined;
    const hc = await this.deleteOwned(
      "global",
      "healthChecks",
      name,
      own ? target : undefined,
      () => this.getHealthCheck(name, signal),
      () =>
        this.api.mutate(
          "healthChecks.delete",
          (c, o) => c.healthChecks.delete({ project: this.api.project, healthCheck: name }, o),
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
      gceInternalHealthCheckFirewallName(cluster ?? target.cluster, lbName, !own),
      own ? target : undefined,
      signal,
    );
  }
}

/** Whether a forwarding rule is as wanted (Compute cannot change its address, ports or backend in place). */
function sameRule(rule: Rule, want: Rule): boolean {
  return (
    rule.IPAddress === want.IPAddress &&
    rule.IPProtocol === want.IPProtocol &&
    Boolean(rule.allPorts) === Boolean(want.allPorts) &&
    sameSet(rule.ports, want.ports ?? []) &&
    tail(rule.backendService) === tail(want.backendService) &&
    tail(rule.subnetwork) === tail(want.subnetwork) &&
    Boolean(rule.allowGlobalAccess) === Boolean(want.allowGlobalAccess)
  );
}
