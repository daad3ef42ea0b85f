import type { ClusterEvent, NodeDesired, PersistentVolumeDesired, ServiceDesired } from "@fleet-ccm/proto";
import type { Requeue } from "../queue/index.js";

/** What one reconcile decided. Reconcilers only compute; the worker publishes and requeues. */
export interface Outcome {
  readonly nodes?: readonly NodeDesired[];
  readonly services?: readonly ServiceDesired[];
  readonly persistentVolumes?: readonly PersistentVolumeDesired[];
  readonly events?: readonly ClusterEvent[];
  readonly requeue: Requeue;
}

export const DONE: Outcome = { requeue: { kind: "done" } };

export function after(ms: number, extra: Omit<Outcome, "requeue"> = {}): Outcome {
  return { ...extra, requeue: { kind: "after", ms: Math.max(0, Math.ceil(ms)) } };
}

export function backoff(error: unknown, extra: Omit<Outcome, "requeue"> = {}): Outcome {
  return { ...extra, requeue: { kind: "backoff", error } };
}
