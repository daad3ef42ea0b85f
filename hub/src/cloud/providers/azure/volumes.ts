/**
 * Azure managed disks behind PersistentVolumes: the in-tree azureDisk's `diskURI` (kind Managed)
 * and the Azure Disk CSI driver's volumeHandle, both the disk's ARM id
 * `/subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/disks/<name>` (ARM ids are
 * case-insensitive: the id is kept lower-cased but for the fixed segments). Blob-backed azureDisk
 * volumes (kind Shared/Dedicated) are no managed disk and are not looked up.
 *
 * Scope: the account's subscription and its resource groups (resourceGroup, nodeResourceGroups),
 * where cloud-provider-azure and the CSI driver make disks by default; a disk elsewhere is not
 * this account's (not found). One disk is read with disks.get (only its 404 says "not found"); a
 * batch, and the owned disks, with disks.listByResourceGroup of each resource group asked, all
 * pages (nextLink).
 *
 * Zones as cloud-provider-azure's GetAzureDiskLabels: a zonal disk's logical zone `n` is
 * `<location>-<n>` (as nodes are labeled); a disk without zones has the region only. Ownership: the
 * CSI driver and in-tree provisioner tag a disk `k8s-azure-created-by: kubernetes-azure-dd` and
 * `kubernetes.io-created-for-pv(c)-name`, none of which names a cluster (Azure tag names cannot
 * hold `/`, so there is no `kubernetes.io/cluster/<name>`); a disk is a cluster's when it carries
 * cloud-provider-azure's cluster tag `k8s-azure-cluster-name` (a StorageClass's `tags` parameter
 * puts it on the disks the driver makes).
 */
import type { Disk } from "@azure/arm-compute";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, ProviderContext, Volumes } from "../../provider.js";
import type { AzureApi } from "./api.js";
import { isNotFound } from "./errors.js";
import { parseVmId, UPSTREAM_CLUSTER_TAG, vmId } from "./names.js";

export const AZURE_DISK_CSI_DRIVER = "disk.csi.azure.com";
const IN_TREE = "azureDisk";
/** The cluster tag a disk names its cluster by (cloud-provider-azure's ClusterNameKey). */
export const DISK_CLUSTER_TAG = UPSTREAM_CLUSTER_TAG;
const DISK_ID =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([-\w._()]+)\/providers\/Microsoft\.Compute\/disks\/([\w.-]{1,80})$/i;
/** Ids per getMany: a batch reads whole resource-group listings, so only the answer's size grows. */
const BATCH_MAX = 500;

const lower = (s: string | undefined) => (s ?? "").toLowerCase();

interface DiskKey {
  readonly subscription: string;
  readonly resourceGroup: string;
  readonly name: string;
}

function parseDiskId(id: string): DiskKey | undefined {
  const m = DISK_ID.exec(id);
  if (m === null) return undefined;
  return { subscription: lower(m[1]), resourceGroup: lower(m[2]), name: lower(m[3]) };
}

const canonical = (k: DiskKey) =>
  `/subscriptions/${k.subscription}/resourceGroups/${k.resourceGroup}/providers/Microsoft.Compute/disks/${k.name}`;

/** The contract's state: provisioning first (a write in flight), then the Disk RP's diskState. */
function stateOf(d: Disk): DiskState {
  switch (lower(d.provisioningState)) {
    case "creating":
      return "creating";
    case "deleting":
      return "deleting";
    case "failed":
      return "error";
  }
  switch (lower(d.diskState)) {
    case "attached":
    case "reserved": // attached to a deallocated VM
    case "frozen":
    case "activesasfrozen":
      return "in-use";
    case "unattached":
    case "activesas":
      return "available";
    case "readytoupload":
    case "activeupload":
      return "creating";
    default:
      return "unknown";
  }
}

export class AzureVolumes implements Volumes {
  readonly sources = { inTree: [IN_TREE], csiDrivers: [AZURE_DISK_CSI_DRIVER] };
  readonly maxBatch = BATCH_MAX;
  /** The resource groups disks are looked up in (lower-cased). */
  private readonly groups: ReadonlySet<string>;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AzureApi,
  ) {
    const o = api.options;
    this.groups = new Set([o.resourceGroup, ...(o.nodeResourceGroups ?? [])].map(lower));
  }

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source !== IN_TREE && !(source === "csi" && csiDriver === AZURE_DISK_CSI_DRIVER)) return undefined;
    const key = parseDiskId(handle);
    return key === undefined ? undefined : { id: canonical(key) };
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    const key = this.inScope(id);
    // Another subscription or resource group is out of the account's scope: it cannot see it.
    if (key === undefined) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const d = await this.api.call(
        "disks.get",
        (c, o) => c.compute.disks.get(key.resourceGroup, key.name, o),
        signal,
      );
      const got = this.toDisk(d);
      if (got.id !== canonical(key))
        throw new SuspectAnswerError(`disks.get ${id} answered ${d.id ?? "nothing"}`);
      return got;
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    if (ids.length > BATCH_MAX) throw new RangeError(`getMany takes at most ${BATCH_MAX} ids`);
    const wanted = new Set<string>();
    const groups = new Set<string>();
    for (const id of ids) {
      const key = this.inScope(id);
      if (key === undefined) continue;
      wanted.add(canonical(key));
      groups.add(key.resourceGroup);
    }
    const out: DiskMetadata[] = [];
    for (const rg of groups)
      for (const d of await this.listGroup("disks.batch", rg, signal)) if (wanted.has(d.id)) out.push(d);
    return out;
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (clusters.length === 0) return [];
    const asked = new Set(clusters);
    const out: DiskMetadata[] = [];
    for (const rg of this.groups)
      for (const d of await this.listGroup("disks.owned", rg, signal))
        if (d.ownerClusters.some((c) => asked.has(c))) out.push(d);
    return out;
  }

  /** The disk key of an id of this subscription and one of its resource groups, else undefined. */
  private inScope(id: string): DiskKey | undefined {
    const key = parseDiskId(id);
    if (key === undefined || key.subscription !== lower(this.api.subscription)) return undefined;
    return this.groups.has(key.resourceGroup) ? key : undefined;
  }

  /** Every disk of one resource group, all pages (nextLink). */
  private listGroup(op: string, rg: string, signal?: AbortSignal): Promise<DiskMetadata[]> {
    return this.api.call(
      op,
      async (c, o) => {
        const out: DiskMetadata[] = [];
        for await (const page of c.compute.disks.listByResourceGroup(rg, o).byPage())
          for (const d of page) out.push(this.toDisk(d));
        this.ctx.logger.trace({ op, resourceGroup: rg, disks: out.length }, "azure disks listed");
        return out;
      },
      signal,
    );
  }

  private toDisk(d: Disk): DiskMetadata {
    const key = parseDiskId(d.id ?? "");
    if (key === undefined || d.location === undefined || d.location === "")
      throw new SuspectAnswerError(`the Disk RP answered a disk without an id or location: ${d.id ?? "?"}`);
    const region = lower(d.location);
    const managedBy = d.managedBy === undefined ? undefined : parseVmId(d.managedBy);
    const owner = d.tags?.[DISK_CLUSTER_TAG];
    return {
      id: canonical(key),
      region,
      // upstream makeZone: `<location>-<logical zone>`, as the nodes' zone label.
      zones: (d.zones ?? []).map((z) => `${region}-${z}`).sort(),
      sizeGiB: d.diskSizeGB ?? 0,
      state: stateOf(d),
      ...(managedBy !== undefined && { attachedTo: vmId(managedBy) }),
      ownerClusters: owner === undefined || owner === "" ? [] : [owner],
      ...(d.name !== undefined && { name: d.name }),
      ...(d.timeCreated !== undefined && { createdAt: d.timeCreated }),
    };
  }
}
