import { ApplyOutcome, type ApplyResult, ObjectKind } from "@fleet-ccm/proto";
import { clusterKeyPrefix, keyOf, parseKey, type WorkKey } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { FailureSummary } from "../failure-summary.js";
import { NODE_REFRESH, reconcileNodeRefresh } from "../node-refresh/reconcile.js";
import { needsInit } from "./predicates.js";
import { NODE_INIT, reconcileNodeInit } from "./reconcile.js";
import { SyncedEvidence } from "./synced.js";

/**
 * cloud-node-controller: initialization of tainted nodes (node-init keys, on node events), and
 * the periodic refresh of initialized ones (one node-refresh key per cluster, re-armed).
 */
export function cloudNodeController(ctx: ControllerContext): Controller {
  const { queue, tracker } = ctx;
  const key = (cluster: string, name: string): WorkKey => ({ cluster, kind: NODE_INIT, name });
  // When the hub first saw each node that needs initialization: the hub's own overhead is the
  // time from then to publishing its patch, minus the cloud lookup.
  const firstSeenMs = new Map<string, number>();
  const initLogger = ctx.logger.child({ component: NODE_INIT });
  const synced = new SyncedEvidence();
  const initDeps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    lookupsFor: ctx.lookupsFor,
    tracker,
    verified: ctx.verified,
    logger: initLogger,
    clock: ctx.clock,
    synced,
    failures: new FailureSummary(initLogger, ctx.clock, "instance lookups failing; retrying with backoff"),
    ...(ctx.nodeInitProgress !== undefined && { progress: ctx.nodeInitProgress }),
    onPublished(k: string, cloudMs: number) {
      const seen = firstSeenMs.get(k);
      if (seen === undefined) return;
      firstSeenMs.delete(k);
      ctx.metrics.nodeInitHubOverhead.observe(Math.max(0, ctx.clock.now() - seen - cloudMs) / 1000);
    },
  };
  const refreshDeps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    cacheFor: ctx.cacheFor,
    verified: ctx.verified,
    tracker,
    periodMs: ctx.config.refresh.periodMs,
    logger: ctx.logger.child({ component: NODE_REFRESH }),
  };
  return {
    name: "cloud-node-controller",
    kinds: [NODE_INIT, NODE_REFRESH],
    triggers: {
      onNode(cluster, name, change) {
        const k = key(cluster, name);
        const id = keyOf(k);
        if (change.type === "delete" || !needsInit(change.cur)) firstSeenMs.delete(id);
        if (change.type === "delete" || !needsInit(change.cur) || change.cur.providerId !== "")
          ctx.nodeInitProgress?.settled(cluster, name);
        if (change.type === "delete") {
          tracker.clear(id);
          initDeps.failures.ok(id);
          synced.forget(cluster, change.old.uid);
          return;
        }
        const cur = change.cur;
        if (needsInit(cur)) synced.sawTainted(cluster, cur.uid);
        else if (change.old === undefined && change.origin === "snapshot") {
          // First seen initialized: owed its Synced Event only if a snapshot shows it (a restarted
          // hub, another replica's cluster); a new node reported untainted was never ours.
          const ours = ctx.cloudFor(cluster)?.provider.instances.parseProviderID(cur.providerId);
          if (ours !== undefined && synced.firstSeenInitialized(cluster, cur, ctx.clock.now())) queue.add(k);
        }
        // Tainted nodes, and nodes with a publication in flight (their report closes the loop).
        if (needsInit(cur) && !firstSeenMs.has(id) && tracker.get(id) === undefined)
          firstSeenMs.set(id, ctx.clock.now());
        if (needsInit(cur) || tracker.get(id) !== undefined || synced.owes(cluster, cur.uid)) queue.add(k);
      },
      onSynced(cluster) {
        queue.addAfter({ cluster, kind: NODE_REFRESH, name: "" }, ctx.config.refresh.periodMs);
      },
    },
    reconcile: (k) =>
      k.kind === NODE_REFRESH ? reconcileNodeRefresh(k, refreshDeps) : reconcileNodeInit(k, initDeps),
    onReleased(cluster) {
      // Synced Events still owed are the next owner's to emit (it sees the nodes in a snapshot).
      const prefix = clusterKeyPrefix(cluster);
      for (const k of firstSeenMs.keys()) if (k.startsWith(prefix)) firstSeenMs.delete(k);
      synced.forgetCluster(cluster);
      initDeps.failures.forgetPrefix(prefix);
      ctx.nodeInitProgress?.forget(cluster);
    },
    onApplyResult(cluster, result) {
      onTrackedApplyResult(
        ctx,
        ObjectKind.OBJECT_KIND_NODE,
        { cluster, kind: NODE_INIT, name: result.name },
        result,
      );
    },
  };
}

/**
 * An agent's report on a tracked patch: a failure publishes it again after a per-object backoff
 * (never sooner); an applied one also makes the cluster's transiently failed publications due
 * (its API server works again); a stale one (object gone or replaced) re-reconciles at once.
 */
export function onTrackedApplyResult(
  ctx: Pick<ControllerContext, "queue" | "tracker">,
  kind: ObjectKind,
  k: WorkKey,
  result: ApplyResult,
): void {
  if (result.kind !== kind) return;
  if (result.outcome === ApplyOutcome.APPLY_OUTCOME_APPLIED)
    for (const due of ctx.tracker.recovered(k.cluster)) {
      const key = parseKey(due);
      if (key !== undefined) ctx.queue.add(key);
    }
  const id = keyOf(k);
  const inflight = ctx.tracker.get(id);
  if (inflight === undefined || inflight.generation !== result.generation) return;
  if (result.outcome === ApplyOutcome.APPLY_OUTCOME_APPLIED) ctx.tracker.applied(id, result.generation);
  else if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED) {
    const delay = ctx.tracker.failedApply(id, result.generation, result.httpStatus);
    if (delay !== undefined) ctx.queue.addAfter(k, delay);
  } else if (result.outcome === ApplyOutcome.APPLY_OUTCOME_STALE) {
    ctx.tracker.clear(id);
    ctx.queue.add(k);
  }
}

export type { NodeInitDeps } from "./reconcile.js";
export { NODE_INIT, reconcileNodeInit } from "./reconcile.js";
