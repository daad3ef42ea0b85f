import type { Node, NodeDesired } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import {
  errorMessage,
  ForbiddenError,
  InstanceNotFoundError,
  NotImplementedError,
  SuspectAnswerError,
  ThrottledError,
} from "../../cloud/errors.js";
import type { InstanceLookups } from "../../cloud/instance-lookups.js";
import type { InstanceMetadata } from "../../cloud/provider.js";
import { type ClusterCloud, outOfScope, resolveByName } from "../../cloud/scope.js";
import type { VerifiedInstances } from "../../cloud/verified-instances.js";
import type { FleetState } from "../../fleet/state.js";
import { TAINT_UNINITIALIZED } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Clock } from "../../util/clock.js";
import type { ConvergenceTracker } from "../convergence.js";
import { nodeDesired } from "../desired.js";
import type { FailureSummary } from "../failure-summary.js";
import { after, backoff, DONE, type Outcome } from "../outcome.js";
import { retryOutcome } from "../retry-policy.js";
import {
  nodeEvent,
  REASON_AMBIGUOUS_NAME,
  REASON_INIT_FAILED,
  REASON_INSTANCE_NOT_FOUND,
  REASON_OUT_OF_SCOPE,
  syncedEvent,
} from "./events.js";
import { InitError, initFields, needsInit } from "./predicates.js";
import type { NodeInitProgress } from "./progress.js";
import type { SyncedEvidence } from "./synced.js";

export const NODE_INIT = "node-init";

export interface NodeInitDeps {
  readonly fleet: FleetState;
  cloudFor(cluster: string): ClusterCloud | undefined;
  /** Coalesced lookups (a join storm is answered by one list); direct lookups when absent. */
  lookupsFor?(cluster: string): InstanceLookups | undefined;
  readonly tracker: ConvergenceTracker;
  readonly verified: VerifiedInstances;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Initialized nodes owed their Synced Event beyond the ones whose patch this hub saw converge. */
  readonly synced?: SyncedEvidence;
  /** Transient lookup failures, logged as a summary (one key fails many times while it backs off). */
  readonly failures?: FailureSummary;
  /** Told when an initialization is published, with the time its cloud lookup took. */
  onPublished?(key: string, cloudMs: number): void;
  /** Where a node's first publication is marked as its cluster's progress. */
  readonly progress?: NodeInitProgress;
}

/**
 * The cloud node controller's syncNode for one node of one cluster: look the
 * instance up, and publish providerID, labels, addresses and the taint
 * removal as one desired patch. The taint goes only when everything else is
 * known; every failure leaves it and backs off.
 */
export async function reconcileNodeInit(key: WorkKey, deps: NodeInitDeps): Promise<Outcome> {
  const view = deps.fleet.view(key.cluster);
  // Never judge from a partial view: wait for the agent's full snapshot.
  if (view === undefined || !view.synced) return DONE;
  const k = keyOf(key);
  const node = view.nodes.get(key.name);
  if (node === undefined || node.deletionTimestamp !== undefined) {
    deps.tracker.clear(k);
    return DONE;
  }
  if (!needsInit(node)) {
    // The report shows the patch landed: the loop is closed.
    const was = deps.tracker.get(k);
    deps.tracker.clear(k);
    const owed = deps.synced?.take(key.cluster, node) ?? false;
    return owed || (was !== undefined && was.uid === node.uid)
      ? { events: [syncedEvent(node)], requeue: { kind: "done" } }
      : DONE;
  }
  const pending = deps.tracker.pending(k, node.uid);
  if (pending !== undefined) return after(pending.deadlineMs - deps.clock.now());

  const cloud = deps.cloudFor(key.cluster);
  if (cloud === undefined) return backoff(new Error(`cluster ${key.cluster} has no cloud account bound`));

  let meta: InstanceMetadata;
  let cloudMs = 0;
  try {
    const started = deps.clock.now();
    meta = await lookup(node, cloud, deps.lookupsFor?.(key.cluster));
    cloudMs = deps.clock.now() - started;
  } catch (err) {
    return lookupFailed(k, node, err, deps);
  }
  deps.failures?.ok(k);
  const verdict = deps.verified.record(key.cluster, cloud, meta);
  if (!verdict.ok)
    return backoff(new Error(verdict.reason), {
      events: [
        nodeEvent(node, "Warning", REASON_OUT_OF_SCOPE, `Refusing to initialize node: ${verdict.reason}`),
      ],
    });

  let desired: NodeDesired;
  try {
    const fields = initFields(node, meta);
    const inflight = deps.tracker.record(k, node.uid);
    desired = nodeDesired(node, inflight.generation, {
      providerId: fields.providerID,
      labels: { ...fields.labels },
      addresses: fields.addresses === undefined ? undefined : { items: [...fields.addresses] },
      removeTaintKeys: [TAINT_UNINITIALIZED],
    });
    deps.onPublished?.(k, cloudMs);
    if (inflight.attempts === 1) deps.progress?.published(key.cluster, key.name, inflight.publishedAtMs);
    return after(inflight.deadlineMs - inflight.publishedAtMs, { nodes: [desired] });
  } catch (err) {
    if (!(err instanceof InitError)) throw err;
    return backoff(err, { events: [nodeEvent(node, "Warning", REASON_INIT_FAILED, err.message)] });
  }
}

async function lookup(
  node: Readonly<Node>,
  cloud: ClusterCloud,
  lookups: InstanceLookups | undefined,
): Promise<InstanceMetadata> {
  const instances = cloud.provider.instances;
  if (node.providerId === "") {
    // Names are not identities: the one live instance of that name inside this cluster's scope.
    const inScope = (m: InstanceMetadata) => m.state !== "terminated" && outOfScope(m, cloud) === null;
    const matches = await (lookups ? lookups.byName(node.name, inScope) : instances.findByName(node.name));
    const found = resolveByName(node.name, matches, cloud);
    if (found.kind === "found") return found.meta;
    throw new NameLookupError(found.kind, found.message);
  }
  if (instances.parseProviderID(node.providerId) === undefined)
    throw new ForbiddenError(`providerID ${node.providerId} does not belong to this cluster's cloud account`);
  const meta = await (lookups
    ? lookups.byProviderID(node.providerId)
    : instances.getByProviderID(node.providerId));
  if (meta.providerID !== node.providerId)
    throw new SuspectAnswerError(`lookup of ${node.providerId} returned ${meta.providerID}`);
  return meta;
}

/** A lookup by name that found no single instance of that name in the cluster's scope. */
class NameLookupError extends Error {
  override name = "NameLookupError";
  constructor(
    readonly kind: "not-found" | "ambiguous" | "out-of-scope",
    message: string,
  ) {
    super(message);
  }
}

const NAME_LOOKUP_REASON = {
  "not-found": REASON_INSTANCE_NOT_FOUND,
  ambiguous: REASON_AMBIGUOUS_NAME,
  "out-of-scope": REASON_OUT_OF_SCOPE,
} as const;

function lookupFailed(k: string, node: Readonly<Node>, err: unknown, deps: NodeInitDeps): Outcome {
  if (err instanceof ThrottledError && err.retryAfterMs !== undefined) return retryOutcome(err);
  // Answers, not failures: the node says what was found; the queue backs off; no log line per try.
  const answer = (reason: string, message: string): Outcome => {
    deps.failures?.ok(k);
    return retryOutcome(err, { events: [nodeEvent(node, "Warning", reason, message)] });
  };
  if (err instanceof NameLookupError)
    return answer(
      NAME_LOOKUP_REASON[err.kind],
      `Cannot initialize node ${node.name}: ${err.message}; the node stays uninitialized`,
    );
  if (err instanceof InstanceNotFoundError)
    return answer(
      REASON_INSTANCE_NOT_FOUND,
      `Instance for node ${node.name} not found in the cloud (looked up by providerID ${node.providerId}); the node stays uninitialized`,
    );
  if (err instanceof ForbiddenError || err instanceof NotImplementedError)
    return answer(REASON_OUT_OF_SCOPE, `Cannot initialize node: ${errorMessage(err)}`);
  // Transient: timeouts, 5xx, throttling, suspect answers change nothing in the cluster.
  if (deps.failures !== undefined) deps.failures.failed(k, errorMessage(err));
  else deps.logger.debug({ node: node.name, err: errorMessage(err) }, "instance lookup failed; will retry");
  return retryOutcome(err);
}
