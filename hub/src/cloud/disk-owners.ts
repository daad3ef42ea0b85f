/**
 * The clusters a disk's ownership tags name, as Kubernetes' in-tree provisioners and the vendor
 * CSI drivers write them: `kubernetes.io/cluster/<name>` (owned or shared; the EBS CSI driver
 * with --k8s-tag-cluster-id too) and the legacy `KubernetesCluster=<name>`. A tag that marks a
 * disk as CSI-made without naming a cluster (`ebs.csi.aws.com/cluster=true`) names none.
 */
const CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/";
const LEGACY_CLUSTER_TAG = "KubernetesCluster";

export function clustersOfOwnerTags(tags: Readonly<Record<string, string>>): string[] {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(tags)) {
    if (
      k.startsWith(CLUSTER_TAG_PREFIX) &&
      k.length > CLUSTER_TAG_PREFIX.length &&
      (v === "owned" || v === "shared")
    )
      out.add(k.slice(CLUSTER_TAG_PREFIX.length));
    else if (k === LEGACY_CLUSTER_TAG && v !== "") out.add(v);
  }
  return [...out];
}

/** The tag filters that find one cluster's disks (each is one query: the vendor ANDs filters). */
export function ownerTagQueries(cluster: string): Readonly<Record<string, string>>[] {
  return [
    { [`${CLUSTER_TAG_PREFIX}${cluster}`]: "owned" },
    { [`${CLUSTER_TAG_PREFIX}${cluster}`]: "shared" },
    { [LEGACY_CLUSTER_TAG]: cluster },
  ];
}
