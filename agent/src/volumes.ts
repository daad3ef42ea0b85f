import type {
  NodeSelectorRequirement,
  PersistentVolume,
  PersistentVolumeDesired,
  Welcome,
} from "@fleet-ccm/proto";
import type { V1PersistentVolume } from "@kubernetes/client-node";
import { toDate } from "./convert.js";

/** The in-tree sources of cloud disks, and the field of each that names the disk. */
const IN_TREE_HANDLE: Readonly<Record<string, string>> = {
  awsElasticBlockStore: "volumeID",
  gcePersistentDisk: "pdName",
  azureDisk: "diskURI",
  cinder: "volumeID",
};

/** The label prefixes forwarded with a PersistentVolume: the topology the hub must not overwrite. */
const TOPOLOGY_PREFIXES = ["topology.kubernetes.io/", "failure-domain.beta.kubernetes.io/"];

/** Which PersistentVolumes the hub asked for (Welcome.volume_in_tree_sources, volume_csi_drivers). */
export class VolumeFilter {
  private readonly inTree: ReadonlySet<string>;
  private readonly drivers: ReadonlySet<string>;

  constructor(inTree: readonly string[], drivers: readonly string[]) {
    this.inTree = new Set(inTree.filter((s) => IN_TREE_HANDLE[s] !== undefined));
    this.drivers = new Set(drivers);
  }

  static of(w: Welcome): VolumeFilter {
    return new VolumeFilter(w.volumeInTreeSources, w.volumeCsiDrivers);
  }

  /** Nothing asked for: PersistentVolumes are neither listed nor watched. */
  get empty(): boolean {
    return this.inTree.size === 0 && this.drivers.size === 0;
  }

  sameAs(o: VolumeFilter): boolean {
    const same = (a: ReadonlySet<string>, b: ReadonlySet<string>) =>
      a.size === b.size && [...a].every((x) => b.has(x));
    return same(this.inTree, o.inTree) && same(this.drivers, o.drivers);
  }

  /** The disk a PersistentVolume names, if it is one the hub asked for. */
  diskOf(pv: V1PersistentVolume): { source: string; csiDriver: string; volumeHandle: string } | undefined {
    const spec = (pv.spec ?? {}) as Record<string, unknown>;
    const csi = pv.spec?.csi;
    if (csi !== undefined)
      return this.drivers.has(csi.driver) && csi.volumeHandle !== ""
        ? { source: "csi", csiDriver: csi.driver, volumeHandle: csi.volumeHandle }
        : undefined;
    for (const source of this.inTree) {
      const s = spec[source] as Record<string, unknown> | undefined;
      const handle = s?.[IN_TREE_HANDLE[source] ?? ""];
      if (typeof handle === "string" && handle !== "") return { source, csiDriver: "", volumeHandle: handle };
    }
    return undefined;
  }
}

function topologyLabels(labels: Record<string, string> | undefined): Record<string, string> | undefined {
  if (labels === undefined) return undefined;
  const kept = Object.entries(labels).filter(([k]) => TOPOLOGY_PREFIXES.some((p) => k.startsWith(p)));
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/**
 * What the agent keeps of a PersistentVolume: the disk it names (only for the sources the hub
 * asked for), its topology labels, whether it has a nodeAffinity (kept whole: a patch must know
 * whether one is set) and its capacity. Others keep only their identity, so their deletion is
 * still seen.
 */
export function slimPersistentVolume(pv: V1PersistentVolume, filter: VolumeFilter): V1PersistentVolume {
  const md = pv.metadata ?? {};
  const metadata = {
    name: md.name,
    uid: md.uid,
    resourceVersion: md.resourceVersion,
    creationTimestamp: md.creationTimestamp,
    deletionTimestamp: md.deletionTimestamp,
    labels: topologyLabels(md.labels),
  };
  const disk = filter.diskOf(pv);
  if (disk === undefined) return { metadata };
  const spec = pv.spec ?? {};
  const source =
    disk.source === "csi"
      ? { csi: { driver: disk.csiDriver, volumeHandle: disk.volumeHandle } }
      : { [disk.source]: (spec as Record<string, unknown>)[disk.source] };
  return {
    metadata,
    spec: { ...source, capacity: spec.capacity, nodeAffinity: spec.nodeAffinity },
    status: { phase: pv.status?.phase },
  };
}

/** The wire form of a PersistentVolume, or undefined if it names no disk the hub asked for. */
export function toWirePersistentVolume(
  pv: V1PersistentVolume,
  filter: VolumeFilter,
): PersistentVolume | undefined {
  const disk = filter.diskOf(pv);
  if (disk === undefined) return undefined;
  const md = pv.metadata ?? {};
  const storage = pv.spec?.capacity?.["storage"];
  return {
    name: md.name ?? "",
    uid: md.uid ?? "",
    resourceVersion: md.resourceVersion ?? "",
    labels: { ...md.labels },
    ...disk,
    hasNodeAffinity: pv.spec?.nodeAffinity !== undefined && pv.spec.nodeAffinity !== null,
    phase: pv.status?.phase ?? "",
    capacity: storage === undefined ? "" : String(storage),
    creationTimestamp: toDate(md.creationTimestamp),
    deletionTimestamp: toDate(md.deletionTimestamp),
  };
}

const requirement = (r: NodeSelectorRequirement) => ({ key: r.key, operator: r.operator, values: r.values });

/**
 * The labels the PV lacks and, if it has none, its nodeAffinity, as one merge patch with uid and
 * resourceVersion preconditions (a concurrent writer's nodeAffinity is never replaced: the 409
 * reads again); null when there is nothing to write. A label the PV already has is never
 * overwritten, whatever the hub says.
 */
export function persistentVolumePatch(
  pv: V1PersistentVolume,
  d: PersistentVolumeDesired,
): Record<string, unknown> | null {
  const have = pv.metadata?.labels ?? {};
  const labels = Object.entries(d.labels).filter(([k]) => have[k] === undefined);
  const affinity = d.nodeAffinity.length > 0 && (pv.spec?.nodeAffinity ?? undefined) === undefined;
  if (labels.length === 0 && !affinity) return null;
  const metadata: Record<string, unknown> = {
    uid: pv.metadata?.uid,
    resourceVersion: pv.metadata?.resourceVersion,
  };
  if (labels.length > 0) metadata["labels"] = Object.fromEntries(labels);
  const body: Record<string, unknown> = { metadata };
  if (affinity)
    body["spec"] = {
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: d.nodeAffinity.map(requirement) }] },
      },
    };
  return body;
}
