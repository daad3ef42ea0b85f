import { ApplyOutcome, ObjectKind } from "@fleet-ccm/proto";
import { keyOf, type WorkKey } from "../../queue/index.js";
import { NetworkMemo } from "../../util/network.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { DONE } from "../outcome.js";
import { type ClusterIpam, NODE_IPAM, NODE_IPAM_PUBLICATION, reconcileNodeIpam } from "./reconcile.js";

/** Node changes are coalesced for this long before a cluster's allocation is looked at again. */
const IPAM_SYNC_DELAY_MS = 100;

/**
 * node-ipam-controller: pod CIDRs for the nodes of clusters with a podNetwork, one key per
 * cluster (re-armed while publications are in flight), on snapshots and node changes.
 */
export function nodeIpamController(ctx: ControllerContext): Controller {
  const clusters = new Map<string, ClusterIpam>();
  const state = (cluster: string): ClusterIpam => {
    let st = clusters.get(cluster);
    if (st === undefined) {
      st = {
        sinceMs: ctx.clock.now(),
        reserved: new Map(),
        announced: new Set(),
        failed: new Map(),
        networks: new NetworkMemo(),
      };
      clusters.set(cluster, st);
    }
    return st;
  };
  const key = (cluster: string): WorkKey => ({ cluster, kind: NODE_IPAM, name: "" });
  const deps = {
    fleet: ctx.fleet,
    tracker: ctx.tracker,
    metrics: ctx.metrics,
    clock: ctx.clock,
    logger: ctx.logger.child({ component: NODE_IPAM }),
    podNetwork: (cluster: string) =>
      ctx.podNetworkFor !== undefined
        ? ctx.podNetworkFor(cluster)
        : ctx.config.clusters.find((c) => c.name === cluster)?.podNetwork,
    state,
    settleMs: ctx.config.reconcile.convergeDeadlineMs,
  };
  return {
    name: "node-ipam-controller",
    kinds: [NODE_IPAM, NODE_IPAM_PUBLICATION],
    triggers: {
      onSynced(cluster) {
        state(cluster);
        ctx.queue.add(key(cluster));
      },
      onNode(cluster, _name, change) {
        const before = change.old?.podCidrs.join(",");
        const now = change.type === "delete" ? undefined : change.cur.podCidrs.join(",");
        // A node gone, a node without ranges, or ranges that changed (landed, set by someone else).
        if (now === undefined || now === "" || now !== before)
          ctx.queue.addAfter(key(cluster), IPAM_SYNC_DELAY_MS);
      },
    },
    // A publication's key (an apply result asked for it again) is the cluster's pass.
    reconcile: async (k) => {
      if (k.kind === NODE_IPAM) return reconcileNodeIpam(k, deps);
      ctx.queue.add(key(k.cluster));
      return DONE;
    },
    onApplyResult(cluster, result) {
      const k = { cluster, kind: NODE_IPAM_PUBLICATION, name: result.name };
      const inflight = ctx.tracker.get(keyOf(k));
      if (
        result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED &&
        inflight?.generation === result.generation &&
        inflight.uid === result.uid
      )
        clusters
          .get(cluster)
          ?.failed.set(result.uid, `${result.httpStatus} ${result.reason}: ${result.message}`);
      onTrackedApplyResult(ctx, ObjectKind.OBJECT_KIND_NODE, k, result);
    },
    onReleased(cluster) {
      clusters.delete(cluster);
    },
  };
}

export { NODE_IPAM } from "./reconcile.js";
