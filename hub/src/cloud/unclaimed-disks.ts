import type { ClusterView } from "../fleet/state.js";
import type { Clock } from "../util/clock.js";
import { errorMessage } from "./errors.js";
import type { Volumes } from "./provider.js";
import type { ClusterCloud } from "./scope.js";

/** A disk tagged for a cluster that backs none of its PersistentVolumes (report only). */
export interface UnclaimedDisk {
  readonly cluster: string;
  readonly account: string;
  readonly id: string;
  readonly name?: string;
  readonly region: string;
  readonly zones: readonly string[];
  readonly sizeGiB: number;
  readonly state: string;
  /** ISO 8601; absent where the vendor does not say. */
  readonly createdAt?: string;
}

export interface UnclaimedReport {
  readonly disks: readonly UnclaimedDisk[];
  /** Clusters left out: their view is partial (not synced, or a snapshot drop held), or the lookup failed. */
  readonly unknown: readonly { readonly cluster: string; readonly reason: string }[];
  readonly checkedAt: string | null;
}

export interface UnclaimedDeps {
  clusters(): readonly string[];
  cloudFor(cluster: string): ClusterCloud | undefined;
  view(cluster: string): ClusterView | undefined;
  /** Whether the PV controller runs for the cluster (its agent follows PVs only then). */
  followsVolumes(cluster: string): boolean;
  readonly clock: Clock;
  /** How long one answer is served before the disks are listed again. */
  readonly maxAgeMs: number;
}

/**
 * Disks nobody claims: per account, one listOwned of every cluster's ownership tags, then for each
 * cluster the tagged disks no PV of its view names. Judged only from a complete view (synced,
 * nothing held); fleet-ccm never deletes a disk, it only reports them (size, age).
 */
export class UnclaimedDisks {
  private last: { atMs: number; report: UnclaimedReport } | undefined;
  private running: Promise<UnclaimedReport> | undefined;

  constructor(private readonly deps: UnclaimedDeps) {}

  /** The latest report, listed again when older than maxAgeMs (one listing at a time). */
  current(): Promise<UnclaimedReport> {
    const now = this.deps.clock.now();
    if (this.last !== undefined && now - this.last.atMs < this.deps.maxAgeMs)
      return Promise.resolve(this.last.report);
    this.running ??= this.compute().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async compute(): Promise<UnclaimedReport> {
    const groups = new Map<Volumes, { account: string; clusters: string[] }>();
    const unknown: { cluster: string; reason: string }[] = [];
    for (const c of this.deps.clusters()) {
      const cloud = this.deps.cloudFor(c);
      const volumes = cloud?.provider.volumes;
      if (cloud === undefined || volumes === undefined || !this.deps.followsVolumes(c)) continue;
      const view = this.deps.view(c);
      if (view === undefined || !view.synced || view.held.size > 0) {
        unknown.push({
          cluster: c,
          reason: "the agent's view is not complete (not synced, or a snapshot drop held)",
        });
        continue;
      }
      const g = groups.get(volumes) ?? { account: cloud.account.name, clusters: [] };
      g.clusters.push(c);
      groups.set(volumes, g);
    }
    const disks: UnclaimedDisk[] = [];
    for (const [volumes, g] of groups) {
      let owned: Awaited<ReturnType<Volumes["listOwned"]>>;
      try {
        owned = await volumes.listOwned(g.clusters);
      } catch (err) {
        for (const c of g.clusters)
          unknown.push({ cluster: c, reason: `listing disks failed: ${errorMessage(err)}` });
        continue;
      }
      for (const c of g.clusters) {
        const claimed = new Set<string>();
        for (const pv of this.deps.view(c)?.persistentVolumes.values() ?? []) {
          const ref = volumes.parseVolumeHandle(pv.source, pv.csiDriver, pv.volumeHandle);
          if (ref !== undefined) claimed.add(ref.id);
        }
        for (const d of owned)
          if (d.ownerClusters.includes(c) && !claimed.has(d.id))
            disks.push({
              cluster: c,
              account: g.account,
              id: d.id,
              ...(d.name !== undefined && { name: d.name }),
              region: d.region,
              zones: d.zones,
              sizeGiB: d.sizeGiB,
              state: d.state,
              ...(d.createdAt !== undefined && { createdAt: d.createdAt.toISOString() }),
            });
      }
    }
    const report = { disks, unknown, checkedAt: new Date(this.deps.clock.now()).toISOString() };
    this.last = { atMs: this.deps.clock.now(), report };
    return report;
  }
}
