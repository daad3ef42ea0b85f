import { ObjectKind } from "@fleet-ccm/proto";
import type { ClusterCloud } from "../../cloud/scope.js";
import { type ClusterView, serviceKey } from "../../fleet/state.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { backendFacts, needsCleanup, wantsLoadBalancer } from "./predicates.js";
import {
  type BackendSet,
  computeBackendSet,
  type EnsuredRecord,
  reconcileService,
  SERVICE,
  SERVICE_NODES,
} from "./reconcile.js";

/** A backend set is recomputed at least this often (instance verdicts expire). */
const BACKEND_SET_MAX_AGE_MS = 60_000;

/** Node changes are coalesced for this long before every load balancer's backends are re-synced. */
export const NODE_SYNC_DELAY_MS = 1000;

/** service-lb-controller: one key per Service, plus one per cluster for node-set changes (batched). */
export function serviceController(ctx: ControllerContext): Controller {
  const { queue, tracker } = ctx;
  const ownedClass = ctx.config.loadBalancerClass;
  const ensured = new Map<string, EnsuredRecord>();
  // The backend set is the same for every Service of a cluster: computed once per node-set
  // change (or per verification TTL), not once per Service.
  const nodeSetVersion = new Map<string, number>();
  const backendCache = new Map<string, { version: number; atMs: number; set: BackendSet }>();
  const bump = (cluster: string) => nodeSetVersion.set(cluster, (nodeSetVersion.get(cluster) ?? 0) + 1);
  const backendsFor = async (
    cluster: string,
    view: ClusterView,
    cloud: ClusterCloud,
  ): Promise<BackendSet> => {
    const version = nodeSetVersion.get(cluster) ?? 0;
    const hit = backendCache.get(cluster);
    if (hit !== undefined && hit.version === version && ctx.clock.now() - hit.atMs < BACKEND_SET_MAX_AGE_MS)
      return { ...hit.set, events: [] };
    const set = await computeBackendSet(cluster, view, cloud, ctx.verified, ctx.cacheFor(cluster));
    backendCache.set(cluster, { version, atMs: ctx.clock.now(), set });
    return set;
  };
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
    backendsFor,
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
        if (before === after) return;
        bump(cluster);
        queue.addAfter({ cluster, kind: SERVICE_NODES, name: "" }, NODE_SYNC_DELAY_MS);
      },
      onSynced(cluster) {
        bump(cluster);
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
