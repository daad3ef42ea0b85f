import { ApplyOutcome, type ApplyResult, ObjectKind } from "@fleet-ccm/proto";
import type { FleetListener } from "../../fleet/state.js";
import { serviceKey } from "../../fleet/state.js";
import { keyOf, type WorkKey, type WorkQueue } from "../../queue/index.js";
import type { ConvergenceTracker } from "../convergence.js";
import { backendFacts, needsCleanup, wantsLoadBalancer } from "./predicates.js";
import { SERVICE, SERVICE_NODES } from "./reconcile.js";

/** Node changes are coalesced for this long before every load balancer's backends are re-synced. */
export const NODE_SYNC_DELAY_MS = 1000;

/** Which fleet events enqueue service keys (filters only). */
export function serviceTriggers(
  queue: WorkQueue,
  tracker: ConvergenceTracker,
  ownedClass: string | undefined,
): FleetListener {
  return {
    onService(cluster, key, change) {
      const k: WorkKey = { cluster, kind: SERVICE, name: key };
      if (change.type === "delete") {
        queue.add(k);
        return;
      }
      const cur = change.cur;
      if (
        wantsLoadBalancer(cur, ownedClass) ||
        needsCleanup(cur, ownedClass) ||
        tracker.get(keyOf(k)) !== undefined ||
        (change.old !== undefined && wantsLoadBalancer(change.old, ownedClass))
      )
        queue.add(k);
    },
    onNode(cluster, _name, change) {
      const before = backendFacts(change.old);
      const after = change.type === "delete" ? "" : backendFacts(change.cur);
      if (before !== after) queue.addAfter({ cluster, kind: SERVICE_NODES, name: "" }, NODE_SYNC_DELAY_MS);
    },
  };
}

export function onServiceApplyResult(
  cluster: string,
  result: ApplyResult,
  queue: WorkQueue,
  tracker: ConvergenceTracker,
): void {
  if (result.kind !== ObjectKind.OBJECT_KIND_SERVICE) return;
  const k: WorkKey = { cluster, kind: SERVICE, name: serviceKey(result.namespace, result.name) };
  const id = keyOf(k);
  const inflight = tracker.get(id);
  if (inflight === undefined || inflight.generation !== result.generation) return;
  if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED) {
    tracker.expire(id);
    queue.addRateLimited(k);
  } else if (result.outcome === ApplyOutcome.APPLY_OUTCOME_STALE) {
    tracker.clear(id);
    queue.add(k);
  }
}

export type { EnsuredRecord, ServiceDeps } from "./reconcile.js";
export { reconcileService, SERVICE, SERVICE_NODES } from "./reconcile.js";
