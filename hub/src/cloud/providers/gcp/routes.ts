/**
 * VPC routes as cloud-provider-gcp programs them (gce_routes.go): `<cluster>-<suffix>` names,
 * description `k8s-node-route`, priority 1000, nextHopInstance, in the cluster's network. Owned:
 * the name carries the cluster's prefix and a suffix of upstream's (a node uid) or ours, and the
 * description is upstream's.
 */

import type * as Compute from "@google-cloud/compute";
import type {
  CloudRoute,
  ClusterTarget,
  InProgress,
  ProviderContext,
  Routes,
  RouteTarget,
} from "../../provider.js";
import type { GcpApi } from "./api.js";
import { hasReason, isNotFound } from "./errors.js";
import { gceRouteName, ROUTE_DESCRIPTION, routePrefix } from "./names.js";
import { getOrUndefined, Operations } from "./operations.js";
import type { GcpOptions } from "./options.js";

type Route = Compute.protos.google.cloud.compute.v1.IRoute;
const SUFFIX = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export class GcpRoutes implements Routes {
  private readonly ops: Operations;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: GcpApi,
    options: GcpOptions,
  ) {
    this.ops = new Operations(api, options.operationPollMs);
  }

  private network(cluster: ClusterTarget): string {
    return this.api.url(`global/networks/${cluster.network ?? this.ctx.account.network ?? "default"}`);
  }

  private toCloud(cluster: ClusterTarget, r: Route): CloudRoute {
    const name = r.name ?? "";
    const prefix = routePrefix(cluster.cluster);
    const owned =
      r.description === ROUTE_DESCRIPTION &&
      name.startsWith(prefix) &&
      SUFFIX.test(name.slice(prefix.length));
    const hop = /\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(r.nextHopInstance ?? "");
    return {
      id: name,
      destinationCIDR: r.destRange ?? "",
      targetInstanceID: hop === null ? "" : `${hop[1]}/${hop[2]}`,
      ...(owned && { ownerCluster: cluster.cluster }),
    };
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const filter = `network = "${this.network(cluster)}"`;
    const routes = await this.api.listAll(
      "routes.list",
      (c, o, pageToken) =>
        c.routes.list(
          {
            project: this.api.project,
            filter,
            maxResults: 500,
            ...(pageToken !== undefined && { pageToken }),
          },
          o,
        ),
      signal,
    );
    return routes.map((r) => this.toCloud(cluster, r));
  }

  private get(name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "routes.get",
            (c, o) => c.routes.get({ project: this.api.project, route: name }, o),
            signal,
          )
        )[0],
    );
  }

  async create(
    cluster: ClusterTarget,
    route: RouteTarget,
    signal?: AbortSignal,
  ): Promise<CloudRoute | InProgress> {
    const name = gceRouteName(cluster.cluster, route.destinationCIDR, route.targetInstanceID);
    const existing = await this.get(name, signal);
    if (existing !== undefined) return this.toCloud(cluster, existing);
    const pending = await this.ops.pending("global", this.api.url(`global/routes/${name}`), signal);
    if (pending !== undefined) return pending;
    const [zone, instance] = route.targetInstanceID.split("/");
    const op = await this.api
      .mutate(
        "routes.insert",
        (c, o) =>
          c.routes.insert(
            {
              project: this.api.project,
              routeResource: {
                name,
                network: this.network(cluster),
                destRange: route.destinationCIDR,
                priority: 1000,
                description: ROUTE_DESCRIPTION,
                nextHopInstance: this.api.url(`zones/${zone}/instances/${instance}`),
              },
            },
            o,
          ),
        signal,
      )
      .catch(async (err: unknown) => {
        // An insert racing our own earlier one (its operation ended between the lookups above
        // and this call): the route of this deterministic name is ours to adopt.
        if (!hasReason(err, "alreadyExists")) throw err;
        return undefined;
      });
    if (op === undefined) {
      const made = await this.get(name, signal);
      if (made !== undefined) return this.toCloud(cluster, made);
      return (
        (await this.ops.after({ status: "PENDING", name })) ?? {
          id: name,
          ...route,
          ownerCluster: cluster.cluster,
        }
      );
    }
    const step = await this.ops.after(op, signal);
    if (step !== undefined) return step;
    const made = await this.get(name, signal);
    return made === undefined
      ? this.ops
          .after({ status: "PENDING", name })
          .then((s) => s ?? { id: name, ...route, ownerCluster: cluster.cluster })
      : this.toCloud(cluster, made);
  }

  async delete(
    _cluster: ClusterTarget,
    route: CloudRoute,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const existing = await this.get(route.id, signal);
    if (existing === undefined) return undefined;
    const pending = await this.ops.pending("global", this.api.url(`global/routes/${route.id}`), signal);
    if (pending !== undefined) return pending;
    try {
      return await this.ops.after(
        await this.api.mutate(
          "routes.delete",
          (c, o) => c.routes.delete({ project: this.api.project, route: route.id }, o),
          signal,
        ),
        signal,
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
