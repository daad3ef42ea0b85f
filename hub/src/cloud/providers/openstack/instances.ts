/**
 * Nova servers as openstack-cloud-controller-manager reports them: providerID
 * `openstack:///<uuid>` (or `openstack://<region>/<uuid>` with `regionalProviderID`), the
 * flavor's name as instance type (embedded in the server from microversion 2.47), the
 * availability zone (as upstream's `util.SanitizeLabel` makes it a label value), the account's
 * region; shut down only for SHUTOFF, as upstream's `InstanceShutdown`; gone only for DELETED and
 * a Nova `itemNotFound` on the server's own URL, as upstream's `InstanceExists` (a SOFT_DELETED
 * server can be restored: it is not gone). Addresses as upstream's `nodeAddresses`
 * (instances_addresses.go): the fixed IPs of the server's ACTIVE Neutron ports (InternalIP),
 * then `accessIPv4`/`accessIPv6` (ExternalIP), then the server metadata's `hostname`
 * (Hostname), then Nova's addresses network by network, sorted by name: floating ones
 * ExternalIP; those on `publicNetworkName` ExternalIP, taken out first wherever they were listed;
 * the rest InternalIP, or, outside a set `internalNetworkName`, taken out of the list. Each
 * address and type once. A full listing of more than one batch of servers
 * reads the project's ports page by page, once (about one Neutron call per `pageSize` ports);
 * any other read takes its servers' ports by `device_id` in batches.
 */
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
import type { OpenStackClient } from "./client.js";
import { isNotFound } from "./errors.js";

export const PROVIDER_NAME = "openstack";

export const OPS = {
  get: "instances.get",
  getByName: "instances.getByName",
  list: "instances.list",
  changes: "instances.changes",
  ports: "ports.list",
  projectPorts: "ports.listProject",
} as const;

/** Ports asked for in one Neutron call (device_id repeated): URLs stay well under 8 KiB. */
const PORT_BATCH = 40;

const PROVIDER_ID = /^openstack:\/\/([^/]*)\/([0-9a-fA-F-]{36})$/;

export interface WireServer {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly flavor?: { readonly original_name?: string; readonly id?: string };
  readonly addresses?: Readonly<
    Record<string, readonly { readonly addr: string; readonly "OS-EXT-IPS:type"?: string }[]>
  >;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly "OS-EXT-AZ:availability_zone"?: string;
  readonly accessIPv4?: string;
  readonly accessIPv6?: string;
}

export interface WirePort {
  readonly id: string;
  readonly device_id: string;
  readonly network_id: string;
  readonly status?: string;
  readonly fixed_ips: readonly { readonly ip_address: string; readonly subnet_id?: string }[];
}

export interface InstanceSettings {
  readonly regionalProviderID: boolean;
  readonly internalNetworkName: readonly string[];
  readonly publicNetworkName: readonly string[];
  /** How often the refresh is a full `GET /servers/detail` rather than `changes-since` the last. */
  readonly fullListIntervalMs: number;
}

/**
 * How far back a `changes-since` query reaches before the last listing began: Nova compares
 * with its own clock, which may run behind the hub's.
 */
export const CHANGES_SINCE_SLACK_MS = 60_000;

/** The project's servers as a full listing left them, brought up to date since. */
interface ServerView {
  readonly servers: ReadonlyMap<string, InstanceMetadata>;
  /** When the listing that made this view began (hub clock). */
  readonly listedAtMs: number;
  readonly fullAtMs: number;
}

export function serverState(status: string): InstanceState {
  switch (status) {
    case "ACTIVE":
      return "running";
    // Upstream's InstanceShutdown: SHUTOFF only ("the only state where we can detach volumes
    // immediately"). SUSPENDED, PAUSED, SHELVED, SHELVED_OFFLOADED and the rest are "unknown":
    // neither shut down nor gone.
    case "SHUTOFF":
      return "stopped";
    case "BUILD":
    case "REBUILD":
    case "RESIZE":
    case "VERIFY_RESIZE":
    case "MIGRATING":
    case "REBOOT":
    case "HARD_REBOOT":
      return "pending";
    // Upstream's InstanceExists is false only on Nova's 404. SOFT_DELETED (a server deleted with
    // `reclaim_instance_interval` set) is still answered and can be restored: "unknown", so its
    // Node is never deleted for it.
    case "DELETED":
      return "terminated";
    default:
      return "unknown";
  }
}

export function checkServer(body: unknown): WireServer {
  const s = body as Partial<WireServer> | null;
  if (
    typeof s !== "object" ||
    s === null ||
    typeof s.id !== "string" ||
    typeof s.name !== "string" ||
    typeof s.status !== "string"
  )
    throw new SuspectAnswerError("Nova answered something that is not a server");
  return s as WireServer;
}

/**
 * Upstream's `SanitizeLabel` (pkg/util/util.go): each run of characters other than
 * `[-a-zA-Z0-9_.]` becomes `-`, `-_.` trimmed from both ends, at most 63 characters.
 */
export function sanitizeLabel(input: string): string {
  return input
    .replace(/[^-a-zA-Z0-9_.]+/g, "-")
    .replace(/^[-_.]+|[-_.]+$/g, "")
    .slice(0, 63);
}

/**
 * Upstream's `nodeAddresses` (instances_addresses.go; see the module comment): its list and
 * order. Not built: trunk subports and `address-sort-order`.
 */
export function nodeAddresses(
  s: WireServer,
  ports: readonly WirePort[],
  settings: Pick<InstanceSettings, "internalNetworkName" | "publicNetworkName">,
): NodeAddress[] {
  let out: NodeAddress[] = [];
  // addToNodeAddresses: an address of a type once.
  const add = (type: NodeAddress["type"], address: string) => {
    if (address !== "" && !out.some((a) => a.address === address && a.type === type))
      out.push({ type, address });
  };
  // removeFromNodeAddresses with no type: the address, whatever its type.
  const remove = (address: string) => {
    out = out.filter((a) => a.address !== address);
  };
  for (const p of ports) {
    if (p.status !== "ACTIVE") continue;
    for (const ip of p.fixed_ips) add("InternalIP", ip.ip_address);
  }
  if (s.accessIPv4) add("ExternalIP", s.accessIPv4);
  if (s.accessIPv6) add("ExternalIP", s.accessIPv6);
  const hostname = s.metadata?.["hostname"];
  if (hostname) add("Hostname", hostname);
  const nets = Object.keys(s.addresses ?? {}).sort();
  for (const net of nets)
    for (const a of s.addresses?.[net] ?? []) {
      if (a["OS-EXT-IPS:type"] === "floating") add("ExternalIP", a.addr);
      else if (settings.publicNetworkName.includes(net)) {
        remove(a.addr);
        add("ExternalIP", a.addr);
      } else if (settings.internalNetworkName.length === 0 || settings.internalNetworkName.includes(net))
        add("InternalIP", a.addr);
      else remove(a.addr);
    }
  return out;
}

export class OpenStackInstances implements Instances {
  private view: ServerView | undefined;
  /** The full listing under way: its pages so far, and the project's ports once read. */
  private full:
    | { servers: Map<string, InstanceMetadata>; startedMs: number; ports?: Map<string, WirePort[]> }
    | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: OpenStackClient,
    private readonly settings: InstanceSettings,
  ) {}

  providerIDOf(id: string): string {
    return this.settings.regionalProviderID
      ? `openstack://${this.client.region}/${id}`
      : `openstack:///${id}`;
  }

  parseProviderID(providerID: string): string | undefined {
    const m = PROVIDER_ID.exec(providerID);
    if (m === null) return undefined;
    // A regional providerID names its region: another region's is not this binding's.
    if (m[1] !== "" && m[1] !== this.client.region) return undefined;
    return m[2];
  }

  private toMetadata(s: WireServer, ports: readonly WirePort[]): InstanceMetadata {
    const networks = accountNetworks(this.ctx).filter((n): n is string => n !== undefined);
    const network = networks.find(
      (n) => ports.some((p) => p.network_id === n) || Object.hasOwn(s.addresses ?? {}, n),
    );
    return {
      providerID: this.providerIDOf(s.id),
      instanceID: s.id,
      name: s.name,
      instanceType: s.flavor?.original_name ?? s.flavor?.id ?? "",
      region: this.client.region,
      zone: sanitizeLabel(s["OS-EXT-AZ:availability_zone"] ?? ""),
      addresses: nodeAddresses(s, ports, this.settings),
      state: serverState(s.status),
      tags: { ...(s.metadata ?? {}) },
      ...(network !== undefined && { network }),
    };
  }

  /** The servers' ports, by device_id, in batches. */
  private async ports(
    servers: readonly WireServer[],
    signal?: AbortSignal,
  ): Promise<Map<string, WirePort[]>> {
    const out = new Map<string, WirePort[]>();
    for (let i = 0; i < servers.length; i += PORT_BATCH) {
      const ids = servers.slice(i, i + PORT_BATCH).map((s) => s.id);
      const ports = await this.client.list<WirePort>("network", OPS.ports, "/ports", "ports", {
        query: { device_id: ids },
        signal,
      });
      byDevice(
        out,
        ports.filter((p) => ids.includes(p.device_id)),
      );
    }
    return out;
  }

  /**
   * Every port of the project, page after page (Neutron's `limit`/`marker` and `ports_links`),
   * by device_id. One failed page fails the whole read: never a partial map.
   */
  private async projectPorts(signal?: AbortSignal): Promise<Map<string, WirePort[]>> {
    return byDevice(
      new Map(),
      await this.client.list<WirePort>("network", OPS.projectPorts, "/ports", "ports", { signal }),
    );
  }

  /**
   * The servers as instances. `known`: the project's ports read for a full listing; a server
   * with none there (made since they were read) has its ports looked up by device_id.
   */
  private async metadata(
    servers: readonly WireServer[],
    signal?: AbortSignal,
    known?: ReadonlyMap<string, WirePort[]>,
  ): Promise<InstanceMetadata[]> {
    if (servers.length === 0) return [];
    const unknown = known === undefined ? servers : servers.filter((s) => !known.has(s.id));
    const looked = await this.ports(unknown, signal);
    return servers.map((s) => this.toMetadata(s, known?.get(s.id) ?? looked.get(s.id) ?? []));
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new ForbiddenError(
        `providerID ${JSON.stringify(providerID)} is not an OpenStack providerID of region ${this.client.region}`,
      );
    let s: WireServer;
    try {
      s = checkServer(
        (await this.client.get<{ server?: unknown }>("compute", OPS.get, `/servers/${id}`, { signal }))
          .server,
      );
    } catch (err) {
      // Nova's own itemNotFound on the server's own URL: the one authoritative "gone".
      if (isNotFound(err)) throw new InstanceNotFoundError(providerID, { cause: err });
      throw err;
    }
    if (s.id !== id) throw new SuspectAnswerError(`asked for server ${id}, Nova answered ${s.id}`);
    if (s.status === "DELETED") throw new InstanceNotFoundError(providerID);
    return (await this.metadata([s], signal))[0] as InstanceMetadata;
  }

  /** Every server called exactly `name` (Nova's name filter is a regular expression). */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const found = (
      await this.client.list<WireServer>("compute", OPS.getByName, "/servers/detail", "servers", {
        query: { name: `^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$` },
        signal,
      })
    ).map(checkServer);
    for (const s of found)
      if (s.name !== name)
        throw new SuspectAnswerError(
          `name filter ${JSON.stringify(name)} answered server ${s.id} (${s.name})`,
        );
    return this.metadata(found, signal);
  }

  /**
   * One page of the region's servers: the batched refresh of every cluster of the project. A
   * full listing is one `GET /servers/detail` per page, Nova's marker the token, and the
   * project's ports read page by page once for all its pages (a listing of one page of up to a
   * batch of servers reads theirs by device_id instead: one call either way, fewer ports). Once one has ended, and until it is
   * `fullListIntervalMs` old, a refresh is one `changes-since` query instead (Nova also lists the
   * servers deleted since): only the servers it names are read again (their ports too), the
   * rest come from the view the last listing left, all in one page. A port change that Nova
   * does not count as a server change (a floating IP attached) shows at the next full listing.
   */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const now = this.ctx.clock.now();
    const view = this.view;
    if (
      pageToken === undefined &&
      view !== undefined &&
      now - view.fullAtMs < this.settings.fullListIntervalMs
    )
      return this.changesSince(view, now, signal);
    if (pageToken === undefined) this.full = { servers: new Map(), startedMs: now };
    const page = await this.client.page<WireServer>(
      "compute",
      OPS.list,
      "/servers/detail",
      "servers",
      pageToken,
      {
        signal,
      },
    );
    const servers = page.items.map(checkServer);
    const full = this.full;
    if (
      full !== undefined &&
      full.ports === undefined &&
      (page.next !== undefined || servers.length > PORT_BATCH)
    )
      full.ports = await this.projectPorts(signal);
    const instances = await this.metadata(servers, signal, full?.ports);
    if (full !== undefined) {
      for (const i of instances) full.servers.set(i.instanceID, i);
      if (page.next === undefined) {
        this.view = { servers: full.servers, listedAtMs: full.startedMs, fullAtMs: full.startedMs };
        this.full = undefined;
      }
    }
    return page.next === undefined ? { instances } : { instances, nextPageToken: page.next };
  }

  /** The view brought up to date with the servers Nova says changed since it was made. */
  private async changesSince(view: ServerView, now: number, signal?: AbortSignal): Promise<InstanceListPage> {
    const since = new Date(view.listedAtMs - CHANGES_SINCE_SLACK_MS).toISOString().replace(/\.\d{3}Z$/, "Z");
    const changed = (
      await this.client.list<WireServer>("compute", OPS.changes, "/servers/detail", "servers", {
        query: { "changes-since": since },
        signal,
      })
    ).map(checkServer);
    const live = changed.filter((s) => serverState(s.status) !== "terminated");
    const fresh = await this.metadata(live, signal);
    // Merged only once every page and port was read: a failed refresh leaves the view as it was.
    const servers = new Map(view.servers);
    for (const s of changed) servers.delete(s.id);
    for (const m of fresh) servers.set(m.instanceID, m);
    this.view = { servers, listedAtMs: now, fullAtMs: view.fullAtMs };
    return { instances: [...servers.values()] };
  }
}

/** Ports added to `out` by the server they belong to. */
function byDevice(out: Map<string, WirePort[]>, ports: readonly WirePort[]): Map<string, WirePort[]> {
  for (const p of ports) out.set(p.device_id, [...(out.get(p.device_id) ?? []), p]);
  return out;
}
