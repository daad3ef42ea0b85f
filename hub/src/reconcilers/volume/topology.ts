import type { NodeSelectorRequirement, PersistentVolume } from "@fleet-ccm/proto";
import type { DiskMetadata } from "../../cloud/provider.js";
import { LABEL_REGION, LABEL_ZONE } from "../../k8s/well-known.js";

/** Upstream's separator of the zones of a regional disk in one label value (volumehelpers.ZonesSetToLabelValue). */
const ZONES_SEPARATOR = "__";

/** What the hub writes on a PV: the labels it lacks, and a nodeAffinity if it has none. */
export interface Topology {
  readonly labels: Readonly<Record<string, string>>;
  readonly nodeAffinity: readonly NodeSelectorRequirement[];
}

/**
 * Upstream's PersistentVolumeLabel rules (GetLabelsForVolume, then the admission plugin): the
 * disk's zone label (every zone of a regional disk, sorted and `__`-joined) and region label,
 * and a required node affinity with one `In` requirement per label (the zones split again).
 * Never overwrites: a label the PV has (set by a user or a CSI provisioner) is left, and a PV
 * that has any nodeAffinity (a CSI provisioner's topology) gets none.
 */
export function desiredTopology(pv: Readonly<PersistentVolume>, disk: DiskMetadata): Topology {
  const zones = [...new Set(disk.zones)].sort();
  const cloud: Record<string, string> = {};
  if (zones.length > 0) cloud[LABEL_ZONE] = zones.join(ZONES_SEPARATOR);
  if (disk.region !== "") cloud[LABEL_REGION] = disk.region;
  const labels = Object.fromEntries(Object.entries(cloud).filter(([k]) => pv.labels[k] === undefined));
  const nodeAffinity: NodeSelectorRequirement[] = pv.hasNodeAffinity
    ? []
    : Object.entries(cloud).map(([key, value]) => ({
        key,
        operator: "In",
        values: key === LABEL_ZONE ? zones : [value],
      }));
  return { labels, nodeAffinity };
}

/** Nothing left to write on this PV. */
export function converged(t: Topology): boolean {
  return Object.keys(t.labels).length === 0 && t.nodeAffinity.length === 0;
}

/**
 * Why a disk the account has is still not this cluster's to describe, or null: another region
 * than the cluster's (a global API answers for every region), or ownership tags that name other
 * clusters only. Agents are untrusted: a PV naming another cluster's disk gets nothing written.
 */
export function outOfScope(
  disk: DiskMetadata,
  cluster: string,
  region: string,
  aliases: readonly string[],
): string | null {
  if (disk.region !== "" && disk.region !== region)
    return `disk ${disk.id} is in region ${disk.region}, not the cluster's region ${region}`;
  const names = [cluster, ...aliases];
  if (disk.ownerClusters.length > 0 && !disk.ownerClusters.some((c) => names.includes(c)))
    return `disk ${disk.id} is tagged for cluster ${disk.ownerClusters.join(", ")}, out of cluster ${cluster}'s scope`;
  return null;
}
