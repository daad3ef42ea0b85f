import { ObjectKind } from "@fleet-ccm/proto";
import type { ClusterView } from "../../fleet/state.js";
import { clusterKeyPrefix, keyOf } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { after, DONE } from "../outcome.js";
import {
  NODE_LIFECYCLE,
  NODE_LIFECYCLE_SCAN,
  needsLifecycleCheck,
  reconcileNodeLifecycle,
} from "./reconcile.js";
import { DeletionBudget, NotFoundEvidence } from "./safety.js";

/**
 * cloud-node-lifecycle-controller: every monitor period a per-cluster scan enqueues the nodes
 * that are not Ready (or carry the shutdown taint); each is checked with a direct lookup. A
 * cluster whose nodes are all Ready is not scanned again until one of them changes to need a
 * check (or its agent resyncs): an idle fleet costs no reconcile per cluster and period.
 */
export function nodeLifecycleController(ctx: ControllerContext): Controller {
  const { queue } = ctx;
  const lc = ctx.config.lifecycle;
  const deps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    tracker: ctx.tracker,
    verified: ctx.verified,
    evidence: new NotFoundEvidence(ctx.clock),
    budget: new DeletionBudget(ctx.clock, ctx.recordedDeletions),
    policy: lc,
    metrics: ctx.metrics,
    logger: ctx.logger.child({ component: NODE_LIFECYCLE }),
    clock: ctx.clock,
    ...(ctx.signal !== undefined && { signal: ctx.signal }),
  };
  // The nodes a scan enqueues depend on the nodes alone: walked again only when the node set
  // changed (a scan of an unchanged cluster every monitor period costs nothing per node).
  const scanned = new WeakMap<ClusterView, { version: number; names: readonly string[] }>();
  const toCheck = (view: ClusterView): readonly string[] => {
    const hit = scanned.get(view);
    if (hit !== undefined && hit.version === view.nodesVersion) return hit.names;
    const names: string[] = [];
    for (const node of view.nodes.values()) if (needsLifecycleCheck(node)) names.push(node.name);
    scanned.set(view, { version: view.nodesVersion, names });
    return names;
  };
  return {
    name: "cloud-node-lifecycle-controller",
    kinds: [NODE_LIFECYCLE, NODE_LIFECYCLE_SCAN],
    triggers: {
      onSynced(cluster) {
        queue.add({ cluster, kind: NODE_LIFECYCLE_SCAN, name: "" });
      },
      onNode(cluster, name, change) {
        if (change.type !== "delete") {
          // Within a monitor period, as the periodic scan would; a scan already due keeps its time.
          if (needsLifecycleCheck(change.cur))
            queue.addAfter({ cluster, kind: NODE_LIFECYCLE_SCAN, name: "" }, lc.monitorPeriodMs);
          return;
        }
        const k = keyOf({ cluster, kind: NODE_LIFECYCLE, name });
        ctx.tracker.clear(k);
        deps.evidence.forget(k);
      },
    },
    async reconcile(k) {
      if (k.kind === NODE_LIFECYCLE) return reconcileNodeLifecycle(k, deps);
      const view = ctx.fleet.view(k.cluster);
      // A disconnected cluster's view may be stale: judge nothing until its agent is back (its
      // snapshot, onSynced, scans again).
      if (!view?.connected) return DONE;
      const names = toCheck(view);
      for (const name of names) queue.add({ cluster: k.cluster, kind: NODE_LIFECYCLE, name });
      // Every node Ready: the next scan comes from onNode, when one changes to need a check.
      return names.length === 0 ? DONE : after(lc.monitorPeriodMs);
    },
    onReleased(cluster) {
      // Evidence restarts with the next owner (and with this one, should the cluster come back).
      const prefix = clusterKeyPrefix(cluster);
      deps.evidence.forgetWhere((k) => k.startsWith(prefix));
    },
    onApplyResult(cluster, result) {
      onTrackedApplyResult(
        ctx,
        ObjectKind.OBJECT_KIND_NODE,
        { cluster, kind: NODE_LIFECYCLE, name: result.name },
        result,
      );
    },
  };
}

export { ANNOTATION_CONFIRM_DELETION, NODE_LIFECYCLE, NODE_LIFECYCLE_SCAN } from "./reconcile.js";
