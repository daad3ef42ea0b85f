import { askedOnly, sameDisk } from "../../disk-answers.js";
import { clustersOfOwnerTags, ownerTagQueries } from "../../disk-owners.js";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, ProviderContext, Volumes } from "../../provider.js";
import type { LinodeClient } from "./client.js";
import { isNotFound } from "./errors.js";

/** linode-blockstorage-csi-driver; its volumeHandle is `<volume id>-<label>`. */
export const LINODE_CSI_DRIVER = "linodebs.csi.linode.com";
const HANDLE = /^(\d+)-\S+$/;
const OPS = { get: "volumes.get", list: "volumes.list" } as const;

interface WireVolume {
  readonly id: number;
  readonly label: string;
  readonly region: string;
  readonly size: number;
  readonly status: string;
  readonly linode_id: number | null;
  readonly tags: readonly string[];
  readonly created?: string;
}

const STATES: Readonly<Record<string, DiskState>> = {
  creating: "creating",
  active: "available",
  resizing: "available",
  key_rotating: "available",
};

function checkVolume(v: unknown): WireVolume {
  const o = v as Partial<WireVolume> | null;
  if (
    typeof o !== "object" ||
    o === null ||
    typeof o.id !== "number" ||
    typeof o.region !== "string" ||
    typeof o.size !== "number" ||
    typeof o.status !== "string" ||
    !Array.isArray(o.tags)
  )
    throw new SuspectAnswerError(`Linode: malformed volume ${JSON.stringify((o as { id?: unknown })?.id)}`);
  return o as WireVolume;
}

/**
 * Linode tags are plain strings: a volume's ownership tag is `kubernetes.io/cluster/<name>` (set
 * through the CSI StorageClass's `linodebs.csi.linode.com/volumeTags`).
 */
function toDisk(v: WireVolume): DiskMetadata {
  const attached = v.linode_id !== null && v.linode_id !== undefined;
  return {
    id: String(v.id),
    region: v.region,
    // Linode Block Storage has regions, no zones: only the region label is set.
    zones: [],
    sizeGiB: v.size,
    state: attached ? "in-use" : (STATES[v.status] ?? "unknown"),
    ...(attached && { attachedTo: String(v.linode_id) }),
    ownerClusters: clustersOfOwnerTags(Object.fromEntries(v.tags.map((t) => [t, "owned"]))),
    name: v.label,
    ...(v.created !== undefined && { createdAt: new Date(`${v.created}Z`) }),
  };
}

/**
 * Linode Block Storage Volumes. The API is global: a volume of another region is answered too,
 * with its region (the hub then says so). A batch is the account's volume list (500 a page), so
 * 500 PVs cost one or two calls.
 */
export class LinodeVolumes implements Volumes {
  readonly sources = { inTree: [], csiDrivers: [LINODE_CSI_DRIVER] };
  readonly maxBatch = 500;

  constructor(
    _ctx: ProviderContext,
    private readonly client: LinodeClient,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source !== "csi" || csiDriver !== LINODE_CSI_DRIVER) return undefined;
    const m = HANDLE.exec(handle);
    return m?.[1] === undefined ? undefined : { id: m[1] };
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    if (!/^\d+$/.test(id)) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const v = checkVolume(await this.client.get(OPS.get, `/volumes/${id}`, { signal }));
      sameDisk("Linode", id, v.id);
      return toDisk(v);
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    const all = await this.client.list<unknown>(OPS.list, "/volumes", { signal });
    return askedOnly(ids, all.map(checkVolume), (v) => v.id).map(toDisk);
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    const tags = clusters.flatMap((c) => ownerTagQueries(c).flatMap((q) => Object.keys(q)));
    const unique = [...new Set(tags)].filter((t) => t.startsWith("kubernetes.io/cluster/"));
    if (unique.length === 0) return [];
    const filter = { "+or": unique.map((t) => ({ tags: t })) };
    const found = await this.client.list<unknown>(OPS.list, "/volumes", { signal, filter });
    return found.map(checkVolume).map(toDisk);
  }
}
