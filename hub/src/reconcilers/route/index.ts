import type { Node } from "@fleet-ccm/proto";
import { keyOf } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { ROUTE, ROUTE_CONDITION, reconcileRoutes } from "./reconcile.js";

/** Node changes are coalesced for this long before the route table is reconciled. */
const ROUTE_SYNC_DELAY_MS = 200;

function routeFacts(n: Readonly<Node> | undefined): string {
  return n === undefined || n.deletionTimestamp !== undefined
    ? ""
    : `${n.providerId}|${n.podCidrs.join(",")}`;
}

/** node-route-controller: one key per cluster, on node changes and every routes.periodMs. */
export function routeController(ctx: ControllerContext): Controller {
  const deps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    routeWritesFor: ctx.routeWritesFor,
    cacheFor: ctx.cacheFor,
    verified: ctx.verified,
    tracker: ctx.tracker,
    metrics: ctx.metrics,
    logger: ctx.logger.child({ component: ROUTE }),
    periodMs: ctx.config.routes.periodMs,
  };
  return {
    name: "node-route-controller",
    kinds: [ROUTE],
    triggers: {
      onSynced(cluster) {
        ctx.queue.add({ cluster, kind: ROUTE, name: "" });
      },
      onNode(cluster, name, change) {
        if (change.type === "delete") ctx.tracker.clear(keyOf({ cluster, kind: ROUTE_CONDITION, name }));
        const after = change.type === "delete" ? "" : routeFacts(change.cur);
        if (routeFacts(change.old) !== after)
          ctx.queue.addAfter({ cluster, kind: ROUTE, name: "" }, ROUTE_SYNC_DELAY_MS);
      },
    },
    reconcile: (k) => reconcileRoutes(k, deps),
  };
}

export { ROUTE } from "./reconcile.js";
