import type { Node } from "@fleet-ccm/proto";
import type { CloudRoute } from "../../cloud/provider.js";
import { keyOf } from "../../queue/index.js";
import { NetworkMemo } from "../../util/network.js";
import type { Controller, ControllerContext } from "../controller.js";
import { DeletionBudget } from "../node-lifecycle/safety.js";
import { canonical } from "./claims.js";
import { RouteEvidence } from "./evidence.js";
import type { Conflict } from "./overlaps.js";
import { ROUTE, ROUTE_CONDITION, reconcileRoutes } from "./reconcile.js";

/** Node changes are coalesced for this long before the route table is reconciled. */
const ROUTE_SYNC_DELAY_MS = 200;
/** CIDRs a held-routes log line names. */
const HELD_SAMPLE = 5;

function routeFacts(n: Readonly<Node> | undefined): string {
  return n === undefined || n.deletionTimestamp !== undefined
    ? ""
    : `${n.providerId}|${n.podCidrs.join(",")}`;
}

/** node-route-controller: one key per cluster, on node changes and every routes.periodMs. */
export function routeController(ctx: ControllerContext): Controller {
  const evidence = new RouteEvidence();
  const logger = ctx.logger.child({ component: ROUTE });
  const heldBy = new Map<string, number>();
  const conflictsIn = new Map<string, number>();
  const networksOf = new Map<string, NetworkMemo>();
  const publishHeld = () => {
    let total = 0;
    for (const n of heldBy.values()) total += n;
    ctx.metrics.routesHeld.set(total);
  };
  const instanceOf = (cluster: string, providerID: string): string | undefined =>
    providerID === "" ? undefined : ctx.cloudFor(cluster)?.provider.instances.parseProviderID(providerID);
  /** The CIDRs `old` held that `cur` no longer holds for the same instance are released. */
  const release = (cluster: string, old: Readonly<Node>, cur: Readonly<Node> | undefined) => {
    const kept =
      cur === undefined || cur.deletionTimestamp !== undefined || cur.providerId !== old.providerId
        ? new Set<string>()
        : new Set(cur.podCidrs.map(canonical));
    const instanceID = instanceOf(cluster, old.providerId);
    const now = ctx.clock.now();
    for (const cidr of old.podCidrs.map(canonical))
      if (!kept.has(cidr)) evidence.release(cluster, cidr, instanceID, now);
  };
  const deps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    routeWritesFor: ctx.routeWritesFor,
    cacheFor: ctx.cacheFor,
    verified: ctx.verified,
    tracker: ctx.tracker,
    metrics: ctx.metrics,
    clock: ctx.clock,
    ...(ctx.signal !== undefined && { signal: ctx.signal }),
    logger,
    periodMs: ctx.config.routes.periodMs,
    evidence,
    budget: new DeletionBudget(ctx.clock),
    policy: ctx.config.lifecycle,
    held(cluster: string, routes: readonly CloudRoute[], why: string) {
      const before = heldBy.get(cluster) ?? 0;
      if (routes.length === 0) heldBy.delete(cluster);
      else heldBy.set(cluster, routes.length);
      publishHeld();
      // A summary when the number changes, not a line per reconcile.
      if (routes.length !== before && routes.length > 0)
        logger.info(
          {
            cluster,
            held: routes.length,
            cidrs: routes.slice(0, HELD_SAMPLE).map((r) => r.destinationCIDR),
            why,
          },
          "owned routes no node claims are kept until their release is confirmed",
        );
    },
    networks(cluster: string) {
      let m = networksOf.get(cluster);
      if (m === undefined) {
        m = new NetworkMemo();
        networksOf.set(cluster, m);
      }
      return m;
    },
    conflicts(cluster: string, refused: readonly Conflict[]) {
      const before = conflictsIn.get(cluster) ?? 0;
      if (refused.length === 0) conflictsIn.delete(cluster);
      else conflictsIn.set(cluster, refused.length);
      ctx.metrics.routeCidrConflicts.set({ cluster }, refused.length);
      if (refused.length === 0 && before > 0) logger.info({ cluster }, "pod CIDR conflicts resolved");
      else if (refused.length !== before)
        logger.warn(
          {
            cluster,
            conflicts: refused.length,
            sample: refused
              .slice(0, HELD_SAMPLE)
              .map((c) => `${c.claim.node} ${c.claim.cidr} (kept by ${c.keeper.node} ${c.keeper.cidr})`),
          },
          "pod CIDRs that overlap another node's are not routed",
        );
    },
  };
  return {
    name: "node-route-controller",
    kinds: [ROUTE],
    triggers: {
      onSynced(cluster) {
        ctx.queue.add({ cluster, kind: ROUTE, name: "" });
      },
      onDisconnected(cluster) {
        evidence.resetStrikes(cluster);
      },
      onNode(cluster, name, change) {
        if (change.type === "delete") {
          ctx.tracker.clear(keyOf({ cluster, kind: ROUTE_CONDITION, name }));
          const old = change.old;
          // A node missing from a snapshot was not seen deleted: only the agent's report releases.
          if (change.origin === "delta") release(cluster, old, undefined);
        } else if (change.old !== undefined && change.old.deletionTimestamp === undefined)
          release(cluster, change.old, change.cur);
        const after = change.type === "delete" ? "" : routeFacts(change.cur);
        if (routeFacts(change.old) !== after)
          ctx.queue.addAfter({ cluster, kind: ROUTE, name: "" }, ROUTE_SYNC_DELAY_MS);
      },
    },
    reconcile: (k) => reconcileRoutes(k, deps),
    onReleased(cluster) {
      // What was learned about the cluster's routes is evidence for this replica only; the
      // deletion budget stays (a cluster that comes back is not given a fresh one).
      evidence.forgetCluster(cluster);
      conflictsIn.delete(cluster);
      networksOf.delete(cluster);
      if (heldBy.delete(cluster)) publishHeld();
    },
  };
}

export { ROUTE } from "./reconcile.js";
