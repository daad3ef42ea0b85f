/**
 * DigitalOcean Block Storage volumes behind the DigitalOcean CSI driver's PersistentVolumes
 * (`dobs.csi.digitalocean.com`; its volumeHandle is the volume's id, a UUID). Volumes live in a
 * region, with no zones: the hub sets the region label and a region requirement, as the driver's
 * own topology (`region`) does. One id is `GET /v2/volumes/{id}` (only its 404 says "not
 * found"); a batch is the account region's volume list (`GET /v2/volumes?region=`, paged), as
 * DigitalOcean filters volumes by name and region only.
 */
import { askedOnly, sameDisk } from "../../disk-answers.js";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, ProviderContext, Volumes } from "../../provider.js";
import type { DigitalOceanClient } from "./client.js";
import { isNotFound } from "./errors.js";

export const DO_CSI_DRIVER = "dobs.csi.digitalocean.com";
/**
 * The ownership tag: DigitalOcean tags hold letters, digits, `:`, `-` and `_` (no `/`), so a
 * cluster's volumes carry `k8s:<cluster>`, the tag the CSI driver's `--do-tag` sets (DOKS uses
 * `k8s:<cluster id>` the same way).
 */
export const CLUSTER_TAG_PREFIX = "k8s:";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface WireVolume {
  readonly id: string;
  readonly name: string;
  readonly size_gigabytes: number;
  readonly droplet_ids: readonly number[] | null;
  readonly tags: readonly string[] | null;
  readonly region: { readonly slug: string };
  readonly created_at?: string;
}

function checkVolume(v: unknown): WireVolume {
  const o = v as Partial<WireVolume> | null;
  if (
    typeof o !== "object" ||
    o === null ||
    typeof o.id !== "string" ||
    typeof o.size_gigabytes !== "number" ||
    typeof o.region?.slug !== "string"
  )
    throw new SuspectAnswerError(
      `DigitalOcean: malformed volume ${JSON.stringify((o as { id?: unknown })?.id)}`,
    );
  return o as WireVolume;
}

function toDisk(v: WireVolume): DiskMetadata {
  const droplet = v.droplet_ids?.[0];
  const owners = (v.tags ?? [])
    .filter((t) => t.startsWith(CLUSTER_TAG_PREFIX) && t.length > CLUSTER_TAG_PREFIX.length)
    .map((t) => t.slice(CLUSTER_TAG_PREFIX.length));
  return {
    id: v.id,
    region: v.region.slug,
    // DigitalOcean has regions, no zones: only the region label is set.
    zones: [],
    sizeGiB: v.size_gigabytes,
    // A volume has no state of its own in the API: it exists, attached or not.
    state: droplet === undefined ? "available" : "in-use",
    ...(droplet !== undefined && { attachedTo: String(droplet) }),
    ownerClusters: [...new Set(owners)],
    name: v.name,
    ...(v.created_at !== undefined && { createdAt: new Date(v.created_at) }),
  };
}

export class DigitalOceanVolumes implements Volumes {
  readonly sources = { inTree: [], csiDrivers: [DO_CSI_DRIVER] };
  /** A batch is the region's whole list, so any number of ids; bounded to keep one flush's wait short. */
  readonly maxBatch = 500;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: DigitalOceanClient,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source !== "csi" || csiDriver !== DO_CSI_DRIVER) return undefined;
    return UUID.test(handle) ? { id: handle } : undefined;
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    if (!UUID.test(id)) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const answer = await this.client.get<{ volume?: unknown }>("volumes.get", `/volumes/${id}`, signal);
      const v = checkVolume(answer.volume);
      sameDisk("DigitalOcean", id, v.id);
      return toDisk(v);
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    return askedOnly(ids, await this.regionVolumes("volumes.list", signal), (d) => d.id);
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (clusters.length === 0) return [];
    const wanted = new Set(clusters);
    return (await this.regionVolumes("volumes.owned", signal)).filter((d) =>
      d.ownerClusters.some((c) => wanted.has(c)),
    );
  }

  private async regionVolumes(op: string, signal?: AbortSignal): Promise<DiskMetadata[]> {
    const region = this.ctx.account.region;
    const all = await this.client.list<unknown>(op, "/volumes", "volumes", { region }, signal);
    return all.map(checkVolume).map(toDisk);
  }
}
