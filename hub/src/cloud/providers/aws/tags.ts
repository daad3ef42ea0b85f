/** Upstream's ownership tags, so resources cloud-provider-aws made are recognised (and ours by it). */

/** kubernetes.io/cluster/<cluster>: owned (or shared, for resources a cluster uses but did not make). */
export const CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/";
export const SERVICE_NAME_TAG = "kubernetes.io/service-name";
export const OWNED = "owned";

export function clusterTagKey(cluster: string): string {
  return `${CLUSTER_TAG_PREFIX}${cluster}`;
}
