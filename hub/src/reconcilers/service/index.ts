import { ObjectKind } from "@fleet-ccm/proto";
import { serviceKey } from "../../fleet/state.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { backendFacts, needsCleanup, wantsLoadBalancer } from "./predicates.js";
import { type EnsuredRecord, reconcileService, SERVICE, SERVICE_NODES } from "./reconcile.js";

/** Node changes are coalesced for this long before every load balancer's backends are re-synced. */
export const NODE_SYNC_DELAY_MS = 1000;

/** service-lb-controller: one key per Service, plus one per cluster for node-set changes (batched). */
export function serviceController(ctx: ControllerContext): Controller {
  const { queue, tracker } = ctx;
  const ownedClass = ctx.config.loadBalancerClass;
  const ensured = new Map<string, EnsuredRecord>();
  const deps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    cacheFor: ctx.cacheFor,
    tracker,
    verified: ctx.verified,
    ensured,
    logger: ctx.logger.child({ component: SERVICE }),
    clock: ctx.clock,
    loadBalancerClass: ownedClass,
  };
  return {
    name: "service-lb-controller",
    kinds: [SERVICE, SERVICE_NODES],
    triggers: {
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
    },
    async reconcile(k) {
      if (k.kind === SERVICE) return reconcileService(k, deps);
      // Batched node-set change: fan out to every Service of the cluster (each filters itself).
      for (const name of ctx.fleet.view(k.cluster)?.services.keys() ?? [])
        queue.add({ cluster: k.cluster, kind: SERVICE, name });
      return { requeue: { kind: "done" } };
    },
    onApplyResult(cluster, result) {
      const k = { cluster, kind: SERVICE, name: serviceKey(result.namespace, result.name) };
      onTrackedApplyResult(ctx, ObjectKind.OBJECT_KIND_SERVICE, k, result);
    },
  };
}

export type { EnsuredRecord, ServiceDeps } from "./reconcile.js";
export { reconcileService, SERVICE, SERVICE_NODES } from "./reconcile.js";
