import { clustersOfOwnerTags, ownerTagQueries } from "../../disk-owners.js";
import { SuspectAnswerError } from "../../errors.js";
import type { DiskMetadata, DiskRef, DiskState, ProviderContext, Volumes } from "../../provider.js";
import type { SimulatedClient } from "./client.js";
import { toContractError } from "./errors.js";

/** The simulated cloud's CSI driver: its volumeHandle is the disk id. */
export const SIMULATED_CSI_DRIVER = "csi.simulated.fleet-ccm.io";

const OPS = { get: "disks.get", list: "disks.list" } as const;
const DISK_ID = /^disk-[0-9a-f]{8,32}$/;
const STATES: ReadonlySet<string> = new Set<DiskState>([
  "creating",
  "available",
  "in-use",
  "deleting",
  "error",
]);
/** The cloud's cap on `id` filters per list call. */
const MAX_IDS = 100;
const PAGE_SIZE = 500;

function record(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new SuspectAnswerError(`simulated cloud: ${what} is not an object`);
  return v as Record<string, unknown>;
}

/** One disk of an answer; a malformed one makes the whole answer suspect. */
function toDisk(body: unknown): DiskMetadata {
  const o = record(body, "disk");
  const { id, region, zones, size_gib: size, state, attached_to: attached, name, created_at: created } = o;
  const tags = record(o["tags"], "disk.tags");
  if (
    typeof id !== "string" ||
    typeof region !== "string" ||
    !Array.isArray(zones) ||
    zones.some((z) => typeof z !== "string") ||
    typeof size !== "number" ||
    typeof state !== "string" ||
    Object.values(tags).some((v) => typeof v !== "string")
  )
    throw new SuspectAnswerError(`simulated cloud: malformed disk ${JSON.stringify(id)}`);
  return {
    id,
    region,
    zones: zones as string[],
    sizeGiB: size,
    state: STATES.has(state) ? (state as DiskState) : "unknown",
    ...(typeof attached === "string" && attached !== "" && { attachedTo: attached }),
    ownerClusters: clustersOfOwnerTags(tags as Record<string, string>),
    ...(typeof name === "string" && { name }),
    ...(typeof created === "string" && { createdAt: new Date(created) }),
  };
}

function page(body: unknown): { disks: DiskMetadata[]; next?: string } {
  const o = record(body, "disk list");
  if (!Array.isArray(o["disks"]))
    throw new SuspectAnswerError("simulated cloud: disk list has no disks array");
  const next = o["next_page_token"];
  return { disks: o["disks"].map(toDisk), ...(typeof next === "string" && next !== "" && { next }) };
}

/** Disks of the simulated cloud, read through its public API in the account's region. */
export class SimulatedVolumes implements Volumes {
  readonly sources = { inTree: [], csiDrivers: [SIMULATED_CSI_DRIVER] };
  readonly maxBatch = MAX_IDS;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: SimulatedClient,
  ) {}

  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined {
    return source === "csi" && csiDriver === SIMULATED_CSI_DRIVER && DISK_ID.test(handle)
      ? { id: handle }
      : undefined;
  }

  get(id: string, signal?: AbortSignal): Promise<DiskMetadata> {
    return this.ctx.call(OPS.get, async (s) => {
      let body: unknown;
      try {
        body = await this.client.getDisk(id, signal === undefined ? [s] : [s, signal]);
      } catch (err) {
        throw toContractError(err, { lookup: { kind: "disk", id }, nowMs: this.ctx.clock.now() });
      }
      const disk = toDisk(body);
      if (disk.id !== id) throw new SuspectAnswerError(`asked for disk ${id}, the cloud answered ${disk.id}`);
      return disk;
    });
  }

  async getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    if (ids.length === 0) return [];
    if (ids.length > MAX_IDS) throw new RangeError(`getMany takes at most ${MAX_IDS} ids`);
    const asked = new Set(ids);
    const found = await this.list({ ids: [...asked] }, signal);
    // An answer naming disks we did not ask for is not an answer about ours.
    for (const d of found)
      if (!asked.has(d.id))
        throw new SuspectAnswerError(`asked for ${asked.size} disks, the cloud answered ${d.id}`);
    return found;
  }

  async listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]> {
    const byId = new Map<string, DiskMetadata>();
    for (const cluster of clusters)
      for (const tags of ownerTagQueries(cluster))
        for (const d of await this.list({ tags }, signal)) byId.set(d.id, d);
    return [...byId.values()];
  }

  /** Every page of one list query. */
  private async list(
    query: { ids?: readonly string[]; tags?: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ): Promise<DiskMetadata[]> {
    const out: DiskMetadata[] = [];
    let token: string | undefined;
    do {
      const body = await this.ctx.call(OPS.list, async (s) => {
        try {
          return await this.client.listDisks(
            { ...query, pageSize: PAGE_SIZE, ...(token !== undefined && { pageToken: token }) },
            signal === undefined ? [s] : [s, signal],
          );
        } catch (err) {
          throw toContractError(err, { lookup: { kind: "list" }, nowMs: this.ctx.clock.now() });
        }
      });
      const p = page(body);
      out.push(...p.disks);
      token = p.next;
    } while (token !== undefined);
    return out;
  }
}
