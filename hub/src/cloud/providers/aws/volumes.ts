/**
 * EBS volumes behind PersistentVolumes: the in-tree awsElasticBlockStore source and the EBS CSI
 * driver's, looked up with DescribeVolumes through the account's SDK client (its rate limiter,
 * timeout and error mapping). One id is asked by VolumeIds (only that answer's
 * InvalidVolume.NotFound says "not found"); a batch by a volume-id filter (a missing id is not an
 * error there), paged.
 */
import {
  DescribeVolumesCommand,
  type Filter,
  paginateDescribeVolumes,
  type Volume,
} from "@aws-sdk/client-ec2";
import { clustersOfOwnerTags, ownerTagQueries } from "../../disk-owners.js";
import { DiskNotFoundError, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, ProviderContext, Volumes } from "../../provider.js";
import { type AwsApi, allPages } from "./api.js";
import { hasCode } from "./errors.js";

export const EBS_CSI_DRIVER = "ebs.csi.aws.com";
const IN_TREE = "awsElasticBlockStore";
const VOLUME_ID = /^vol-[0-9a-f]{8,17}$/;
/** Values per EC2 filter. */
const BATCH_MAX = 200;
const PAGE_SIZE = 500;

const STATES: Readonly<Record<string, DiskState>> = {
  creating: "creating",
  available: "available",
  "in-use": "in-use",
  deleting: "deleting",
  deleted: "deleting",
  error: "error",
};

/**
 * upstream's KubernetesVolumeID.MapToAWSVolumeID: `vol-…`, `aws:///vol-…` or
 * `aws://<zone>/vol-…` (the zone the in-tree provisioner wrote).
 */
function parseEbsHandle(handle: string): DiskRef | undefined {
  const m = /^aws:\/\/([^/]*)\/(.+)$/.exec(handle);
  const id = m === null ? handle : (m[2] ?? "");
  if (!VOLUME_ID.test(id)) return undefined;
  const zone = m?.[1];
  return zone === undefined || zone === "" ? { id } : { id, zone };
}

export class AwsVolumes implements Volumes {
  readonly sources = { inTree: [IN_TREE], csiDrivers: [EBS_CSI_DRIVER] };
  readonly maxBatch = BATCH_MAX;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AwsApi,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source === IN_TREE || (source === "csi" && csiDriver === EBS_CSI_DRIVER))
      return parseEbsHandle(handle);
    return undefined;
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    let volumes: Volume[];
    try {
      const out = await this.api.call("volumes.get", signal, (abortSignal) =>
        this.api.ec2.send(new DescribeVolumesCommand({ VolumeIds: [id] }), { abortSignal }),
      );
      volumes = out.Volumes ?? [];
    } catch (err) {
      if (hasCode(err, "InvalidVolume.NotFound")) throw new DiskNotFoundError(id, { cause: err });
      throw err;
    }
    const hit = volumes.find((v) => v.VolumeId === id);
    if (hit === undefined || volumes.length !== 1)
      throw new SuspectAnswerError(`DescribeVolumes(${id}) answered ${volumes.length} other volume(s)`);
    return this.toDisk(hit);
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    if (ids.length > BATCH_MAX) throw new RangeError(`getMany takes at most ${BATCH_MAX} ids`);
    const asked = new Set(ids);
    const found = await this.describe("volumes.batch", [{ Name: "volume-id", Values: [...asked] }], signal);
    for (const d of found)
      if (!asked.has(d.id))
        throw new SuspectAnswerError(`DescribeVolumes answered volume ${d.id}, not asked for`);
    return found;
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    const byId = new Map<string, DiskMetadata>();
    for (const cluster of clusters)
      for (const q of ownerTagQueries(cluster)) {
        const [key = "", value = ""] = Object.entries(q)[0] ?? [];
        for (const d of await this.describe(
          "volumes.owned",
          [{ Name: `tag:${key}`, Values: [value] }],
          signal,
        ))
          byId.set(d.id, d);
      }
    return [...byId.values()];
  }

  private async describe(op: string, filters: Filter[], signal?: AbortSignal): Promise<DiskMetadata[]> {
    const volumes = await allPages(
      paginateDescribeVolumes(
        { client: this.api.paged(this.api.ec2, op, signal), pageSize: PAGE_SIZE },
        { Filters: filters },
      ),
      (page) => page.Volumes,
    );
    return volumes.map((v) => this.toDisk(v));
  }

  private toDisk(v: Volume): DiskMetadata {
    if (v.VolumeId === undefined || v.AvailabilityZone === undefined)
      throw new SuspectAnswerError("DescribeVolumes answered a volume without id or zone");
    const tags = Object.fromEntries(
      (v.Tags ?? []).flatMap((t) => (t.Key === undefined ? [] : [[t.Key, t.Value ?? ""]])),
    );
    const attached = (v.Attachments ?? []).find((a) => a.State === "attached" || a.State === "attaching");
    return {
      id: v.VolumeId,
      // EC2 answers for the client's region only; an EBS volume is in exactly one zone.
      region: this.ctx.account.region,
      zones: [v.AvailabilityZone],
      sizeGiB: v.Size ?? 0,
      state: STATES[v.State ?? ""] ?? "unknown",
      ...(attached?.InstanceId !== undefined && { attachedTo: attached.InstanceId }),
      ownerClusters: clustersOfOwnerTags(tags),
      ...(tags["Name"] !== undefined && { name: tags["Name"] }),
      ...(v.CreateTime !== undefined && { createdAt: v.CreateTime }),
    };
  }
}
