/**
 * Routes in the route table of the cluster's network (ClusterTarget.network: the cluster's or
 * its account's), or of the account's default network as the cloud names it (looked up once).
 */
import { CloudError, SuspectAnswerError } from "../../errors.js";
import { routeOwnerTags } from "../../naming.js";
import type { CloudRoute, ClusterTarget, ProviderContext, Routes, RouteTarget } from "../../provider.js";
import type { SimulatedClient } from "./client.js";
import { parseWireNetworkList, parseWireRoute, parseWireRoutePage, toCloudRoute } from "./convert.js";
import { isConflict, isNotFoundOf, toContractError } from "./errors.js";

export const ROUTE_OPS = {
  networks: "network.list",
  list: "route.list",
  create: "route.create",
  delete: "route.delete",
} as const;

export interface SimulatedRoutesOptions {
  /** Items per list call; the cloud caps it at 500. */
  readonly pageSize?: number;
  /** A route table with more pages than this is suspect. */
  readonly maxPages?: number;
  /** Description the cloud shows on routes this provider creates. */
  readonly description?: string;
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_MAX_PAGES = 200;

export class SimulatedRoutes implements Routes {
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly description: string;
  private defaultNetwork: string | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: SimulatedClient,
    opts: SimulatedRoutesOptions = {},
  ) {
    this.pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    this.maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
    this.description = opts.description ?? "fleet-ccm";
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const network = await this.networkId(cluster, signal);
    const out: CloudRoute[] = [];
    let pageToken: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= this.maxPages) throw new SuspectAnswerError(`route list still had pages after ${page}`);
      const body = await this.call(ROUTE_OPS.list, signal, (signals) =>
        this.client.listRoutes(
          network,
          { pageSize: this.pageSize, ...(pageToken !== undefined && { pageToken }) },
          signals,
        ),
      );
      const { items, next_page_token } = parseWireRoutePage(body);
      for (const w of items) {
        if (w.network !== network) {
          throw new SuspectAnswerError(
            `asked for routes of ${network}, the cloud answered ${w.id} of ${w.network}`,
          );
        }
        out.push(toCloudRoute(w));
      }
      pageToken = next_page_token;
      if (pageToken === undefined) return out;
    }
  }

  /**
   * Creates the route, tagged with its owner cluster. When the destination is taken by a route
   * to the same target owned by the same cluster (our own earlier attempt whose answer was
   * lost), that route is the answer; any other holder is a conflict the caller must resolve.
   */
  async create(cluster: ClusterTarget, route: RouteTarget, signal?: AbortSignal): Promise<CloudRoute> {
    const ownerCluster = cluster.cluster;
    if (ownerCluster === "") throw new CloudError("refusing to create a route without an owner cluster");
    const network = await this.networkId(cluster, signal);
    const body = {
      destination_cidr: route.destinationCIDR,
      target_instance_id: route.targetInstanceID,
      description: this.description,
      tags: routeOwnerTags(ownerCluster),
    };
    const answer = await this.ctx.call(ROUTE_OPS.create, async (callSignal) => {
      try {
        return { created: await this.client.createRoute(network, body, signals(callSignal, signal)) };
      } catch (err) {
        if (isConflict(err, "RouteAlreadyExists")) return { taken: true } as const;
        throw toContractError(err, { lookup: { kind: "call" }, nowMs: this.ctx.clock.now() });
      }
    });
    if ("created" in answer) return toCloudRoute(parseWireRoute(answer.created));
    const existing = (await this.list(cluster, signal)).find(
      (r) => r.destinationCIDR === route.destinationCIDR,
    );
    if (
      existing !== undefined &&
      existing.targetInstanceID === route.targetInstanceID &&
      existing.ownerCluster === ownerCluster
    ) {
      return existing;
    }
    throw new CloudError(
      existing === undefined
        ? `route to ${route.destinationCIDR} already exists in ${network} but is not listed`
        : `route ${existing.id} already sends ${route.destinationCIDR} to ${existing.targetInstanceID} in ${network}`,
    );
  }

  /** Deletes by id; the cloud's own NotFound for that id means it is already gone. */
  async delete(cluster: ClusterTarget, route: CloudRoute, signal?: AbortSignal): Promise<undefined> {
    const network = await this.networkId(cluster, signal);
    await this.ctx.call(ROUTE_OPS.delete, async (callSignal) => {
      try {
        await this.client.deleteRoute(network, route.id, signals(callSignal, signal));
      } catch (err) {
        if (isNotFoundOf(err, "route", route.id)) return;
        throw toContractError(err, { lookup: { kind: "call" }, nowMs: this.ctx.clock.now() });
      }
    });
  }

  /** The cluster's network, else the account's default network in the region (asked once). */
  private async networkId(cluster: ClusterTarget, signal: AbortSignal | undefined): Promise<string> {
    if (cluster.network !== undefined && cluster.network !== "") return cluster.network;
    if (this.defaultNetwork !== undefined) return this.defaultNetwork;
    const body = await this.call(ROUTE_OPS.networks, signal, (s) => this.client.listNetworks(s));
    const defaults = parseWireNetworkList(body).items.filter((n) => n.is_default);
    const [only, ...rest] = defaults;
    if (only === undefined || rest.length > 0 || only.id === "") {
      // Every account has exactly one default network: an answer without it is not an answer.
      throw new SuspectAnswerError(`the network list named ${defaults.length} default networks`);
    }
    this.defaultNetwork = only.id;
    return only.id;
  }

  private call(
    op: string,
    signal: AbortSignal | undefined,
    fn: (signals: AbortSignal[]) => Promise<unknown>,
  ): Promise<unknown> {
    return this.ctx.call(op, async (callSignal) => {
      try {
        return await fn(signals(callSignal, signal));
      } catch (err) {
        throw toContractError(err, { lookup: { kind: "call" }, nowMs: this.ctx.clock.now() });
      }
    });
  }
}

function signals(callSignal: AbortSignal, callerSignal: AbortSignal | undefined): AbortSignal[] {
  return callerSignal === undefined ? [callSignal] : [callSignal, callerSignal];
}
