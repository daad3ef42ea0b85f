import type { ClusterView, FleetState } from "./fleet/state.js";
import type { LoadBalancerStat, LoadBalancerState, NodesWaitingStat } from "./metrics.js";
import { needsInit } from "./reconcilers/node-init/predicates.js";
import { wantsLoadBalancer } from "./reconcilers/service/predicates.js";

/** A cluster's waiting nodes as of one version of its node set (the oldest by creationTimestamp). */
interface Waiting {
  readonly version: number;
  readonly count: number;
  readonly oldestCreatedMs: number | undefined;
}

/**
 * Nodes still waiting for initialization in each cluster, and the oldest one's age (from its
 * creationTimestamp). Each scrape reads every cluster twice (two gauges), and a cluster's nodes
 * are walked again only when its node set changed since: not 25,000 nodes per scrape of an
 * unchanged fleet.
 */
export class NodesWaitingStats {
  private readonly byView = new WeakMap<ClusterView, Waiting>();

  of(fleet: FleetState, clusters: readonly string[], nowMs: number): NodesWaitingStat[] {
    return clusters.map((cluster) => {
      const view = fleet.view(cluster);
      const w = view === undefined ? undefined : this.waiting(view);
      const oldestMs = Math.min(nowMs, w?.oldestCreatedMs ?? nowMs);
      return { cluster, count: w?.count ?? 0, oldestSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
    });
  }

  private waiting(view: ClusterView): Waiting {
    const cached = this.byView.get(view);
    if (cached !== undefined && cached.version === view.nodesVersion) return cached;
    let count = 0;
    let oldestCreatedMs: number | undefined;
    for (const n of view.nodes.values()) {
      if (!needsInit(n)) continue;
      count++;
      const created = n.creationTimestamp?.getTime();
      if (created !== undefined && (oldestCreatedMs === undefined || created < oldestCreatedMs))
        oldestCreatedMs = created;
    }
    const w = { version: view.nodesVersion, count, oldestCreatedMs };
    this.byView.set(view, w);
    return w;
  }
}

/**
 * Services that want a load balancer from this hub, by state: failing when their last sync
 * failed (`failing(cluster, key)`), else ready with an ingress, else pending.
 */
export function loadBalancerStats(
  fleet: FleetState,
  clusters: readonly string[],
  ownedClass: string | undefined,
  failing: (cluster: string, key: string) => boolean,
): LoadBalancerStat[] {
  const out: LoadBalancerStat[] = [];
  for (const cluster of clusters) {
    const counts: Record<LoadBalancerState, number> = { ready: 0, pending: 0, failing: 0 };
    for (const [key, svc] of fleet.view(cluster)?.services ?? []) {
      if (!wantsLoadBalancer(svc, ownedClass)) continue;
      if (failing(cluster, key)) counts.failing++;
      else if (svc.ingress.length > 0) counts.ready++;
      else counts.pending++;
    }
    for (const state of ["ready", "pending", "failing"] as const)
      out.push({ cluster, state, count: counts[state] });
  }
  return out;
}
