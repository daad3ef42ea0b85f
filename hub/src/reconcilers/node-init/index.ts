import { ApplyOutcome, type ApplyResult, ObjectKind } from "@fleet-ccm/proto";
import type { FleetListener } from "../../fleet/state.js";
import { keyOf, type WorkKey, type WorkQueue } from "../../queue/index.js";
import type { ConvergenceTracker } from "../convergence.js";
import { needsInit } from "./predicates.js";
import { NODE_INIT } from "./reconcile.js";

/**
 * Which fleet events enqueue node-init keys (filters only): nodes that carry
 * the uninitialized taint, and nodes with a publication in flight (their next
 * report closes the loop).
 */
export function nodeInitTriggers(queue: WorkQueue, tracker: ConvergenceTracker): FleetListener {
  const key = (cluster: string, name: string): WorkKey => ({ cluster, kind: NODE_INIT, name });
  return {
    onNode(cluster, name, change) {
      const k = key(cluster, name);
      if (change.type === "delete") {
        tracker.clear(keyOf(k));
        return;
      }
      if (needsInit(change.cur) || tracker.get(keyOf(k)) !== undefined) queue.add(k);
    },
  };
}

/** An agent's report on a node patch: a failure makes the next reconcile publish again, with backoff. */
export function onNodeApplyResult(
  cluster: string,
  result: ApplyResult,
  queue: WorkQueue,
  tracker: ConvergenceTracker,
): void {
  if (result.kind !== ObjectKind.OBJECT_KIND_NODE) return;
  const k: WorkKey = { cluster, kind: NODE_INIT, name: result.name };
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

export type { NodeInitDeps } from "./reconcile.js";
export { NODE_INIT, reconcileNodeInit } from "./reconcile.js";
