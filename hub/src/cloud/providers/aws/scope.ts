/**
 * The cluster's scope for the cloud resources a Service's annotations name (security groups,
 * subnets): each must be the cluster's before the provider makes its first write for the
 * Service, so a tenant of one cluster (or its agent) cannot attach another cluster's groups to
 * its load balancer (which then holds that cluster's deletes up) or build it in another
 * cluster's network. Reads only; a refusal is an AnnotationError (one Warning Event naming the
 * annotation and why, no retry until the Service changes).
 *
 * In scope:
 * - a security group in the load balancer's VPC that carries no fleet-ccm owner tags but this
 *   Service's, and no `kubernetes.io/cluster/<other>` tag unless it also carries this cluster's
 *   (a group made for the cluster, shared with it, or one made by hand for no cluster; with
 *   adoptFrom, the vendor CCM's cluster tag counts as this cluster's);
 * - a subnet in the load balancer's VPC;
 * - for a new NLB, an Elastic IP allocation associated with nothing, carrying the same tag
 *   rules as a group (an existing NLB's are its own, associated with it, and not used again).
 * ACM/IAM certificates are account-wide and only read by a listener: not scoped here.
 */
import type { Address, SecurityGroup, Subnet } from "@aws-sdk/client-ec2";
import { AnnotationError } from "../../annotation-bounds.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import type { ServiceTarget } from "../../provider.js";
import { AWS_ANNOTATIONS, type AwsLbSettings } from "./annotations.js";
import { CLUSTER_TAG_PREFIX, clusterTagKeys } from "./tags.js";

const tagsOf = (
  list: readonly { Key?: string; Value?: string }[] | undefined,
): Readonly<Record<string, string>> =>
  Object.fromEntries((list ?? []).flatMap((t) => (t.Key === undefined ? [] : [[t.Key, t.Value ?? ""]])));

/** Why a security group is not the owner's to use, or undefined when it is. */
export function groupOutOfScope(
  group: SecurityGroup | undefined,
  vpcId: string,
  owner: ServiceTarget,
): string | undefined {
  if (group === undefined) return "not found in the account's region";
  if (group.VpcId !== vpcId) return `in ${group.VpcId ?? "no VPC"}, not the cluster's VPC ${vpcId}`;
  return tagsOutOfScope(tagsOf(group.Tags), owner);
}

/** Another Service's fleet-ccm owner tags, or only another cluster's `kubernetes.io/cluster/` tags. */
function tagsOutOfScope(tags: Readonly<Record<string, string>>, owner: ServiceTarget): string | undefined {
  const fleetCluster = tags[OWNER_TAG_CLUSTER];
  const fleetUid = tags[OWNER_TAG_SERVICE_UID];
  if (
    (fleetCluster !== undefined || fleetUid !== undefined) &&
    (fleetCluster !== owner.cluster || fleetUid !== owner.serviceUid)
  )
    return `owned by another Service (cluster ${fleetCluster ?? "?"})`;
  const mine = clusterTagKeys(owner);
  const others = Object.keys(tags)
    .filter((k) => k.startsWith(CLUSTER_TAG_PREFIX) && !mine.includes(k))
    .map((k) => k.slice(CLUSTER_TAG_PREFIX.length));
  if (others.length > 0 && mine.every((k) => tags[k] === undefined))
    return `tagged for cluster ${others.sort().join(", ")}, not ${owner.cluster}`;
  return undefined;
}

/** Why a subnet is not the owner's to use, or undefined when it is. */
export function subnetOutOfScope(subnet: Subnet | undefined, vpcId: string): string | undefined {
  if (subnet === undefined) return "not found in the account's region";
  if (subnet.VpcId !== vpcId) return `in ${subnet.VpcId ?? "no VPC"}, not the cluster's VPC ${vpcId}`;
  return undefined;
}

/** Why an Elastic IP allocation is not the owner's to use for a new NLB, or undefined when it is. */
export function addressOutOfScope(a: Address | undefined, owner: ServiceTarget): string | undefined {
  if (a === undefined) return "not found in the account's region";
  if (a.AssociationId !== undefined) return `associated (${a.AssociationId})`;
  return tagsOutOfScope(tagsOf(a.Tags), owner);
}

/** What the scope check reads by id (absent ones left out of the answer). */
export interface ScopeReads {
  groups(ids: readonly string[]): Promise<readonly SecurityGroup[]>;
  subnets(ids: readonly string[]): Promise<readonly Subnet[]>;
  /** Asked only when the check is for a new load balancer. */
  addresses(ids: readonly string[]): Promise<readonly Address[]>;
}

/** Throws AnnotationError for the first annotated group or subnet outside the owner's scope. */
export async function checkScope(
  owner: ServiceTarget,
  s: AwsLbSettings,
  vpcId: string,
  reads: ScopeReads,
  creating: boolean,
): Promise<void> {
  const named: readonly [string, readonly string[]][] = [
    [AWS_ANNOTATIONS.securityGroups, s.securityGroups ?? []],
    [AWS_ANNOTATIONS.extraSecurityGroups, s.extraSecurityGroups],
  ];
  const groupIds = [...new Set(named.flatMap(([, ids]) => ids))];
  if (groupIds.length > 0) {
    const byId = new Map((await reads.groups(groupIds)).map((g) => [g.GroupId ?? "", g]));
    for (const [annotation, ids] of named)
      for (const id of ids) {
        const why = groupOutOfScope(byId.get(id), vpcId, owner);
        if (why !== undefined) refuse(annotation, ids, `security group ${id} is ${why}`);
      }
  }
  const subnetIds = s.subnets ?? [];
  if (subnetIds.length > 0) {
    const byId = new Map((await reads.subnets(subnetIds)).map((x) => [x.SubnetId ?? "", x]));
    for (const id of subnetIds) {
      const why = subnetOutOfScope(byId.get(id), vpcId);
      if (why !== undefined) refuse(AWS_ANNOTATIONS.subnets, subnetIds, `subnet ${id} is ${why}`);
    }
  }
  const eips = s.type === "nlb" && creating ? (s.eipAllocations ?? []) : [];
  if (eips.length > 0) {
    const byId = new Map((await reads.addresses(eips)).map((a) => [a.AllocationId ?? "", a]));
    for (const id of eips) {
      const why = addressOutOfScope(byId.get(id), owner);
      if (why !== undefined)
        refuse(AWS_ANNOTATIONS.eipAllocations, eips, `Elastic IP allocation ${id} is ${why}`);
    }
  }
}

function refuse(annotation: string, ids: readonly string[], problem: string): never {
  throw new AnnotationError(annotation, ids.join(","), `ids of resources in cluster scope`, problem);
}
