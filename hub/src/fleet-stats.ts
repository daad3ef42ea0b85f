import type { FleetState } from "./fleet/state.js";
import type { LoadBalancerStat, LoadBalancerState, NodesWaitingStat } from "./metrics.js";
import { needsInit } from "./reconcilers/node-init/predicates.js";
import { wantsLoadBalancer } from "./reconcilers/service/predicates.js";

/** Nodes still waiting for initialization in each cluster, and the oldest one's age (from its creationTimestamp). */
export function nodesWaitingStats(
  fleet: FleetState,
  clusters: readonly string[],
  nowMs: number,
): NodesWaitingStat[] {
  return clusters.map((cluster) => {
    let count = 0;
    let oldestMs = nowMs;
    for (const n of fleet.view(cluster)?.nodes.values() ?? []) {
      if (!needsInit(n)) continue;
      count++;
      const created = n.creationTimestamp?.getTime();
      if (created !== undefined && created < oldestMs) oldestMs = created;
    }
    return { cluster, count, oldestSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
  });
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
