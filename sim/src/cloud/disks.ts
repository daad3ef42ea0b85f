/**
 * Disks of the simulated cloud (block volumes): zonal or regional (several zones), attached to
 * at most one instance, tagged like any resource. The public API reads them:
 *
 *   GET /v1/regions/{region}/disks/{id}
 *   GET /v1/regions/{region}/disks?id=A&id=B&tag=k=v&page_size=N&page_token=T
 *
 * `id` (repeatable, at most 100) and `tag` filters combine; pages in creation order.
 */
import type { RandomSource } from "../fake-kit/random.js";
import type { ApiRoute } from "./api.js";
import { type CloudStore, SimCloudError } from "./store.js";

export const SIM_DISK_STATES = ["creating", "available", "in-use", "deleting", "error"] as const;
export type SimDiskState = (typeof SIM_DISK_STATES)[number];

/** One disk as the cloud holds it. */
export interface SimDisk {
  /** "disk-" + 12 hex digits. */
  readonly id: string;
  readonly account: string;
  readonly name: string;
  readonly region: string;
  /** One zone (zonal) or several (regional). */
  readonly zones: readonly string[];
  readonly sizeGiB: number;
  readonly state: SimDiskState;
  /** Instance id; absent when detached. */
  readonly attachedTo?: string;
  readonly tags: Readonly<Record<string, string>>;
  /** RFC 3339. */
  readonly createdAt: string;
}

export interface SimDiskSpec {
  readonly name?: string;
  readonly region: string;
  /** Default: [`${region}a`]. */
  readonly zones?: readonly string[];
  /** Default: 10. */
  readonly sizeGiB?: number;
  readonly attachedTo?: string;
  readonly tags?: Readonly<Record<string, string>>;
}

/** Most ids one list call filters on. */
export const MAX_DISK_IDS = 100;

export class DiskStore {
  private readonly disks = new Map<string, { readonly seq: number; disk: SimDisk }>();
  private seq = 0;

  constructor(
    private readonly store: CloudStore,
    private readonly random: RandomSource,
    private readonly now: () => number,
  ) {}

  create(account: string, spec: SimDiskSpec): SimDisk {
    this.store.account(account);
    if (!this.store.hasRegion(spec.region))
      throw new SimCloudError(400, "InvalidRegion", `unknown region "${spec.region}"`);
    const zones = spec.zones ?? [`${spec.region}a`];
    if (zones.length === 0 || zones.some((z) => !z.startsWith(spec.region)))
      throw new SimCloudError(400, "InvalidParameter", `zones must be in region ${spec.region}`);
    let id: string;
    do id = `disk-${this.random.hex(12)}`;
    while (this.disks.has(id));
    const disk: SimDisk = {
      id,
      account,
      name: spec.name ?? id,
      region: spec.region,
      zones: [...zones],
      sizeGiB: spec.sizeGiB ?? 10,
      state: spec.attachedTo === undefined ? "available" : "in-use",
      ...(spec.attachedTo !== undefined && { attachedTo: spec.attachedTo }),
      tags: { ...spec.tags },
      createdAt: new Date(this.now()).toISOString().replace(/\.\d+Z$/, "Z"),
    };
    this.disks.set(id, { seq: ++this.seq, disk });
    return disk;
  }

  delete(id: string): void {
    if (!this.disks.delete(id)) throw new SimCloudError(404, "NotFound", `disk ${id} not found`);
  }

  /** Every disk (of `account` if given), in creation order. */
  list(account?: string): SimDisk[] {
    return [...this.disks.values()]
      .map((r) => r.disk)
      .filter((d) => account === undefined || d.account === account);
  }

  read(account: string, region: string, id: string): SimDisk | undefined {
    const d = this.disks.get(id)?.disk;
    return d !== undefined && d.account === account && d.region === region ? d : undefined;
  }

  page(q: {
    account: string;
    region: string;
    ids?: readonly string[];
    tags?: Readonly<Record<string, string>>;
    afterSeq?: number;
    pageSize: number;
  }): { disks: SimDisk[]; nextAfterSeq?: number } {
    const ids = q.ids === undefined ? undefined : new Set(q.ids);
    const matching = [...this.disks.values()].filter(
      ({ seq, disk }) =>
        disk.account === q.account &&
        disk.region === q.region &&
        (q.afterSeq === undefined || seq > q.afterSeq) &&
        (ids === undefined || ids.has(disk.id)) &&
        Object.entries(q.tags ?? {}).every(([k, v]) => disk.tags[k] === v),
    );
    const page = matching.slice(0, q.pageSize);
    const last = this.disks.get(page.at(-1)?.disk.id ?? "")?.seq;
    return {
      disks: page.map((r) => r.disk),
      ...(matching.length > page.length && last !== undefined && { nextAfterSeq: last }),
    };
  }
}

export function toWireDisk(d: SimDisk): Record<string, unknown> {
  return {
    id: d.id,
    name: d.name,
    region: d.region,
    zones: [...d.zones],
    size_gib: d.sizeGiB,
    state: d.state,
    ...(d.attachedTo !== undefined && { attached_to: d.attachedTo }),
    tags: { ...d.tags },
    created_at: d.createdAt,
  };
}

export const diskRoutes: readonly ApiRoute[] = [
  {
    method: "GET",
    pattern: /^\/v1\/regions\/([^/]+)\/disks\/?$/,
    op: "disks.list",
    kind: "list",
    collection: "disks",
    filters: ["id", "tag"],
    handle: ({ deps, account, region }, list) => {
      const page = deps.disks.page({
        account: account.name,
        region,
        pageSize: list.pageSize,
        ...(list.ids !== undefined && { ids: list.ids }),
        ...(list.tags !== undefined && { tags: list.tags }),
        ...(list.afterSeq !== undefined && { afterSeq: list.afterSeq }),
      });
      return {
        items: page.disks.map(toWireDisk),
        ...(page.nextAfterSeq !== undefined && { nextAfterSeq: page.nextAfterSeq }),
      };
    },
  },
  {
    method: "GET",
    pattern: /^\/v1\/regions\/([^/]+)\/disks\/([^/]+)\/?$/,
    op: "disks.get",
    kind: "get",
    handle: ({ deps, account, region, params }) => {
      const id = params[0] ?? "";
      const disk = deps.disks.read(account.name, region, id);
      if (disk === undefined)
        throw new SimCloudError(404, "NotFound", `disk ${id} not found in region ${region}`, {
          type: "disk",
          id,
        });
      return toWireDisk(disk);
    },
  },
];
