/**
 * VPC routes on Linode, as the Linode CCM's route controller makes them: a node's pod CIDR is
 * an `ip_range` of the Linode's VPC interface: PUT .../configs/{cid}/interfaces/{iid} for config
 * interfaces, PUT .../interfaces/{iid} with `vpc.ipv4.ranges` on a Linode whose
 * `interface_generation` is `linode` (the newer interfaces API). Ranges
 * carry no tags, so the Linode holds the claim: a tag `fccm-r:<cluster>:<cidr>` is set before
 * the range is added and removed after it is gone. A range without a claim is foreign: listed,
 * never owned, never touched.
 */
import { CloudError, SuspectAnswerError } from "../../errors.js";
import type {
  CloudRoute,
  ClusterTarget,
  LockKey,
  ProviderContext,
  Routes,
  RouteTarget,
} from "../../provider.js";
import type { LinodeClient } from "./client.js";
import { isNotFound } from "./errors.js";
import { checkLinode } from "./instances.js";
import { idsFilter } from "./load-balancers.js";
import type { VpcName, VpcResolver } from "./vpc.js";
import type { WireLinode, WireLinodeConfig, WireLinodeInterface } from "./wire.js";

const CLAIM = "fccm-r:";

export const ROUTE_OPS = {
  list: "routes.list",
  linodes: "routes.linodes",
  get: "routes.linode",
  configs: "routes.configs",
  interfaces: "routes.interfaces",
  tag: "routes.tags.update",
  ranges: "routes.ranges.update",
} as const;

export function routeClaim(cluster: string, cidr: string): string {
  return `${CLAIM}${cluster}:${cidr}`;
}

function claimsOf(tags: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of tags) {
    if (!t.startsWith(CLAIM)) continue;
    const rest = t.slice(CLAIM.length);
    const at = rest.lastIndexOf(":");
    if (at > 0) out.set(rest.slice(at + 1), rest.slice(0, at));
  }
  return out;
}

export class LinodeRoutes implements Routes {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: LinodeClient,
    private readonly vpc: VpcResolver,
  ) {}

  /** A Linode's tags and its interface's ranges are read, changed and written whole: one write per Linode at a time. */
  lockKey(_cluster: ClusterTarget, route: RouteTarget): LockKey {
    return `linode:${route.targetInstanceID}`;
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const ranges = (await this.vpc.entries(cluster.network, ROUTE_OPS.list, signal)).filter(
      (e) => e.address_range !== null && e.address_range !== undefined,
    );
    if (ranges.length === 0) return [];
    const ids = [...new Set(ranges.map((r) => r.linode_id))];
    const tags = new Map<number, readonly string[]>();
    for (let i = 0; i < ids.length; i += 100) {
      const part = ids.slice(i, i + 100);
      const linodes = await this.client.list<WireLinode>(ROUTE_OPS.linodes, "/linode/instances", {
        signal,
        filter: idsFilter(part, this.ctx.account.region),
      });
      for (const l of linodes.map(checkLinode)) tags.set(l.id, l.tags);
    }
    return ranges.map((r) => {
      const cidr = r.address_range ?? "";
      const owner = claimsOf(tags.get(r.linode_id) ?? []).get(cidr);
      return {
        id: `${r.linode_id}/${cidr}`,
        destinationCIDR: cidr,
        targetInstanceID: String(r.linode_id),
        ...(owner !== undefined && { ownerCluster: owner }),
      };
    });
  }

  async create(cluster: ClusterTarget, route: RouteTarget, signal?: AbortSignal): Promise<CloudRoute> {
    const ownerCluster = cluster.cluster;
    // Linode routes only IPv4 VPC subnet ranges to an interface (ip_ranges, vpc.ipv4.ranges);
    // the Linode CCM leaves IPv6 pod CIDRs unrouted too.
    if (route.destinationCIDR.includes(":"))
      throw new CloudError(
        `IPv6 pod CIDR ${route.destinationCIDR} not routed: Linode VPC interfaces route IPv4 ranges only (ip_ranges and vpc.ipv4.ranges take IPv4 subnet ranges); give the cluster IPv4 pod CIDRs for VPC routes`,
      );
    const claim = routeClaim(ownerCluster, route.destinationCIDR);
    if (claim.length > 50) throw new CloudError(`route tag ${claim} is longer than Linode's 50 characters`);
    const linode = await this.linode(route.targetInstanceID, signal);
    const iface = await this.vpcInterface(cluster.network, linode, signal);
    const claims = claimsOf(linode.tags);
    const holder = claims.get(route.destinationCIDR);
    if (iface.ranges.includes(route.destinationCIDR) && holder === undefined)
      throw new CloudError(`${route.destinationCIDR} is routed to Linode ${linode.id} by someone else`);
    if (holder !== undefined && holder !== ownerCluster)
      throw new CloudError(`${route.destinationCIDR} on Linode ${linode.id} is claimed by cluster ${holder}`);
    if (holder === undefined)
      await this.client.put(
        ROUTE_OPS.tag,
        `/linode/instances/${linode.id}`,
        { tags: [...linode.tags, claim] },
        { signal },
      );
    if (!iface.ranges.includes(route.destinationCIDR))
      await this.client.put(
        ROUTE_OPS.ranges,
        iface.path,
        iface.body([...iface.ranges, route.destinationCIDR]),
        {
          signal,
        },
      );
    return { ...route, id: `${linode.id}/${route.destinationCIDR}`, ownerCluster };
  }

  async delete(cluster: ClusterTarget, route: CloudRoute, signal?: AbortSignal): Promise<undefined> {
    if (route.ownerCluster === undefined) throw new CloudError("refusing to delete a route no cluster owns");
    let linode: WireLinode;
    try {
      linode = await this.linode(route.targetInstanceID, signal);
    } catch (err) {
      // The Linode is gone, and its ranges with it.
      if (isNotFound(err)) return undefined;
      throw err;
    }
    const iface = await this.vpcInterface(cluster.network, linode, signal);
    const claim = routeClaim(route.ownerCluster, route.destinationCIDR);
    if (!linode.tags.includes(claim) && claimsOf(linode.tags).has(route.destinationCIDR)) return undefined;
    if (iface.ranges.includes(route.destinationCIDR))
      await this.client.put(
        ROUTE_OPS.ranges,
        iface.path,
        iface.body(iface.ranges.filter((r) => r !== route.destinationCIDR)),
        { signal },
      );
    if (linode.tags.includes(claim))
      await this.client.put(
        ROUTE_OPS.tag,
        `/linode/instances/${linode.id}`,
        { tags: linode.tags.filter((t) => t !== claim) },
        { signal },
      );
    return undefined;
  }

  private async linode(id: string, signal?: AbortSignal): Promise<WireLinode> {
    if (!/^\d+$/.test(id)) throw new CloudError(`not a Linode id: ${id}`);
    const l = checkLinode(await this.client.get(ROUTE_OPS.get, `/linode/instances/${id}`, { signal }));
    if (String(l.id) !== id) throw new SuspectAnswerError(`asked for Linode ${id}, the API answered ${l.id}`);
    return l;
  }

  /** The Linode's interface in the cluster's VPC: its ranges, and how to replace them. */
  private async vpcInterface(
    network: VpcName,
    linode: WireLinode,
    signal?: AbortSignal,
  ): Promise<VpcInterface> {
    const vpcId = await this.vpc.id(network, signal);
    if (linode.interface_generation === "linode") {
      const answer = await this.client.get<{ interfaces?: WireLinodeInterface[] }>(
        ROUTE_OPS.interfaces,
        `/linode/instances/${linode.id}/interfaces`,
        { signal },
      );
      const i = (answer.interfaces ?? []).find((x) => x.vpc?.vpc_id === vpcId);
      if (i === undefined) throw new CloudError(`Linode ${linode.id} has no interface in VPC ${vpcId}`);
      return {
        ranges: (i.vpc?.ipv4?.ranges ?? []).map((r) => r.range),
        path: `/linode/instances/${linode.id}/interfaces/${i.id}`,
        body: (ranges) => ({ vpc: { ipv4: { ranges: ranges.map((range) => ({ range })) } } }),
      };
    }
    const configs = await this.client.list<WireLinodeConfig>(
      ROUTE_OPS.configs,
      `/linode/instances/${linode.id}/configs`,
      {
        signal,
      },
    );
    for (const c of configs)
      for (const i of c.interfaces)
        if (i.purpose === "vpc" && i.vpc_id === vpcId)
          return {
            ranges: [...(i.ip_ranges ?? [])],
            path: `/linode/instances/${linode.id}/configs/${c.id}/interfaces/${i.id}`,
            body: (ranges) => ({ ip_ranges: ranges }),
          };
    throw new CloudError(`Linode ${linode.id} has no interface in VPC ${vpcId}`);
  }
}

interface VpcInterface {
  readonly ranges: readonly string[];
  readonly path: string;
  body(ranges: readonly string[]): Record<string, unknown>;
}
