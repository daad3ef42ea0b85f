/**
 * Pod-CIDR routes as Neutron router extra routes, as openstack-cloud-controller-manager programs
 * them: `destination` = the node's pod CIDR, `nexthop` = the node's fixed IP on the cluster's
 * network, added and removed with `PUT /routers/{id}/add_extraroutes` and `remove_extraroutes`
 * (never the whole-list `PUT /routers/{id}`, which would race another writer), so the router's
 * other routes stay as they are. Neutron keeps no owner on an extra route: the router holds the
 * claim, a tag `fleet-ccm.route=<cluster>=<destination with / as _>` added (one atomic
 * `PUT /routers/{id}/tags/{tag}`) before the route and removed after it. A route without a claim
 * (the vendor CCM's, a user's) is listed without an owner and never touched. A cluster sees the
 * routes whose next hop is a port on its network.
 */
import { CloudError } from "../../errors.js";
import type { CloudRoute, ClusterTarget, InProgress, LockKey, Routes, RouteTarget } from "../../provider.js";
import type { OpenStackClient } from "./client.js";
import { isGone } from "./errors.js";
import type { WirePort } from "./instances.js";

export const ROUTE_OPS = {
  router: "router.get",
  ports: "ports.list",
  add: "router.routes.create",
  remove: "router.routes.delete",
  claim: "router.tag.create",
  unclaim: "router.tag.delete",
} as const;

const CLAIM_PREFIX = "fleet-ccm.route=";

interface WireRouter {
  readonly id: string;
  readonly routes: readonly { readonly destination: string; readonly nexthop: string }[];
  readonly tags?: readonly string[];
}

export function claimTag(cluster: string, destination: string): string {
  return `${CLAIM_PREFIX}${cluster}=${destination.replace("/", "_")}`;
}

function claimOf(tags: readonly string[] | undefined, destination: string): string | undefined {
  const suffix = `=${destination.replace("/", "_")}`;
  const t = tags?.find((x) => x.startsWith(CLAIM_PREFIX) && x.endsWith(suffix));
  return t?.slice(CLAIM_PREFIX.length, t.length - suffix.length);
}

export class OpenStackRoutes implements Routes {
  constructor(
    private readonly client: OpenStackClient,
    private readonly routerId: string,
  ) {}

  lockKey(): LockKey {
    return `openstack-router:${this.routerId}`;
  }

  private async router(signal?: AbortSignal): Promise<WireRouter> {
    return (
      await this.client.get<{ router: WireRouter }>(
        "network",
        ROUTE_OPS.router,
        `/routers/${this.routerId}`,
        { signal },
      )
    ).router;
  }

  /** The cluster network's ports: fixed IP → server id. */
  private async hops(cluster: ClusterTarget, signal?: AbortSignal): Promise<Map<string, string>> {
    if (cluster.network === undefined || cluster.network === "")
      throw new CloudError(
        `cluster ${cluster.cluster} has no network: routes need the Neutron network of its nodes`,
      );
    const ports = await this.client.list<WirePort>("network", ROUTE_OPS.ports, "/ports", "ports", {
      query: { network_id: cluster.network },
      signal,
    });
    const out = new Map<string, string>();
    for (const p of ports)
      if (p.device_id !== "") for (const ip of p.fixed_ips) out.set(ip.ip_address, p.device_id);
    return out;
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const [router, hops] = [await this.router(signal), await this.hops(cluster, signal)];
    return router.routes.flatMap((r) => {
      const target = hops.get(r.nexthop);
      if (target === undefined) return [];
      const owner = claimOf(router.tags, r.destination);
      return [
        {
          id: `${r.destination}|${r.nexthop}`,
          destinationCIDR: r.destination,
          targetInstanceID: target,
          ...(owner !== undefined && { ownerCluster: owner }),
        },
      ];
    });
  }

  async create(
    cluster: ClusterTarget,
    route: RouteTarget,
    signal?: AbortSignal,
  ): Promise<CloudRoute | InProgress> {
    const hops = await this.hops(cluster, signal);
    const nexthop = [...hops].find(([, server]) => server === route.targetInstanceID)?.[0];
    if (nexthop === undefined)
      throw new CloudError(
        `server ${route.targetInstanceID} has no port on the cluster's network ${cluster.network}`,
      );
    const router = await this.router(signal);
    const owner = claimOf(router.tags, route.destinationCIDR);
    if (owner !== undefined && owner !== cluster.cluster)
      throw new CloudError(`route ${route.destinationCIDR} is claimed by cluster ${owner}: refused`);
    const others = router.routes.filter(
      (r) => r.destination === route.destinationCIDR && r.nexthop !== nexthop,
    );
    if (others.length > 0 && owner === undefined)
      throw new CloudError(
        `the router already routes ${route.destinationCIDR} elsewhere, and no cluster of this hub claims it: refused`,
      );
    // The claim first: a crash after it leaves a claim without a route, which the next create completes.
    const tag = claimTag(cluster.cluster, route.destinationCIDR);
    if (owner === undefined)
      await this.client.request(
        "network",
        ROUTE_OPS.claim,
        "PUT",
        `/routers/${this.routerId}/tags/${encodeURIComponent(tag)}`,
        {
          signal,
        },
      );
    if (others.length > 0)
      await this.client.request(
        "network",
        ROUTE_OPS.remove,
        "PUT",
        `/routers/${this.routerId}/remove_extraroutes`,
        {
          body: {
            router: { routes: others.map((r) => ({ destination: r.destination, nexthop: r.nexthop })) },
          },
          signal,
        },
      );
    if (!router.routes.some((r) => r.destination === route.destinationCIDR && r.nexthop === nexthop))
      await this.client.request(
        "network",
        ROUTE_OPS.add,
        "PUT",
        `/routers/${this.routerId}/add_extraroutes`,
        {
          body: { router: { routes: [{ destination: route.destinationCIDR, nexthop }] } },
          signal,
        },
      );
    return { ...route, id: `${route.destinationCIDR}|${nexthop}`, ownerCluster: cluster.cluster };
  }

  async delete(cluster: ClusterTarget, route: CloudRoute, signal?: AbortSignal): Promise<undefined> {
    const router = await this.router(signal);
    const owner = claimOf(router.tags, route.destinationCIDR);
    if (owner !== undefined && owner !== cluster.cluster)
      throw new CloudError(`route ${route.destinationCIDR} is claimed by cluster ${owner}: not deleted`);
    const nexthop = route.id.split("|")[1];
    const present = router.routes.filter(
      (r) => r.destination === route.destinationCIDR && (nexthop === undefined || r.nexthop === nexthop),
    );
    if (present.length > 0 && owner === undefined)
      throw new CloudError(
        `route ${route.destinationCIDR} is not claimed by cluster ${cluster.cluster}: not deleted`,
      );
    if (present.length > 0)
      await this.client.request(
        "network",
        ROUTE_OPS.remove,
        "PUT",
        `/routers/${this.routerId}/remove_extraroutes`,
        {
          body: {
            router: { routes: present.map((r) => ({ destination: r.destination, nexthop: r.nexthop })) },
          },
          signal,
        },
      );
    if (owner !== undefined)
      try {
        await this.client.request(
          "network",
          ROUTE_OPS.unclaim,
          "DELETE",
          `/routers/${this.routerId}/tags/${encodeURIComponent(claimTag(cluster.cluster, route.destinationCIDR))}`,
          { signal },
        );
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    return undefined;
  }
}
