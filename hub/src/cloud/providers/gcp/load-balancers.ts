/**
 * The gcp provider's load balancers: the external target-pool network load balancer
 * (external-lb.ts) by default, the backend-service based one (rbs-lb.ts) for
 * `cloud.google.com/l4-rbs: enabled`, the internal passthrough one (internal-lb.ts) for
 * `networking.gke.io/load-balancer-type: Internal`, all named `a` + the Service uid, so one
 * Service has one of them; a Service that changed kind has the other kinds deleted first (the
 * two external kinds share the address, so a switch between them keeps the IP). listOwned pages
 * the region's forwarding rules.
 */

import { NeedsEnsureError } from "../../errors.js";
import { backendsDigest, loadBalancerSpecDigest } from "../../naming.js";
import {
  type InProgress,
  inProgress,
  isInProgress,
  type LbIngress,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  type OwnedLoadBalancer,
  type OwnedLoadBalancerPage,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import { parseGcpLbAnnotations } from "./annotations.js";
import type { GcpApi, Operation } from "./api.js";
import { hasReason } from "./errors.js";
import { EXTERNAL_PROTOCOLS, ExternalLb, poolBackends } from "./external-lb.js";
import { groupName } from "./instance-groups.js";
import type { GcpInstances } from "./instances.js";
import { InternalLb } from "./internal-lb.js";
import { GcpLbBase, tail } from "./lb-base.js";
import {
  descriptionOwner,
  gceHealthCheckFirewallName,
  gceInternalHealthCheckFirewallName,
  gceLoadBalancerName,
  gceNodesHealthCheckName,
  gceRbsHealthCheckFirewallName,
  SPEC_DIGEST_LABEL,
} from "./names.js";
import type { GcpOptions } from "./options.js";
import { RbsLb } from "./rbs-lb.js";

export class GcpLoadBalancers extends GcpLbBase implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: true,
    proxyProtocol: false,
    internal: true,
    protocols: EXTERNAL_PROTOCOLS,
    // Backends are instances, nothing per node: listOwned's backends digest comes from the pools.
    readsNodeAnnotations: false,
    // Target pools and backend services reach the Service port on the node, and health checks
    // go to kube-proxy's port or healthCheckNodePort: a Service needs no node port here.
    usesNodePorts: () => false,
  };
  private readonly external: ExternalLb;
  private readonly internal: InternalLb;
  private readonly rbs: RbsLb;

  constructor(ctx: ProviderContext, api: GcpApi, instances: GcpInstances, options: GcpOptions) {
    super(ctx, api, instances, options);
    this.external = new ExternalLb(ctx, api, instances, options);
    this.internal = new InternalLb(ctx, api, instances, options);
    this.rbs = new RbsLb(ctx, api, instances, options);
  }

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    parseGcpLbAnnotations(annotations);
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    return (
      (await this.external.get(target, signal)) ??
      (await this.rbs.get(target, signal)) ??
      this.internal.get(target, signal)
    );
  }

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const ann = parseGcpLbAnnotations(spec.annotations);
    const kind = spec.internal ? "internal" : ann.rbs ? "rbs" : "pool";
    // The Service's first rule tells which kind it has now: the other kinds go first. Without
    // a rule of the wanted kind (an interrupted switch), their own resources tell.
    const lbName = gceLoadBalancerName(target.serviceUid);
    const rule = await this.getRule(lbName, signal);
    const ruleKind =
      rule === undefined
        ? undefined
        : rule.target != null
          ? "pool"
          : rule.backendService == null
            ? undefined
            : rule.loadBalancingScheme === "INTERNAL"
              ? "internal"
              : "rbs";
    // A cleanup of the other kinds deletes on what its reads do not find: it waits until no
    // insert of an earlier pass can land behind those reads (a create interrupted by a switch).
    let quiet = false;
    const cleanup = async (del: () => Promise<undefined | InProgress>) => {
      if (!quiet) {
        const running = await this.ownOperationsRunning(target, signal);
        if (running !== undefined) return running;
        quiet = true;
      }
      return del();
    };
    // To the backend-service one the address is kept: rbs.ensure reserves it, then removes the pool.
    if (kind === "internal" && ruleKind === "pool") {
      const step = await cleanup(() => this.external.ensureDeleted(target, signal));
      if (step !== undefined) return step;
    }
    // An external create interrupted before its rule (the Service turned internal meanwhile)
    // leaves an EXTERNAL address of the name the internal one needs: the external parts go first.
    if (kind === "internal" && ruleKind === undefined) {
      const address = await this.getAddress(lbName, signal);
      if (address?.addressType === "EXTERNAL" && this.ours(address.description, target, spec.serviceName)) {
        const step = await cleanup(
          async () =>
            (await this.external.ensureDeleted(target, signal)) ??
            (await this.rbs.ensureDeleted(target, signal)),
        );
        if (step !== undefined) return step;
      }
    }
    const internalLeft =
      kind === "rbs" &&
      ruleKind === undefined &&
      (await this.getBackendService(lbName, signal))?.loadBalancingScheme === "INTERNAL";
    if (kind !== "internal" && (ruleKind === "internal" || internalLeft)) {
      const step = await cleanup(() => this.internal.ensureDeleted(target, signal));
      if (step !== undefined) return step;
    }
    // Without a rule of its own kind (a create, or a switch interrupted after the rule went),
    // what a backend-service based one may have left goes too: deleting is idempotent.
    // Not for an internal create: the cleanup takes the cluster's groups while no backend
    // service uses them yet, which is exactly where the internal one is building.
    if (kind !== "rbs" && (ruleKind === "rbs" || (ruleKind === undefined && kind === "pool"))) {
      // To the target pool the address and client firewall are kept; an internal one needs its own address.
      const step = await cleanup(() =>
        this.rbs.ensureDeleted(target, signal, kind === "pool" || ruleKind === undefined),
      );
      if (step !== undefined) return step;
    }
    const ingress = await (kind === "internal"
      ? this.internal
      : kind === "rbs"
        ? this.rbs
        : this.external
    ).ensure(target, spec, signal);
    if (isInProgress(ingress)) return ingress;
    return (await this.recordSpecDigest(target, spec, signal)) ?? ingress;
  }

  /**
   * The last step of an ensure, once the cloud matches the spec: its digest in the first
   * forwarding rule's labels (the only resource of either kind that takes labels), where
   * listOwned reads it back, so a restarted hub skips a Service built from the same spec.
   */
  private async recordSpecDigest(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const name = gceLoadBalancerName(target.serviceUid);
    const digest = loadBalancerSpecDigest(spec);
    const rule = await this.getRule(name, signal);
    if (rule === undefined) throw new NeedsEnsureError(`gcp: forwarding rule ${name} is gone`);
    if (rule.labels?.[SPEC_DIGEST_LABEL] === digest) return undefined;
    const pending = await this.ops.pending(
      `regions/${this.region}`,
      this.regional("forwardingRules", name),
      signal,
    );
    if (pending !== undefined) return pending;
    let op: Operation;
    try {
      op = await this.api.mutate(
        "forwardingRules.setLabels",
        (c, o) =>
          c.forwardingRules.setLabels(
            {
              project: this.api.project,
              region: this.region,
              resource: name,
              regionSetLabelsRequestResource: {
                labels: { ...(rule.labels ?? {}), [SPEC_DIGEST_LABEL]: digest },
                // Compute refuses the write (412) if another changed the labels since the read.
                labelFingerprint: rule.labelFingerprint ?? null,
              },
            },
            o,
          ),
        signal,
      );
    } catch (err) {
      // The labels changed between the read and the write (an earlier write of ours ending
      // meanwhile, or another client's): read them again on the next pass.
      if (hasReason(err, "conditionNotMet"))
        return inProgress(
          this.options.operationPollMs,
          `labels of forwarding rule ${name} changed meanwhile`,
        );
      throw err;
    }
    return this.ops.after(op, signal);
  }

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const pool = await this.getPool(lbName, signal);
    if (pool !== undefined) return this.external.updateBackends(target, backends, signal, pool);
    const bs = await this.getBackendService(lbName, signal);
    if (bs?.loadBalancingScheme === "EXTERNAL") return this.rbs.updateBackends(target, backends, signal);
    if (bs !== undefined) return this.internal.updateBackends(target, backends, signal);
    throw new NeedsEnsureError("gcp: the load balancer is gone");
  }

  /** Every kind (an interrupted switch may leave parts of each); the one the rule shows first. */
  async ensureDeleted(target: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
    // A resource read as missing may be one an ensure's insert is still making: "all gone"
    // then would leak it (an open firewall, an address), so the reads wait for such inserts.
    const running = await this.ownOperationsRunning(target, signal);
    if (running !== undefined) return running;
    const rule = await this.getRule(gceLoadBalancerName(target.serviceUid), signal);
    const kinds =
      rule?.backendService == null
        ? [this.external, this.rbs, this.internal]
        : rule.loadBalancingScheme === "INTERNAL"
          ? [this.internal, this.external, this.rbs]
          : [this.rbs, this.external, this.internal];
    for (const k of kinds) {
      const step = await k.ensureDeleted(target, signal);
      if (step !== undefined) return step;
    }
    return undefined;
  }

  /**
   * InProgress while an operation on one of the Service's resources runs (their names hold its
   * load balancer's name) or on the cluster's shared ones a Service's ensure makes (node health
   * checks, their firewalls, the instance groups), in the region, globally or in one of its
   * zones: one aggregated listing (Operations.running).
   */
  private async ownOperationsRunning(
    target: ServiceTarget,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const lbName = gceLoadBalancerName(target.serviceUid);
    const shared = new Set([
      gceNodesHealthCheckName(target.cluster),
      gceHealthCheckFirewallName(target.cluster, "", true),
      gceInternalHealthCheckFirewallName(target.cluster, lbName, true),
      gceRbsHealthCheckFirewallName(target.cluster, lbName, true),
      groupName(target),
    ]);
    const zones = (await this.instances.regionZones(signal)).map((z) => `zones/${z}`);
    return this.ops.running(
      [`regions/${this.region}`, "global", ...zones],
      (name) => name.includes(lbName) || shared.has(name),
      signal,
    );
  }

  /**
   * One page of the region's forwarding rules (one read): those whose description names an
   * owner of this hub and whose name is that owner's (external and internal), with their
   * address as the ingress and the spec digest their labels hold; for external ones the
   * backends digest too, from one listing of the region's target pools.
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
    const owned = rules.flatMap((r) => {
      const owner = descriptionOwner(r.description);
      return owner === undefined || r.name !== gceLoadBalancerName(owner.serviceUid) ? [] : [{ r, owner }];
    });
    // The backends of external ones from their pools as they are (the truth, not a record of
    // it), so a restarted hub syncs only the pools that miss a node; internal ones share the
    // cluster's instance groups, which a restarted hub syncs once per Service.
    const pools = owned.some(({ r }) => r.target != null && r.labels?.[SPEC_DIGEST_LABEL] !== undefined)
      ? await this.poolsByLink(signal)
      : new Map<string, readonly string[]>();
    const items: OwnedLoadBalancer[] = owned.map(({ r, owner }) => {
      const spec = r.labels?.[SPEC_DIGEST_LABEL];
      const backends = r.target != null ? pools.get(tail(r.target)) : undefined;
      return {
        id: r.selfLink ?? this.regional("forwardingRules", r.name ?? ""),
        name: r.name ?? "",
        owner,
        ingress: r.IPAddress ? [{ ip: r.IPAddress }] : [],
        ...(spec !== undefined && { specDigest: spec }),
        ...(spec !== undefined && backends !== undefined && { backendsDigest: backendsDigest(backends) }),
      };
    });
    const next = raw?.nextPageToken;
    return { items, ...(next ? { nextPageToken: next } : {}) };
  }

  /** Every target pool of the region (all pages): its link's tail → its backends. */
  private async poolsByLink(signal?: AbortSignal): Promise<Map<string, readonly string[]>> {
    const pools = await this.api.listAll(
      "targetPools.list",
      (c, o, pageToken) =>
        c.targetPools.list(
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
    const out = new Map<string, readonly string[]>();
    for (const p of pools)
      out.set(tail(p.selfLink ?? this.regional("targetPools", p.name ?? "")), poolBackends(p));
    return out;
  }
}
