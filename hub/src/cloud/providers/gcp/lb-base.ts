/**
 * What the external (target pool) and internal (backend service) load balancers share: the
 * resource links of the account's project and region, ownership by description (with adoption
 * of what cloud-provider-gcp built, only with the cluster's adoptFrom), the reads of addresses,
 * firewalls and forwarding rules, the insert that finds its own pending operation first, the
 * firewall diffed in place, the backends' network tags, and the delete of owned resources.
 */
import type * as Compute from "@google-cloud/compute";
import { CloudError } from "../../errors.js";
import type { ProviderContext, ServiceTarget } from "../../provider.js";
import type { GcpApi, Operation } from "./api.js";
import { hasReason, isNotFound } from "./errors.js";
import type { GcpInstances } from "./instances.js";
import { descriptionOwner, parseDescription, SERVICE_NAME_KEY } from "./names.js";
import { getOrUndefined, Operations, type Step } from "./operations.js";
import type { GcpOptions } from "./options.js";

type V1 = typeof Compute.protos.google.cloud.compute.v1;
type Firewall = InstanceType<V1["Firewall"]>;
type BackendService = Compute.protos.google.cloud.compute.v1.IBackendService;

/** Google's health checkers (upstream L4LBSrcRanges). */
export const HEALTH_CHECK_RANGES = ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"];
/** Upstream's health-check timing (gce_healthchecks.go). */
export const HC = { checkIntervalSec: 8, timeoutSec: 1, healthyThreshold: 1, unhealthyThreshold: 3 };

export const sameSet = (a: readonly string[] | null | undefined, b: readonly string[]) =>
  [...(a ?? [])].sort().join(",") === [...b].sort().join(",");
export const tail = (link: string | null | undefined) => (link ?? "").replace(/^.*\/projects\/[^/]+\//, "");

/**
 * Why a resource is not the Service's, or undefined when it is: fleet-ccm's description for
 * this owner, or (with clusters[].adoptFrom) upstream's `{"kubernetes.io/service-name": …}`
 * without any owner, for the Service of that name when the name is known.
 */
export function whyNotOwned(
  description: unknown,
  target: ServiceTarget,
  serviceName?: string,
): string | undefined {
  const o = descriptionOwner(description);
  if (o !== undefined)
    return o.cluster === target.cluster && o.serviceUid === target.serviceUid
      ? undefined
      : `its description names another owner (cluster ${o.cluster}, Service UID ${o.serviceUid})`;
  const upstream = parseDescription(description)[SERVICE_NAME_KEY];
  if (upstream === undefined) return `its description (${String(description)}) names no owner`;
  if (target.scope.adoptFrom === undefined)
    return `cloud-provider-gcp made it for Service ${upstream}, and cluster ${target.cluster} has no adoptFrom in the hub's configuration to adopt it`;
  if (serviceName !== undefined && serviceName !== "" && upstream !== serviceName)
    return `cloud-provider-gcp made it for Service ${upstream}, not ${serviceName}`;
  return undefined;
}

export abstract class GcpLbBase {
  protected readonly ops: Operations;

  constructor(
    protected readonly ctx: ProviderContext,
    protected readonly api: GcpApi,
    protected readonly instances: GcpInstances,
    protected readonly options: GcpOptions,
  ) {
    this.ops = new Operations(api, options.operationPollMs);
  }

  /** The cluster's VPC network, as a link. */
  protected networkUrl(target: ServiceTarget): string {
    return this.api.url(`global/networks/${target.network ?? this.ctx.account.network ?? "default"}`);
  }

  protected get region(): string {
    return this.api.region;
  }

  protected regional(collection: string, name: string): string {
    return this.api.url(`regions/${this.region}/${collection}/${name}`);
  }

  protected global(collection: string, name: string): string {
    return this.api.url(`global/${collection}/${name}`);
  }

  protected instanceUrl(id: string): string {
    const [zone, name] = id.split("/");
    return this.api.url(`zones/${zone}/instances/${name}`);
  }

  /**
   * Whether a resource of the Service's deterministic name is the Service's: its description
   * names this owner, or (only with the cluster's adoptFrom) it is cloud-provider-gcp's, whose
   * description holds the Service's name and no owner (whyNotOwned says why not).
   */
  protected ours(description: unknown, target: ServiceTarget, serviceName?: string): boolean {
    return whyNotOwned(description, target, serviceName) === undefined;
  }

  protected getAddress(name: string, signal?: AbortSignal) {
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
  protected getFirewall(name: string, signal?: AbortSignal) {
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

  protected getRule(name: string, signal?: AbortSignal) {
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

  /** The backends' network tags; each backend must be in the cluster's network. */
  protected async backendTags(
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
  protected async insert(
    scopeKind: "regions" | "global" | `zones/${string}`,
    link: string,
    insert: () => Promise<Operation>,
    signal?: AbortSignal,
  ): Promise<Step> {
    const scope = scopeKind === "regions" ? `regions/${this.region}` : scopeKind;
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

  protected async ensureFirewall(
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
    // Destinations are compared only where this provider sets them: a patch cannot clear them
    // (Compute's merge patch keeps a field the body leaves out, and the SDK drops an empty list),
    // so a firewall built without them (upstream's internal health-check one) is left as it is.
    // A shared firewall keeps every Service's address (upstream's names only the address of the
    // Service that made it): this one's is added; one open to every destination stays so.
    const fwDestinations = fw.destinationRanges ?? [];
    const destinationRanges =
      want.destinationRanges === undefined || (shared && fwDestinations.length === 0)
        ? undefined
        : shared
          ? [...new Set([...fwDestinations, ...want.destinationRanges])].sort()
          : want.destinationRanges;
    const same =
      sameSet(fw.sourceRanges, want.sourceRanges) &&
      (destinationRanges === undefined || sameSet(fwDestinations, destinationRanges)) &&
      sameSet(fw.targetTags, targetTags) &&
      tail(fw.network) === tail(want.network) &&
      JSON.stringify((fw.allowed ?? []).map((a) => [a.IPProtocol, [...(a.ports ?? [])].sort()])) ===
        JSON.stringify(want.allowed.map((a) => [a.IPProtocol, a.ports]));
    if (same) return undefined;
    const { destinationRanges: _asked, ...rest } = want;
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
                ...rest,
                ...(destinationRanges !== undefined && { destinationRanges }),
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

  /** Deletes a resource of the owner (a resource of anyone else is left alone); gone already is done. */
  protected async deleteOwned(
    scopeKind: "regions" | "global" | `zones/${string}`,
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
    const scope = scopeKind === "regions" ? `regions/${this.region}` : scopeKind;
    const link =
      scopeKind === "global"
        ? this.global(collection, name)
        : scopeKind === "regions"
          ? this.regional(collection, name)
          : this.api.url(`${scopeKind}/${collection}/${name}`);
    const pending = await this.ops.pending(scope, link, signal);
    if (pending !== undefined) return pending;
    try {
      return await this.ops.after(await del(), signal);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  protected deleteRegional(
    collection: "forwardingRules" | "targetPools" | "addresses" | "backendServices",
    name: string,
    target: ServiceTarget | undefined,
    signal?: AbortSignal,
  ): Promise<Step> {
    const p = { project: this.api.project, region: this.region };
    const read = {
      forwardingRules: () => this.getRule(name, signal),
      targetPools: () => this.getPool(name, signal),
      addresses: () => this.getAddress(name, signal),
      backendServices: () => this.getBackendService(name, signal),
    }[collection];
    const op = collection === "backendServices" ? "regionBackendServices" : collection;
    const del = () =>
      this.api.mutate(
        `${op}.delete`,
        (c, o) =>
          collection === "forwardingRules"
            ? c.forwardingRules.delete({ ...p, forwardingRule: name }, o)
            : collection === "targetPools"
              ? c.targetPools.delete({ ...p, targetPool: name }, o)
              : collection === "backendServices"
                ? c.regionBackendServices.delete({ ...p, backendService: name }, o)
                : c.addresses.delete({ ...p, address: name }, o),
        signal,
      );
    return this.deleteOwned("regions", collection, name, target, read, del, signal);
  }

  protected getPool(name: string, signal?: AbortSignal) {
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

  /**
   * The Service's regional backend service (internal or external alike): inserted when
   * missing, updated in place (its fingerprint kept) when protocol, affinity, health check or
   * groups differ.
   */
  protected async ensureBackendService(
    name: string,
    want: BackendService,
    existing: BackendService | undefined,
    signal?: AbortSignal,
  ): Promise<Step> {
    const link = this.regional("backendServices", name);
    if (existing === undefined)
      return this.insert(
        "regions",
        link,
        () =>
          this.api.mutate(
            "regionBackendServices.insert",
            (c, o) =>
              c.regionBackendServices.insert(
                { project: this.api.project, region: this.region, backendServiceResource: want },
                o,
              ),
            signal,
          ),
        signal,
      );
    if (
      existing.protocol === want.protocol &&
      existing.sessionAffinity === want.sessionAffinity &&
      sameSet((existing.healthChecks ?? []).map(tail), (want.healthChecks ?? []).map(tail)) &&
      sameSet(
        (existing.backends ?? []).map((b) => tail(b.group)),
        (want.backends ?? []).map((b) => tail(b.group)),
      )
    )
      return undefined;
    const pending = await this.ops.pending(`regions/${this.region}`, link, signal);
    if (pending !== undefined) return pending;
    return this.ops.after(
      await this.api.mutate(
        "regionBackendServices.update",
        (c, o) =>
          c.regionBackendServices.update(
            {
              project: this.api.project,
              region: this.region,
              backendService: name,
              backendServiceResource: {
                ...want,
                description: existing.description ?? want.description,
                ...(existing.fingerprint != null && { fingerprint: existing.fingerprint }),
              },
            },
            o,
          ),
        signal,
      ),
      signal,
    );
  }

  protected getBackendService(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "regionBackendServices.get",
            (c, o) =>
              c.regionBackendServices.get(
                { project: this.api.project, region: this.region, backendService: name },
                o,
              ),
            signal,
          )
        )[0],
    );
  }

  protected deleteFirewall(
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
}
