/**
 * Routes of the cluster's Hetzner network, as the Hetzner CCM's route controller makes them:
 * `destination` = the node's pod CIDR, `gateway` = the server's IP in the network, through the
 * add_route / delete_route actions (each polled once; running: in progress).
 *
 * Ownership. A Hetzner route is only a destination and a gateway: the API keeps no owner on
 * it, and the Hetzner CCM takes every route of its network as its own (its network is the
 * cluster's). A network here may be shared by clusters and other tools, so the network holds
 * the claim: a label `route.fleet-ccm.io/<destination>=<cluster>` ("10.244.3.0/24" →
 * "10.244.3.0-24") is set before the route is added and removed after it is gone. A route
 * without a claim is foreign: listed without an owner, never deleted, never replaced; it is
 * claimed only with the cluster's adoptFrom (migrating from the Hetzner CCM, whose routes
 * carry no mark). Labels are written whole (PUT), so every route write of a network is
 * serialized on it (lockKey).
 */
import { isIP } from "node:net";
import type { Clock } from "../../../util/clock.js";
import { CloudError, OperationFailedError, SuspectAnswerError } from "../../errors.js";
import {
  type CloudRoute,
  type ClusterTarget,
  type InProgress,
  isInProgress,
  type LockKey,
  type Routes,
  type RouteTarget,
} from "../../provider.js";
import { describeFailure, pollOnce, recentActions } from "./actions.js";
import type { HetznerClient } from "./client.js";
import { checkServer } from "./instances.js";
import { checkNetwork, type NetworkResolver } from "./networks.js";
import type { WireNetwork } from "./wire.js";

export const ROUTE_CLAIM_PREFIX = "route.fleet-ccm.io/";

export const ROUTE_OPS = {
  networks: "routes.networks",
  servers: "routes.servers",
  server: "routes.server",
  actions: "routes.actions",
  claim: "routes.labels.update",
  add: "routes.route.create",
  remove: "routes.route.delete",
} as const;

/** The claim label's key for a destination. */
export function routeClaimKey(destination: string): string {
  return `${ROUTE_CLAIM_PREFIX}${destination.replace("/", "-")}`;
}

/** The cluster claiming `destination` in the network's labels, if any. */
export function routeClaim(
  labels: Readonly<Record<string, string>>,
  destination: string,
): string | undefined {
  return labels[routeClaimKey(destination)];
}

const LABEL_VALUE = /^([a-z0-9A-Z]|[a-z0-9A-Z][a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])$/;

/**
 * How long one listing of the project's networks serves the route listings of every cluster:
 * just under the route controller's 10 s period, so a pass of all clusters costs one listing,
 * not a network read each (100 clusters would spend 36,000 of the project's 3,600 calls an
 * hour). Writes always read their network fresh.
 */
export const NETWORK_LISTING_TTL_MS = 9_000;
/** Least time between two listings of the servers for gateways no known server holds. */
export const SERVER_INDEX_REFRESH_MS = 60_000;

export class HetznerRoutes implements Routes {
  private listing: { atMs: number; networks: Promise<ReadonlyMap<number, WireNetwork>> } | undefined;
  /** Each server's IP in each network (`<network id>/<ip>` → server id), for route targets. */
  private gateways = new Map<string, number>();
  private gatewaysAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly client: HetznerClient,
    private readonly networks: NetworkResolver,
    private readonly clock: Clock,
  ) {}

  /** Every network of the project, listed at most once per NETWORK_LISTING_TTL_MS for all clusters. */
  private listed(signal?: AbortSignal): Promise<ReadonlyMap<number, WireNetwork>> {
    const now = this.clock.now();
    if (this.listing !== undefined && now - this.listing.atMs < NETWORK_LISTING_TTL_MS)
      return this.listing.networks;
    const networks = this.client
      .list<unknown>(ROUTE_OPS.networks, "/networks", "networks", signal)
      .then((all) => new Map(all.map((n) => checkNetwork({ network: n })).map((n) => [n.id, n])));
    const entry = { atMs: now, networks };
    this.listing = entry;
    networks.catch(() => {
      if (this.listing === entry) this.listing = undefined;
    });
    return networks;
  }

  /** The servers holding these gateways, listing the servers again only for an unknown one. */
  private async targets(net: WireNetwork, signal?: AbortSignal): Promise<ReadonlyMap<string, number>> {
    const key = (ip: string) => `${net.id}/${ip}`;
    const unknown = net.routes.some((r) => !this.gateways.has(key(r.gateway)));
    if (unknown && this.clock.now() - this.gatewaysAtMs >= SERVER_INDEX_REFRESH_MS) {
      this.gatewaysAtMs = this.clock.now();
      const servers = (await this.client.list<unknown>(ROUTE_OPS.servers, "/servers", "servers", signal)).map(
        checkServer,
      );
      const index = new Map<string, number>();
      for (const s of servers) for (const p of s.private_net) index.set(`${p.network}/${p.ip}`, s.id);
      this.gateways = index;
    }
    const out = new Map<string, number>();
    for (const r of net.routes) {
      const id = this.gateways.get(key(r.gateway));
      if (id !== undefined) out.set(r.gateway, id);
    }
    return out;
  }

  lockKey(cluster: ClusterTarget): LockKey {
    return `hetzner-network:${cluster.network ?? ""}`;
  }

  private network(cluster: ClusterTarget, signal?: AbortSignal): Promise<WireNetwork> {
    if (cluster.network === undefined || cluster.network === "")
      throw new CloudError(`cluster ${cluster.cluster} has no network: Hetzner routes live in a network`);
    return this.networks.get(cluster.network, signal);
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    if (cluster.network === undefined || cluster.network === "")
      throw new CloudError(`cluster ${cluster.cluster} has no network: Hetzner routes live in a network`);
    const id = await this.networks.id(cluster.network, signal);
    const net = (await this.listed(signal)).get(id) ?? (await this.network(cluster, signal));
    if (net.routes.length === 0) return [];
    const byIp = await this.targets(net, signal);
    return net.routes.map((r) => {
      const owner = routeClaim(net.labels, r.destination);
      return {
        id: r.destination,
        destinationCIDR: r.destination,
        // A gateway no server holds (a blackhole route upstream): no target.
        targetInstanceID: String(byIp.get(r.gateway) ?? ""),
        ...(owner !== undefined && { ownerCluster: owner }),
      };
    });
  }

  private async running(net: WireNetwork, signal?: AbortSignal): Promise<InProgress | undefined> {
    const path = `/networks/${net.id}`;
    return (await recentActions(this.client, ROUTE_OPS.actions, path, `network ${net.name}`, signal, true))
      .running;
  }

  private async setClaim(net: WireNetwork, key: string, cluster: string | undefined, signal?: AbortSignal) {
    this.listing = undefined;
    const labels = { ...net.labels };
    if (cluster === undefined) delete labels[key];
    else labels[key] = cluster;
    await this.client.put(ROUTE_OPS.claim, `/networks/${net.id}`, { labels }, signal);
  }

  private async action(
    op: string,
    net: WireNetwork,
    command: "add_route" | "delete_route",
    body: { destination: string; gateway: string },
    signal?: AbortSignal,
  ): Promise<InProgress | undefined> {
    // The next listing must show what this write changed.
    this.listing = undefined;
    const answer = await this.client.post(op, `/networks/${net.id}/actions/${command}`, body, signal);
    const outcome = await pollOnce(
      this.client,
      answer,
      `network ${net.name}: ${command} ${body.destination}`,
      signal,
    );
    if (isInProgress(outcome)) return outcome;
    if (outcome.kind === "failed")
      throw new OperationFailedError(
        `network ${net.name}: ${command} ${body.destination}: ${describeFailure(outcome.action)}`,
      );
    return undefined;
  }

  async create(
    cluster: ClusterTarget,
    route: RouteTarget,
    signal?: AbortSignal,
  ): Promise<CloudRoute | InProgress> {
    const destination = route.destinationCIDR;
    // Hetzner networks are IPv4 only; the Hetzner CCM refuses IPv6 pod CIDRs alike.
    if (destination.includes(":"))
      throw new CloudError(
        `IPv6 pod CIDR ${destination} not routed: Hetzner private networks carry IPv4 only`,
      );
    if (!LABEL_VALUE.test(cluster.cluster))
      throw new CloudError(`cluster name ${cluster.cluster} cannot be a Hetzner label value`);
    if (!/^\d+$/.test(route.targetInstanceID))
      throw new CloudError(`not a Hetzner server id: ${route.targetInstanceID}`);
    const net = await this.network(cluster, signal);
    const server = checkServer(
      (
        await this.client.get<{ server?: unknown }>(
          ROUTE_OPS.server,
          `/servers/${route.targetInstanceID}`,
          signal,
        )
      ).server,
    );
    if (String(server.id) !== route.targetInstanceID)
      throw new SuspectAnswerError(
        `asked for server ${route.targetInstanceID}, the API answered ${server.id}`,
      );
    const gateway = server.private_net.find((p) => p.network === net.id)?.ip;
    if (gateway === undefined || isIP(gateway) !== 4)
      throw new CloudError(`server ${server.name} (${server.id}) is not attached to network ${net.name}`);
    this.gateways.set(`${net.id}/${gateway}`, server.id);
    const made: CloudRoute = { ...route, id: destination, ownerCluster: cluster.cluster };
    const key = routeClaimKey(destination);
    const claim = net.labels[key];
    const existing = net.routes.find((r) => r.destination === destination);
    if (claim !== undefined && claim !== cluster.cluster)
      throw new CloudError(`route to ${destination} in network ${net.name} is claimed by cluster ${claim}`);
    if (claim === undefined) {
      if (existing !== undefined && cluster.scope.adoptFrom === undefined)
        throw new CloudError(
          `route to ${destination} in network ${net.name} was made by someone else (no fleet-ccm claim): set clusters[].adoptFrom to take over the Hetzner CCM's routes`,
        );
      await this.setClaim(net, key, cluster.cluster, signal);
    }
    if (existing?.gateway === gateway) return (await this.running(net, signal)) ?? made;
    // Another route's action still runs on the network: Hetzner answers `locked` until it ends.
    const busy = await this.running(net, signal);
    if (busy !== undefined) return busy;
    if (existing !== undefined) {
      // Ours, to another server (the node's server changed): replaced, as upstream does.
      const removed = await this.action(ROUTE_OPS.remove, net, "delete_route", existing, signal);
      if (removed !== undefined) return removed;
    }
    return (await this.action(ROUTE_OPS.add, net, "add_route", { destination, gateway }, signal)) ?? made;
  }

  async delete(
    cluster: ClusterTarget,
    route: CloudRoute,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const net = await this.network(cluster, signal);
    const key = routeClaimKey(route.destinationCIDR);
    const claim = net.labels[key];
    const existing = net.routes.find((r) => r.destination === route.destinationCIDR);
    if (claim !== cluster.cluster) {
      // Never delete what cannot be shown to be this cluster's.
      if (existing !== undefined)
        throw new CloudError(
          `refusing to delete the route to ${route.destinationCIDR} in network ${net.name}: ${claim === undefined ? "no cluster claims it" : `cluster ${claim} claims it`}`,
        );
      return undefined;
    }
    const busy = await this.running(net, signal);
    if (busy !== undefined) return busy;
    if (existing !== undefined) {
      const removed = await this.action(ROUTE_OPS.remove, net, "delete_route", existing, signal);
      if (removed !== undefined) return removed;
    }
    await this.setClaim(net, key, undefined, signal);
    return undefined;
  }
}
