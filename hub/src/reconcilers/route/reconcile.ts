import type { Node, NodeDesired } from "@fleet-ccm/proto";
import { CloudError, errorMessage } from "../../cloud/errors.js";
import { type CloudRoute, isInProgress, type RouteTarget } from "../../cloud/provider.js";
import { serializedWrite } from "../../cloud/serialized-write.js";
import type { Verdict } from "../../cloud/verified-instances.js";
import { EVENT_SOURCE } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { NetworkMemo } from "../../util/network.js";
import type { ControllerContext } from "../controller.js";
import { nodeDesired } from "../desired.js";
import { nodeEvent } from "../node-init/events.js";
import type { DeletionBudget, DeletionPolicy } from "../node-lifecycle/safety.js";
import { after, DONE, type Outcome } from "../outcome.js";
import { periodicOutcome, retryOutcome } from "../retry-policy.js";
import { canonical, contestedClaims } from "./claims.js";
import type { RouteEvidence } from "./evidence.js";
import type { Conflict } from "./overlaps.js";

/** One key per cluster: its whole route table is reconciled at once. */
export const ROUTE = "route";
/** Tracker key kind of a node's NetworkUnavailable publication. */
export const ROUTE_CONDITION = "route-condition";

export const CONDITION_NETWORK_UNAVAILABLE = "NetworkUnavailable";
export const REASON_ROUTE_CREATED = "RouteCreated";
export const REASON_NO_ROUTE_CREATED = "NoRouteCreated";
export const REASON_FAILED_TO_CREATE_ROUTE = "FailedToCreateRoute";
/** fleet-ccm addition: the node's pod CIDR overlaps another live node's, which keeps the range. */
export const REASON_POD_CIDR_CONFLICT = "PodCIDRConflict";

export type RouteDeps = Pick<
  ControllerContext,
  | "fleet"
  | "cloudFor"
  | "cacheFor"
  | "routeWritesFor"
  | "verified"
  | "tracker"
  | "metrics"
  | "logger"
  | "clock"
  | "signal"
> & {
  readonly periodMs: number;
  readonly evidence: RouteEvidence;
  /** Deletions of unclaimed routes nobody was seen releasing: per-cluster blast radius. */
  readonly budget: DeletionBudget;
  /** Consecutive checks, minimum time and blast radius (the node lifecycle's settings). */
  readonly policy: DeletionPolicy;
  /** How many owned routes are held in this cluster now (metrics, summary log). */
  held(cluster: string, routes: readonly CloudRoute[], why: string): void;
  /** This cluster's parsed pod CIDRs, kept across passes. */
  networks(cluster: string): NetworkMemo;
  /** The pod CIDR claims refused in this cluster now (metrics, summary log). */
  conflicts(cluster: string, refused: readonly Conflict[]): void;
};

interface Want {
  readonly node: Readonly<Node>;
  readonly instanceID: string;
}

function routeEvent(node: Readonly<Node>, message: string, reason = REASON_FAILED_TO_CREATE_ROUTE) {
  return { ...nodeEvent(node, "Warning", reason, message), sourceComponent: EVENT_SOURCE.route };
}

function conflictMessage(c: Conflict): string {
  const other = c.same
    ? `is also claimed by node ${c.keeper.node}`
    : `overlaps ${c.keeper.cidr} of node ${c.keeper.node}`;
  return `Not routing pod CIDR ${c.claim.cidr} to this node: it ${other}, which keeps the range (it has the route or was created first)`;
}

/**
 * The route controller for one cluster: every node's podCIDRs (each of them: dual-stack)
 * routed to its instance; routes it does not own never touched. An owned route goes only on
 * positive evidence: (a) a node claims its CIDR for another instance (replaced); (b) this hub
 * saw the CIDR released (the node's deletion reported by the agent, its deletionTimestamp, a
 * change of its podCIDRs or providerID); (c) otherwise only once it was found unclaimed in
 * consecutive reconciles of a connected, synced view that claims some CIDRs, over the
 * lifecycle's deleteAfterChecks and deleteAfterMs, within the blast-radius budget. A CIDR that
 * a node claims but cannot be routed now (instance refused, no providerID yet) keeps its route.
 * Live nodes whose pod CIDRs overlap are conflicting evidence: one keeps the range (claims.ts),
 * the others get no route for it and a PodCIDRConflict Event, so (a) never takes a route from a
 * node to give it to a newcomer. Then NetworkUnavailable per node.
 */
export async function reconcileRoutes(key: WorkKey, deps: RouteDeps): Promise<Outcome> {
  const rearm = after(deps.periodMs);
  const view = deps.fleet.view(key.cluster);
  const cloud = deps.cloudFor(key.cluster);
  const routes = cloud?.provider.routes;
  const writes = deps.routeWritesFor(key.cluster);
  if (view === undefined || !view.synced || !view.connected || cloud === undefined || writes === undefined)
    return rearm;
  if (routes === undefined) {
    // No periodic pass: nothing will ever change (upstream starts no route controller then).
    deps.logger.warn({ provider: cloud.provider.name }, "routes are enabled but the provider has none");
    return DONE;
  }
  const want = new Map<string, Want>();
  const events = [];
  // Every CIDR some live node claims, routable or not; and those of nodes being deleted.
  const claimed = new Set<string>();
  const releasing = new Set<string>();
  for (const n of view.nodes.values())
    for (const cidr of n.podCidrs)
      (n.deletionTimestamp === undefined ? claimed : releasing).add(canonical(cidr));
  const routed = [...view.nodes.values()].filter(
    (n) => n.deletionTimestamp === undefined && n.providerId !== "" && n.podCidrs.length > 0,
  );
  let verdicts: Map<string, Verdict>;
  try {
    verdicts = await deps.verified.verifyAll(
      key.cluster,
      routed.map((n) => n.providerId),
      cloud,
      deps.cacheFor(key.cluster),
    );
  } catch (err) {
    return retryOutcome(err);
  }
  for (const node of routed) {
    const verdict = verdicts.get(node.providerId);
    if (verdict?.ok === false)
      events.push(routeEvent(node, `Not routing pod CIDRs to this node: ${verdict.reason}`));
  }
  let existing: readonly CloudRoute[];
  try {
    existing = await routes.list(cloud.target, deps.signal);
  } catch (err) {
    return retryOutcome(err, { events });
  }
  // Live nodes claiming overlapping ranges: the keeper's route stands, the others get none.
  const networks = deps.networks(key.cluster);
  const contested = contestedClaims(
    view.nodes.values(),
    existing,
    (id) => cloud.provider.instances.parseProviderID(id),
    (cidr) => networks.parse(cidr),
  );
  networks.endPass();
  deps.conflicts(key.cluster, [...contested.values()].flat());
  for (const node of view.nodes.values())
    for (const c of contested.get(node.name) ?? [])
      events.push(routeEvent(node, conflictMessage(c), REASON_POD_CIDR_CONFLICT));
  for (const node of routed) {
    const verdict = verdicts.get(node.providerId);
    if (verdict?.ok !== true) continue;
    const refused = new Set(contested.get(node.name)?.map((c) => c.claim.cidr));
    for (const cidr of node.podCidrs.map(canonical))
      if (!refused.has(cidr)) want.set(cidr, { node, instanceID: verdict.instanceID });
  }

  const now = deps.clock.now();
  const ok = new Set<string>(); // CIDRs routed correctly
  const failed = new Set<string>(); // CIDRs whose create failed
  const toDelete: CloudRoute[] = [];
  const foreign = new Set<string>();
  const unclaimed: CloudRoute[] = [];
  let owned = 0;
  for (const r of existing) {
    const cidr = canonical(r.destinationCIDR);
    const w = want.get(cidr);
    const ours = r.ownerCluster === key.cluster;
    if (ours) owned++;
    if (w !== undefined && r.targetInstanceID === w.instanceID) ok.add(cidr);
    else if (!ours) {
      if (w !== undefined) foreign.add(cidr);
    } else if (w !== undefined)
      toDelete.push(r); // (a) claimed for another instance: replaced
    else if (claimed.has(cidr)) {
      // Claimed, but not routable now: no evidence the route is wrong.
    } else if (releasing.has(cidr) || deps.evidence.wasReleased(key.cluster, cidr, r.targetInstanceID))
      toDelete.push(r); // (b) release observed
    else unclaimed.push(r);
  }
  deps.evidence.pruneReleases(
    key.cluster,
    (cidr) => !claimed.has(cidr) && existing.some((r) => canonical(r.destinationCIDR) === cidr),
    now,
  );
  // (c) Nobody was seen releasing these: only on consecutive checks over time, within budget.
  // A view that claims nothing at all (an empty or broken report) counts for nothing.
  const struck = new Set<string>();
  const held: CloudRoute[] = [];
  let overBudget = 0;
  if (claimed.size === 0) {
    held.push(...unclaimed);
  } else {
    for (const r of unclaimed) {
      const rk = `${r.id}\u0000${r.destinationCIDR}`;
      struck.add(rk);
      const s = deps.evidence.strike(key.cluster, rk, now);
      if (s.count < deps.policy.deleteAfterChecks || s.sinceMs < deps.policy.deleteAfterMs) held.push(r);
      else if (deps.budget.tryConsume(key.cluster, owned, deps.policy)) {
        deps.logger.info(
          { cidr: r.destinationCIDR, target: r.targetInstanceID, checks: s.count, unclaimedMs: s.sinceMs },
          "deleting an owned route no node has claimed for the confirmation time",
        );
        toDelete.push(r);
      } else {
        overBudget++;
        held.push(r);
      }
    }
  }
  deps.evidence.keepStrikes(key.cluster, struck);
  if (overBudget > 0) {
    deps.metrics.routeDeletionsBlocked.inc(overBudget);
    deps.logger.warn(
      {
        blocked: overBudget,
        limit: deps.budget.limit(owned, deps.policy),
        windowMs: deps.policy.blastRadius.windowMs,
      },
      "unclaimed route deletions held back by the blast-radius limit",
    );
  }
  deps.held(
    key.cluster,
    held,
    claimed.size === 0 ? "no node in the view claims any CIDR" : "no release of their CIDRs was observed",
  );
  // Failed or unfinished writes are looked at again next period, or sooner when the cloud said
  // when (Retry-After, an operation in progress). An InProgress answer is returned like an error.
  const writeFailures: unknown[] = [];
  // Writes of one shared cloud object (the provider's LockKey) one at a time, conflicts retried.
  const write = <T>(route: RouteTarget, fn: () => Promise<T>) =>
    serializedWrite(cloud, routes.lockKey?.(cloud.target, route), fn);
  const op = async (name: "create" | "delete", fn: () => Promise<unknown>): Promise<unknown> =>
    writes.run(async () => {
      try {
        const answer = await fn();
        if (isInProgress(answer)) {
          deps.metrics.routeOperations.inc({ op: name, outcome: "in-progress" });
          writeFailures.push(answer);
          return answer;
        }
        deps.metrics.routeOperations.inc({ op: name, outcome: "ok" });
        return undefined;
      } catch (err) {
        deps.metrics.routeOperations.inc({ op: name, outcome: "error" });
        writeFailures.push(err);
        return err;
      }
    });
  const deleteErrors = await Promise.all(
    toDelete.map((r) => op("delete", () => write(r, () => routes.delete(cloud.target, r, deps.signal)))),
  );
  const deleted = new Set(
    toDelete.filter((_, i) => deleteErrors[i] === undefined).map((r) => canonical(r.destinationCIDR)),
  );
  const creates = [...want.entries()].filter(([cidr]) => !ok.has(cidr));
  await Promise.all(
    creates.map(async ([cidr, w]) => {
      if (foreign.has(cidr)) {
        failed.add(cidr);
        events.push(
          routeEvent(
            w.node,
            `Could not create route ${cidr}: the route table has a route for it that this cluster does not own`,
          ),
        );
        return;
      }
      const blocked = toDelete.some((r) => canonical(r.destinationCIDR) === cidr) && !deleted.has(cidr);
      if (blocked) return; // the old route is still there; next round
      const err = await op("create", () =>
        write({ destinationCIDR: cidr, targetInstanceID: w.instanceID }, () =>
          routes.create(cloud.target, { destinationCIDR: cidr, targetInstanceID: w.instanceID }, deps.signal),
        ),
      );
      if (err === undefined) ok.add(cidr);
      else if (isInProgress(err))
        return; // the cloud is creating it: neither routed nor failed yet
      else if (err instanceof CloudError && /already exists/i.test(err.message))
        return; // listed next round
      else {
        failed.add(cidr);
        deps.logger.warn({ cidr, node: w.node.name, err: errorMessage(err) }, "route create failed");
        events.push(routeEvent(w.node, `Could not create route ${cidr}: ${errorMessage(err)}`));
      }
    }),
  );
  return periodicOutcome(deps.periodMs, writeFailures, {
    events,
    nodes: conditionPatches(key.cluster, view.nodes.values(), ok, failed, contested, deps),
  });
}

/**
 * NetworkUnavailable False once all of a node's routes exist, True when one failed or was
 * refused (its CIDR's route, kept for another node, is not this node's).
 */
function conditionPatches(
  cluster: string,
  nodes: Iterable<Readonly<Node>>,
  ok: ReadonlySet<string>,
  failed: ReadonlySet<string>,
  contested: ReadonlyMap<string, readonly Conflict[]>,
  deps: RouteDeps,
): NodeDesired[] {
  const out: NodeDesired[] = [];
  for (const node of nodes) {
    if (node.podCidrs.length === 0 || node.providerId === "" || node.deletionTimestamp !== undefined)
      continue;
    const cidrs = node.podCidrs.map(canonical);
    let status: "True" | "False" | undefined;
    if (contested.has(node.name)) status = "True";
    else if (cidrs.every((c) => ok.has(c))) status = "False";
    else if (cidrs.some((c) => failed.has(c))) status = "True";
    if (status === undefined) continue;
    const reason = status === "False" ? REASON_ROUTE_CREATED : REASON_NO_ROUTE_CREATED;
    const have = node.conditions.find((c) => c.type === CONDITION_NETWORK_UNAVAILABLE);
    if (have?.status === status && have.reason === reason) continue;
    const k = keyOf({ cluster, kind: ROUTE_CONDITION, name: node.name });
    if (deps.tracker.pending(k, node.uid) !== undefined) continue;
    out.push(
      nodeDesired(node, deps.tracker.record(k, node.uid).generation, {
        conditions: [
          {
            type: CONDITION_NETWORK_UNAVAILABLE,
            status,
            reason,
            message:
              status === "False"
                ? "RouteController created a route"
                : "RouteController failed to create a route",
          },
        ],
      }),
    );
  }
  return out;
}
