import { type ClusterEvent, ObjectKind, type Service } from "@fleet-ccm/proto";
import { EVENT_SOURCE } from "../../k8s/well-known.js";

/** Upstream service controller reasons, verbatim. */
export const REASON = {
  ensuring: "EnsuringLoadBalancer",
  ensured: "EnsuredLoadBalancer",
  updated: "UpdatedLoadBalancer",
  updateFailed: "UpdateLoadBalancerFailed",
  deleting: "DeletingLoadBalancer",
  deleted: "DeletedLoadBalancer",
  deleteFailed: "DeleteLoadBalancerFailed",
  syncFailed: "SyncLoadBalancerFailed",
  unavailable: "UnAvailableLoadBalancer",
  /** fleet-ccm: no eligible node reported, but the backends were not seen leaving. */
  backendsKept: "LoadBalancerBackendsKept",
  /** fleet-ccm: Service ports without a node port, left out of the load balancer (node-ports.ts). */
  portsSkipped: "LoadBalancerPortsSkipped",
} as const;

export function serviceEvent(
  svc: Readonly<Service>,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
): ClusterEvent {
  return {
    kind: ObjectKind.OBJECT_KIND_SERVICE,
    namespace: svc.namespace,
    name: svc.name,
    uid: svc.uid,
    type,
    reason,
    message,
    sourceComponent: EVENT_SOURCE.service,
  };
}
