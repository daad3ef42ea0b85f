/**
 * Cinder volumes behind the in-tree `cinder` source (its `volumeID`) and the cinder CSI
 * driver's PersistentVolumes (`cinder.csi.openstack.org`; its volumeHandle is the volume's
 * UUID). A volume is in one availability zone of the account's region (Cinder is one endpoint
 * per region): its `availability_zone` is the zone, as upstream's in-tree GetLabelsForVolume
 * labels it and the CSI driver's topology key `topology.cinder.csi.openstack.org/zone` reads it;
 * the region is the account's. With `ignoreVolumeAZ` (upstream's [BlockStorage]
 * ignore-volume-az, for clouds whose volume zones are not the servers' zones) no zone is
 * answered. One id is `GET /v3/{project_id}/volumes/{id}` (only its 404 says "not found"); a
 * batch is the project's `volumes/detail`, paged (Cinder filters it by no id).
 */
import { askedOnly, sameDisk } from "../../disk-answers.js";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, Volumes } from "../../provider.js";
import type { OpenStackClient } from "./client.js";
import { isNotFound } from "./errors.js";

export const CINDER_CSI_DRIVER = "cinder.csi.openstack.org";
/** The in-tree source (`spec.cinder.volumeID`). */
export const CINDER_IN_TREE = "cinder";
/** The metadata key the cinder CSI driver writes on each volume it creates: its `--cluster` flag. */
export const CLUSTER_METADATA = "cinder.csi.openstack.org/cluster";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const OPS = { get: "cinder.volumes.get", list: "cinder.volumes.list" } as const;

interface WireVolume {
  readonly id: string;
  readonly name: string | null;
  readonly size: number;
  readonly status: string;
  readonly availability_zone?: string | null;
  readonly attachments: readonly { readonly server_id?: string }[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly created_at?: string;
}

/** Cinder's statuses (api-ref "Volumes"), read into the contract's. */
const STATES: Readonly<Record<string, DiskState>> = {
  creating: "creating",
  available: "available",
  reserved: "in-use",
  attaching: "in-use",
  detaching: "in-use",
  "in-use": "in-use",
  maintenance: "unknown",
  deleting: "deleting",
  "awaiting-transfer": "available",
  error: "error",
  error_deleting: "error",
  "backing-up": "in-use",
  "restoring-backup": "creating",
  error_backing_up: "error",
  error_restoring: "error",
  error_extending: "error",
  downloading: "creating",
  uploading: "in-use",
  retyping: "in-use",
  extending: "in-use",
};

function checkVolume(v: unknown): WireVolume {
  const o = v as Partial<WireVolume> | null;
  if (
    typeof o !== "object" ||
    o === null ||
    typeof o.id !== "string" ||
    typeof o.size !== "number" ||
    typeof o.status !== "string" ||
    !Array.isArray(o.attachments) ||
    typeof o.metadata !== "object" ||
    o.metadata === null
  )
    throw new SuspectAnswerError(
      `OpenStack: malformed volume ${JSON.stringify((o as { id?: unknown })?.id)}`,
    );
  return o as WireVolume;
}

/** Cinder's times carry no offset (`2018-11-29T06:50:07.770785`): UTC. */
function cinderTime(t: string | undefined): Date | undefined {
  if (t === undefined) return undefined;
  const d = new Date(/(Z|[+-]\d\d:\d\d)$/.test(t) ? t : `${t}Z`);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export interface OpenStackVolumesOptions {
  readonly ignoreVolumeAZ: boolean;
}

export class OpenStackVolumes implements Volumes {
  readonly sources = { inTree: [CINDER_IN_TREE], csiDrivers: [CINDER_CSI_DRIVER] };
  /** A batch is the project's whole list, so any number of ids; bounded to keep one flush's wait short. */
  readonly maxBatch = 500;

  constructor(
    private readonly client: OpenStackClient,
    private readonly opts: OpenStackVolumesOptions,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    const ours = source === CINDER_IN_TREE || (source === "csi" && csiDriver === CINDER_CSI_DRIVER);
    return ours && UUID.test(handle) ? { id: handle.toLowerCase() } : undefined;
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    if (!UUID.test(id)) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const answer = await this.client.get<{ volume?: unknown }>("block-storage", OPS.get, `/volumes/${id}`, {
        signal,
      });
      const v = checkVolume(answer.volume);
      sameDisk("Cinder", id, v.id);
      return this.toDisk(v);
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    return askedOnly(ids, await this.all(signal), (v) => v.id).map((v) => this.toDisk(v));
  }

  /**
   * The project's volumes whose CSI cluster metadata names one of `clusters`: one listing for
   * all of them, filtered here (Cinder's metadata filter is per key and value, and an operator
   * may switch resource filters off).
   */
  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    const wanted = new Set(clusters);
    if (wanted.size === 0) return [];
    return (await this.all(signal))
      .filter((v) => wanted.has(v.metadata[CLUSTER_METADATA] ?? ""))
      .map((v) => this.toDisk(v));
  }

  private async all(signal?: AbortSignal): Promise<WireVolume[]> {
    const listed = await this.client.list<{ id: string }>(
      "block-storage",
      OPS.list,
      "/volumes/detail",
      "volumes",
      {
        signal,
      },
    );
    return listed.map(checkVolume);
  }

  private toDisk(v: WireVolume): DiskMetadata {
    const server = v.attachments.map((a) => a.server_id).find((s) => typeof s === "string" && s !== "");
    const owner = v.metadata[CLUSTER_METADATA];
    const zone = v.availability_zone ?? "";
    const created = cinderTime(v.created_at);
    return {
      id: v.id,
      region: this.client.region,
      zones: this.opts.ignoreVolumeAZ || zone === "" ? [] : [zone],
      sizeGiB: v.size,
      state: server !== undefined ? "in-use" : (STATES[v.status] ?? "unknown"),
      ...(server !== undefined && { attachedTo: server }),
      ownerClusters: owner === undefined || owner === "" ? [] : [owner],
      ...(v.name !== null && v.name !== "" && { name: v.name }),
      ...(created !== undefined && { createdAt: created }),
    };
  }
}
