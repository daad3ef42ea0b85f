/**
 * Pod-CIDR routes as Neutron router extra routes, as openstack-cloud-controller-manager programs
 * them: `destination` = the node's pod CIDR, `nexthop` = the node's fixed IP on the cluster's
 * network, added and removed with `PUT /routers/{id}/add_extraroutes` and `remove_extraroutes`
 * (never the whole-list `PUT /routers/{id}`, which would race another writer), so the router's
 * other routes stay as they are. Neutron keeps no owner on an extra route: the router holds the
 * claim, a tag `fleet-ccm.route=<cluster>=<destination with / as _>` added (one atomic
 * `PUT /routers/{id}/tags/{tag}`) before the route and removed after it. A route without a claim
 * (the vendor CCM's, a user's) is listed without an owner and never touched. A cluster sees the
 * routes whose next hop is a port on its network. As upstream, the pod CIDR is also an allowed
 * address pair of the node's port (port security drops the pods' traffic otherwise): added
 * atomically (`add_allowed_address_pairs`) before the route and taken back if the route fails;
 * removed (the port's list without it) after the route goes.
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
  pairAdd: "port.pairs.create",
  pairRemove: "port.update",
} as const;

const CLAIM_PREFIX = "fleet-ccm.route=";

interface WireRouter {
  readonly id: string;
  readonly routes: readonly { readonly destination: string; readonly nexthop: string }[];
  readonly tags?: readonly string[];
}

interface Pair {
  readonly ip_address: string;
  readonly mac_address?: string;
}

interface WirePortWithPairs extends WirePort {
  readonly allowed_address_pairs?: readonly Pair[];
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
    const path = `/routers/${this.routerId}`;
    return (await this.client.get<{ router: WireRouter }>("network", ROUTE_OPS.router, path, { signal }))
      .router;
  }

  /** The ports of the cluster's network (one paged call). */
  private ports(cluster: ClusterTarget, signal?: AbortSignal): Promise<WirePortWithPairs[]> {
    if (cluster.network === undefined || cluster.network === "")
      throw new CloudError(
        `cluster ${cluster.cluster} has no network: routes need the Neutron network of its nodes`,
      );
    return this.client.list<WirePortWithPairs>("network", ROUTE_OPS.ports, "/ports", "ports", {
      query: { network_id: cluster.network },
      signal,
    });
  }

  /** The port's allowed address pairs without `cidr` (no call when it has none). */
  private async dropPair(port: WirePortWithPairs, cidr: string, signal?: AbortSignal): Promise<void> {
    const pairs = port.allowed_address_pairs ?? [];
    if (!pairs.some((p) => p.ip_address === cidr)) return;
    await this.client.request("network", ROUTE_OPS.pairRemove, "PUT", `/ports/${port.id}`, {
      body: { port: { allowed_address_pairs: pairs.filter((p) => p.ip_address !== cidr) } },
      signal,
    });
  }

  private extraRoutes(
    op: string,
    how: "add" | "remove",
    routes: readonly Pick<Route, "destination" | "nexthop">[],
    signal?: AbortSignal,
  ) {
    return this.client.request("network", op, "PUT", `/routers/${this.routerId}/${how}_extraroutes`, {
      body: { router: { routes: routes.map((r) => ({ destination: r.destination, nexthop: r.nexthop })) } },
      signal,
    });
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const router = await this.router(signal);
    const hops = new Map<string, string>();
    for (const p of await this.ports(cluster, signal))
      if (p.device_id !== "") for (const ip of p.fixed_ips) hops.set(ip.ip_address, p.device_id);
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
    const cidr = route.destinationCIDR;
    const port = (await this.ports(cluster, signal)).find((p) => p.device_id === route.targetInstanceID);
    const nexthop = port?.fixed_ips[0]?.ip_address;
    if (port === undefined || nexthop === undefined)
      throw new CloudError(
        `server ${route.targetInstanceID} has no port on the cluster's network ${cluster.network}`,
      );
    const router = await this.router(signal);
    const owner = claimOf(router.tags, cidr);
    if (owner !== undefined && owner !== cluster.cluster)
      throw new CloudError(`route ${cidr} is claimed by cluster ${owner}: refused`);
    const others = router.routes.filter((r) => r.destination === cidr && r.nexthop !== nexthop);
    if (others.length > 0 && owner === undefined)
      throw new CloudError(
        `the router already routes ${cidr} elsewhere, and no cluster of this hub claims it: refused`,
      );
    // The claim first: a crash after it leaves a claim without a route, which the next create completes.
    if (owner === undefined) {
      const tag = encodeURIComponent(claimTag(cluster.cluster, cidr));
      await this.client.request("network", ROUTE_OPS.claim, "PUT", `/routers/${this.routerId}/tags/${tag}`, {
        signal,
      });
    }
    if (others.length > 0) await this.extraRoutes(ROUTE_OPS.remove, "remove", others, signal);
    const paired = (port.allowed_address_pairs ?? []).some((p) => p.ip_address === cidr);
    if (!paired)
      await this.client.request(
        "network",
        ROUTE_OPS.pairAdd,
        "PUT",
        `/ports/${port.id}/add_allowed_address_pairs`,
        {
          body: { port: { allowed_address_pairs: [{ ip_address: cidr }] } },
          signal,
        },
      );
    if (!router.routes.some((r) => r.destination === cidr && r.nexthop === nexthop)) {
      try {
        await this.extraRoutes(ROUTE_OPS.add, "add", [{ destination: cidr, nexthop }], signal);
      } catch (err) {
        // The route failed: the pair goes again, as upstream rolls it back (best effort: a
        // later create adds it anew, a delete removes it).
        if (!paired) {
          const withPair = {
            ...port,
            allowed_address_pairs: [...(port.allowed_address_pairs ?? []), { ip_address: cidr }],
          };
          await this.dropPair(withPair, cidr, signal).catch(() => undefined);
        }
        throw err;
      }
    }
    return { ...route, id: `${cidr}|${nexthop}`, ownerCluster: cluster.cluster };
  }

  async delete(cluster: ClusterTarget, route: CloudRoute, signal?: AbortSignal): Promise<undefined> {
    const cidr = route.destinationCIDR;
    const router = await this.router(signal);
    const owner = claimOf(router.tags, cidr);
    if (owner !== undefined && owner !== cluster.cluster)
      throw new CloudError(`route ${cidr} is claimed by cluster ${owner}: not deleted`);
    const nexthop = route.id.split("|")[1];
    const present = router.routes.filter(
      (r) => r.destination === cidr && (nexthop === undefined || r.nexthop === nexthop),
    );
    if (present.length > 0 && owner === undefined)
      throw new CloudError(`route ${cidr} is not claimed by cluster ${cluster.cluster}: not deleted`);
    if (present.length > 0) await this.extraRoutes(ROUTE_OPS.remove, "remove", present, signal);
    if (owner === undefined) return undefined;
    const port = (await this.ports(cluster, signal)).find((p) =>
      p.fixed_ips.some((f) => f.ip_address === nexthop),
    );
    if (port !== undefined) await this.dropPair(port, cidr, signal);
    try {
      const tag = encodeURIComponent(claimTag(cluster.cluster, cidr));
      await this.client.request(
        "network",
        ROUTE_OPS.unclaim,
        "DELETE",
        `/routers/${this.routerId}/tags/${tag}`,
        {
          signal,
        },
      );
    } catch (err) {
      if (!isGone(err)) throw err;
    }
    return undefined;
  }
}

type Route = WireRouter["routes"][number];
