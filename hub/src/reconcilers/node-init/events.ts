import type { Node } from "@fleet-ccm/proto";
import { type ClusterEvent, ObjectKind } from "@fleet-ccm/proto";
import { EVENT_SOURCE } from "../../k8s/well-known.js";

/** Upstream reason and message on a successful initialization. */
export const REASON_SYNCED = "Synced";
/** fleet-ccm additions: upstream only logs these; a fleet operator needs them on the node. */
export const REASON_INSTANCE_NOT_FOUND = "InstanceNotFound";
export const REASON_OUT_OF_SCOPE = "InstanceOutOfScope";
/** Several instances of the node's name inside the cluster's scope: names are not identities. */
export const REASON_AMBIGUOUS_NAME = "AmbiguousInstanceName";
export const REASON_INIT_FAILED = "InitializationFailed";

export function nodeEvent(
  node: Readonly<Node>,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
): ClusterEvent {
  return {
    kind: ObjectKind.OBJECT_KIND_NODE,
    namespace: "",
    name: node.name,
    uid: node.uid,
    type,
    reason,
    message,
    sourceComponent: EVENT_SOURCE.cloudNode,
  };
}

export function syncedEvent(node: Readonly<Node>): ClusterEvent {
  return nodeEvent(node, "Normal", REASON_SYNCED, "Node synced successfully");
}
