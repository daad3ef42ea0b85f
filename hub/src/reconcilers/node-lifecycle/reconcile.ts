import type { Node, NodeDesired } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import { errorMessage, InstanceNotFoundError } from "../../cloud/errors.js";
import type { InstanceMetadata } from "../../cloud/provider.js";
import type { ClusterCloud } from "../../cloud/scope.js";
import type { VerifiedInstances } from "../../cloud/verified-instances.js";
import type { FleetState } from "../../fleet/state.js";
import { EVENT_SOURCE, TAINT_SHUTDOWN } from "../../k8s/well-known.js";
import type { HubMetrics } from "../../metrics.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Clock } from "../../util/clock.js";
import type { ConvergenceTracker } from "../convergence.js";
import { nodeDesired } from "../desired.js";
import { nodeEvent } from "../node-init/events.js";
import { after, DONE, type Outcome } from "../outcome.js";
import { retryOutcome } from "../retry-policy.js";
import type { DeletionBudget, DeletionPolicy, NotFoundEvidence } from "./safety.js";

export const NODE_LIFECYCLE = "node-lifecycle";
/** One key per cluster that, every monitor period, enqueues the nodes to check. */
export const NODE_LIFECYCLE_SCAN = "node-lifecycle-scan";

/** Annotation an operator sets on a Node to let its deletion through the blast-radius limit. */
export const ANNOTATION_CONFIRM_DELETION = "lifecycle.fleet-ccm.io/confirm-deletion";

export const REASON_DELETING_NODE = "DeletingNode";
const EXPECT_TAINTED = "shutdown-taint";
const EXPECT_UNTAINTED = "no-shutdown-taint";
export const REASON_DELETION_LIMITED = "NodeDeletionLimitExceeded";

export interface LifecycleDeps {
  readonly fleet: FleetState;
  cloudFor(cluster: string): ClusterCloud | undefined;
  readonly tracker: ConvergenceTracker;
  readonly verified: VerifiedInstances;
  readonly evidence: NotFoundEvidence;
  readonly budget: DeletionBudget;
  readonly policy: DeletionPolicy;
  readonly metrics: HubMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Aborted on hub shutdown. */
  readonly signal?: AbortSignal;
}

export function readyStatus(node: Readonly<Node>): string {
  return node.conditions.find((c) => c.type === "Ready")?.status ?? "Unknown";
}

export function hasShutdownTaint(node: Readonly<Node>): boolean {
  return node.taints.some((t) => t.key === TAINT_SHUTDOWN && t.effect === "NoSchedule");
}

/** Nodes the monitor looks at this period. */
export function needsLifecycleCheck(node: Readonly<Node>): boolean {
  return readyStatus(node) !== "True" || hasShutdownTaint(node);
}

function lifecycleEvent(node: Readonly<Node>, type: "Normal" | "Warning", reason: string, message: string) {
  return { ...nodeEvent(node, type, reason, message), sourceComponent: EVENT_SOURCE.cloudNodeLifecycle };
}

function taintPatch(node: Readonly<Node>, generation: number, add: boolean): NodeDesired {
  return add
    ? nodeDesired(node, generation, { addTaints: [{ key: TAINT_SHUTDOWN, value: "", effect: "NoSchedule" }] })
    : nodeDesired(node, generation, { removeTaintKeys: [TAINT_SHUTDOWN] });
}

/**
 * The cloud node lifecycle controller for one node, with the safety upstream lacks: a node is
 * deleted only on consecutive direct "not found" answers over a minimum time, within a
 * per-cluster blast-radius budget; errors and suspect answers never count.
 */
export async function reconcileNodeLifecycle(key: WorkKey, deps: LifecycleDeps): Promise<Outcome> {
  const view = deps.fleet.view(key.cluster);
  // A disconnected cluster's view may be stale: a key queued before the disconnect judges nothing.
  if (view === undefined || !view.synced || !view.connected) return DONE;
  const k = keyOf(key);
  const node = view.nodes.get(key.name);
  if (node === undefined || node.deletionTimestamp !== undefined) {
    deps.evidence.forget(k);
    return DONE;
  }
  // A patch is in flight: wait for the report, unless it already shows the patch.
  const inflight = deps.tracker.get(k);
  if (inflight !== undefined && inflight.uid === node.uid) {
    const met =
      inflight.expectation === EXPECT_TAINTED
        ? hasShutdownTaint(node)
        : inflight.expectation === EXPECT_UNTAINTED && !hasShutdownTaint(node);
    if (met) deps.tracker.clear(k);
    else if (inflight.deadlineMs > deps.clock.now()) return after(inflight.deadlineMs - deps.clock.now());
  }
  const publish = (d: NodeDesired, events: ReturnType<typeof lifecycleEvent>[] = []): Outcome => ({
    nodes: [d],
    events,
    requeue: { kind: "done" },
  });

  if (readyStatus(node) === "True") {
    deps.evidence.found(k);
    // Upstream removes the shutdown taint once the node is Ready again.
    if (hasShutdownTaint(node))
      return publish(taintPatch(node, deps.tracker.record(k, node.uid, EXPECT_UNTAINTED).generation, false));
    return DONE;
  }
  // Identity is the providerID: a node without one is never judged.
  const cloud = deps.cloudFor(key.cluster);
  if (node.providerId === "" || cloud === undefined) return DONE;
  if (cloud.provider.instances.parseProviderID(node.providerId) === undefined) return DONE;

  let meta: InstanceMetadata | undefined;
  try {
    meta = await cloud.provider.instances.getByProviderID(node.providerId, deps.signal);
    if (meta.providerID !== node.providerId)
      throw new Error(`lookup of ${node.providerId} returned ${meta.providerID}`);
  } catch (err) {
    if (!(err instanceof InstanceNotFoundError)) {
      deps.metrics.lifecycleChecks.inc({ outcome: "error" });
      deps.logger.debug({ node: node.name, err: errorMessage(err) }, "lifecycle check inconclusive");
      // The monitor period is this controller's retry; a Retry-After the cloud gave is kept.
      return retryOutcome(err, {}, { otherwise: "done" });
    }
    meta = undefined;
  }

  if (meta !== undefined && meta.state !== "terminated") {
    deps.metrics.lifecycleChecks.inc({ outcome: "exists" });
    deps.evidence.found(k);
    const verdict = deps.verified.record(key.cluster, cloud, meta);
    if (!verdict.ok) return DONE;
    const shutdown = meta.state === "stopped" || meta.state === "stopping";
    if (shutdown && !hasShutdownTaint(node))
      return publish(taintPatch(node, deps.tracker.record(k, node.uid, EXPECT_TAINTED).generation, true));
    if (meta.state === "running" && hasShutdownTaint(node))
      return publish(taintPatch(node, deps.tracker.record(k, node.uid, EXPECT_UNTAINTED).generation, false));
    return DONE;
  }

  deps.metrics.lifecycleChecks.inc({ outcome: "not-found" });
  const ev = deps.evidence.notFound(k, node.uid, deps.policy);
  if (!ev.confirmed) return DONE;
  const confirmedByOperator = node.annotations[ANNOTATION_CONFIRM_DELETION] === "true";
  if (confirmedByOperator) deps.budget.consumeConfirmed(key.cluster, deps.policy);
  else if (!deps.budget.tryConsume(key.cluster, view.nodes.size, deps.policy)) {
    deps.metrics.lifecycleDeletionsBlocked.inc();
    const limit = deps.budget.limit(view.nodes.size, deps.policy);
    return {
      events: [
        lifecycleEvent(
          node,
          "Warning",
          REASON_DELETION_LIMITED,
          `Not deleting node ${node.name}: ${limit} node deletions in this cluster within ${Math.round(deps.policy.blastRadius.windowMs / 1000)} s is the limit. Annotate the node ${ANNOTATION_CONFIRM_DELETION}=true to confirm, or wait for the window to pass.`,
        ),
      ],
      requeue: { kind: "done" },
    };
  }
  deps.metrics.lifecycleDeletions.inc();
  deps.evidence.forget(k);
  const deletion = deps.tracker.record(k, node.uid, "deleted");
  return publish(nodeDesired(node, deletion.generation, { delete: true }), [
    lifecycleEvent(
      node,
      "Normal",
      REASON_DELETING_NODE,
      `Deleting node ${node.name} because it does not exist in the cloud provider`,
    ),
  ]);
}
