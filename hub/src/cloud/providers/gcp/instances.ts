/**
 * Instances as cloud-provider-gcp reads them (gce_instances.go): providerID
 * gce://<project>/<zone>/<name>, InternalIP from each interface's networkIP, ExternalIP from its
 * access configs, IPv6 after them; type = the machine type's last segment, region = the zone
 * without its suffix. Our instance id is "<zone>/<name>" (unique in a project).
 */

import type * as Compute from "@google-cloud/compute";
import { InstanceNotFoundError, SuspectAnswerError } from "../../errors.js";
import type {
  InstanceListPage,
  InstanceMetadata,
  InstanceState,
  Instances,
  NodeAddress,
  ProviderContext,
} from "../../provider.js";
import type { GcpApi } from "./api.js";
import { isNotFound } from "./errors.js";
import { PROVIDER_ID_SCHEME } from "./names.js";

type Instance = Compute.protos.google.cloud.compute.v1.IInstance;

const lastSegment = (url: string | null | undefined) => (url ?? "").split("/").pop() ?? "";

/**
 * Compute's instance states; TERMINATED is a stopped VM (a deleted one is a 404). Upstream
 * answers "not implemented" for shutdown (gce_instances.go InstanceShutdown); the documented
 * deviation counts only the settled TERMINATED, STOPPED and SUSPENDED as shut down. STOPPING,
 * SUSPENDING and REPAIRING (a host-error repair, not a stop) are transitions: "unknown", so the
 * node gets no shutdown taint and is not deleted.
 */
function stateOf(status: string | null | undefined): InstanceState {
  switch (status) {
    case "PROVISIONING":
    case "STAGING":
      return "pending";
    case "RUNNING":
      return "running";
    case "STOPPING":
    case "SUSPENDING":
    case "REPAIRING":
      return "unknown";
    case "STOPPED":
    case "SUSPENDED":
    case "TERMINATED":
      return "stopped";
    default:
      return "unknown";
  }
}

/** Upstream's order: per interface, its internal address, its external ones, then IPv6. */
function addressesOf(i: Instance): NodeAddress[] {
  const out: NodeAddress[] = [];
  for (const nic of i.networkInterfaces ?? []) {
    if (nic.networkIP) out.push({ type: "InternalIP", address: nic.networkIP });
    for (const ac of nic.accessConfigs ?? [])
      if (ac.natIP) out.push({ type: "ExternalIP", address: ac.natIP });
    if (nic.ipv6Address) out.push({ type: "InternalIP", address: nic.ipv6Address });
    for (const ac of nic.ipv6AccessConfigs ?? [])
      if (ac.externalIpv6) out.push({ type: "ExternalIP", address: ac.externalIpv6 });
  }
  return out;
}

export class GcpInstances implements Instances {
  private zones: Promise<string[]> | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: GcpApi,
    private readonly pageSize: number,
  ) {}

  providerID(zone: string, name: string): string {
    return `${PROVIDER_ID_SCHEME}://${this.api.project}/${zone}/${name}`;
  }

  parseProviderID(providerID: string): string | undefined {
    const m = /^gce:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(providerID);
    if (m === null || m[1] !== this.api.project || !this.inRegion(m[2] ?? "")) return undefined;
    return `${m[2]}/${m[3]}`;
  }

  private inRegion(zone: string): boolean {
    return zone.startsWith(`${this.api.region}-`) && zone.length > this.api.region.length + 1;
  }

  toMetadata(i: Instance): InstanceMetadata {
    const zone = lastSegment(i.zone);
    const name = i.name ?? "";
    const tags: Record<string, string> = { ...(i.labels ?? {}) };
    for (const t of i.tags?.items ?? []) tags[`gce.tag/${t}`] = "";
    const network = lastSegment(i.networkInterfaces?.[0]?.network);
    return {
      providerID: this.providerID(zone, name),
      instanceID: `${zone}/${name}`,
      name,
      instanceType: lastSegment(i.machineType),
      region: zone.replace(/-[a-z]$/, ""),
      zone,
      addresses: addressesOf(i),
      state: stateOf(i.status),
      ...(network !== "" && { network }),
      tags,
    };
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new SuspectAnswerError(
        `not a providerID of project ${this.api.project} in ${this.api.region}: ${providerID}`,
      );
    return this.get(id, signal, providerID);
  }

  /** The instance "<zone>/<name>"; only the 404 of its own get is "not found". */
  async get(id: string, signal?: AbortSignal, lookup = id): Promise<InstanceMetadata> {
    const [zone = "", instance = ""] = id.split("/");
    try {
      const [i] = await this.api.call(
        "instances.get",
        (c, o) => c.instances.get({ project: this.api.project, zone, instance }, o),
        signal,
      );
      if (i?.name !== instance)
        throw new SuspectAnswerError(`instances.get ${id} answered ${i?.name ?? "nothing"}`);
      return this.toMetadata(i);
    } catch (err) {
      if (isNotFound(err)) throw new InstanceNotFoundError(lookup, { cause: err });
      throw err;
    }
  }

  /** Instances with these names in the region: one aggregated list, `name eq` filter. */
  async byNames(names: readonly string[], signal?: AbortSignal): Promise<Instance[]> {
    if (names.length === 0) return [];
    const filter = `name eq "(${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})"`;
    return this.api.call(
      "instances.aggregatedList",
      async (c, o) => {
        const out: Instance[] = [];
        for await (const [scope, list] of c.instances.aggregatedListAsync(
          { project: this.api.project, filter, maxResults: 500 },
          // The call's options: autoPaginate off, the async iterator pages itself (gax warns on true).
          o,
        )) {
          if (!this.inRegion(scope.replace(/^zones\//, ""))) continue;
          out.push(...(list.instances ?? []));
        }
        return out;
      },
      signal,
    );
  }

  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const found = await this.byNames([name], signal);
    return found.filter((i) => i.name === name).map((i) => this.toMetadata(i));
  }

  /** The zones of the account's region (listed once). */
  regionZones(signal?: AbortSignal): Promise<string[]> {
    this.zones ??= this.api
      .call("zones.list", (c, o) => c.zones.list({ project: this.api.project }, o), signal)
      .then(([zones]) =>
        zones
          .map((z) => z.name ?? "")
          .filter((z) => this.inRegion(z))
          .sort(),
      )
      .catch((err: unknown) => {
        this.zones = undefined;
        throw err;
      });
    return this.zones;
  }

  /** One page of one zone's instances: the token is "<zone index>:<that zone's page token>". */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const zones = await this.regionZones(signal);
    const [at = "0", token = ""] = (pageToken ?? "0:").split(/:(.*)/s);
    const index = Number(at);
    const zone = zones[index];
    if (zone === undefined) return { instances: [] };
    const [items, , raw] = await this.api.call(
      "instances.list",
      (c, o) =>
        c.instances.list(
          {
            project: this.api.project,
            zone,
            maxResults: this.pageSize,
            ...(token !== "" && { pageToken: token }),
          },
          o,
        ),
      signal,
    );
    const next = raw?.nextPageToken;
    const nextToken = next ? `${index}:${next}` : index + 1 < zones.length ? `${index + 1}:` : undefined;
    this.ctx.logger.trace({ zone, items: items.length }, "gcp instances page");
    return {
      instances: items.map((i) => this.toMetadata(i)),
      ...(nextToken !== undefined && { nextPageToken: nextToken }),
    };
  }
}
