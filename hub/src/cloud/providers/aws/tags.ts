/** Upstream's ownership tags, so resources cloud-provider-aws made are recognised (and ours by it). */
import type { ClusterTarget } from "../../provider.js";

/** kubernetes.io/cluster/<cluster>: owned (or shared, for resources a cluster uses but did not make). */
export const CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/";
export const SERVICE_NAME_TAG = "kubernetes.io/service-name";
export const OWNED = "owned";

export function clusterTagKey(cluster: string): string {
  return `${CLUSTER_TAG_PREFIX}${cluster}`;
}

/**
 * The cluster tags that mark a resource as the cluster's: its own, and, while it migrates
 * (clusters[].adoptFrom), the one cloud-provider-aws put on what it made under its
 * --cluster-name (node groups, subnets, load balancers), the operator's word that they are one.
 */
export function clusterTagKeys(target: ClusterTarget): string[] {
  const vendor = target.scope.adoptFrom?.vendorCcmClusterName;
  return vendor === undefined || vendor === target.cluster
    ? [clusterTagKey(target.cluster)]
    : [clusterTagKey(target.cluster), clusterTagKey(vendor)];
}

/** Upstream's legacy cluster tag (tags.go TagNameKubernetesClusterLegacy): KubernetesCluster=<cluster>. */
export const LEGACY_CLUSTER_TAG = "KubernetesCluster";

/**
 * Whether tags mark a resource as the cluster's, as upstream's hasClusterTag reads them: a key
 * of clusterTagKeys, or the legacy KubernetesCluster tag naming the cluster (or, with adoptFrom,
 * the vendor CCM's).
 */
export function hasClusterTag(tags: Readonly<Record<string, string>>, target: ClusterTarget): boolean {
  const legacy = tags[LEGACY_CLUSTER_TAG];
  return (
    clusterTagKeys(target).some((k) => tags[k] !== undefined) ||
    (legacy !== undefined && [target.cluster, target.scope.adoptFrom?.vendorCcmClusterName].includes(legacy))
  );
}
