/**
 * VPC routes as upstream's route controller keeps them: in the route table tagged for the
 * cluster (kubernetes.io/cluster/<cluster>), one route per pod CIDR to its node's instance,
 * after ModifyInstanceAttribute has turned the instance's source/dest check off. Every
 * instance route of a cluster's table is that cluster's, as upstream has it; gateway and local
 * routes are listed and never owned. Each route is its own API object (CreateRoute,
 * DeleteRoute): no write replaces a table whole, so writes need no lock.
 */
import {
  CreateRouteCommand,
  DeleteRouteCommand,
  DescribeInstancesCommand,
  type Filter,
  ModifyInstanceAttributeCommand,
  paginateDescribeRouteTables,
  type RouteTable,
} from "@aws-sdk/client-ec2";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import type {
  CloudRoute,
  ClusterTarget,
  InProgress,
  ProviderContext,
  Routes,
  RouteTarget,
} from "../../provider.js";
import { type AwsApi, allPages } from "./api.js";
import { hasCode } from "./errors.js";
import { CLUSTER_TAG_PREFIX, clusterTagKey } from "./tags.js";

/** The clusters a route table is tagged for. */
function clustersOf(t: RouteTable): string[] {
  return (t.Tags ?? []).flatMap((tag) =>
    tag.Key?.startsWith(CLUSTER_TAG_PREFIX) ? [tag.Key.slice(CLUSTER_TAG_PREFIX.length)] : [],
  );
}

function routeId(tableId: string, cidr: string): string {
  return `${tableId}/${cidr}`;
}

function parseRouteId(id: string): { tableId: string; cidr: string } {
  const slash = id.indexOf("/");
  if (!id.startsWith("rtb-") || slash < 0) throw new CloudError(`route id ${id} is not an AWS route`);
  return { tableId: id.slice(0, slash), cidr: id.slice(slash + 1) };
}

export class AwsRoutes implements Routes {
  constructor(
    readonly _ctx: ProviderContext,
    private readonly api: AwsApi,
  ) {}

  /** The route tables tagged `tagKey` in the cluster's VPC (ClusterTarget.network), or in every VPC without one. */
  private async tables(cluster: ClusterTarget, tagKey: string, signal?: AbortSignal): Promise<RouteTable[]> {
    const network = cluster.network;
    const filters: Filter[] = [
      { Name: "tag-key", Values: [tagKey] },
      ...(network !== undefined && network !== "" ? [{ Name: "vpc-id", Values: [network] }] : []),
    ];
    return allPages(
      paginateDescribeRouteTables(
        { client: this.api.paged(this.api.ec2, "routes.list", signal), pageSize: 100 },
        { Filters: filters },
      ),
      (page) => page.RouteTables,
    );
  }

  async list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]> {
    const out: CloudRoute[] = [];
    for (const t of await this.tables(cluster, `${CLUSTER_TAG_PREFIX}*`, signal)) {
      const clusters = clustersOf(t);
      // A table shared by several clusters is nobody's to prune.
      const owner = clusters.length === 1 ? clusters[0] : undefined;
      for (const r of t.Routes ?? []) {
        if (r.DestinationCidrBlock === undefined || r.GatewayId === "local") continue;
        out.push({
          id: routeId(t.RouteTableId ?? "", r.DestinationCidrBlock),
          destinationCIDR: r.DestinationCidrBlock,
          targetInstanceID: r.InstanceId ?? "",
          ...(r.InstanceId !== undefined && owner !== undefined && { ownerCluster: owner }),
        });
      }
    }
    return out;
  }

  async create(
    cluster: ClusterTarget,
    target: RouteTarget,
    signal?: AbortSignal,
  ): Promise<CloudRoute | InProgress> {
    const ownerCluster = cluster.cluster;
    const tables = await this.tables(cluster, clusterTagKey(ownerCluster), signal);
    if (tables.length !== 1)
      throw new CloudError(
        `cluster ${ownerCluster}: ${tables.length} route tables tagged ${clusterTagKey(ownerCluster)} (want exactly one)`,
      );
    const table = tables[0]!;
    const tableId = table.RouteTableId ?? "";
    const made: CloudRoute = {
      id: routeId(tableId, target.destinationCIDR),
      ...target,
      ownerCluster,
    };
    const existing = (table.Routes ?? []).find((r) => r.DestinationCidrBlock === target.destinationCIDR);
    if (existing?.InstanceId === target.targetInstanceID && existing.State !== "blackhole") return made;
    await this.disableSourceDestCheck(target.targetInstanceID, signal);
    if (existing !== undefined) {
      // Upstream replaces a blackholed route of its own; anything else at that CIDR is not ours to overwrite.
      if (existing.State !== "blackhole" || existing.InstanceId === undefined)
        throw new CloudError(
          `route table ${tableId} already routes ${target.destinationCIDR} to ${existing.InstanceId ?? existing.GatewayId ?? "another target"}`,
        );
      await this.deleteRoute(tableId, target.destinationCIDR, signal);
    }
    try {
      await this.api.call("routes.create", signal, (abortSignal) =>
        this.api.ec2.send(
          new CreateRouteCommand({
            RouteTableId: tableId,
            DestinationCidrBlock: target.destinationCIDR,
            InstanceId: target.targetInstanceID,
          }),
          { abortSignal },
        ),
      );
    } catch (err) {
      // A lost answer made it already: adopt it if it is exactly ours.
      if (!hasCode(err, "RouteAlreadyExists")) throw err;
      const [again] = await this.tables(cluster, clusterTagKey(ownerCluster), signal);
      const route = again?.Routes?.find((r) => r.DestinationCidrBlock === target.destinationCIDR);
      if (route?.InstanceId !== target.targetInstanceID)
        throw new CloudError(`route table ${tableId} already routes ${target.destinationCIDR} elsewhere`, {
          cause: err,
        });
    }
    return made;
  }

  async delete(
    _cluster: ClusterTarget,
    route: CloudRoute,
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const { tableId, cidr } = parseRouteId(route.id);
    await this.deleteRoute(tableId, cidr, signal);
    return undefined;
  }

  private async deleteRoute(tableId: string, cidr: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.api.call("routes.delete", signal, (abortSignal) =>
        this.api.ec2.send(new DeleteRouteCommand({ RouteTableId: tableId, DestinationCidrBlock: cidr }), {
          abortSignal,
        }),
      );
    } catch (err) {
      if (!hasCode(err, "InvalidRoute.NotFound")) throw err;
    }
  }

  /** Upstream's configureInstanceSourceDestCheck: only when it is on. */
  private async disableSourceDestCheck(instanceId: string, signal?: AbortSignal): Promise<void> {
    const out = await this.api.call("routes.instance", signal, (abortSignal) =>
      this.api.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }), { abortSignal }),
    );
    const instance = out.Reservations?.flatMap((r) => r.Instances ?? []).find(
      (i) => i.InstanceId === instanceId,
    );
    if (instance === undefined)
      throw new SuspectAnswerError(`DescribeInstances(${instanceId}) answered without it`);
    if (instance.SourceDestCheck === false) return;
    await this.api.call("routes.sourceDestCheck.modify", signal, (abortSignal) =>
      this.api.ec2.send(
        new ModifyInstanceAttributeCommand({ InstanceId: instanceId, SourceDestCheck: { Value: false } }),
        { abortSignal },
      ),
    );
  }
}
