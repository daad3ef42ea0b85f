import type { Node, NodeDesired } from "@fleet-ccm/proto";
import { CloudError, errorMessage } from "../../cloud/errors.js";
import { OWNER_TAG_CLUSTER, routeOwnerTags } from "../../cloud/naming.js";
import type { CloudRoute } from "../../cloud/provider.js";
import { EVENT_SOURCE } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { ControllerContext } from "../controller.js";
import { nodeDesired } from "../desired.js";
import { nodeEvent } from "../node-init/events.js";
import { after, backoff, type Outcome } from "../outcome.js";

/** One key per cluster: its whole route table is reconciled at once. */
export const ROUTE = "route";
/** Tracker key kind of a node's NetworkUnavailable publication. */
export const ROUTE_CONDITION = "route-condition";

export const CONDITION_NETWORK_UNAVAILABLE = "NetworkUnavailable";
export const REASON_ROUTE_CREATED = "RouteCreated";
export const REASON_NO_ROUTE_CREATED = "NoRouteCreated";
export const REASON_FAILED_TO_CREATE_ROUTE = "FailedToCreateRoute";

export type RouteDeps = Pick<
  ControllerContext,
  "fleet" | "cloudFor" | "cacheFor" | "routeWritesFor" | "verified" | "tracker" | "metrics" | "logger"
> & {
  readonly periodMs: number;
};

interface Want {
  readonly node: Readonly<Node>;
  readonly instanceID: string;
}

/** CIDRs compare by canonical text. */
function canonical(cidr: string): string {
  return cidr.trim().toLowerCase();
}

function routeEvent(node: Readonly<Node>, message: string) {
  return {
    ...nodeEvent(node, "Warning", REASON_FAILED_TO_CREATE_ROUTE, message),
    sourceComponent: EVENT_SOURCE.route,
  };
}

/**
 * The route controller for one cluster: every node's podCIDRs (each of them: dual-stack)
 * routed to its instance; routes the cluster owns that match no node removed; routes it does
 * not own never touched. Then NetworkUnavailable per node.
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
    deps.logger.warn({ provider: cloud.provider.name }, "routes are enabled but the provider has none");
    return rearm;
  }
  const want = new Map<string, Want>();
  const events = [];
  const routed = [...view.nodes.values()].filter(
    (n) => n.deletionTimestamp === undefined && n.providerId !== "" && n.podCidrs.length > 0,
  );
  try {
    const verdicts = await deps.verified.verifyAll(
      key.cluster,
      routed.map((n) => n.providerId),
      cloud,
      deps.cacheFor(key.cluster),
    );
    for (const node of routed) {
      const verdict = verdicts.get(node.providerId);
      if (verdict === undefined) continue;
      if (!verdict.ok) {
        events.push(routeEvent(node, `Not routing pod CIDRs to this node: ${verdict.reason}`));
        continue;
      }
      for (const cidr of node.podCidrs) want.set(canonical(cidr), { node, instanceID: verdict.instanceID });
    }
  } catch (err) {
    return backoff(err, { events });
  }
  let existing: readonly CloudRoute[];
  try {
    existing = await routes.list();
  } catch (err) {
    return backoff(err, { events });
  }

  const ok = new Set<string>(); // CIDRs routed correctly
  const failed = new Set<string>(); // CIDRs whose create failed
  const toDelete: CloudRoute[] = [];
  const foreign = new Set<string>();
  for (const r of existing) {
    const cidr = canonical(r.destinationCIDR);
    const w = want.get(cidr);
    const owned = r.tags[OWNER_TAG_CLUSTER] === key.cluster;
    if (w !== undefined && r.targetInstanceID === w.instanceID) ok.add(cidr);
    else if (owned)
      toDelete.push(r); // stale, or pointing at a replaced instance
    else if (w !== undefined) foreign.add(cidr);
  }
  const op = async (name: "create" | "delete", fn: () => Promise<unknown>): Promise<unknown> =>
    writes.run(async () => {
      try {
        await fn();
        deps.metrics.routeOperations.inc({ op: name, outcome: "ok" });
        return undefined;
      } catch (err) {
        deps.metrics.routeOperations.inc({ op: name, outcome: "error" });
        return err;
      }
    });
  const deleteErrors = await Promise.all(toDelete.map((r) => op("delete", () => routes.delete(r))));
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
        routes.create({
          destinationCIDR: cidr,
          targetInstanceID: w.instanceID,
          tags: routeOwnerTags(key.cluster),
        }),
      );
      if (err === undefined) ok.add(cidr);
      else if (err instanceof CloudError && /already exists/i.test(err.message))
        return; // listed next round
      else {
        failed.add(cidr);
        deps.logger.warn({ cidr, node: w.node.name, err: errorMessage(err) }, "route create failed");
        events.push(routeEvent(w.node, `Could not create route ${cidr}: ${errorMessage(err)}`));
      }
    }),
  );
  return { ...rearm, events, nodes: conditionPatches(key.cluster, view.nodes.values(), ok, failed, deps) };
}

/** NetworkUnavailable False once all of a node's routes exist, True when one failed. */
function conditionPatches(
  cluster: string,
  nodes: Iterable<Readonly<Node>>,
  ok: ReadonlySet<string>,
  failed: ReadonlySet<string>,
  deps: RouteDeps,
): NodeDesired[] {
  const out: NodeDesired[] = [];
  for (const node of nodes) {
    if (node.podCidrs.length === 0 || node.providerId === "" || node.deletionTimestamp !== undefined)
      continue;
    const cidrs = node.podCidrs.map(canonical);
    let status: "True" | "False" | undefined;
    if (cidrs.every((c) => ok.has(c))) status = "False";
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
