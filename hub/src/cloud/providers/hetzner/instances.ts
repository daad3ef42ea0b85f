/**
 * Servers on Hetzner Cloud, as the Hetzner CCM reports them: providerID `hcloud://<id>`, the
 * server type, the location as region, the legacy datacenter name of the location as zone
 * (upstream's default, HCLOUD_INSTANCES_ZONE_LABEL_ENABLED), the label
 * `instance.hetzner.cloud/provided-by=cloud`, shutdown for `off`, and the addresses in its
 * order: Hostname = name, the public IPv4, the public IPv6 (`::1` of the server's /64, with the
 * address family that has it), then the IP in the cluster's private network. Robot dedicated
 * servers (`hrobot://<n>`, the legacy `hcloud://bm-<n>`) are out of scope: refused, never looked up.
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
import type { HetznerClient } from "./client.js";
import { isNotFound } from "./errors.js";
import type { NetworkResolver } from "./networks.js";
import type { WireServer } from "./wire.js";

export const PROVIDER_NAME = "hetzner";
export const PROVIDED_BY_LABEL = "instance.hetzner.cloud/provided-by";

export const OPS = {
  get: "instances.get",
  getByName: "instances.getByName",
  list: "instances.list",
} as const;

const PROVIDER_ID = /^hcloud:\/\/(\d+)$/;
const ROBOT_ID = /^(hrobot:\/\/|hcloud:\/\/bm-)/;

export type AddressFamily = "ipv4" | "ipv6" | "dualstack";

export function providerIDOf(id: number | string): string {
  return `hcloud://${id}`;
}

export function serverState(status: string): InstanceState {
  switch (status) {
    case "running":
      return "running";
    case "off":
      return "stopped";
    case "initializing":
    case "starting":
    case "rebuilding":
    case "migrating":
      return "pending";
    default:
      // `stopping` and `deleting` included: upstream's IsShutdown is `status == off` alone, and
      // a server the API answers exists until its not_found, so neither is shut down or gone
      // (fleet-ccm's "stopping" would taint the node as shut down, "terminated" delete it).
      return "unknown";
  }
}

/**
 * The datacenter the Hetzner CCM writes as zone for a location (its internal/legacydatacenter
 * table: the datacenter each location had when zones were datacenters); other locations: the
 * location itself.
 */
const LEGACY_DATACENTER: Readonly<Record<string, string>> = {
  nbg1: "nbg1-dc3",
  hel1: "hel1-dc2",
  fsn1: "fsn1-dc14",
  ash: "ash-dc1",
  hil: "hil-dc1",
  sin: "sin-dc1",
};

export function legacyZone(location: string): string {
  return LEGACY_DATACENTER[location] ?? location;
}

/** The host address upstream gives a server in its IPv6 /64: the network's `::1`. */
export function ipv6Host(net: string): string | undefined {
  const base = net.replace(/\/\d+$/, "");
  const host = base.endsWith("::") ? `${base}1` : base;
  return isIP(host) === 6 ? host : undefined;
}

export interface InstanceSettings {
  readonly addressFamily: AddressFamily;
  readonly zoneLabel: boolean;
  /** Servers the batched refresh lists (label_selector); absent: every server of the project. */
  readonly labelSelector?: string | undefined;
}

/** `network`: the cluster network (as configured) the server is in and its address there, if any. */
export function toInstanceMetadata(
  s: WireServer,
  settings: InstanceSettings,
  network?: { readonly name: string; readonly ip: string },
): InstanceMetadata {
  const addresses: NodeAddress[] = [{ type: "Hostname", address: s.name }];
  const v4 = settings.addressFamily !== "ipv6";
  const v6 = settings.addressFamily !== "ipv4";
  if (v4 && s.public_net.ipv4 !== null) addresses.push({ type: "ExternalIP", address: s.public_net.ipv4.ip });
  const six = s.public_net.ipv6 === null ? undefined : ipv6Host(s.public_net.ipv6.ip);
  if (v6 && six !== undefined) addresses.push({ type: "ExternalIP", address: six });
  if (network !== undefined) addresses.push({ type: "InternalIP", address: network.ip });
  return {
    providerID: providerIDOf(s.id),
    instanceID: String(s.id),
    name: s.name,
    instanceType: s.server_type.name,
    region: s.location.name,
    zone: settings.zoneLabel ? legacyZone(s.location.name) : "",
    addresses,
    state: serverState(s.status),
    tags: { ...s.labels },
    ...(network !== undefined && { network: network.name }),
    additionalLabels: { [PROVIDED_BY_LABEL]: "cloud" },
  };
}

export function checkServer(body: unknown): WireServer {
  const s = body as Partial<WireServer> | null;
  if (
    typeof s !== "object" ||
    s === null ||
    !Number.isSafeInteger(s.id) ||
    (s.id ?? 0) < 1 ||
    typeof s.name !== "string" ||
    typeof s.location?.name !== "string" ||
    typeof s.server_type?.name !== "string" ||
    typeof s.public_net !== "object" ||
    s.public_net === null ||
    !Array.isArray(s.private_net)
  )
    throw new SuspectAnswerError("Hetzner Cloud API answered something that is not a server");
  const v4 = s.public_net.ipv4?.ip;
  if (v4 !== undefined && isIP(v4) !== 4)
    throw new SuspectAnswerError(`server ${s.id}: ipv4 ${JSON.stringify(v4)} is not an IPv4 address`);
  for (const p of s.private_net)
    if (!Number.isSafeInteger(p.network) || isIP(p.ip) !== 4)
      throw new SuspectAnswerError(
        `server ${s.id}: a private_net entry is not a network and an IPv4 address`,
      );
  return { ...s, labels: s.labels ?? {}, status: s.status ?? "" } as WireServer;
}

export class HetznerInstances implements Instances {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: HetznerClient,
    private readonly networks: NetworkResolver,
    private readonly settings: InstanceSettings,
  ) {}

  parseProviderID(providerID: string): string | undefined {
    return PROVIDER_ID.exec(providerID)?.[1];
  }

  /** Network id → its name as the account's clusters configure it (resolved once per name). */
  private async clusterNetworks(signal?: AbortSignal): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    for (const ref of accountNetworks(this.ctx))
      if (ref !== undefined) out.set(await this.networks.id(ref, signal), ref);
    return out;
  }

  private metadata(servers: readonly WireServer[], nets: Map<number, string>): InstanceMetadata[] {
    return servers.map((s) => {
      const p = s.private_net.find((x) => nets.has(x.network));
      return toInstanceMetadata(
        s,
        this.settings,
        p === undefined ? undefined : { name: nets.get(p.network) ?? "", ip: p.ip },
      );
    });
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    if (ROBOT_ID.test(providerID))
      throw new ForbiddenError(
        `providerID ${providerID} is a Robot dedicated server: not supported by fleet-ccm`,
      );
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new ForbiddenError(`providerID ${JSON.stringify(providerID)} is not a Hetzner Cloud providerID`);
    let s: WireServer;
    try {
      s = checkServer(
        (await this.client.get<{ server?: unknown }>(OPS.get, `/servers/${id}`, signal)).server,
      );
    } catch (err) {
      // Hetzner's own not_found on the server's own URL: the one authoritative "gone".
      if (isNotFound(err)) throw new InstanceNotFoundError(providerID, { cause: err });
      throw err;
    }
    if (String(s.id) !== id) throw new SuspectAnswerError(`asked for server ${id}, the API answered ${s.id}`);
    if (s.location.name !== this.ctx.account.region)
      throw new ForbiddenError(
        `server ${id} is in ${s.location.name}, outside account ${this.ctx.account.name}'s ${this.ctx.account.region}`,
      );
    return this.metadata([s], await this.clusterNetworks(signal))[0] as InstanceMetadata;
  }

  /** Every server called `name` in the bound location (names are unique in a project). */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const found = (
      await this.client.list<unknown>(OPS.getByName, "/servers", "servers", signal, { name })
    ).map(checkServer);
    for (const s of found)
      if (s.name !== name)
        throw new SuspectAnswerError(
          `name filter ${JSON.stringify(name)} answered server ${s.id} (${s.name})`,
        );
    const here = found.filter((s) => s.location.name === this.ctx.account.region);
    if (here.length === 0) return [];
    return this.metadata(here, await this.clusterNetworks(signal));
  }

  /** Page tokens are Hetzner's page numbers; the location is filtered here (the API has no such filter). */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<unknown>(OPS.list, "/servers", "servers", page, signal, {
      label_selector: this.settings.labelSelector,
    });
    const here = answer.items.map(checkServer).filter((s) => s.location.name === this.ctx.account.region);
    const instances = here.length === 0 ? [] : this.metadata(here, await this.clusterNetworks(signal));
    return answer.next === undefined ? { instances } : { instances, nextPageToken: String(answer.next) };
  }
}
