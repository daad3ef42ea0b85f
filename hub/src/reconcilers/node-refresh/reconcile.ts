import type { NodeDesired } from "@fleet-ccm/proto";
import { errorMessage } from "../../cloud/errors.js";
import type { InstanceMetadata } from "../../cloud/provider.js";
import type { WorkKey } from "../../queue/index.js";
import { sameAddresses } from "../../util/same.js";
import { Turns } from "../../util/turns.js";
import type { ControllerContext } from "../controller.js";
import { nodeDesired } from "../desired.js";
import { InitError, initFields, needsInit } from "../node-init/predicates.js";
import { after, type Outcome } from "../outcome.js";

/** One key per cluster, re-armed every refresh period. */
export const NODE_REFRESH = "node-refresh";

const turns = new Turns();

/**
 * The instance each node was last found to agree with. The view's node objects are replaced on
 * every update and an instance refresh keeps the objects of unchanged instances, so the same
 * pair agrees again: an idle cluster's refresh skips the comparison and its garbage.
 */
const agreed = new WeakMap<object, InstanceMetadata>();

export type RefreshDeps = Pick<
  ControllerContext,
  "fleet" | "cloudFor" | "cacheFor" | "verified" | "tracker" | "logger"
> & {
  readonly periodMs: number;
};

/**
 * Upstream's UpdateNodeStatus for every initialized node of a cluster, served from the
 * account-level instance view: addresses (and the topology labels) follow the cloud. A node
 * missing from the view is skipped, never judged.
 */
export async function reconcileNodeRefresh(key: WorkKey, deps: RefreshDeps): Promise<Outcome> {
  const rearm = after(deps.periodMs);
  const view = deps.fleet.view(key.cluster);
  const cloud = deps.cloudFor(key.cluster);
  const cache = deps.cacheFor(key.cluster);
  if (view === undefined || !view.synced || !view.connected || cloud === undefined || cache === undefined)
    return rearm;
  try {
    await cache.fresh();
  } catch (err) {
    deps.logger.warn({ err: errorMessage(err) }, "instance refresh failed");
    return rearm;
  }
  // Every cluster of the account resumes when one listing ends: each walks its nodes in a turn
  // of its own (25,000 nodes in one burst kept the hub from its sockets), on its view as it is then.
  await turns.next();
  const now = deps.fleet.view(key.cluster);
  if (now === undefined || !now.synced || !now.connected) return rearm;
  const nodes: NodeDesired[] = [];
  for (const node of now.nodes.values()) {
    if (node.providerId === "" || needsInit(node) || node.deletionTimestamp !== undefined) continue;
    const meta = cache.get(node.providerId);
    if (meta === undefined || meta.state === "terminated") continue;
    if (!deps.verified.record(key.cluster, cloud, meta).ok) continue;
    if (agreed.get(node) === meta) continue;
    let fields: ReturnType<typeof initFields>;
    try {
      fields = initFields(node, meta);
    } catch (err) {
      if (err instanceof InitError) continue;
      throw err;
    }
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(fields.labels)) if (node.labels[k] !== v) labels[k] = v;
    const addresses =
      fields.addresses !== undefined && !sameAddresses(node.addresses, fields.addresses)
        ? fields.addresses
        : undefined;
    if (addresses === undefined && Object.keys(labels).length === 0) {
      agreed.set(node, meta);
      continue;
    }
    // Periodic and level-based: not tracked; a lost patch is simply published next period.
    nodes.push(
      nodeDesired(node, deps.tracker.nextGeneration(), {
        labels,
        addresses: addresses === undefined ? undefined : { items: [...addresses] },
      }),
    );
  }
  return nodes.length === 0 ? rearm : { ...rearm, nodes };
}
