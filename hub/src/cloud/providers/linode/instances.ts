/**
 * Instances on Linode, as the Linode CCM reports them: providerID `linode://<id>`, type and
 * region (no zone), the label `linode.region`, shutdown for `offline` and `shutting_down`, and
 * the addresses in its order: Hostname = label, VPC IPv4, then each IPv4 (RFC 1918 as
 * InternalIP, else ExternalIP), then the SLAAC IPv6. An account is bound to one region: Linodes
 * elsewhere are out of its scope.
 */
import { isIP } from "node:net";
import { ForbiddenError, InstanceNotFoundError, SuspectAnswerError } from "../../errors.js";
import {
  accountNetworks,
  type InstanceListPage,
  type InstanceMetadata,
  type InstanceState,
  type Instances,
  type NodeAddress,
  type ProviderContext,
} from "../../provider.js";
import type { LinodeClient } from "./client.js";
import { isNotFound } from "./errors.js";
import type { VpcResolver } from "./vpc.js";
import type { WireLinode } from "./wire.js";

export const PROVIDER_NAME = "linode";
export const REGION_LABEL = "linode.region";

export const OPS = {
  get: "instances.get",
  getByName: "instances.getByName",
  list: "instances.list",
} as const;

const PROVIDER_ID = /^linode:\/\/(\d+)$/;

export function providerIDOf(id: number | string): string {
  return `linode://${id}`;
}

export function linodeState(status: string): InstanceState {
  switch (status) {
    case "running":
      return "running";
    // The Linode CCM's InstanceShutdown: only offline and shutting_down.
    case "offline":
      return "stopped";
    case "shutting_down":
      return "stopping";
    case "booting":
    case "rebooting":
    case "provisioning":
    case "migrating":
    case "rebuilding":
    case "cloning":
    case "restoring":
    case "resizing":
      return "pending";
    // deleting and stopped: the Linode CCM's InstanceExists is true while the API lists the
    // Linode, and neither is a shutdown state there. Gone is the 404 on its own URL.
    default:
      return "unknown";
  }
}

const RFC1918 = [/^10\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./];

export function isPrivateIPv4(ip: string): boolean {
  return RFC1918.some((r) => r.test(ip));
}

/** The Linode CCM's address order. */
export function linodeAddresses(l: WireLinode, vpcIPv4: readonly string[]): NodeAddress[] {
  const out: NodeAddress[] = [{ type: "Hostname", address: l.label }];
  const seen = new Set<string>();
  const add = (type: NodeAddress["type"], address: string) => {
    if (seen.has(address)) return;
    seen.add(address);
    out.push({ type, address });
  };
  for (const ip of vpcIPv4) add("InternalIP", ip);
  for (const ip of l.ipv4) add(isPrivateIPv4(ip) ? "InternalIP" : "ExternalIP", ip);
  if (l.ipv6 !== null && l.ipv6 !== "") add("ExternalIP", l.ipv6.replace(/\/128$/, ""));
  return out;
}

/** Linode tags are plain strings: `key=value` ones are read as a key and value (scopes match on them). */
export function tagsOf(tags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tags) {
    const eq = t.indexOf("=");
    if (eq > 0) out[t.slice(0, eq)] = t.slice(eq + 1);
    else out[t] = "";
  }
  return out;
}

/** `vpc`: the Linode's VPC among the account's clusters' networks and its addresses there, if any. */
export function toInstanceMetadata(
  l: WireLinode,
  vpc?: { readonly network: string; readonly ipv4: readonly string[] },
): InstanceMetadata {
  const vpcIPv4 = vpc?.ipv4 ?? [];
  return {
    providerID: providerIDOf(l.id),
    instanceID: String(l.id),
    name: l.label,
    instanceType: l.type,
    region: l.region,
    zone: "",
    addresses: linodeAddresses(l, vpcIPv4),
    state: linodeState(l.status),
    tags: tagsOf(l.tags),
    ...(vpc !== undefined && vpcIPv4.length > 0 && { network: vpc.network }),
    additionalLabels: { [REGION_LABEL]: l.region },
  };
}

export function checkLinode(body: unknown): WireLinode {
  const l = body as Partial<WireLinode> | null;
  if (
    typeof l !== "object" ||
    l === null ||
    typeof l.id !== "number" ||
    !Number.isSafeInteger(l.id) ||
    l.id < 1 ||
    typeof l.label !== "string" ||
    typeof l.region !== "string" ||
    !Array.isArray(l.ipv4)
  )
    throw new SuspectAnswerError("Linode API answered something that is not a Linode");
  // Addresses go into Node status and NodeBalancer backends: each must be one.
  const bad = l.ipv4.find((a) => typeof a !== "string" || isIP(a) !== 4);
  if (bad !== undefined)
    throw new SuspectAnswerError(`Linode ${l.id}: ipv4 ${JSON.stringify(bad)} is not an IPv4 address`);
  if (
    l.ipv6 !== undefined &&
    l.ipv6 !== null &&
    (typeof l.ipv6 !== "string" || isIP(l.ipv6.replace(/\/128$/, "")) !== 6)
  )
    throw new SuspectAnswerError(`Linode ${l.id}: ipv6 ${JSON.stringify(l.ipv6)} is not an IPv6 address`);
  if (l.type !== undefined && typeof l.type !== "string")
    throw new SuspectAnswerError(`Linode ${l.id}: type is not a string`);
  if (l.tags !== undefined && (!Array.isArray(l.tags) || !l.tags.every((t) => typeof t === "string")))
    throw new SuspectAnswerError(`Linode ${l.id}: tags are not a list of strings`);
  return {
    ...l,
    tags: l.tags ?? [],
    type: l.type ?? "",
    status: l.status ?? "",
    ipv6: l.ipv6 ?? null,
  } as WireLinode;
}

export class LinodeInstances implements Instances {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: LinodeClient,
    private readonly vpc: VpcResolver,
  ) {}

  parseProviderID(providerID: string): string | undefined {
    return PROVIDER_ID.exec(providerID)?.[1];
  }

  /** Each Linode's VPC among the account's clusters' networks (none without a VPC: no call). */
  private vpcs(signal?: AbortSignal) {
    return this.vpc.membership(accountNetworks(this.ctx), signal);
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new ForbiddenError(`providerID ${JSON.stringify(providerID)} is not a Linode providerID`);
    let l: WireLinode;
    try {
      l = checkLinode(await this.client.get(OPS.get, `/linode/instances/${id}`, { signal }));
    } catch (err) {
      // Linode's own 404 on the Linode's own URL: the one authoritative "gone".
      if (isNotFound(err)) throw new InstanceNotFoundError(providerID, { cause: err });
      throw err;
    }
    if (String(l.id) !== id) throw new SuspectAnswerError(`asked for Linode ${id}, the API answered ${l.id}`);
    if (l.region !== this.ctx.account.region)
      throw new ForbiddenError(
        `Linode ${id} is in region ${l.region}, outside account ${this.ctx.account.name}'s ${this.ctx.account.region}`,
      );
    return toInstanceMetadata(l, (await this.vpcs(signal)).get(l.id));
  }

  /** Every Linode labelled `name` in the region, all pages (X-Filter on label and region). */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const found = await this.client.list<WireLinode>(OPS.getByName, "/linode/instances", {
      signal,
      filter: { label: name, region: this.ctx.account.region },
    });
    const linodes = found.map(checkLinode);
    for (const l of linodes)
      if (l.label !== name || l.region !== this.ctx.account.region)
        throw new SuspectAnswerError(
          `label filter ${JSON.stringify(name)} answered Linode ${l.id} (${l.label})`,
        );
    if (linodes.length === 0) return [];
    const vpcs = await this.vpcs(signal);
    return linodes.map((l) => toInstanceMetadata(l, vpcs.get(l.id)));
  }

  /** Page tokens are Linode's page numbers. */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<WireLinode>(OPS.list, "/linode/instances", page, {
      signal,
      filter: { region: this.ctx.account.region },
    });
    const linodes = answer.data.map(checkLinode).filter((l) => l.region === this.ctx.account.region);
    const vpcs = linodes.length === 0 ? new Map() : await this.vpcs(signal);
    const instances = linodes.map((l) => toInstanceMetadata(l, vpcs.get(l.id)));
    return page < answer.pages ? { instances, nextPageToken: String(page + 1) } : { instances };
  }
}
