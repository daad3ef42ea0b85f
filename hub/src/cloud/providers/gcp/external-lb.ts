/**
 * The external network load balancer cloud-provider-gcp builds (gce_loadbalancer_external.go),
 * with its names: a regional address `<lbName>`, the firewall `k8s-fw-<lbName>` (source ranges →
 * the nodes' network tags, the Service ports), a legacy HTTP health check (the cluster's shared
 * `k8s-<cluster>-node` on kube-proxy's port, or `<lbName>` on healthCheckNodePort for
 * externalTrafficPolicy Local) and its firewall for Google's checkers (destination the
 * address, as upstream's firewallObject), the target pool
 * `<lbName>` with the backends, and a forwarding rule per protocol. Every step reads the cloud
 * first, so a repeat changes nothing and a crash between any two operations is finished by the
 * next call; a step whose operation runs answers InProgress.
 */
import type * as Compute from "@google-cloud/compute";
import { CloudError, NeedsEnsureError } from "../../errors.js";
import type {
  InProgress,
  LbIngress,
  LbProtocol,
  LoadBalancerSpec,
  LoadBalancerState,
  ServiceTarget,
} from "../../provider.js";
import { checksHealthCheckNodePort, inProgress, lbOwner } from "../../provider.js";
import { type NetworkTier, parseGcpLbAnnotations } from "./annotations.js";
import type { Operation } from "./api.js";
import { hasReason } from "./errors.js";
import { GcpLbBase, HC, HEALTH_CHECK_RANGES, tail, whyNotOwned } from "./lb-base.js";
import {
  gceFirewallName,
  gceHealthCheckFirewallName,
  gceLoadBalancerName,
  gceNodesHealthCheckName,
  ownerDescription,
} from "./names.js";
import { getOrUndefined, type Step } from "./operations.js";

type Pool = Compute.protos.google.cloud.compute.v1.ITargetPool;
type Rule = Compute.protos.google.cloud.compute.v1.IForwardingRule;
type Address = Compute.protos.google.cloud.compute.v1.IAddress;
/** A legacy HTTP health check as the REST API answers it (the SDK has no type for it). */
interface HttpHealthCheck {
  readonly name?: string;
  readonly description?: string | null;
  readonly port?: number;
  readonly requestPath?: string;
}

export const EXTERNAL_PROTOCOLS: readonly LbProtocol[] = ["TCP", "UDP"];
const PROTOCOLS = EXTERNAL_PROTOCOLS;

/** A forwarding rule's name per protocol: the first (TCP where present) is upstream's `<lbName>`. */
export function ruleName(lbName: string, protocol: string, first: boolean): string {
  return first ? lbName : `${lbName}-${protocol.toLowerCase()}`;
}

/** A target pool's instances as the hub's backend ids (`<zone>/<name>`), sorted. */
export function poolBackends(pool: { readonly instances?: readonly string[] | null }): string[] {
  return (pool.instances ?? [])
    .map((u) => tail(u).replace(/^zones\/([^/]+)\/instances\/([^/]+)$/, "$1/$2"))
    .sort();
}

export class ExternalLb extends GcpLbBase {
  // ---- reads ------------------------------------------------------------------------------------

  private getHealthCheck(name: string, signal?: AbortSignal) {
    return getOrUndefined(() =>
      this.api.rest<HttpHealthCheck>(
        "httpHealthChecks.get",
        "GET",
        `global/httpHealthChecks/${name}`,
        undefined,
        signal,
      ),
    );
  }

  /** A regional address by its IP (upstream GetRegionAddressByIP), if one is reserved. */
  private async addressByIP(ip: string, signal?: AbortSignal): Promise<Address | undefined> {
    const [items] = await this.api.call(
      "addresses.list",
      (c, o) =>
        c.addresses.list(
          { project: this.api.project, region: this.region, filter: `address = "${ip}"`, maxResults: 500 },
          o,
        ),
      signal,
    );
    return items.find((a) => a.address === ip);
  }

  async get(
    target: ServiceTarget,
    signal?: AbortSignal,
    pool?: Pool,
  ): Promise<LoadBalancerState | undefined> {
    const name = gceLoadBalancerName(target.serviceUid);
    pool ??= await this.getPool(name, signal);
    if (pool === undefined || !this.ours(pool.description, target)) return undefined;
    const rule = await this.getRule(name, signal);
    return {
      // The forwarding rule's link: what clients reach, the same across a rule's re-creation.
      id: this.regional("forwardingRules", name),
      name,
      owner: lbOwner(target),
      ingress: rule?.IPAddress ? [{ ip: rule.IPAddress }] : [],
      backends: poolBackends(pool),
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
    const lbName = gceLoadBalancerName(target.serviceUid);
    const description = ownerDescription(target, spec.serviceName);
    const pool = await this.getPool(lbName, signal);
    if (pool !== undefined) {
      const why = whyNotOwned(pool.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: target pool ${lbName} exists and is not this Service's: ${why}`);
    }
    const tags = await this.backendTags(target, spec.backends, signal);

    // 0. As upstream, only when the tier is asked for: rules and the address of another tier go.
    if (ann.networkTier !== undefined) {
      const step = await this.deleteWrongTier(target, lbName, tier, signal);
      if (step !== undefined) return step;
    }

    // 1. The address: the user's (loadBalancerIP, never deleted) or the Service's own.
    const chosen = await this.ensureAddress(target, spec, lbName, tier, description, signal);
    if (!("ip" in chosen)) return chosen;
    const { ip, userOwned } = chosen;

    // 2. The firewall for the clients.
    const network = this.networkUrl(target);
    const fw = await this.ensureClientFirewall(target, spec, ip, tags, signal);
    if (fw !== undefined) return fw;

    // 3. The health check and its firewall.
    const local = checksHealthCheckNodePort(spec);
    const hcName = local ? lbName : gceNodesHealthCheckName(target.cluster);
    const hcPort = local ? spec.healthCheck.port : this.options.nodeHealthCheckPort;
    // Upstream's descriptions of the shared check and its firewall: the check's own name, the
    // cluster id; the Service's own firewall names the address it guards, as the client one.
    const hcDescription = local ? description : JSON.stringify({ "kubernetes.io/service-name": hcName });
    const hcFwDescription = local
      ? ownerDescription(target, spec.serviceName, { "kubernetes.io/service-ip": ip })
      : JSON.stringify({ "kubernetes.io/cluster-id": target.cluster });
    const hcStep = await this.ensureHealthCheck(
      hcName,
      { description: hcDescription, port: hcPort, requestPath: "/healthz", ...HC },
      signal,
    );
    if (hcStep !== undefined) return hcStep;
    const hcFw = await this.ensureFirewall(
      gceHealthCheckFirewallName(target.cluster, hcName, !local),
      {
        description: hcFwDescription,
        network,
        sourceRanges: HEALTH_CHECK_RANGES,
        // As upstream's firewallObject (gce_loadbalancer_external.go): the checkers reach the
        // check's port on the load balancer's address only (the shared one: each Service's).
        destinationRanges: [ip],
        allowed: [{ IPProtocol: "tcp", ports: [String(hcPort)] }],
      },
      tags,
      signal,
      !local,
    );
    if (hcFw !== undefined) return hcFw;

    // 4. The target pool with the backends and the health check.
    const hcLink = this.global("httpHealthChecks", hcName);
    if (pool === undefined) {
      const step = await this.insert(
        "regions",
        this.regional("targetPools", lbName),
        () =>
          this.api.mutate(
            "targetPools.insert",
            (c, o) =>
              c.targetPools.insert(
                {
                  project: this.api.project,
                  region: this.region,
                  targetPoolResource: {
                    name: lbName,
                    description,
                    instances: spec.backends.map((b) => this.instanceUrl(b)),
                    healthChecks: [hcLink],
                    sessionAffinity: spec.sessionAffinity === "ClientIP" ? "CLIENT_IP" : "NONE",
                  },
                },
                o,
              ),
            signal,
          ),
        signal,
      );
      if (step !== undefined) return step;
    } else {
      const swap = await this.swapHealthCheck(target, pool, hcLink, signal);
      if (swap !== undefined) return swap;
      const step = await this.syncPoolInstances(pool, spec.backends, signal);
      if (step !== undefined) return step;
    }

    // 5. A forwarding rule per protocol on the address.
    const protocols = PROTOCOLS.filter((p) => spec.listeners.some((l) => l.protocol === p));
    for (const [n, protocol] of protocols.entries()) {
      const ports = spec.listeners.filter((l) => l.protocol === protocol).map((l) => l.port);
      const portRange = `${Math.min(...ports)}-${Math.max(...ports)}`;
      const step = await this.ensureRule(
        target,
        ruleName(lbName, protocol, n === 0),
        {
          description,
          IPAddress: ip,
          IPProtocol: protocol,
          portRange,
          target: this.regional("targetPools", lbName),
          loadBalancingScheme: "EXTERNAL",
          networkTier: tier,
        },
        signal,
        spec.serviceName,
      );
      if (step !== undefined) return step;
    }
    const wanted = new Set(protocols.map((p, n) => ruleName(lbName, p, n === 0)));
    for (const protocol of PROTOCOLS)
      for (const first of [true, false]) {
        const name = ruleName(lbName, protocol, first);
        if (wanted.has(name)) continue;
        const step = await this.deleteRegional("forwardingRules", name, target, signal);
        if (step !== undefined) return step;
      }
    // The Service's own address once the rules use the user's.
    if (userOwned) {
      const step = await this.deleteRegional("addresses", lbName, target, signal);
      if (step !== undefined) return step;
    }
    return [{ ip }];
  }

  /**
   * The firewall `k8s-fw-<lbName>` for the clients: the source ranges (or everyone) to the
   * backends' tags on the Service ports, destination the address (a passthrough load balancer,
   * target pool or backend service, keeps the destination IP and port).
   */
  async ensureClientFirewall(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    ip: string,
    tags: string[],
    signal?: AbortSignal,
  ): Promise<Step> {
    const allowed = PROTOCOLS.filter((p) => spec.listeners.some((l) => l.protocol === p)).map((p) => ({
      IPProtocol: p.toLowerCase(),
      ports: [...new Set(spec.listeners.filter((l) => l.protocol === p).map((l) => String(l.port)))].sort(),
    }));
    return this.ensureFirewall(
      gceFirewallName(gceLoadBalancerName(target.serviceUid)),
      {
        // Upstream's firewall description also names the address it guards.
        description: ownerDescription(target, spec.serviceName, { "kubernetes.io/service-ip": ip }),
        network: this.networkUrl(target),
        sourceRanges: spec.sourceRanges.length > 0 ? [...spec.sourceRanges] : ["0.0.0.0/0"],
        destinationRanges: [ip],
        allowed,
      },
      tags,
      signal,
    );
  }

  /**
   * The IP the rules use (upstream verifyUserRequestedIP, ensureStaticIP): loadBalancerIP names
   * a regional address the user reserved (of the Service's tier; never deleted) or the IP the
   * load balancer holds already; otherwise the Service's own address `<lbName>`, reserved with
   * the IP the first rule holds when that one is ephemeral (what cloud-provider-gcp leaves:
   * it releases its reservation once the rule holds the IP), so the IP is kept.
   */
  async ensureAddress(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    lbName: string,
    tier: NetworkTier,
    description: string,
    signal?: AbortSignal,
  ): Promise<{ ip: string; userOwned: boolean } | InProgress> {
    const own = await this.getAddress(lbName, signal);
    if (own !== undefined) {
      const why = whyNotOwned(own.description, target, spec.serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: address ${lbName} exists and is not this Service's: ${why}`);
    }
    const rule = await this.getRule(lbName, signal);
    const ruleIP =
      rule?.IPAddress != null && this.ours(rule.description, target, spec.serviceName)
        ? rule.IPAddress
        : undefined;
    const requested = spec.loadBalancerIP;
    if (requested !== undefined && requested !== "" && requested !== own?.address) {
      const found = await this.addressByIP(requested, signal);
      if (found !== undefined) {
        const foundTier = found.networkTier ?? "PREMIUM";
        if (found.addressType === "INTERNAL")
          throw new CloudError(`gcp: loadBalancerIP ${requested} is an internal address (${found.name})`);
        if (foundTier !== tier)
          throw new CloudError(
            `gcp: loadBalancerIP ${requested} (address ${found.name}) belongs to the ${foundTier} network tier; the Service needs ${tier}`,
          );
        return { ip: requested, userOwned: true };
      }
      if (requested !== ruleIP)
        throw new CloudError(
          `gcp: loadBalancerIP ${requested} is neither a static address of region ${this.region} nor the load balancer's own IP: reserve it first`,
        );
    }
    if (own?.address != null) return { ip: own.address, userOwned: false };
    // Promote the first rule's IP only while it is ephemeral (nobody's reservation).
    const promote =
      ruleIP !== undefined && (await this.addressByIP(ruleIP, signal)) === undefined ? ruleIP : undefined;
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
                  addressType: "EXTERNAL",
                  networkTier: tier,
                  ...(promote !== undefined && { address: promote }),
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
    if (made?.address == null)
      return (
        (await this.ops.after({ status: "PENDING", name: lbName })) ??
        inProgress(this.options.operationPollMs, `address ${lbName} reserving`)
      );
    return { ip: made.address, userOwned: false };
  }

  /** Upstream deleteWrongNetworkTieredResources: the Service's rules and own address of another tier. */
  async deleteWrongTier(
    target: ServiceTarget,
    lbName: string,
    tier: NetworkTier,
    signal?: AbortSignal,
  ): Promise<Step> {
    for (const protocol of PROTOCOLS)
      for (const first of [true, false]) {
        const name = ruleName(lbName, protocol, first);
        const rule = await this.getRule(name, signal);
        if (rule === undefined || (rule.networkTier ?? "PREMIUM") === tier) continue;
        const step = await this.deleteRegional("forwardingRules", name, target, signal);
        if (step !== undefined) return step;
      }
    const own = await this.getAddress(lbName, signal);
    if (own === undefined || (own.networkTier ?? "PREMIUM") === tier) return undefined;
    return this.deleteRegional("addresses", lbName, target, signal);
  }

  /**
   * The pool's health check replaced in place (removeHealthCheck, then addHealthCheck: a pool
   * holds one) when it changed — externalTrafficPolicy switched, or an adopted pool still on
   * the vendor cluster's shared check — then the check it left is deleted if nothing uses it.
   */
  private async swapHealthCheck(
    target: ServiceTarget,
    pool: Pool,
    hcLink: string,
    signal?: AbortSignal,
  ): Promise<Step> {
    const have = pool.healthChecks ?? [];
    if (have.length === 1 && tail(have[0]) === tail(hcLink)) return undefined;
    const targetPool = pool.name ?? "";
    const link = this.regional("targetPools", targetPool);
    const pending = await this.ops.pending(`regions/${this.region}`, link, signal);
    if (pending !== undefined) return pending;
    const old = have.filter((h) => tail(h) !== tail(hcLink));
    if (old.length > 0) {
      const step = await this.ops.after(
        await this.api.mutate(
          "targetPools.removeHealthCheck",
          (c, o) =>
            c.targetPools.removeHealthCheck(
              {
                project: this.api.project,
                region: this.region,
                targetPool,
                targetPoolsRemoveHealthCheckRequestResource: {
                  healthChecks: old.map((healthCheck) => ({ healthCheck })),
                },
              },
              o,
            ),
          signal,
        ),
        signal,
      );
      if (step !== undefined) return step;
    }
    if (!have.some((h) => tail(h) === tail(hcLink))) {
      const step = await this.ops.after(
        await this.api.mutate(
          "targetPools.addHealthCheck",
          (c, o) =>
            c.targetPools.addHealthCheck(
              {
                project: this.api.project,
                region: this.region,
                targetPool,
                targetPoolsAddHealthCheckRequestResource: { healthChecks: [{ healthCheck: hcLink }] },
              },
              o,
            ),
          signal,
        ),
        signal,
      );
      if (step !== undefined) return step;
    }
    for (const h of old) {
      const step = await this.deleteLeftHealthCheck(
        target,
        tail(h).replace(/^global\/httpHealthChecks\//, ""),
        signal,
      );
      if (step !== undefined) return step;
    }
    return undefined;
  }

  /**
   * A health check a pool of the Service no longer uses: the Service's own one and its firewall,
   * or a cluster's shared one (this cluster's, or with adoptFrom the vendor cluster's) once no
   * pool uses it.
   */
  private async deleteLeftHealthCheck(
    target: ServiceTarget,
    name: string,
    signal?: AbortSignal,
  ): Promise<Step> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    if (name === lbName) return this.deleteOwnHealthCheck(target, signal);
    const vendor = target.scope.adoptFrom?.vendorCcmClusterName;
    for (const cluster of [target.cluster, ...(vendor === undefined ? [] : [vendor])])
      if (name === gceNodesHealthCheckName(cluster)) return this.deleteSharedHealthCheck(cluster, signal);
    return undefined;
  }

  private async ensureHealthCheck(
    name: string,
    want: {
      description: string;
      port: number;
      requestPath: string;
      checkIntervalSec: number;
      timeoutSec: number;
      healthyThreshold: number;
      unhealthyThreshold: number;
    },
    signal?: AbortSignal,
  ): Promise<Step> {
    const hc = await this.getHealthCheck(name, signal);
    if (hc === undefined)
      return this.insert(
        "global",
        this.global("httpHealthChecks", name),
        () =>
          this.api.rest<Operation>(
            "httpHealthChecks.insert",
            "POST",
            "global/httpHealthChecks",
            { name, ...want },
            signal,
          ),
        signal,
      );
    if (hc.port === want.port && hc.requestPath === want.requestPath) return undefined;
    const pending = await this.ops.pending("global", this.global("httpHealthChecks", name), signal);
    if (pending !== undefined) return pending;
    return this.ops.after(
      await this.api.rest<Operation>(
        "httpHealthChecks.update",
        "PUT",
        `global/httpHealthChecks/${name}`,
        { name, ...want, description: hc.description ?? want.description },
        signal,
      ),
      signal,
    );
  }

  private async syncPoolInstances(
    pool: Pool,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<Step> {
    const have = new Set(poolBackends(pool));
    const add = backends.filter((b) => !have.has(b));
    const remove = [...have].filter((b) => !backends.includes(b));
    if (add.length === 0 && remove.length === 0) return undefined;
    const link = this.regional("targetPools", pool.name ?? "");
    const pending = await this.ops.pending(`regions/${this.region}`, link, signal);
    if (pending !== undefined) return pending;
    const targetPool = pool.name ?? "";
    if (remove.length > 0) {
      const step = await this.ops.after(
        await this.api.mutate(
          "targetPools.removeInstance",
          (c, o) =>
            c.targetPools.removeInstance(
              {
                project: this.api.project,
                region: this.region,
                targetPool,
                targetPoolsRemoveInstanceRequestResource: {
                  instances: remove.map((b) => ({ instance: this.instanceUrl(b) })),
                },
              },
              o,
            ),
          signal,
        ),
        signal,
      );
      if (step !== undefined) return step;
    }
    if (add.length > 0)
      return this.ops.after(
        await this.api.mutate(
          "targetPools.addInstance",
          (c, o) =>
            c.targetPools.addInstance(
              {
                project: this.api.project,
                region: this.region,
                targetPool,
                targetPoolsAddInstanceRequestResource: {
                  instances: add.map((b) => ({ instance: this.instanceUrl(b) })),
                },
              },
              o,
            ),
          signal,
        ),
        signal,
      );
    return undefined;
  }

  /** A forwarding rule; one whose address, ports or protocol changed is replaced (Compute cannot patch them). */
  private async ensureRule(
    target: ServiceTarget,
    name: string,
    want: Rule,
    signal?: AbortSignal,
    serviceName?: string,
  ): Promise<Step> {
    const rule = await this.getRule(name, signal);
    if (rule !== undefined) {
      const why = whyNotOwned(rule.description, target, serviceName);
      if (why !== undefined)
        throw new CloudError(`gcp: forwarding rule ${name} exists and is not this Service's: ${why}`);
      if (
        (rule.networkTier ?? "PREMIUM") === (want.networkTier ?? "PREMIUM") &&
        rule.IPAddress === want.IPAddress &&
        rule.portRange === want.portRange &&
        rule.IPProtocol === want.IPProtocol &&
        tail(rule.target) === tail(want.target)
      )
        return undefined;
      return this.deleteRegional("forwardingRules", name, target, signal).then(
        (s) => s ?? this.ops.after({ status: "PENDING", name }),
      );
    }
    return this.insert(
      "regions",
      this.regional("forwardingRules", name),
      () =>
        this.api.mutate(
          "forwardingRules.insert",
          (c, o) =>
            c.forwardingRules.insert(
              { project: this.api.project, region: this.region, forwardingRuleResource: { name, ...want } },
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
    /** The pool as just read (by the caller that chose this kind), else read here. */
    read?: Pool,
  ): Promise<undefined | InProgress> {
    const pool = read ?? (await this.getPool(gceLoadBalancerName(target.serviceUid), signal));
    if (pool === undefined || !this.ours(pool.description, target))
      throw new NeedsEnsureError("gcp: the target pool is gone");
    return this.syncPoolInstances(pool, backends, signal);
  }

  // ---- delete -----------------------------------------------------------------------------------

  /**
   * Deletes the Service's target-pool load balancer (a resource of anyone else is left alone;
   * gone already is done). `switching` (to the backend-service based one, which uses the same
   * address and client firewall): the address and `k8s-fw-<lbName>` stay, so the IP is kept.
   */
  async ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    switching = false,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    for (const protocol of PROTOCOLS)
      for (const first of [true, false]) {
        const step = await this.deleteRegional(
          "forwardingRules",
          ruleName(lbName, protocol, first),
          target,
          signal,
        );
        if (step !== undefined) return step;
      }
    const pool = await this.getPool(lbName, signal);
    const poolHc = tail(pool?.healthChecks?.[0]).replace(/^global\/httpHealthChecks\//, "");
    const poolStep = await this.deleteRegional("targetPools", lbName, target, signal);
    if (poolStep !== undefined) return poolStep;
    const own = await this.deleteOwnHealthCheck(target, signal);
    if (own !== undefined) return own;
    // The cluster's shared node health check goes with the last target pool using it.
    const shared = gceNodesHealthCheckName(target.cluster);
    if (poolHc === "" || poolHc === shared) {
      const step = await this.deleteSharedHealthCheck(target.cluster, signal);
      if (step !== undefined) return step;
    } else if (poolHc !== lbName) {
      // An adopted pool still on the vendor cluster's shared check.
      const step = await this.deleteLeftHealthCheck(target, poolHc, signal);
      if (step !== undefined) return step;
    }
    if (switching) return undefined;
    const fw = await this.deleteFirewall(gceFirewallName(lbName), target, signal);
    if (fw !== undefined) return fw;
    return this.deleteRegional("addresses", lbName, target, signal);
  }

  /** The Service's own (Local) health check, then its firewall. */
  private async deleteOwnHealthCheck(target: ServiceTarget, signal?: AbortSignal): Promise<Step> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const own = await this.deleteOwned(
      "global",
      "httpHealthChecks",
      lbName,
      target,
      () => this.getHealthCheck(lbName, signal),
      () =>
        this.api.rest<Operation>(
          "httpHealthChecks.delete",
          "DELETE",
          `global/httpHealthChecks/${lbName}`,
          undefined,
          signal,
        ),
      signal,
    );
    if (own !== undefined) return own;
    return this.deleteFirewall(gceHealthCheckFirewallName(target.cluster, lbName, false), target, signal);
  }

  async deleteSharedHealthCheck(cluster: string, signal?: AbortSignal): Promise<Step> {
    const name = gceNodesHealthCheckName(cluster);
    const inUse = await this.sharedHealthCheckInUse(name, signal);
    if (inUse) return undefined;
    const hc = await this.deleteOwned(
      "global",
      "httpHealthChecks",
      name,
      undefined,
      () => this.getHealthCheck(name, signal),
      () =>
        this.api.rest<Operation>(
          "httpHealthChecks.delete",
          "DELETE",
          `global/httpHealthChecks/${name}`,
          undefined,
          signal,
        ),
      signal,
    ).catch((err: unknown) => {
      // Another Service's pool took it meanwhile: it stays.
      if (hasReason(err, "resourceInUseByAnotherResource")) return "in-use" as const;
      throw err;
    });
    if (hc === "in-use") return undefined;
    if (hc !== undefined) return hc;
    return this.deleteFirewall(gceHealthCheckFirewallName(cluster, name, true), undefined, signal);
  }

  /** Whether any target pool of the region still names the shared health check. */
  private async sharedHealthCheckInUse(name: string, signal?: AbortSignal): Promise<boolean> {
    const link = this.global("httpHealthChecks", name);
    const [pools] = await this.api.call(
      "targetPools.list",
      (c, o) => c.targetPools.list({ project: this.api.project, region: this.region, maxResults: 500 }, o),
      signal,
    );
    return pools.some((p) => (p.healthChecks ?? []).some((h) => tail(h) === tail(link)));
  }
}
