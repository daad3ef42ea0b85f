/**
 * Persistent disks behind PersistentVolumes: the PD CSI driver's (volumeHandle
 * `projects/<p>/zones/<z>/disks/<name>` or `projects/<p>/regions/<r>/disks/<name>`) and the
 * in-tree gcePersistentDisk's (pdName: a bare name, its zone unknown; upstream's
 * getDiskByNameUnknownZone looks for it in the region's zones). A disk's id is its handle as the
 * PV gives it. One full id is read with disks.get or regionDisks.get (only its 404 says "not
 * found"); a batch is one disks.aggregatedList (zonal and regional disks) filtered by name, paged.
 */
import type * as Compute from "@google-cloud/compute";
import { DiskNotFoundError, readDisk, SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, ProviderContext, Volumes } from "../../provider.js";
import type { GcpApi } from "./api.js";
import { isNotFound } from "./errors.js";

type Disk = Compute.protos.google.cloud.compute.v1.IDisk;

export const PD_CSI_DRIVER = "pd.csi.storage.gke.io";
const IN_TREE = "gcePersistentDisk";
/**
 * The label GKE's PD CSI driver puts on the disks it makes (its `--extra-labels`, beside
 * `goog-gke-volume`): the cluster's name. Compute labels cannot hold `/`, so the
 * `kubernetes.io/cluster/<name>` tag of other clouds has no place on a disk.
 */
export const CLUSTER_NAME_LABEL = "goog-k8s-cluster-name";
const NAME = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const HANDLE = /^projects\/([^/]+)\/(zones|regions)\/([^/]+)\/disks\/([^/]+)$/;
/** Names in one `name eq` filter (a regular expression of at most 100 names of 63 characters). */
const BATCH_MAX = 100;
const PAGE_SIZE = 500;

const lastSegment = (url: string | null | undefined) => (url ?? "").split("/").pop() ?? "";
const regexEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const STATES: Readonly<Record<string, DiskState>> = {
  CREATING: "creating",
  RESTORING: "creating",
  READY: "available",
  DELETING: "deleting",
  FAILED: "error",
};

interface Found {
  readonly scope: string;
  readonly disk: Disk;
}

export class GcpVolumes implements Volumes {
  readonly sources = { inTree: [IN_TREE], csiDrivers: [PD_CSI_DRIVER] };
  readonly maxBatch = BATCH_MAX;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: GcpApi,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    if (source === IN_TREE) return NAME.test(handle) ? { id: handle } : undefined;
    if (source !== "csi" || csiDriver !== PD_CSI_DRIVER) return undefined;
    const m = HANDLE.exec(handle);
    if (m === null || !NAME.test(m[4] ?? "")) return undefined;
    return m[2] === "zones" ? { id: handle, zone: m[3] ?? "" } : { id: handle };
  }

  async get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    const m = HANDLE.exec(id);
    if (m === null) return this.byBareName(id, signal);
    const [, project = "", kind, where = "", disk = ""] = m;
    // Another project is another account: this one cannot see it.
    if (project !== this.api.project) throw new DiskNotFoundError(id);
    return readDisk(id, isNotFound, async () => {
      const [d] =
        kind === "zones"
          ? await this.api.call("disks.get", (c, o) => c.disks.get({ project, zone: where, disk }, o), signal)
          : await this.api.call(
              "regionDisks.get",
              (c, o) => c.regionDisks.get({ project, region: where, disk }, o),
              signal,
            );
      if (d?.name !== disk) throw new SuspectAnswerError(`disks.get ${id} answered ${d?.name ?? "nothing"}`);
      return this.toDisk(id, d);
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    if (ids.length > BATCH_MAX) throw new RangeError(`getMany takes at most ${BATCH_MAX} ids`);
    const names = new Set<string>();
    for (const id of ids) {
      const m = HANDLE.exec(id);
      if (m === null) names.add(id);
      else if (m[1] === this.api.project) names.add(m[4] ?? "");
    }
    const valid = [...names].filter((n) => NAME.test(n));
    if (valid.length === 0) return [];
    const found = await this.aggregated(
      "disks.batch",
      `name eq "(${valid.map(regexEscape).join("|")})"`,
      signal,
    );
    const out: DiskMetadata[] = [];
    for (const id of new Set(ids)) {
      const hit = HANDLE.test(id) ? found.find((f) => this.handleOf(f) === id) : this.onlyInRegion(found, id);
      if (hit !== undefined) out.push(this.toDisk(id, hit.disk));
    }
    return out;
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (clusters.length === 0) return [];
    const filter = `labels.${CLUSTER_NAME_LABEL} eq "(${clusters.map(regexEscape).join("|")})"`;
    const found = await this.aggregated("disks.owned", filter, signal);
    return found.map((f) => this.toDisk(this.handleOf(f), f.disk));
  }

  /** An in-tree pdName: the one disk of that name in the account region's zones or the region. */
  private async byBareName(name: string, signal?: AbortSignal): Promise<DiskMetadata> {
    if (!NAME.test(name)) throw new DiskNotFoundError(name);
    const found = await this.aggregated("disks.byName", `name eq "${regexEscape(name)}"`, signal);
    const inRegion = found.filter((f) => f.disk.name === name && this.inRegion(f.scope));
    if (inRegion.length === 0) throw new DiskNotFoundError(name);
    const hit = this.onlyInRegion(inRegion, name);
    if (hit === undefined)
      // upstream refuses the same: a name in several zones names no one disk.
      throw new SuspectAnswerError(`persistent disk name ${name} was found in ${inRegion.length} zones`);
    return this.toDisk(name, hit.disk);
  }

  private onlyInRegion(found: readonly Found[], name: string): Found | undefined {
    const hits = found.filter((f) => f.disk.name === name && this.inRegion(f.scope));
    return hits.length === 1 ? hits[0] : undefined;
  }

  private inRegion(scope: string): boolean {
    const region = this.api.region;
    return scope === `regions/${region}` || scope.startsWith(`zones/${region}-`);
  }

  private handleOf(f: Found): string {
    return `projects/${this.api.project}/${f.scope}/disks/${f.disk.name ?? ""}`;
  }

  /** Every disk (zonal and regional) the filter keeps, all pages. */
  private aggregated(op: string, filter: string, signal?: AbortSignal): Promise<Found[]> {
    return this.api.call(
      op,
      async (c, o) => {
        const out: Found[] = [];
        for await (const [scope, list] of c.disks.aggregatedListAsync(
          { project: this.api.project, filter, maxResults: PAGE_SIZE },
          // The call's options: autoPaginate off, the async iterator pages itself (gax warns on true).
          o,
        ))
          for (const disk of list.disks ?? []) out.push({ scope, disk });
        this.ctx.logger.trace({ op, disks: out.length }, "gcp disks listed");
        return out;
      },
      signal,
    );
  }

  private toDisk(id: string, d: Disk): DiskMetadata {
    const zone = lastSegment(d.zone);
    const region = lastSegment(d.region);
    if (d.name === undefined || d.name === null || (zone === "" && region === ""))
      throw new SuspectAnswerError(`Compute answered a disk without name, zone or region for ${id}`);
    // A regional disk lives in both its replica zones (upstream: the zones `__`-joined).
    const zones = zone !== "" ? [zone] : (d.replicaZones ?? []).map(lastSegment).sort();
    const user = d.users?.[0];
    const attachedTo = user === undefined ? undefined : /\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(user);
    const owner = d.labels?.[CLUSTER_NAME_LABEL];
    return {
      id,
      region: zone !== "" ? zone.replace(/-[a-z]$/, "") : region,
      zones,
      sizeGiB: Number(d.sizeGb ?? 0),
      state: attachedTo != null && d.status === "READY" ? "in-use" : (STATES[d.status ?? ""] ?? "unknown"),
      // Our instance id: "<zone>/<name>" (instances.ts).
      ...(attachedTo != null && { attachedTo: `${attachedTo[1]}/${attachedTo[2]}` }),
      ownerClusters: owner === undefined || owner === "" ? [] : [owner],
      name: d.name,
      ...(d.creationTimestamp && { createdAt: new Date(d.creationTimestamp) }),
    };
  }
}
