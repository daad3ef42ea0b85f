/**
 * The external network load balancer cloud-provider-gcp builds (gce_loadbalancer_external.go),
 * with its names: a regional address `<lbName>`, the firewall `k8s-fw-<lbName>` (source ranges →
 * the nodes' network tags, the Service ports), a legacy HTTP health check (the cluster's shared
 * `k8s-<cluster>-node` on kube-proxy's port, or `<lbName>` on healthCheckNodePort for
 * externalTrafficPolicy Local) and its firewall for Google's checkers, the target pool
 * `<lbName>` with the backends, and a forwarding rule per protocol. Every step reads the cloud
 * first, so a repeat changes nothing and a crash between any two operations is finished by the
 * next call; a step whose operation runs answers InProgress.
 */
import type * as Compute from "@google-cloud/compute";
import { CloudError, NeedsEnsureError } from "../../errors.js";
import type {
  BackendAnnotations,
  InProgress,
  LbIngress,
  LbProtocol,
  LoadBalancerCapabilities,
  LoadBalancerSpec,
  LoadBalancerState,
  LoadBalancers,
  OwnedLoadBalancer,
  OwnedLoadBalancerPage,
  ProviderContext,
  ServiceTarget,
} from "../../provider.js";
import { lbOwner } from "../../provider.js";
import type { GcpApi, Operation } from "./api.js";
import { hasReason, isNotFound } from "./errors.js";
import type { GcpInstances } from "./instances.js";
import {
  descriptionOwner,
  gceFirewallName,
  gceHealthCheckFirewallName,
  gceLoadBalancerName,
  gceNodesHealthCheckName,
  ownerDescription,
} from "./names.js";
import { getOrUndefined, Operations, type Step } from "./operations.js";
import type { GcpOptions } from "./options.js";

type V1 = typeof Compute.protos.google.cloud.compute.v1;
type Firewall = InstanceType<V1["Firewall"]>;
type Pool = Compute.protos.google.cloud.compute.v1.ITargetPool;
type Rule = Compute.protos.google.cloud.compute.v1.IForwardingRule;
/** A legacy HTTP health check as the REST API answers it (the SDK has no type for it). */
interface HttpHealthCheck {
  readonly name?: string;
  readonly description?: string | null;
  readonly port?: number;
  readonly requestPath?: string;
}

/** Google's health checkers (upstream L4LBSrcRanges). */
const HEALTH_CHECK_RANGES = ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"];
/** Upstream's legacy health-check timing (gce_healthchecks.go). */
const HC = { checkIntervalSec: 8, timeoutSec: 1, healthyThreshold: 1, unhealthyThreshold: 3 };
const PROTOCOLS: readonly LbProtocol[] = ["TCP", "UDP"];

const sameSet = (a: readonly string[] | null | undefined, b: readonly string[]) =>
  [...(a ?? [])].sort().join(",") === [...b].sort().join(",");
const tail = (link: string | null | undefined) => (link ?? "").replace(/^.*\/projects\/[^/]+\//, "");

/** A forwarding rule's name per protocol: the first (TCP where present) is upstream's `<lbName>`. */
function ruleName(lbName: string, protocol: string, first: boolean): string {
  return first ? lbName : `${lbName}-${protocol.toLowerCase()}`;
}

export class GcpLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: true,
    proxyProtocol: false,
    internal: false,
    protocols: PROTOCOLS,
  };
  private readonly ops: Operations;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: GcpApi,
    private readonly instances: GcpInstances,
    private readonly options: GcpOptions,
  ) {
    this.ops = new Operations(api, options.operationPollMs);
  }

  private get region(): string {
    return this.api.region;
  }

  private regional(collection: string, name: string): string {
    return this.api.url(`regions/${this.region}/${collection}/${name}`);
  }

  private global(collection: string, name: string): string {
    return this.api.url(`global/${collection}/${name}`);
  }

  private instanceUrl(id: string): string {
    const [zone, name] = id.split("/");
    return this.api.url(`zones/${zone}/instances/${name}`);
  }

  private ours(description: unknown, target: ServiceTarget): boolean {
    const o = descriptionOwner(description);
    return o !== undefined && o.cluster === target.cluster && o.serviceUid === target.serviceUid;
  }

  // ---- reads ------------------------------------------------------------------------------------

  private getAddress(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "addresses.get",
            (c, o) => c.addresses.get({ project: this.api.project, region: this.region, address: name }, o),
            signal,
          )
        )[0],
    );
  }
  private getFirewall(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "firewalls.get",
            (c, o) => c.firewalls.get({ project: this.api.project, firewall: name }, o),
            signal,
          )
        )[0],
    );
  }
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
  private getPool(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "targetPools.get",
            (c, o) =>
              c.targetPools.get({ project: this.api.project, region: this.region, targetPool: name }, o),
            signal,
          )
        )[0],
    );
  }
  private getRule(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "forwardingRules.get",
            (c, o) =>
              c.forwardingRules.get(
                { project: this.api.project, region: this.region, forwardingRule: name },
                o,
              ),
            signal,
          )
        )[0],
    );
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const name = gceLoadBalancerName(target.serviceUid);
    const pool = await this.getPool(name, signal);
    if (pool === undefined || !this.ours(pool.description, target)) return undefined;
    const rule = await this.getRule(name, signal);
    return {
      // The forwarding rule's link: what clients reach, the same across a rule's re-creation.
      id: this.regional("forwardingRules", name),
      name,
      owner: lbOwner(target),
      ingress: rule?.IPAddress ? [{ ip: rule.IPAddress }] : [],
      backends: this.backendsOf(pool),
    };
  }

  /**
   * One page of the region's forwarding rules (one read): those whose description names an
   * owner of this hub and whose name is that owner's, with their address as the ingress. No
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

  private backendsOf(pool: Pool): string[] {
    return (pool.instances ?? [])
      .map((u) => tail(u).replace(/^zones\/([^/]+)\/instances\/([^/]+)$/, "$1/$2"))
      .sort();
  }

  // ---- ensure -----------------------------------------------------------------------------------

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    if (spec.internal)
      throw new CloudError(
        "gcp: internal load balancers are not supported yet (phase 1 builds the external target-pool load balancer)",
      );
    const lbName = gceLoadBalancerName(target.serviceUid);
    const description = ownerDescription(target, spec.serviceName);
    const pool = await this.getPool(lbName, signal);
    if (pool !== undefined && !this.ours(pool.description, target))
      throw new CloudError(
        `gcp: target pool ${lbName} exists and is not this Service's (description ${String(pool.description)})`,
      );
    const tags = await this.backendTags(target, spec.backends, signal);

    // 1. The regional address the forwarding rules share.
    let address = await this.getAddress(lbName, signal);
    if (address === undefined) {
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
                    networkTier: "PREMIUM",
                  },
                },
                o,
              ),
            signal,
          ),
        signal,
      );
      if (step !== undefined) return step;
      address = await this.getAddress(lbName, signal);
      if (address?.address == null) return (await this.ops.after({ status: "PENDING", name: lbName })) ?? [];
    } else if (!this.ours(address.description, target))
      throw new CloudError(`gcp: address ${lbName} exists and is not this Service's`);
    const ip = address.address ?? "";

    // 2. The firewall for the clients.
    const network = this.api.url(
      `global/networks/${target.network ?? this.ctx.account.network ?? "default"}`,
    );
    const allowed = PROTOCOLS.filter((p) => spec.listeners.some((l) => l.protocol === p)).map((p) => ({
      IPProtocol: p.toLowerCase(),
      ports: [...new Set(spec.listeners.filter((l) => l.protocol === p).map((l) => String(l.port)))].sort(),
    }));
    const fw = await this.ensureFirewall(
      gceFirewallName(lbName),
      {
        // Upstream's firewall description also names the address it guards.
        description: ownerDescription(target, spec.serviceName, { "kubernetes.io/service-ip": ip }),
        network,
        sourceRanges: spec.sourceRanges.length > 0 ? [...spec.sourceRanges] : ["0.0.0.0/0"],
        destinationRanges: [ip],
        allowed,
      },
      tags,
      signal,
    );
    if (fw !== undefined) return fw;

    // 3. The health check and its firewall.
    const local = this.isLocal(spec);
    const hcName = local ? lbName : gceNodesHealthCheckName(target.cluster);
    const hcPort = local ? spec.healthCheck.port : this.options.nodeHealthCheckPort;
    // Upstream's descriptions of the shared check and its firewall: the check's own name, the cluster id.
    const hcDescription = local ? description : JSON.stringify({ "kubernetes.io/service-name": hcName });
    const hcFwDescription = local
      ? description
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
        allowed: [{ IPProtocol: "tcp", ports: [String(hcPort)] }],
      },
      tags,
      signal,
      !local,
    );
    if (hcFw !== undefined) return hcFw;

    // 4. The target pool with the backends.
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
          networkTier: "PREMIUM",
        },
        signal,
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
    return [{ ip }];
  }

  /** externalTrafficPolicy Local: an HTTP check on a port no listener sends traffic to (healthCheckNodePort). */
  private isLocal(spec: LoadBalancerSpec): boolean {
    return (
      spec.healthCheck.protocol === "HTTP" &&
      !spec.listeners.some((l) => l.nodePort === spec.healthCheck.port)
    );
  }

  /** The backends' network tags; each backend must be in the cluster's network. */
  private async backendTags(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<string[]> {
    if (backends.length === 0) return [];
    const found = await this.instances.byNames(
      backends.map((b) => b.split("/")[1] ?? ""),
      signal,
    );
    const byId = new Map(found.map((i) => [`${tail(i.zone).replace(/^zones\//, "")}/${i.name}`, i]));
    const tags = new Set<string>();
    const network = target.network ?? this.ctx.account.network;
    for (const b of backends) {
      const i = byId.get(b);
      if (i === undefined) continue; // gone meanwhile: the pool refuses it, the next sync drops it
      const net = (i.networkInterfaces?.[0]?.network ?? "").split("/").pop();
      if (network !== undefined && net !== network)
        throw new CloudError(`gcp: backend ${b} is in network ${net}, not the cluster's ${network}`);
      for (const t of i.tags?.items ?? []) tags.add(t);
    }
    return [...tags].sort();
  }

  /** An insert of a missing resource: its pending operation first, so a repeat never inserts twice. */
  private async insert(
    scopeKind: "regions" | "global",
    link: string,
    insert: () => Promise<Operation>,
    signal?: AbortSignal,
  ): Promise<Step> {
    const scope = scopeKind === "global" ? "global" : `regions/${this.region}`;
    const pending = await this.ops.pending(scope, link, signal);
    if (pending !== undefined) return pending;
    try {
      return await this.ops.after(await insert(), signal);
    } catch (err) {
      // Someone's insert (ours, its answer lost) made it or is making it: look again.
      if (hasReason(err, "alreadyExists")) return this.ops.after({ status: "PENDING", name: link });
      throw err;
    }
  }

  private async ensureFirewall(
    name: string,
    want: {
      description: string;
      network: string;
      sourceRanges: string[];
      destinationRanges?: string[];
      allowed: { IPProtocol: string; ports: string[] }[];
    },
    tags: string[],
    signal?: AbortSignal,
    shared = false,
  ): Promise<Step> {
    const fw = await this.getFirewall(name, signal);
    if (fw === undefined) {
      if (tags.length === 0)
        throw new CloudError(
          `gcp: no network tags on the backends: firewall ${name} would open the whole network`,
        );
      return this.insert(
        "global",
        this.global("firewalls", name),
        () =>
          this.api.mutate(
            "firewalls.insert",
            (c, o) =>
              c.firewalls.insert(
                {
                  project: this.api.project,
                  firewallResource: { name, ...want, targetTags: tags } as Firewall,
                },
                o,
              ),
            signal,
          ),
        signal,
      );
    }
    // A shared firewall keeps every cluster Service's tags; one of this Service's own follows its backends.
    const targetTags =
      tags.length === 0
        ? [...(fw.targetTags ?? [])]
        : shared
          ? [...new Set([...(fw.targetTags ?? []), ...tags])].sort()
          : tags;
    const same =
      sameSet(fw.sourceRanges, want.sourceRanges) &&
      sameSet(fw.destinationRanges, want.destinationRanges ?? []) &&
      sameSet(fw.targetTags, targetTags) &&
      tail(fw.network) === tail(want.network) &&
      JSON.stringify((fw.allowed ?? []).map((a) => [a.IPProtocol, [...(a.ports ?? [])].sort()])) ===
        JSON.stringify(want.allowed.map((a) => [a.IPProtocol, a.ports]));
    if (same) return undefined;
    const pending = await this.ops.pending("global", this.global("firewalls", name), signal);
    if (pending !== undefined) return pending;
    return this.ops.after(
      await this.api.mutate(
        "firewalls.patch",
        (c, o) =>
          c.firewalls.patch(
            {
              project: this.api.project,
              firewall: name,
              firewallResource: {
                ...want,
                ...(shared && { description: fw.description ?? want.description }),
                targetTags,
              } as Firewall,
            },
            o,
          ),
        signal,
      ),
      signal,
    );
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
    const have = new Set(this.backendsOf(pool));
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
  ): Promise<Step> {
    const rule = await this.getRule(name, signal);
    if (rule !== undefined) {
      if (!this.ours(rule.description, target))
        throw new CloudError(`gcp: forwarding rule ${name} exists and is not this Service's`);
      if (
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
    _annotations?: BackendAnnotations,
  ): Promise<undefined | InProgress> {
    const pool = await this.getPool(gceLoadBalancerName(target.serviceUid), signal);
    if (pool === undefined || !this.ours(pool.description, target))
      throw new NeedsEnsureError("gcp: the target pool is gone");
    return this.syncPoolInstances(pool, backends, signal);
  }

  // ---- delete -----------------------------------------------------------------------------------

  /** Deletes a resource of the owner (a resource of anyone else is left alone); gone already is done. */
  private async deleteOwned(
    scopeKind: "regions" | "global",
    collection: string,
    name: string,
    target: ServiceTarget | undefined,
    read: () => Promise<{ description?: string | null } | undefined>,
    del: () => Promise<Operation>,
    signal?: AbortSignal,
  ): Promise<Step> {
    const r = await read();
    if (r === undefined) return undefined;
    if (target !== undefined && !this.ours(r.description, target)) return undefined;
    const scope = scopeKind === "global" ? "global" : `regions/${this.region}`;
    const link = scopeKind === "global" ? this.global(collection, name) : this.regional(collection, name);
    const pending = await this.ops.pending(scope, link, signal);
    if (pending !== undefined) return pending;
    try {
      return await this.ops.after(await del(), signal);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private deleteRegional(
    collection: "forwardingRules" | "targetPools" | "addresses",
    name: string,
    target: ServiceTarget,
    signal?: AbortSignal,
  ): Promise<Step> {
    const p = { project: this.api.project, region: this.region };
    const read =
      collection === "forwardingRules"
        ? () => this.getRule(name, signal)
        : collection === "targetPools"
          ? () => this.getPool(name, signal)
          : () => this.getAddress(name, signal);
    const del = () =>
      this.api.mutate(
        `${collection}.delete`,
        (c, o) =>
          collection === "forwardingRules"
            ? c.forwardingRules.delete({ ...p, forwardingRule: name }, o)
            : collection === "targetPools"
              ? c.targetPools.delete({ ...p, targetPool: name }, o)
              : c.addresses.delete({ ...p, address: name }, o),
        signal,
      );
    return this.deleteOwned("regions", collection, name, target, read, del, signal);
  }

  private deleteFirewall(
    name: string,
    target: ServiceTarget | undefined,
    signal?: AbortSignal,
  ): Promise<Step> {
    return this.deleteOwned(
      "global",
      "firewalls",
      name,
      target,
      () => this.getFirewall(name, signal),
      () =>
        this.api.mutate(
          "firewalls.delete",
          (c, o) => c.firewalls.delete({ project: this.api.project, firewall: name }, o),
          signal,
        ),
      signal,
    );
  }

  async ensureDeleted(target: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
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
    // The Service's own (Local) health check and its firewall.
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
    const ownFw = await this.deleteFirewall(
      gceHealthCheckFirewallName(target.cluster, lbName, false),
      target,
      signal,
    );
    if (ownFw !== undefined) return ownFw;
    // The cluster's shared node health check goes with the last target pool using it.
    const shared = gceNodesHealthCheckName(target.cluster);
    if (poolHc === "" || poolHc === shared) {
      const step = await this.deleteSharedHealthCheck(target.cluster, signal);
      if (step !== undefined) return step;
    }
    const fw = await this.deleteFirewall(gceFirewallName(lbName), target, signal);
    if (fw !== undefined) return fw;
    return this.deleteRegional("addresses", lbName, target, signal);
  }

  private async deleteSharedHealthCheck(cluster: string, signal?: AbortSignal): Promise<Step> {
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
