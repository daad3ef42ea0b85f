/**
 * VPC route tables: one per (account, region, network), holding routes from a destination
 * CIDR to an instance of that network. A destination is unique in its table (409
 * RouteAlreadyExists); a route whose target is terminated stays, as a blackhole.
 */
import { createHash } from "node:crypto";
import { hasTags, ResourceTable, type TablePage, type TableView } from "../fake-kit/table.js";
import { checkObject, checkString, checkTags, invalid } from "./checks.js";
import { cidrKey, isNetworkAddress, parseCidr } from "./cidr.js";
import type { RandomSource } from "./random.js";
import { type CloudStore, SimCloudError } from "./store.js";
import type { SimNetwork, SimRoute, SimRouteSpec } from "./types.js";

/** A route as stored: `blackhole` is derived from the target when it is read. */
type RouteRecord = Omit<SimRoute, "blackhole">;

export interface RouteListFilter {
  readonly tags?: Readonly<Record<string, string>>;
}

const MAX_DESCRIPTION = 255;

export class RouteStore {
  private readonly table: ResourceTable<RouteRecord>;
  /** `${table scope}\0${cidrKey}` → route id. */
  private readonly byDestination = new Map<string, string>();

  constructor(
    private readonly cloud: CloudStore,
    private readonly random: RandomSource,
    private readonly now: () => number,
    nextSeq: () => number,
  ) {
    this.table = new ResourceTable(nextSeq, (r) => tableScope(r.account, r.region, r.network));
  }

  networks(account: string, region: string): SimNetwork[] {
    const { defaultNetwork } = this.cloud.account(account);
    return this.cloud.networksIn(account, region).map((id) => ({
      id,
      account,
      region,
      isDefault: id === defaultNetwork,
      routeTableId: routeTableId(account, region, id),
    }));
  }

  /** 404 unless `network` is one of the account's networks in `region`. */
  checkNetwork(account: string, region: string, network: string): void {
    if (!this.cloud.networksIn(account, region).includes(network)) {
      throw new SimCloudError(404, "NotFound", `network ${network} not found in region ${region}`, {
        type: "network",
        id: network,
      });
    }
  }

  create(accountName: string, spec: SimRouteSpec): SimRoute {
    const account = this.cloud.account(accountName).name;
    checkObject(spec, "route");
    const region = checkString(spec.region, "region");
    if (!this.cloud.hasRegion(region))
      throw new SimCloudError(400, "InvalidRegion", `unknown region "${region}"`);
    const targetId = checkString(spec.targetInstanceId, "targetInstanceId");
    const target = this.cloud.get(targetId);
    if (target === undefined || target.account !== account || target.region !== region) {
      throw invalid(`target ${targetId} is not an instance of this account in ${region}`);
    }
    const network = spec.network === undefined ? target.network : checkString(spec.network, "network");
    this.checkNetwork(account, region, network);
    if (target.network !== network) throw invalid(`target ${targetId} is not in network ${network}`);
    if (target.state === "terminated") throw invalid(`target ${targetId} is terminated`);
    const destination = checkString(spec.destinationCidr, "destinationCidr");
    const cidr = parseCidr(destination);
    if (cidr === undefined) throw invalid(`destinationCidr ${destination} is not a CIDR`);
    if (!isNetworkAddress(cidr)) throw invalid(`destinationCidr ${destination} has host bits set`);
    const description = spec.description === undefined ? "" : spec.description;
    if (typeof description !== "string" || description.length > MAX_DESCRIPTION) {
      throw invalid(`description must be a string of at most ${MAX_DESCRIPTION} characters`);
    }
    const tags = checkTags(spec.tags);
    const scope = tableScope(account, region, network);
    const destKey = `${scope}\u0000${cidrKey(cidr)}`;
    const existing = this.byDestination.get(destKey);
    if (existing !== undefined) {
      throw new SimCloudError(
        409,
        "RouteAlreadyExists",
        `route table ${routeTableId(account, region, network)} already has route ${existing} for ${destination}`,
      );
    }
    let id: string;
    do id = `rt-${this.random.hex(12)}`;
    while (this.table.knows(id));
    const record: RouteRecord = Object.freeze({
      id,
      account,
      region,
      network,
      routeTableId: routeTableId(account, region, network),
      destinationCidr: destination,
      targetInstanceId: targetId,
      description,
      tags: Object.freeze(tags),
      createdAt: new Date(this.now()).toISOString(),
    });
    this.table.insert(record, this.now());
    this.byDestination.set(destKey, id);
    return this.view(record);
  }

  /** With a scope (the API), the route must be in that account, region and network, else 404. */
  delete(id: string, scope?: { account: string; region: string; network: string }): void {
    const route = this.table.get(id);
    if (
      route === undefined ||
      (scope !== undefined &&
        (route.account !== scope.account || route.region !== scope.region || route.network !== scope.network))
    ) {
      throw routeNotFound(id);
    }
    this.table.remove(id, this.now());
    const cidr = parseCidr(route.destinationCidr);
    if (cidr !== undefined) {
      this.byDestination.delete(
        `${tableScope(route.account, route.region, route.network)}\u0000${cidrKey(cidr)}`,
      );
    }
  }

  read(account: string, region: string, network: string, id: string, view: TableView): SimRoute | undefined {
    const r = this.table.read(id, view);
    return r !== undefined && r.account === account && r.region === region && r.network === network
      ? this.view(r)
      : undefined;
  }

  page(
    account: string,
    region: string,
    network: string,
    filter: RouteListFilter,
    pageSize: number,
    afterSeq?: number,
  ): TablePage<SimRoute> {
    const { tags } = filter;
    const page = this.table.page(
      tableScope(account, region, network),
      (r) => tags === undefined || hasTags(r.tags, tags),
      pageSize,
      afterSeq,
    );
    return { ...page, items: page.items.map((r) => this.view(r)) };
  }

  all(network?: string): SimRoute[] {
    return this.table
      .all()
      .filter((r) => network === undefined || r.network === network)
      .map((r) => this.view(r));
  }

  private view(r: RouteRecord): SimRoute {
    const target = this.cloud.get(r.targetInstanceId);
    return Object.freeze({ ...r, blackhole: target === undefined || target.state === "terminated" });
  }
}

export function routeNotFound(id: string): SimCloudError {
  return new SimCloudError(404, "NotFound", `route ${id} not found`, { type: "route", id });
}

/** Deterministic (no draw from the seeded source, so instance ids stay what they were). */
export function routeTableId(account: string, region: string, network: string): string {
  const digest = createHash("sha256").update(`${account}\u0000${region}\u0000${network}`).digest("hex");
  return `rtb-${digest.slice(0, 12)}`;
}

function tableScope(account: string, region: string, network: string): string {
  return `${account}\u0000${region}\u0000${network}`;
}
