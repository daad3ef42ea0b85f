/**
 * Routes as cloud-provider-azure programs them (azure_routes.go): the cluster's route table
 * (`routeTableName`, `{cluster}` replaced), one route per node named after it, `addressPrefix`
 * the pod CIDR, `nextHopType: VirtualAppliance`, `nextHopIpAddress` the node's private IP. The
 * table is the cluster's (upstream owns the whole table), so its VirtualAppliance routes to the
 * cluster's nodes are the cluster's. Every create and delete pending at once is one PUT of the
 * table with If-Match (SharedWriter); a 412 reads it again and re-applies them.
 */
import type { NetworkInterface, Route, RouteTable } from "@azure/arm-network";
import { SuspectAnswerError } from "../../errors.js";
import {
  type CloudRoute,
  type ClusterTarget,
  type InProgress,
  inProgress,
  type Routes,
  type RouteTarget,
} from "../../provider.js";
import type { AzureApi } from "./api.js";
import { isNotFound } from "./errors.js";
import { type AzureInstances, primaryIpConfig } from "./instances.js";
import { fromTemplate, parseVmId } from "./names.js";
import type { AzureOptions } from "./options.js";
import { TAG_CLUSTER } from "./records.js";
import { type ObjectIo, SharedWriter } from "./shared-writer.js";

const strip = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** A route's name: the node's (upstream mapNodeNameToRouteName), `/` of a scale-set VM as `_`. */
function routeName(instanceId: string, cidr: string): string {
  const ref = parseVmId(instanceId);
  const node = ref?.name ?? instanceId.split("/").pop() ?? "node";
  // A second CIDR of one node (dual stack): upstream's `<node>____<cidr>` form.
  return cidr.includes(":") ? `${node}____${cidr.replace(/[:/]/g, "-")}` : node;
}

export class AzureRoutes implements Routes {
  readonly writer = new SharedWriter<RouteTable>();

  constructor(
    private readonly api: AzureApi,
    private readonly instances: AzureInstances,
    private readonly options: AzureOptions,
  ) {}

  private table(cluster: ClusterTarget): string {
    return fromTemplate(this.options.routeTableName, cluster.cluster);
  }

  private io(cluster: ClusterTarget, signal?: AbortSignal): ObjectIo<RouteTable> {
    const rg = this.options.resourceGroup;
    const name = this.table(cluster);
    return {
      read: async () => {
        try {
          const t = await this.api.call(
            "routeTables.get",
            (c, o) => c.network.routeTables.get(rg, name, o),
            signal,
          );
          return { value: strip(t), etag: t.etag };
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw err;
        }
      },
      put: async (value, etag) => {
        const done = await this.api.call(
          "routeTables.createOrUpdate",
          async (c, o) =>
            (
              await c.network.routeTables.beginCreateOrUpdate(rg, name, value, {
                ...o,
                ...(etag !== undefined && { requestOptions: { customHeaders: { "If-Match": etag } } }),
              })
            ).isDone(),
          signal,
        );
        return { value, pending: !done };
      },
      delete: () => Promise.reject(new Error("the provider never deletes a route table")),
      same: (a, b) => JSON.stringify(key(a)) === JSON.stringify(key(b)),
    };
  }

  /**
   * Private IP → instance id, from the NICs of the nodes' resource groups: recent listings while
   * they know every next hop of `hops`, else fresh ones.
   */
  private async byIp(hops: ReadonlySet<string>, signal?: AbortSignal): Promise<Map<string, string>> {
    const recent = await this.ipsFrom((rg) => this.instances.recentNicsOf(rg, () => true, signal));
    if ([...hops].every((ip) => recent.has(ip))) return recent;
    return this.ipsFrom((rg) => this.instances.nicsOf(rg, signal));
  }

  private async ipsFrom(
    nicsOf: (rg: string) => Promise<ReadonlyMap<string, NetworkInterface>>,
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const rg of this.instances.groups)
      for (const nic of (await nicsOf(rg)).values()) {
        const ip = primaryIpConfig(nic)?.privateIPAddress;
        const vm = nic.virtualMachine?.id;
        const id = vm === undefined ? undefined : this.instances.parseProviderID(`azure://${vm}`);
        if (ip !== undefined && id !== undefined) out.set(ip, id);
      }
    return out;
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const t = await this.io(cluster, signal).read();
    if (t === undefined) return [];
    const ips = await this.byIp(
      new Set(
        (t.value.routes ?? []).flatMap((r) => (r.nextHopIpAddress === undefined ? [] : [r.nextHopIpAddress])),
      ),
      signal,
    );
    const out: CloudRoute[] = [];
    for (const r of t.value.routes ?? []) {
      const target = r.nextHopIpAddress === undefined ? undefined : ips.get(r.nextHopIpAddress);
      out.push({
        id: r.id ?? r.name ?? "",
        destinationCIDR: r.addressPrefix ?? "",
        targetInstanceID: target ?? r.nextHopIpAddress ?? "",
        ...(target !== undefined &&
          r.nextHopType === "VirtualAppliance" && { ownerCluster: cluster.cluster }),
      });
    }
    return out;
  }

  async create(
    cluster: ClusterTarget,
    route: RouteTarget,
    signal?: AbortSignal,
  ): Promise<CloudRoute | InProgress> {
    const ref = parseVmId(route.targetInstanceID);
    if (ref === undefined) throw new SuspectAnswerError(`not a VM id: ${route.targetInstanceID}`);
    const vm = await this.instances.getByProviderID(`azure://${route.targetInstanceID}`, signal);
    const ip = vm.addresses.find((a) => a.type === "InternalIP")?.address;
    if (ip === undefined) throw new SuspectAnswerError(`${route.targetInstanceID} has no private IP`);
    let name = routeName(route.targetInstanceID, route.destinationCIDR);
    const r = await this.writer.apply(this.table(cluster), this.io(cluster, signal), (cur) => {
      const t: RouteTable = cur ?? {
        location: this.api.region,
        tags: { [TAG_CLUSTER]: cluster.cluster },
      };
      const routes = t.routes ?? [];
      // The route of this CIDR keeps its name (upstream's, or a lost answer's); a node's second
      // CIDR takes upstream's dual-stack form `<node>____<cidr>`.
      const same = routes.find((x) => x.addressPrefix === route.destinationCIDR);
      name =
        same?.name ??
        (routes.some((x) => x.name === name)
          ? `${name}____${route.destinationCIDR.replace(/[.:/]/g, "-")}`
          : name);
      const entry: Route = {
        name,
        addressPrefix: route.destinationCIDR,
        nextHopType: "VirtualAppliance",
        nextHopIpAddress: ip,
      };
      t.routes = [...routes.filter((x) => x.name !== name), entry];
      return t;
    });
    if (r.pending) return inProgress(this.options.operationPollMs, "route table updating");
    const id = `${this.api.id(this.options.resourceGroup, "Microsoft.Network/routeTables", this.table(cluster))}/routes/${name}`;
    return { id, ...route, ownerCluster: cluster.cluster };
  }

  async delete(
    cluster: ClusterTarget,
    route: CloudRoute,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const name = route.id.split("/").pop() ?? "";
    const r = await this.writer.apply(this.table(cluster), this.io(cluster, signal), (cur) => {
      if (cur === undefined) return cur;
      return { ...cur, routes: (cur.routes ?? []).filter((x) => x.name !== name) };
    });
    return r.pending ? inProgress(this.options.operationPollMs, "route table updating") : undefined;
  }
}

function key(t: RouteTable | undefined): unknown {
  return (t?.routes ?? [])
    .map((r) => [r.name, r.addressPrefix, r.nextHopType, r.nextHopIpAddress])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
}
