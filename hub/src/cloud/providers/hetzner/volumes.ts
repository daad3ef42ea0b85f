/**
 * Hetzner Cloud Volumes behind the hcloud CSI driver's PersistentVolumes (`csi.hetzner.cloud`;
 * its volumeHandle is the volume's numeric id). A volume lives in a location (fsn1, nbg1, …),
 * which this provider reports as the region, as it does for servers; a location has no zones a
 * volume is bound to (the driver's own topology key is `csi.hetzner.cloud/location`), so only
 * the region label and a region requirement are set. One id is `GET /v1/volumes/{id}` (only its
 * 404 says "not found"); a batch is the project's volume list (it takes no id filter), paged.
 */
import { askedOnly, sameDisk } from "../../disk-answers.js";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, Volumes } from "../../provider.js";
import type { HetznerClient } from "./client.js";
import { isNotFound } from "./errors.js";

export const HCLOUD_CSI_DRIVER = "csi.hetzner.cloud";
/**
 * The ownership label: the driver labels its volumes `managed-by=csi-driver` and whatever
 * HCLOUD_VOLUME_EXTRA_LABELS names; its docs' example is `cluster=<name>`, the one read here
 * (Hetzner label keys take one `/`, so `kubernetes.io/cluster/<name>` cannot be a key).
 */
export const CLUSTER_LABEL = "cluster";
const ID = /^[1-9]\d{0,17}$/;
const OPS = { get: "volumes.get", list: "volumes.list", owned: "volumes.owned" } as const;

interface WireVolume {
  readonly id: number;
  readonly name: string;
  readonly size: number;
  readonly server: number | null;
  readonly status: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly location: { readonly name: string };
  readonly created?: string;
}

const STATES: Readonly<Record<string, DiskState>> = { creating: "creating", available: "available" };

function checkVolume(v: unknown): WireVolume {
  const o = v as Partial<WireVolume> | null;
  if (
    typeof o !== "object" ||
    o === null ||
    typeof o.id !== "number" ||
    typeof o.size !== "number" ||
    typeof o.status !== "string" ||
    typeof o.location?.name !== "string" ||
    typeof o.labels !== "object" ||
    o.labels === null
  )
    throw new SuspectAnswerError(`Hetzner: malformed volume ${JSON.stringify((o as { id?: unknown })?.id)}`);
  return o as WireVolume;
}

function toDisk(v: WireVolume): DiskMetadata {
  const attached = typeof v.server === "number";
  const owner = v.labels[CLUSTER_LABEL];
  return {
    id: String(v.id),
    region: v.location.name,
    zones: [],
    sizeGiB: v.size,
    state: attached ? "in-use" : (STATES[v.status] ?? "unknown"),
    ...(attached && { attachedTo: String(v.server) }),
    ownerClusters: owner === undefined || owner === "" ? [] : [owner],
    name: v.name,
    ...(v.created !== undefined && { createdAt: new Date(v.created) }),
  };
}

export class HetznerVolumes implements Volumes {
  readonly sources = { inTree: [], csiDrivers: [HCLOUD_CSI_DRIVER] };
  /** A batch is the project's whole list, so any number of ids; bounded to keep one flush's wait short. */
  readonly maxBatch = 500;

  constructor(private readonly client: HetznerClient) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source !== "csi" || csiDriver !== HCLOUD_CSI_DRIVER) return undefined;
    return ID.test(handle) ? { id: handle } : undefined;
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    if (!ID.test(id)) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const answer = await this.client.get<{ volume?: unknown }>(OPS.get, `/volumes/${id}`, signal);
      const v = checkVolume(answer.volume);
      sameDisk("Hetzner", id, v.id);
      return toDisk(v);
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    const all = await this.client.list<unknown>(OPS.list, "/volumes", "volumes", signal);
    return askedOnly(ids, all.map(checkVolume), (v) => v.id).map(toDisk);
  }

  /** One label-selected listing per cluster (`cluster=<name>`), all pages. */
  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    const byId = new Map<string, DiskMetadata>();
    for (const cluster of new Set(clusters)) {
      const found = await this.client.list<unknown>(OPS.owned, "/volumes", "volumes", signal, {
        label_selector: `${CLUSTER_LABEL}=${cluster}`,
      });
      for (const d of found.map(checkVolume).map(toDisk)) byId.set(d.id, d);
    }
    return [...byId.values()];
  }
}
