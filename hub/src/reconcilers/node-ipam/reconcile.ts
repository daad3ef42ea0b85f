import type { ClusterEvent, NodeDesired } from "@fleet-ccm/proto";
import type { PodNetwork } from "../../config/pod-network.js";
import { EVENT_SOURCE } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { NetworkMemo } from "../../util/network.js";
import type { ControllerContext } from "../controller.js";
import { nodeDesired } from "../desired.js";
import { nodeEvent } from "../node-init/events.js";
import { after, DONE, type Outcome } from "../outcome.js";
import { planAllocation } from "./plan.js";

/** One key per cluster: its nodes' ranges are decided together, from the whole view. */
export const NODE_IPAM = "node-ipam";
/** Tracker keys of one node's pod CIDR publication. */
export const NODE_IPAM_PUBLICATION = "node-ipam-node";

/** Upstream's reasons (nodeutil.RecordNodeStatusChange in the range allocator). */
export const REASON_CIDR_NOT_AVAILABLE = "CIDRNotAvailable";
export const REASON_CIDR_ASSIGNMENT_FAILED = "CIDRAssignmentFailed";

/** What this hub knows of one cluster's allocation beyond its nodes. */
export interface ClusterIpam {
  /** When this hub began acting for the cluster (start, takeover): nothing is allocated for a while after. */
  readonly sinceMs: number;
  /** Ranges published for a node (by uid) and not yet seen on it: nobody else gets them. */
  readonly reserved: Map<string, readonly string[]>;
  /** Waiting nodes (by uid) already told CIDRNotAvailable. */
  readonly announced: Set<string>;
  /** Publications the agent could not apply (by uid): told once as CIDRAssignmentFailed. */
  readonly failed: Map<string, string>;
  /** The nodes' CIDRs parsed, kept across passes (they rarely change). */
  readonly networks: NetworkMemo;
}

export type IpamDeps = Pick<ControllerContext, "fleet" | "tracker" | "metrics" | "logger" | "clock"> & {
  podNetwork(cluster: string): PodNetwork | undefined;
  state(cluster: string): ClusterIpam;
  /**
   * How long a new owner of a cluster waits before allocating: what the previous owner (a hub
   * before its restart, another replica) published may still land and show up in the reports
   * (a publication's convergence deadline).
   */
  readonly settleMs: number;
};

function ipamEvent(node: Parameters<typeof nodeEvent>[0], reason: string, message: string): ClusterEvent {
  return { ...nodeEvent(node, "Warning", reason, message), sourceComponent: EVENT_SOURCE.ipam };
}

/**
 * The range allocator for one cluster (kube-controller-manager's --allocate-node-cidrs): nodes
 * without spec.podCIDRs get the lowest free range of each pod network CIDR, published with a
 * uid precondition and set by the agent only onto a node that still has none. It acts only on a
 * complete view (synced, connected, nothing held or refused: a missing node's ranges would look
 * free) and, after this hub took the cluster on, only once what an earlier owner published has
 * had time to show; so no range is given twice. A node's ranges are free once it is gone from
 * the view (the truth is the nodes); what it already had is recorded, never changed.
 */
export async function reconcileNodeIpam(key: WorkKey, deps: IpamDeps): Promise<Outcome> {
  const view = deps.fleet.view(key.cluster);
  const network = deps.podNetwork(key.cluster);
  if (view === undefined || !view.synced || !view.connected || network === undefined) return DONE;
  let partial = 0;
  for (const k of view.held.keys()) if (k.startsWith("node/")) partial++;
  for (const k of view.refused.keys()) if (k.startsWith("node/")) partial++;
  // The hold or refusal ends with a snapshot or a delta, which enqueue this key again. Debug: a
  // refused node can keep a cluster waiting long, and this runs every settleMs meanwhile.
  if (partial > 0) {
    deps.logger.debug(
      { cluster: key.cluster, partial },
      "no pod CIDRs allocated while nodes are held or refused",
    );
    return after(deps.settleMs);
  }
  const st = deps.state(key.cluster);
  const settling = st.sinceMs + deps.settleMs - deps.clock.now();
  if (settling > 0) return after(settling);

  const plan = planAllocation(network, view.nodes.values(), st.reserved, (c) => st.networks.parse(c));
  st.networks.endPass();
  const events: ClusterEvent[] = [];
  const nodes: NodeDesired[] = [];
  const publicationKey = (name: string) => keyOf({ cluster: key.cluster, kind: NODE_IPAM_PUBLICATION, name });
  const kept = new Set<string>();
  let nextDue = Number.POSITIVE_INFINITY;
  for (const { node, cidrs } of plan.lost)
    deps.logger.warn(
      { cluster: key.cluster, node: node.name, cidrs },
      "pod CIDRs published for this node are now another node's; choosing again",
    );
  for (const { node, cidrs } of plan.assigned) {
    kept.add(node.uid);
    st.reserved.set(node.uid, cidrs);
    st.announced.delete(node.uid);
    const failed = st.failed.get(node.uid);
    if (failed !== undefined) {
      st.failed.delete(node.uid);
      events.push(
        ipamEvent(node, REASON_CIDR_ASSIGNMENT_FAILED, `Pod CIDRs ${cidrs.join(",")} not set: ${failed}`),
      );
    }
    const k = publicationKey(node.name);
    const pending = deps.tracker.pending(k, node.uid);
    if (pending !== undefined) {
      nextDue = Math.min(nextDue, pending.deadlineMs - deps.clock.now());
      continue;
    }
    const inflight = deps.tracker.record(k, node.uid, cidrs.join(","));
    nextDue = Math.min(nextDue, inflight.deadlineMs - inflight.publishedAtMs);
    nodes.push(nodeDesired(node, inflight.generation, { podCidrs: [...cidrs] }));
  }
  for (const [uid] of st.reserved)
    if (!kept.has(uid)) {
      st.reserved.delete(uid);
      st.failed.delete(uid);
    }
  for (const node of view.nodes.values())
    if (node.podCidrs.length > 0) deps.tracker.clear(publicationKey(node.name));
  const waiting = new Set<string>();
  for (const { node, exhausted } of plan.waiting) {
    waiting.add(node.uid);
    if (st.announced.has(node.uid)) continue;
    st.announced.add(node.uid);
    events.push(
      ipamEvent(
        node,
        REASON_CIDR_NOT_AVAILABLE,
        `Node ${node.name} status is now: CIDRNotAvailable (no free range left in pod network ${exhausted}); it gets one when a node holding one is deleted`,
      ),
    );
  }
  for (const uid of st.announced) if (!waiting.has(uid)) st.announced.delete(uid);
  deps.metrics.ipamNodesWaiting.set({ cluster: key.cluster }, plan.waiting.length);
  for (const [cidr, free] of plan.free) deps.metrics.ipamRangesFree.set({ cluster: key.cluster, cidr }, free);
  if (events.some((e) => e.reason === REASON_CIDR_NOT_AVAILABLE))
    deps.logger.warn(
      { cluster: key.cluster, waiting: plan.waiting.length },
      "pod network exhausted: nodes wait for a range",
    );
  const extra = { nodes, events };
  return Number.isFinite(nextDue) ? after(nextDue, extra) : { ...extra, requeue: { kind: "done" } };
}
