/**
 * Droplets as the DigitalOcean CCM reports them: providerID `digitalocean://<id>`, the size
 * slug as instance type, the region slug as region (no zone), shutdown for `status: off` (any
 * other status of a Droplet the API answers, `archive` too, is not gone), and the addresses in
 * its order: Hostname = the Droplet's name, the first private IPv4 (InternalIP), the first
 * public IPv4 (ExternalIP), then the first public IPv6 (ExternalIP). The Droplet's VPC is its
 * network. An account is bound to one region: Droplets elsewhere are out of its scope.
 */
import { isIP } from "node:net";
import { ForbiddenError, InstanceNotFoundError, SuspectAnswerError } from "../../errors.js";
import type {
  InstanceListPage,
  InstanceMetadata,
  InstanceState,
  Instances,
  NodeAddress,
  ProviderContext,
} from "../../provider.js";
import type { DigitalOceanClient } from "./client.js";
import { isNotFound } from "./errors.js";
import type { WireDroplet } from "./wire.js";

export const PROVIDER_NAME = "digitalocean";

export const OPS = {
  get: "droplets.get",
  getByName: "droplets.getByName",
  list: "droplets.list",
} as const;

const PROVIDER_ID = /^digitalocean:\/\/(\d+)$/;

export function providerIDOf(id: number | string): string {
  return `digitalocean://${id}`;
}

export function dropletState(status: string): InstanceState {
  switch (status) {
    case "active":
      return "running";
    case "off":
      return "stopped";
    case "new":
      return "pending";
    default:
      // `archive` included: upstream's InstanceExists says gone only on the API's 404, and
      // InstanceShutdown says shut down only for `off`, so a Droplet the API still answers is
      // neither (never "terminated", which would delete its node).
      return "unknown";
  }
}

/**
 * The DigitalOcean CCM's addresses (do/common.go nodeAddresses): godo's PrivateIPv4,
 * PublicIPv4 and PublicIPv6 each take the first network entry of that type, so later ones (a
 * reserved IP's anchor, a second NIC) are left out.
 */
export function dropletAddresses(d: WireDroplet): NodeAddress[] {
  const out: NodeAddress[] = [{ type: "Hostname", address: d.name }];
  const v4 = d.networks.v4 ?? [];
  const privateV4 = v4.find((n) => n.type === "private");
  if (privateV4 !== undefined) out.push({ type: "InternalIP", address: privateV4.ip_address });
  const publicV4 = v4.find((n) => n.type === "public");
  if (publicV4 !== undefined) out.push({ type: "ExternalIP", address: publicV4.ip_address });
  const publicV6 = (d.networks.v6 ?? []).find((n) => n.type === "public");
  if (publicV6 !== undefined) out.push({ type: "ExternalIP", address: publicV6.ip_address });
  return out;
}

/** DigitalOcean tags are plain strings: `key:value` ones are read as a key and value (scopes match on them). */
export function tagsOf(tags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tags) {
    const colon = t.indexOf(":");
    if (colon > 0) out[t.slice(0, colon)] = t.slice(colon + 1);
    else out[t] = "";
  }
  return out;
}

export function toInstanceMetadata(d: WireDroplet): InstanceMetadata {
  return {
    providerID: providerIDOf(d.id),
    instanceID: String(d.id),
    name: d.name,
    instanceType: d.size_slug,
    region: d.region.slug,
    zone: "",
    addresses: dropletAddresses(d),
    state: dropletState(d.status),
    tags: tagsOf(d.tags),
    ...(d.vpc_uuid !== undefined && d.vpc_uuid !== "" && { network: d.vpc_uuid }),
  };
}

/** The answer must be a Droplet with the fields Node objects are built from. */
export function checkDroplet(body: unknown): WireDroplet {
  const d = body as Partial<WireDroplet> | null;
  if (
    typeof d !== "object" ||
    d === null ||
    typeof d.id !== "number" ||
    !Number.isSafeInteger(d.id) ||
    d.id < 1 ||
    typeof d.name !== "string" ||
    typeof d.region?.slug !== "string" ||
    typeof d.networks !== "object" ||
    d.networks === null
  )
    throw new SuspectAnswerError("DigitalOcean API answered something that is not a Droplet");
  for (const n of d.networks.v4 ?? [])
    if (isIP(n.ip_address) !== 4)
      throw new SuspectAnswerError(`Droplet ${d.id}: ${JSON.stringify(n.ip_address)} is not an IPv4 address`);
  for (const n of d.networks.v6 ?? [])
    if (isIP(n.ip_address) !== 6)
      throw new SuspectAnswerError(`Droplet ${d.id}: ${JSON.stringify(n.ip_address)} is not an IPv6 address`);
  return {
    ...d,
    status: d.status ?? ("" as WireDroplet["status"]),
    size_slug: typeof d.size_slug === "string" ? d.size_slug : "",
    tags: Array.isArray(d.tags) ? d.tags.filter((t): t is string => typeof t === "string") : [],
  } as WireDroplet;
}

export class DigitalOceanInstances implements Instances {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: DigitalOceanClient,
    /** Lists only Droplets with this tag (accounts[].options.dropletTag). */
    private readonly tag: string | undefined,
  ) {}

  parseProviderID(providerID: string): string | undefined {
    return PROVIDER_ID.exec(providerID)?.[1];
  }

  private inRegion(d: WireDroplet): boolean {
    return d.region.slug === this.ctx.account.region;
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new ForbiddenError(`providerID ${JSON.stringify(providerID)} is not a DigitalOcean providerID`);
    let d: WireDroplet;
    try {
      const answer = await this.client.get<{ droplet?: unknown }>(OPS.get, `/droplets/${id}`, signal);
      d = checkDroplet(answer.droplet);
    } catch (err) {
      // DigitalOcean's own 404 on the Droplet's own URL: the one authoritative "gone".
      if (isNotFound(err)) throw new InstanceNotFoundError(providerID, { cause: err });
      throw err;
    }
    if (String(d.id) !== id)
      throw new SuspectAnswerError(`asked for Droplet ${id}, the API answered ${d.id}`);
    if (!this.inRegion(d))
      throw new ForbiddenError(
        `Droplet ${id} is in region ${d.region.slug}, outside account ${this.ctx.account.name}'s ${this.ctx.account.region}`,
      );
    return toInstanceMetadata(d);
  }

  /** Every Droplet called exactly `name` in the region, all pages (the API's name filter, then checked). */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const found = await this.client.list<unknown>(OPS.getByName, "/droplets", "droplets", { name }, signal);
    // The name filter also matches a Droplet's addresses (as upstream relies on): keep exact names.
    return found
      .map(checkDroplet)
      .filter((d) => d.name === name && this.inRegion(d))
      .map(toInstanceMetadata);
  }

  /** Page tokens are DigitalOcean's page numbers. */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<unknown>(
      OPS.list,
      "/droplets",
      "droplets",
      page,
      { tag_name: this.tag },
      signal,
    );
    const instances = answer.items
      .map(checkDroplet)
      .filter((d) => this.inRegion(d))
      .map(toInstanceMetadata);
    return answer.hasNext && answer.items.length > 0
      ? { instances, nextPageToken: String(page + 1) }
      : { instances };
  }
}
