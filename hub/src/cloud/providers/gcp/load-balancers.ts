/**
 * The gcp provider's load balancers: the external target-pool network load balancer
 * (external-lb.ts) by default, the internal passthrough one (internal-lb.ts) for
 * `networking.gke.io/load-balancer-type: Internal`, both named as cloud-provider-gcp names
 * them (`a` + the Service uid), so one Service has one of them; a Service that changed type
 * has the other kind deleted first. listOwned pages the region's forwarding rules.
 */

import { NeedsEnsureError } from "../../errors.js";
import type {
  InProgress,
  LbIngress,
  LoadBalancerCapabilities,
  LoadBalancerSpec,
  LoadBalancerState,
  LoadBalancers,
  OwnedLoadBalancer,
  OwnedLoadBalancerPage,
  ProviderContext,
  ServiceTarget,
} from "../../provider.js";
import { parseGcpLbAnnotations } from "./annotations.js";
import type { GcpApi } from "./api.js";
import { EXTERNAL_PROTOCOLS, ExternalLb } from "./external-lb.js";
import type { GcpInstances } from "./instances.js";
import { InternalLb } from "./internal-lb.js";
import { GcpLbBase } from "./lb-base.js";
import { descriptionOwner, gceLoadBalancerName } from "./names.js";
import type { GcpOptions } from "./options.js";

export class GcpLoadBalancers extends GcpLbBase implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: true,
    proxyProtocol: false,
    internal: true,
    protocols: EXTERNAL_PROTOCOLS,
  };
  private readonly external: ExternalLb;
  private readonly internal: InternalLb;

  constructor(ctx: ProviderContext, api: GcpApi, instances: GcpInstances, options: GcpOptions) {
    super(ctx, api, instances, options);
    this.external = new ExternalLb(ctx, api, instances, options);
    this.internal = new InternalLb(ctx, api, instances, options);
  }

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    parseGcpLbAnnotations(annotations);
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    return (await this.external.get(target, signal)) ?? this.internal.get(target, signal);
  }

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    parseGcpLbAnnotations(spec.annotations);
    // The Service's first rule tells which kind it has now: the other kind goes first.
    const rule = await this.getRule(gceLoadBalancerName(target.serviceUid), signal);
    if (spec.internal) {
      if (rule?.target != null) {
        const step = await this.external.ensureDeleted(target, signal);
        if (step !== undefined) return step;
      }
      return this.internal.ensure(target, spec, signal);
    }
    if (rule?.backendService != null) {
      const step = await this.internal.ensureDeleted(target, signal);
      if (step !== undefined) return step;
    }
    return this.external.ensure(target, spec, signal);
  }

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    if (await this.getPool(lbName, signal)) return this.external.updateBackends(target, backends, signal);
    if (await this.getBackendService(lbName, signal))
      return this.internal.updateBackends(target, backends, signal);
    throw new NeedsEnsureError("gcp: the load balancer is gone");
  }

  /** Both kinds (an interrupted type switch may leave parts of each); the one the rule shows first. */
  async ensureDeleted(target: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
    const rule = await this.getRule(gceLoadBalancerName(target.serviceUid), signal);
    const [first, second] =
      rule?.backendService != null ? [this.internal, this.external] : [this.external, this.internal];
    return (await first.ensureDeleted(target, signal)) ?? second.ensureDeleted(target, signal);
  }

  /**
   * One page of the region's forwarding rules (one read): those whose description names an
   * owner of this hub and whose name is that owner's (external and internal), with their address as the ingress. No
   * digests: a target pool's description cannot be changed after it is made.
   */
  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const [rules, , raw] = await this.api.call(
      "forwardingRules.list",
      (c, o) =>
        c.forwardingRules.list(
          {
            project: this.api.project,
            region: this.region,
            maxResults: 500,
            ...(pageToken !== undefined && { pageToken }),
          },
          o,
        ),
      signal,
    );
    const items: OwnedLoadBalancer[] = [];
    for (const r of rules) {
      const owner = descriptionOwner(r.description);
      if (owner === undefined || r.name !== gceLoadBalancerName(owner.serviceUid)) continue;
      items.push({
        id: r.selfLink ?? this.regional("forwardingRules", r.name),
        name: r.name,
        owner,
        ingress: r.IPAddress ? [{ ip: r.IPAddress }] : [],
      });
    }
    const next = raw?.nextPageToken;
    return { items, ...(next ? { nextPageToken: next } : {}) };
  }
}
