import type { ClusterEvent, LoadBalancerIngress, Node, Service } from "@fleet-ccm/proto";
import {
  errorMessage,
  ImplementedElsewhereError,
  isRetryable,
  NeedsEnsureError,
} from "../../cloud/errors.js";
import type { InstanceCache } from "../../cloud/instance-cache.js";
import { backendsDigest, loadBalancerSpecDigest } from "../../cloud/naming.js";
import {
  type BackendAnnotations,
  isInProgress,
  type LoadBalancerSpec,
  type LoadBalancers,
  type OwnedLoadBalancer,
  type ServiceTarget,
} from "../../cloud/provider.js";
import type { ClusterCloud } from "../../cloud/scope.js";
import { serializedWrite } from "../../cloud/serialized-write.js";
import type { VerifiedInstances } from "../../cloud/verified-instances.js";
import type { ClusterView } from "../../fleet/state.js";
import type { LabelSelector } from "../../k8s/label-selector.js";
import { FINALIZER_LB_CLEANUP } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { ControllerContext } from "../controller.js";
import { serviceDesired } from "../desired.js";
import { nodeEvent } from "../node-init/events.js";
import { needsInit } from "../node-init/predicates.js";
import { after, backoff, DONE, type Outcome } from "../outcome.js";
import { retryOutcome } from "../retry-policy.js";
import { AnnotationError, parseLbAnnotations } from "./annotations.js";
import { REASON, serviceEvent } from "./events.js";
import { builtPorts, nodePortRefusal, portsWithoutNodePort, skippedPortsMessage } from "./node-ports.js";
import {
  backendAnnotationsOf,
  backendSubset,
  decommissionPending,
  hasFinalizer,
  ingressEqual,
  isAvailableNode,
  isEligibleBackend,
  loadBalancerSpec,
  needsCleanup,
  serviceHints,
  sourceRanges,
  specKey,
  toWireIngress,
  vendorNodeAnnotations,
  wantsLoadBalancer,
} from "./predicates.js";
import { quotaRefusal } from "./quotas.js";

export const SERVICE = "service";
/** One key per cluster: a node set change re-syncs the backends of every load balancer of the cluster. */
export const SERVICE_NODES = "service-nodes";

/** What the hub last made true in the cloud for one Service (memory only; a restart re-ensures). */
export interface EnsuredRecord {
  readonly uid: string;
  readonly specKey: string;
  /** BackendSet.key of the backends last written. */
  readonly backendsKey: string;
  /** When (deps.clock): an account listing older than this cannot vouch for it. */
  readonly atMs?: number;
  /** What the ensure gave the Service (absent when adopted from a listing): published again, not re-ensured, while the report lags. */
  readonly published?: Published;
}

/** Instance ids of a cluster's eligible, verified nodes, sorted, with a key to compare sets cheaply. */
export interface BackendSet {
  readonly ids: readonly string[];
  /** The backends' nodes' vendor annotations (LoadBalancerSpec.backendAnnotations). */
  readonly annotations?: BackendAnnotations;
  /** Changes when the ids or their annotations do. */
  readonly key: string;
  /** Nodes refused (out of scope): Events, emitted once per computation. */
  readonly events: readonly ClusterEvent[];
  /** Instance ids of eligible nodes whose instance was refused (never kept as backends). */
  readonly refused?: ReadonlySet<string>;
  /** Each backend's node labels, for a provider's nodeSelector. */
  readonly labels?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Available nodes node-init has yet to give a providerID: backends about to join the set. */
  readonly initializing?: number;
}

export type ServiceDeps = Pick<
  ControllerContext,
  | "fleet"
  | "cloudFor"
  | "cacheFor"
  | "tracker"
  | "verified"
  | "logger"
  | "clock"
  | "signal"
  | "decommissioning"
> & {
  readonly ensured: Map<string, EnsuredRecord>;
  /** The cluster's verified backend set, computed once per node-set change and shared by its Services. */
  backendsFor(cluster: string, view: ClusterView, cloud: ClusterCloud): Promise<BackendSet>;
  /** spec.loadBalancerClass this hub also owns (besides none). */
  readonly loadBalancerClass: string | undefined;
  /** Instance ids of nodes this hub saw leave the backend set (deleted, excluded, replaced). */
  departed?(cluster: string): ReadonlySet<string>;
  /**
   * Services whose load-balancer operation the cloud is still carrying out (the provider
   * answered InProgress): their polls repeat no Event. Absent: every poll emits its Event.
   */
  readonly pending?: Map<string, "ensure" | "update" | "delete">;
  /**
   * Services whose annotations were refused, with the Service uid and the refusal: the same
   * refusal again (a re-sync of an unchanged Service) emits no second Event. Absent: every one does.
   */
  readonly refused?: Map<string, string>;
  /**
   * The Service's load balancer in the account-wide listing of owned ones (shared by every
   * Service of the account; undefined when not listed or the provider has no listing), with
   * when it was listed. Lets a restarted hub skip the ensure of a load balancer that is current.
   */
  listed?(cluster: string, serviceUid: string): Promise<{ lb: OwnedLoadBalancer; atMs: number } | undefined>;
  /** Services whose first ensure waits for the cluster's initializing nodes, since when. Absent: none waits. */
  readonly waitingForNodes?: Map<string, number>;
  /** When a node of the cluster last got its providerID: seen in a report, or published by node-init. */
  nodeInitializedAtMs?(cluster: string): number | undefined;
};

/**
 * A Service's first ensure waits for the cluster's nodes that are being initialized while they
 * keep being initialized (node-init published a providerID, or a report showed one, in the last
 * NODE_INIT_WAIT_MS), at most NODE_INIT_WAIT_MAX_MS: built before them, its load balancer is
 * updated again as each batch of them joins (a cluster and its Services created together, a
 * storm that takes the fleet tens of seconds). A cluster with no node at all yet is taken for
 * one whose nodes are about to register (Services applied before the kubelets join). A node
 * that never initializes (no instance), or a cluster that stays without nodes, delays a new
 * Service by NODE_INIT_WAIT_MS, no more.
 */
export const NODE_INIT_WAIT_MS = 10_000;
export const NODE_INIT_WAIT_MAX_MS = 60_000;

const EXPECT_FINALIZER = "finalizer";
const EXPECT_NO_FINALIZER = "no-finalizer";
/** Neither our finalizer nor an ingress (a deletion that also cleared status.loadBalancer). */
const EXPECT_CLEARED = "cleared";
/** An ingress and the vendor CCM's annotations set with it (Published, as JSON). */
const EXPECT_PUBLISHED = "published:";

/** Whether the Service, as last reported, shows what was published. */
function expectationMet(expectation: string, svc: Readonly<Service>): boolean {
  if (expectation === EXPECT_FINALIZER) return hasFinalizer(svc);
  if (expectation === EXPECT_NO_FINALIZER) return !hasFinalizer(svc);
  if (expectation === EXPECT_CLEARED) return !hasFinalizer(svc) && svc.ingress.length === 0;
  if (expectation.startsWith(EXPECT_PUBLISHED)) {
    return shows(svc, JSON.parse(expectation.slice(EXPECT_PUBLISHED.length)) as Published);
  }
  return false;
}

function shows(svc: Readonly<Service>, p: Published): boolean {
  return (
    ingressEqual(svc.ingress, p.ingress) &&
    Object.entries(p.annotations).every(([key, value]) => svc.annotations[key] === value)
  );
}

/**
 * The service controller's syncService for one Service of one cluster: finalizer first, then
 * the load balancer with every sub-resource, then status.loadBalancer.ingress; on deletion or a
 * type change, every cloud resource, then the finalizer.
 */
export async function reconcileService(key: WorkKey, deps: ServiceDeps): Promise<Outcome> {
  const view = deps.fleet.view(key.cluster);
  if (view === undefined || !view.synced) return DONE;
  const k = keyOf(key);
  const svc = view.services.get(key.name);
  if (svc === undefined) {
    // Gone from the cluster. With our finalizer that only happens after cleanup.
    deps.tracker.clear(k);
    deps.ensured.delete(k);
    deps.pending?.delete(k);
    deps.refused?.delete(k);
    deps.waitingForNodes?.delete(k);
    return DONE;
  }
  const cloud = deps.cloudFor(key.cluster);
  const lbs = cloud?.provider.loadBalancers;
  // A cluster leaving the hub: every load balancer goes, then the finalizer and ingress; nothing
  // is ensured (a vendor CCM or nothing takes over).
  const leaving = deps.decommissioning?.(key.cluster) === true;
  const cleanup = leaving
    ? decommissionPending(svc, deps.loadBalancerClass)
    : needsCleanup(svc, deps.loadBalancerClass);
  if (!cleanup && (leaving || !wantsLoadBalancer(svc, deps.loadBalancerClass))) {
    deps.ensured.delete(k);
    return DONE;
  }
  // A finalizer or status patch is in flight: wait for the report instead of acting twice,
  // unless the report already shows it (or, past the deadline, while the agent has it queued).
  const inflight = deps.tracker.get(k);
  if (inflight !== undefined && inflight.uid === svc.uid) {
    if (expectationMet(inflight.expectation, svc)) deps.tracker.clear(k);
    else {
      const waiting = deps.tracker.pending(k, svc.uid);
      if (waiting !== undefined) return after(waiting.deadlineMs - deps.clock.now());
    }
  }
  if (cloud === undefined || lbs === undefined) {
    const why =
      cloud === undefined
        ? "no cloud account is bound to this cluster"
        : `provider ${cloud.provider.name} has no load balancers`;
    return backoff(new Error(why), {
      events: [serviceEvent(svc, "Warning", REASON.syncFailed, `Error syncing load balancer: ${why}`)],
    });
  }
  const owner: ServiceTarget = { ...cloud.target, serviceUid: svc.uid };
  if (cleanup) return deleteLoadBalancer(k, svc, cloud, lbs, owner, deps);

  if (!hasFinalizer(svc)) {
    // Before anything exists in the cloud, so a deletion can never leak it.
    const published = deps.tracker.record(k, svc.uid, EXPECT_FINALIZER);
    return after(published.deadlineMs - published.publishedAtMs, {
      services: [serviceDesired(svc, published.generation, { addFinalizers: [FINALIZER_LB_CLEANUP] })],
    });
  }

  let spec: LoadBalancerSpec;
  let backends: BackendSet;
  let noNodePort: ReturnType<typeof portsWithoutNodePort> = [];
  const events: ClusterEvent[] = [];
  try {
    // Every annotation, unified and the provider's own, before any cloud call for the Service.
    const settings = parseLbAnnotations(svc.annotations, cloud.lbSettings, {
      provider: cloud.provider.name,
      bounds: lbs.capabilities.settingBounds ?? {},
    });
    lbs.checkAnnotations?.(svc.annotations);
    // The source ranges annotation too (loadBalancerSpec reads them again below).
    sourceRanges(svc);
    noNodePort = portsWithoutNodePort(svc, settings, lbs.capabilities);
    const unreachable = nodePortRefusal(svc, noNodePort, cloud.provider.name);
    if (unreachable !== undefined)
      return refuse(k, svc, `Error syncing load balancer: ${unreachable}`, deps, events, () =>
        deps.logger.warn({ service: key.name }, "service without node ports"),
      );
    // Quotas count what is built: not the ports left out.
    const overQuota = quotaRefusal(builtPorts(svc, noNodePort), lbs.capabilities, cloud.provider.name);
    if (overQuota !== undefined)
      return refuse(k, svc, `Error syncing load balancer: ${overQuota}`, deps, events, () =>
        deps.logger.warn({ service: key.name, err: overQuota }, "service beyond the provider's quota"),
      );
    deps.refused?.delete(k);
    const selector = lbs.nodeSelector?.(svc.annotations);
    backends = await deps.backendsFor(key.cluster, view, cloud);
    events.push(...backends.events);
    const waitMs = waitForNodes(k, key.cluster, svc, backends, view.nodes.size === 0, deps);
    if (waitMs > 0) return after(waitMs, { events });
    if (backends.ids.length === 0)
      backends = await keepUnseenBackends(key.cluster, svc, lbs, owner, backends, deps, events);
    if (selector !== undefined) backends = selectedBackends(backends, selector);
    const max = lbs.capabilities.maxBackends;
    if (max !== undefined && backends.ids.length > max) {
      if (svc.externalTrafficPolicy === "Local")
        events.push(
          serviceEvent(
            svc,
            "Warning",
            REASON.syncFailed,
            `${backends.ids.length} eligible nodes exceed the provider's ${max} backends per load balancer; with externalTrafficPolicy Local only ${max} nodes receive traffic`,
          ),
        );
      backends = backendSet(backendSubset(backends.ids, svc.uid, max), backends.annotations);
    }
    spec = loadBalancerSpec(builtPorts(svc, noNodePort), settings, backends.ids, backends.annotations);
    if (noNodePort.length > 0)
      events.push(
        serviceEvent(
          svc,
          "Warning",
          REASON.portsSkipped,
          skippedPortsMessage(noNodePort, cloud.provider.name),
        ),
      );
  } catch (err) {
    if (err instanceof AnnotationError) return invalidAnnotation(k, key, svc, err, deps, events);
    return retryOutcome(err, { events });
  }
  if (spec.sessionAffinity === "ClientIP" && !lbs.capabilities.sessionAffinity) {
    events.push(
      serviceEvent(
        svc,
        "Warning",
        REASON.syncFailed,
        `sessionAffinity ClientIP is not supported by provider ${cloud.provider.name}; ignored`,
      ),
    );
    spec = { ...spec, sessionAffinity: "None" };
  }
  // Upstream warns when the node list its predicates leave is empty, not when no backend has an
  // instance yet: nodes registered but not initialized (no providerID) are available nodes.
  let available = false;
  for (const n of view.nodes.values())
    if (isAvailableNode(n)) {
      available = true;
      break;
    }
  if (!available)
    events.push(
      serviceEvent(svc, "Warning", REASON.unavailable, "There are no available nodes for LoadBalancer"),
    );

  const last =
    deps.ensured.get(k) ??
    (await adoptListed(
      k,
      key.cluster,
      svc,
      spec,
      backends,
      lbs.capabilities.ingressIpWithHostname === true,
      deps,
    ));
  const sameSpec = last !== undefined && last.uid === svc.uid && last.specKey === specKey(spec);
  // The cloud is as this hub made it: what the Service lacks is only the report of the ingress
  // (the agent is slow, or the patch was lost), which is published again; no cloud call.
  const shown = last?.published === undefined || shows(svc, last.published);
  if (sameSpec && (svc.ingress.length > 0 || !shown)) {
    if (last.backendsKey === backends.key) {
      if (!shown && last.published !== undefined) return publish(k, svc, last.published, deps, events);
      return events.length > 0 ? { events, requeue: { kind: "done" } } : DONE;
    }
    try {
      const answer = await serializedWrite(cloud, lbs.lockKey?.(owner), () =>
        lbs.updateBackends(owner, spec.backends, deps.signal, spec.backendAnnotations),
      );
      if (isInProgress(answer)) {
        deps.pending?.set(k, "update");
        return retryOutcome(answer, { events });
      }
      deps.pending?.delete(k);
      deps.ensured.set(k, { ...last, backendsKey: backends.key, atMs: deps.clock.now() });
      if (available)
        events.push(serviceEvent(svc, "Normal", REASON.updated, "Updated load balancer with new hosts"));
      if (!shown && last.published !== undefined) return publish(k, svc, last.published, deps, events);
      return { events, requeue: { kind: "done" } };
    } catch (err) {
      if (!(err instanceof NeedsEnsureError)) {
        events.push(
          serviceEvent(
            svc,
            "Warning",
            REASON.updateFailed,
            `Error updating load balancer with new hosts: ${errorMessage(err)}`,
          ),
        );
        if (!isRetryable(err)) deps.verified.forgetCluster(key.cluster);
        return retryOutcome(err, { events });
      }
      // Only a whole ensure can apply this change: it runs below, in this pass.
      deps.logger.info({ service: key.name, reason: err.message }, "backend update needs an ensure");
      deps.ensured.delete(k);
    }
  }

  // A poll of an operation in progress is the same sync going on: no second Event.
  if (deps.pending?.get(k) !== "ensure")
    events.push(serviceEvent(svc, "Normal", REASON.ensuring, "Ensuring load balancer"));
  let ingress: ReturnType<typeof toWireIngress>;
  const annotated = new Map<string, string>();
  try {
    const answer = await serializedWrite(cloud, lbs.lockKey?.(owner), () =>
      lbs.ensure(owner, spec, deps.signal, {
        ...serviceHints(svc),
        warn: (reason, message) => events.push(serviceEvent(svc, "Warning", reason, message)),
        annotate: (key, value) => annotated.set(key, value),
      }),
    );
    if (isInProgress(answer)) {
      // Not a failure: the Service stays as it is (no ingress yet) until the cloud is done.
      deps.pending?.set(k, "ensure");
      deps.logger.debug({ service: key.name, retryAfterMs: answer.retryAfterMs }, answer.message);
      return retryOutcome(answer, { events });
    }
    ingress = toWireIngress(answer, lbs.capabilities.ingressIpWithHostname === true);
  } catch (err) {
    deps.pending?.delete(k);
    // As upstream: no change, no failure; the other controller reports on the Service.
    if (err instanceof ImplementedElsewhereError) return { events, requeue: { kind: "done" } };
    // A provider reading an annotation checkAnnotations did not: permanent all the same.
    if (err instanceof AnnotationError) return invalidAnnotation(k, key, svc, err, deps, events);
    events.push(
      serviceEvent(svc, "Warning", REASON.syncFailed, `Error syncing load balancer: ${errorMessage(err)}`),
    );
    // A backend may have gone since it was verified: look every node up again next time.
    if (!isRetryable(err)) deps.verified.forgetCluster(key.cluster);
    return retryOutcome(err, { events });
  }
  deps.pending?.delete(k);
  events.push(serviceEvent(svc, "Normal", REASON.ensured, "Ensured load balancer"));
  const annotations = annotationsToSet(svc, annotated, lbs.capabilities.serviceAnnotationKeys, deps);
  const published: Published = { ingress, annotations };
  deps.ensured.set(k, {
    uid: svc.uid,
    specKey: specKey(spec),
    backendsKey: backends.key,
    atMs: deps.clock.now(),
    published,
  });
  if (ingressEqual(svc.ingress, ingress) && Object.keys(annotations).length === 0)
    return { events, requeue: { kind: "done" } };
  return publish(k, svc, published, deps, events);
}

const expectPublished = (p: Published): string => `${EXPECT_PUBLISHED}${JSON.stringify(p)}`;

/** The ingress and annotations published to the Service, awaited in its report. */
function publish(
  k: string,
  svc: Readonly<Service>,
  p: Published,
  deps: ServiceDeps,
  events: readonly ClusterEvent[],
): Outcome {
  const published = deps.tracker.record(k, svc.uid, expectPublished(p));
  return after(published.deadlineMs - published.publishedAtMs, {
    events: [...events],
    services: [
      serviceDesired(svc, published.generation, {
        ingress: { items: p.ingress },
        setAnnotations: p.annotations,
      }),
    ],
  });
}

interface Published {
  readonly ingress: LoadBalancerIngress[];
  readonly annotations: Readonly<Record<string, string>>;
}

/**
 * The vendor CCM's annotations the provider set in ensure that the Service does not show yet;
 * a key the provider did not declare is never written (logged: the provider is at fault).
 */
function annotationsToSet(
  svc: Readonly<Service>,
  annotated: ReadonlyMap<string, string>,
  declared: readonly string[] | undefined,
  deps: ServiceDeps,
): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of annotated) {
    if (!declared?.includes(key)) {
      deps.logger.error(
        { service: svc.name, annotation: key },
        "provider set an undeclared Service annotation",
      );
      continue;
    }
    if (svc.annotations[key] !== value) set[key] = value;
  }
  return set;
}

/**
 * An annotation its setting cannot take: one Warning naming it, the bound and the problem, and
 * no retry. It is permanent until the Service changes, and a change re-syncs it.
 */
function invalidAnnotation(
  k: string,
  key: WorkKey,
  svc: Readonly<Service>,
  err: AnnotationError,
  deps: ServiceDeps,
  events: readonly ClusterEvent[],
): Outcome {
  return refuse(k, svc, `Error syncing load balancer: ${err.message}`, deps, events, () =>
    deps.logger.warn(
      { service: key.name, annotation: err.annotation, err: err.message },
      "invalid annotation",
    ),
  );
}

/**
 * A Service refused until it changes (a bad annotation, beyond a quota): one Warning Event,
 * none again for the same refusal of the same Service, no retry.
 */
function refuse(
  k: string,
  svc: Readonly<Service>,
  message: string,
  deps: ServiceDeps,
  events: readonly ClusterEvent[],
  log: () => void,
): Outcome {
  const refusal = `${svc.uid}\u0000${message}`;
  if (deps.refused?.get(k) === refusal)
    return events.length > 0 ? { events, requeue: { kind: "done" } } : DONE;
  deps.refused?.set(k, refusal);
  log();
  return {
    events: [...events, serviceEvent(svc, "Warning", REASON.syncFailed, message)],
    requeue: { kind: "done" },
  };
}

/**
 * A Service already showing an ingress with no record here (the hub restarted): when the account
 * listing shows its load balancer built from this very spec, with this ingress, the cloud is
 * current and no per-Service call is needed, or only a backend update when its backend set is
 * another. Anything else (no listing, a listing error, a digest the provider did not record)
 * falls through to a full ensure.
 */
async function adoptListed(
  k: string,
  cluster: string,
  svc: Readonly<Service>,
  spec: LoadBalancerSpec,
  backends: BackendSet,
  ipWithHostname: boolean,
  deps: ServiceDeps,
): Promise<EnsuredRecord | undefined> {
  if (deps.listed === undefined || svc.ingress.length === 0) return undefined;
  const found = await deps.listed(cluster, svc.uid).catch(() => undefined);
  if (found === undefined) return undefined;
  const { lb, atMs } = found;
  if (lb.specDigest !== loadBalancerSpecDigest(spec)) return undefined;
  if (!ingressEqual(svc.ingress, toWireIngress(lb.ingress, ipWithHostname))) return undefined;
  // Built from this spec: only the backends may be behind (a node joined meanwhile), which is
  // an updateBackends, not a whole ensure.
  const current = lb.backendsDigest === backendsDigest(spec.backends, spec.backendAnnotations);
  const record = { uid: svc.uid, specKey: specKey(spec), backendsKey: current ? backends.key : "", atMs };
  deps.ensured.set(k, record);
  return record;
}

/**
 * How long a Service not yet ensured by this hub still waits for the cluster's initializing
 * nodes, or for its first node when it has none yet (0: ensure now). One already showing an
 * ingress (a restarted hub) never waits.
 */
function waitForNodes(
  k: string,
  cluster: string,
  svc: Readonly<Service>,
  backends: BackendSet,
  noNodeYet: boolean,
  deps: ServiceDeps,
): number {
  const waiting = deps.waitingForNodes;
  if (waiting === undefined) return 0;
  const since = waiting.get(k);
  const joining = (backends.initializing ?? 0) > 0 || noNodeYet;
  if (!joining || deps.ensured.has(k) || svc.ingress.length > 0) {
    if (since !== undefined) waiting.delete(k);
    return 0;
  }
  const now = deps.clock.now();
  const first = since ?? now;
  if (since === undefined) waiting.set(k, now);
  const progress = Math.max(first, deps.nodeInitializedAtMs?.(cluster) ?? first);
  const left = Math.min(first + NODE_INIT_WAIT_MAX_MS, progress + NODE_INIT_WAIT_MS) - now;
  if (left > 0) return left;
  waiting.delete(k);
  return 0;
}

/**
 * No eligible node in the report: the load balancer is emptied only of backends whose nodes
 * this hub saw leave (deleted, excluded, replaced) or whose instance is refused. Others stay:
 * an empty report (an agent whose lists failed, a restarted hub's partial view) must not drain
 * every load balancer of the cluster (upstream kubernetes#45126). When every backend was seen
 * leaving (or is terminated) the load balancer is emptied, as upstream does.
 */
async function keepUnseenBackends(
  cluster: string,
  svc: Readonly<Service>,
  lbs: LoadBalancers,
  owner: ServiceTarget,
  backends: BackendSet,
  deps: ServiceDeps,
  events: ClusterEvent[],
): Promise<BackendSet> {
  const current = (await lbs.get(owner, deps.signal))?.backends ?? [];
  if (current.length === 0) return backends;
  const departed = deps.departed?.(cluster) ?? new Set<string>();
  // The account's instance list saying "terminated" is an answer (absence from it is not).
  const cache = deps.cacheFor(cluster);
  await cache?.fresh();
  const terminated = (id: string) => cache?.getByInstanceID(id)?.state === "terminated";
  const kept = current
    .filter((id) => !departed.has(id) && !(backends.refused?.has(id) ?? false) && !terminated(id))
    .sort();
  if (kept.length === 0) return backends;
  events.push(
    serviceEvent(
      svc,
      "Warning",
      REASON.backendsKept,
      `No eligible node in the cluster's report, but ${kept.length} of the load balancer's ${current.length} backends were not seen leaving: keeping them`,
    ),
  );
  deps.logger.warn(
    { service: `${svc.namespace}/${svc.name}`, kept: kept.length, backends: current.length },
    "no eligible node reported; keeping the backends not seen leaving",
  );
  return backendSet(kept, backends.annotations);
}

async function deleteLoadBalancer(
  k: string,
  svc: Readonly<Service>,
  cloud: ClusterCloud,
  lbs: LoadBalancers,
  owner: ServiceTarget,
  deps: ServiceDeps,
): Promise<Outcome> {
  const events =
    deps.pending?.get(k) === "delete"
      ? []
      : [serviceEvent(svc, "Normal", REASON.deleting, "Deleting load balancer")];
  try {
    const answer = await serializedWrite(cloud, lbs.lockKey?.(owner), () =>
      lbs.ensureDeleted(owner, deps.signal, serviceHints(svc)),
    );
    if (isInProgress(answer)) {
      // The finalizer stays until the cloud says the load balancer is gone.
      deps.pending?.set(k, "delete");
      return retryOutcome(answer, { events });
    }
  } catch (err) {
    deps.pending?.delete(k);
    events.push(
      serviceEvent(svc, "Warning", REASON.deleteFailed, `Error deleting load balancer: ${errorMessage(err)}`),
    );
    return retryOutcome(err, { events });
  }
  deps.pending?.delete(k);
  deps.ensured.delete(k);
  events.push(serviceEvent(svc, "Normal", REASON.deleted, "Deleted load balancer"));
  const clearIngress = svc.ingress.length > 0;
  const published = deps.tracker.record(k, svc.uid, clearIngress ? EXPECT_CLEARED : EXPECT_NO_FINALIZER);
  return after(published.deadlineMs - published.publishedAtMs, {
    events,
    services: [
      serviceDesired(svc, published.generation, {
        removeFinalizers: [FINALIZER_LB_CLEANUP],
        ingress: clearIngress ? { items: [] } : undefined,
      }),
    ],
  });
}

/**
 * Instance ids of the cluster's eligible nodes, each verified to be in the cluster's scope. A
 * refused node gets an Event and is left out; a cloud error fails the whole computation, so a
 * partial view never shrinks a backend set.
 */
export async function computeBackendSet(
  cluster: string,
  view: ClusterView,
  cloud: ClusterCloud,
  verified: VerifiedInstances,
  cache: InstanceCache | undefined,
): Promise<BackendSet> {
  const eligible: Node[] = [];
  let initializing = 0;
  for (const n of view.nodes.values())
    if (isEligibleBackend(n)) eligible.push(n);
    else if (n.providerId === "" && needsInit(n) && isAvailableNode(n)) initializing++;
  const verdicts = await verified.verifyAll(
    cluster,
    eligible.map((n) => n.providerId),
    cloud,
    cache,
  );
  const ids: string[] = [];
  const annotations: Record<string, Readonly<Record<string, string>>> = {};
  const labels = new Map<string, Readonly<Record<string, string>>>();
  const events: ClusterEvent[] = [];
  const refused = new Set<string>();
  const readsAnnotations = cloud.provider.loadBalancers?.capabilities.readsNodeAnnotations !== false;
  for (const node of eligible) {
    const verdict = verdicts.get(node.providerId);
    if (verdict?.ok) {
      ids.push(verdict.instanceID);
      labels.set(verdict.instanceID, node.labels);
      const vendor = readsAnnotations ? vendorNodeAnnotations(node) : undefined;
      if (vendor !== undefined) annotations[verdict.instanceID] = vendor;
    } else if (verdict !== undefined) {
      const id = cloud.provider.instances.parseProviderID(node.providerId);
      if (id !== undefined) refused.add(id);
      events.push(
        nodeEvent(
          node,
          "Warning",
          "InstanceOutOfScope",
          `Not used as a load balancer backend: ${verdict.reason}`,
        ),
      );
    }
  }
  return { ...backendSet(ids, annotations), events, refused, labels, initializing };
}

/**
 * The backends whose nodes the provider's selector takes; one whose node the hub does not know
 * (kept from the cloud while the cluster's report is empty) stays.
 */
function selectedBackends(backends: BackendSet, selector: LabelSelector): BackendSet {
  const ids = backends.ids.filter((id) => {
    const labels = backends.labels?.get(id);
    return labels === undefined || selector(labels);
  });
  if (ids.length === backends.ids.length) return backends;
  return { ...backendSet(ids, backends.annotations), labels: backends.labels };
}

/** A backend set of these ids (sorted) with the annotations of theirs, keyed by both. */
export function backendSet(ids: readonly string[], annotations: BackendAnnotations | undefined): BackendSet {
  const sorted = [...ids].sort();
  const { backendAnnotations } = backendAnnotationsOf(sorted, annotations);
  if (backendAnnotations === undefined) return { ids: sorted, key: sorted.join(","), events: [] };
  return {
    ids: sorted,
    annotations: backendAnnotations,
    key: `${sorted.join(",")}#${backendsDigest(sorted, backendAnnotations)}`,
    events: [],
  };
}
