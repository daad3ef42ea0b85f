import { type Node, ObjectKind } from "@fleet-ccm/proto";
import type { LoadBalancers, OwnedLoadBalancer } from "../../cloud/provider.js";
import type { ClusterCloud } from "../../cloud/scope.js";
import { type ClusterView, serviceKey } from "../../fleet/state.js";
import { clusterKeyPrefix, keyOf, type WorkKey } from "../../queue/index.js";
import { Semaphore } from "../../util/semaphore.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { DONE, type Outcome } from "../outcome.js";
import { retryOutcome } from "../retry-policy.js";
import {
  backendFacts,
  decommissionPending,
  isEligibleBackend,
  needsCleanup,
  wantsLoadBalancer,
} from "./predicates.js";
import {
  type BackendSet,
  computeBackendSet,
  type EnsuredRecord,
  NODE_INIT_WAIT_MAX_MS,
  reconcileService,
  SERVICE,
  SERVICE_NODES,
} from "./reconcile.js";

/** Service syncs in flight per cluster when the hub gives no account-wide bound (tests). */
const SERVICE_SYNC_CONCURRENCY = 64;

/** A backend set is recomputed at least this often (instance verdicts expire)… */
const BACKEND_SET_MAX_AGE_MS = 60_000;
/** …and at most this often while nodes keep changing (the batched sync catches up after). */
const BACKEND_SET_MIN_INTERVAL_MS = 1000;

/** A departure is remembered this long (the backends it justifies removing are written long before). */
const DEPARTED_TTL_MS = 60 * 60_000;

/** Node changes are coalesced for this long before every load balancer's backends are re-synced. */
export const NODE_SYNC_DELAY_MS = 1000;

/** One key per cluster: after each snapshot (start-up, agent reconnect), its Services are re-verified. */
export const SERVICE_VERIFY = "service-verify";
/** An account's listing of owned load balancers serves every cluster of the account this long. */
const OWNED_LISTING_TTL_MS = 30_000;
/** More pages than this is a suspect listing: verify per Service instead. */
const OWNED_LISTING_MAX_PAGES = 10_000;

const ownerKey = (cluster: string, serviceUid: string) => `${cluster}\u0000${serviceUid}`;

/** service-lb-controller: one key per Service, plus one per cluster for node-set changes (batched). */
export function serviceController(ctx: ControllerContext): Controller {
  const { queue, tracker } = ctx;
  const ownedClass = ctx.config.loadBalancerClass;
  const ensured = new Map<string, EnsuredRecord>();
  const pending = new Map<string, "ensure" | "update" | "delete">();
  const refused = new Map<string, string>();
  const waitingForNodes = new Map<string, number>();
  const nodeInitializedAt = new Map<string, number>();
  // A Service sync holds several cloud answers at once and is paced by the account's rate limit
  // anyway: bound how many run together per account, so thousands of waiting ones cost no
  // memory and a slow account never holds another's share.
  const fallback = new Map<string, Semaphore>();
  const ensuresFor = (cluster: string): Semaphore => {
    const shared = ctx.loadBalancerOpsFor?.(cluster);
    if (shared !== undefined) return shared;
    let own = fallback.get(cluster);
    if (own === undefined) {
      own = new Semaphore(SERVICE_SYNC_CONCURRENCY);
      fallback.set(cluster, own);
    }
    return own;
  };
  // The backend set is the same for every Service of a cluster: computed at most once per
  // second per cluster (and by the batched node-set sync right before it fans out), shared by
  // every Service, never once per Service.
  const nodeSetVersion = new Map<string, number>();
  const backendCache = new Map<string, { version: number; atMs: number; set: BackendSet }>();
  const computing = new Map<string, { version: number; promise: Promise<BackendSet> }>();
  const bump = (cluster: string) => nodeSetVersion.set(cluster, (nodeSetVersion.get(cluster) ?? 0) + 1);
  const compute = (cluster: string, view: ClusterView, cloud: ClusterCloud): Promise<BackendSet> => {
    // Share a computation in flight only if it is for the current node set.
    const version = nodeSetVersion.get(cluster) ?? 0;
    const running = computing.get(cluster);
    if (running !== undefined && running.version === version) return running.promise;
    const promise = computeBackendSet(cluster, view, cloud, ctx.verified, ctx.cacheFor(cluster))
      .then((set) => {
        // Released meanwhile (onReleased): nothing is kept for the cluster.
        if (computing.get(cluster)?.promise !== promise) return set;
        const cached = backendCache.get(cluster);
        if (cached === undefined || cached.version <= version)
          backendCache.set(cluster, { version, atMs: ctx.clock.now(), set });
        return set;
      })
      .finally(() => {
        if (computing.get(cluster)?.promise === promise) computing.delete(cluster);
      });
    computing.set(cluster, { version, promise });
    return promise;
  };
  const backendsFor = async (
    cluster: string,
    view: ClusterView,
    cloud: ClusterCloud,
  ): Promise<BackendSet> => {
    const hit = backendCache.get(cluster);
    const age = hit === undefined ? Number.POSITIVE_INFINITY : ctx.clock.now() - hit.atMs;
    const current = hit !== undefined && hit.version === (nodeSetVersion.get(cluster) ?? 0);
    if (hit !== undefined && age < BACKEND_SET_MAX_AGE_MS && (current || age < BACKEND_SET_MIN_INTERVAL_MS))
      return { ...hit.set, events: [] };
    return compute(cluster, view, cloud);
  };
  // The Services whose next pass reads a new backend set: not those without a load balancer
  // (most of a cluster's Services), not one whose finalizer or status patch is in flight (its
  // report, or its deadline, runs its next pass, which reads the backends then).
  const backendReaders = (cluster: string, view: ClusterView): { key: WorkKey; id: string }[] => {
    const leaving = ctx.decommissioning?.(cluster) === true;
    const readers: { key: WorkKey; id: string }[] = [];
    for (const [name, svc] of view.services) {
      const relevant = leaving
        ? decommissionPending(svc, ownedClass)
        : wantsLoadBalancer(svc, ownedClass) || needsCleanup(svc, ownedClass);
      if (!relevant) continue;
      const key: WorkKey = { cluster, kind: SERVICE, name };
      const id = keyOf(key);
      if (tracker.get(id)?.uid !== svc.uid) readers.push({ key, id });
    }
    return readers;
  };
  // Instances whose nodes this hub saw leave the backend set: the evidence an empty eligible set
  // needs before it empties a load balancer.
  const departed = new Map<string, Map<string, number>>();
  const instanceOf = (cluster: string, n: Readonly<Node>): string | undefined =>
    n.providerId === "" ? undefined : ctx.cloudFor(cluster)?.provider.instances.parseProviderID(n.providerId);
  const depart = (cluster: string, n: Readonly<Node>) => {
    const id = instanceOf(cluster, n);
    if (id === undefined) return;
    let m = departed.get(cluster);
    if (m === undefined) {
      m = new Map();
      departed.set(cluster, m);
    }
    m.delete(id);
    m.set(id, ctx.clock.now());
    // Insertion order is time order: the oldest is first.
    const oldest = m.values().next().value;
    if (oldest !== undefined && oldest < ctx.clock.now() - DEPARTED_TTL_MS) prune(m);
  };
  const prune = (m: Map<string, number>) => {
    const since = ctx.clock.now() - DEPARTED_TTL_MS;
    for (const [id, at] of m) if (at < since) m.delete(id);
  };
  const departedOf = (cluster: string): ReadonlySet<string> => {
    const m = departed.get(cluster);
    if (m === undefined) return new Set();
    prune(m);
    return new Set(m.keys());
  };
  // The listing of owned load balancers per account and region, cached and shared by its clusters.
  const listings = new Map<
    string,
    { atMs: number; owned: Promise<ReadonlyMap<string, OwnedLoadBalancer>> }
  >();
  const ownedIn = (
    cloud: ClusterCloud,
    lbs: LoadBalancers & Required<Pick<LoadBalancers, "listOwned">>,
    notBeforeMs: number,
  ) => {
    const at = `${cloud.account.name}\u0000${cloud.account.region}`;
    const hit = listings.get(at);
    if (hit !== undefined && hit.atMs >= notBeforeMs && ctx.clock.now() - hit.atMs < OWNED_LISTING_TTL_MS)
      return hit;
    const owned = (async () => {
      const keys = new Map<string, OwnedLoadBalancer>();
      let token: string | undefined;
      for (let page = 0; page < OWNED_LISTING_MAX_PAGES; page++) {
        const answer = await lbs.listOwned(token, ctx.signal);
        for (const lb of answer.items) keys.set(ownerKey(lb.owner.cluster, lb.owner.serviceUid), lb);
        token = answer.nextPageToken;
        if (token === undefined) return keys;
      }
      throw new Error(`the owned load-balancer listing still had pages after ${OWNED_LISTING_MAX_PAGES}`);
    })();
    const entry = { atMs: ctx.clock.now(), owned };
    listings.set(at, entry);
    owned.catch(() => {
      if (listings.get(at) === entry) listings.delete(at);
    });
    return entry;
  };
  /**
   * After a snapshot: a Service the hub ensured whose load balancer the account listing shows
   * needs no cloud call; one whose load balancer is gone is ensured again. A few list calls per
   * account instead of a chain of calls per Service.
   */
  const verify = async (cluster: string): Promise<Outcome> => {
    const view = ctx.fleet.view(cluster);
    const cloud = ctx.cloudFor(cluster);
    const lbs = cloud?.provider.loadBalancers;
    if (view === undefined || cloud === undefined || lbs === undefined) return DONE;
    // Without a listing, a Service's load balancer is checked at its next full ensure only.
    if (lbs.listOwned === undefined) return DONE;
    // Only what this hub ensured needs verifying; a listing must be newer than all of it.
    let newest = Number.NEGATIVE_INFINITY;
    for (const name of view.services.keys()) {
      const record = ensured.get(keyOf({ cluster, kind: SERVICE, name }));
      if (record !== undefined) newest = Math.max(newest, record.atMs ?? Number.POSITIVE_INFINITY);
    }
    if (newest === Number.NEGATIVE_INFINITY) return DONE;
    let owned: ReadonlyMap<string, OwnedLoadBalancer>;
    try {
      owned = await ownedIn(cloud, { ...lbs, listOwned: lbs.listOwned.bind(lbs) }, newest).owned;
    } catch (err) {
      return retryOutcome(err);
    }
    for (const [name, svc] of view.services) {
      const k = keyOf({ cluster, kind: SERVICE, name });
      const record = ensured.get(k);
      if (record === undefined || pending.has(k)) continue;
      if (record.uid === svc.uid && owned.has(ownerKey(cluster, svc.uid))) continue;
      ensured.delete(k);
      queue.add({ cluster, kind: SERVICE, name });
    }
    return DONE;
  };
  const listed = async (cluster: string, serviceUid: string) => {
    const cloud = ctx.cloudFor(cluster);
    const lbs = cloud?.provider.loadBalancers;
    if (cloud === undefined || lbs?.listOwned === undefined) return undefined;
    const listing = ownedIn(cloud, { ...lbs, listOwned: lbs.listOwned.bind(lbs) }, Number.NEGATIVE_INFINITY);
    const lb = (await listing.owned).get(ownerKey(cluster, serviceUid));
    return lb === undefined ? undefined : { lb, atMs: listing.atMs };
  };
  const deps = {
    listed,
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    cacheFor: ctx.cacheFor,
    departed: departedOf,
    tracker,
    verified: ctx.verified,
    ensured,
    pending,
    refused,
    waitingForNodes,
    // The latest of a providerID reported and node-init's own progress (published, or awaited).
    nodeInitializedAtMs: (cluster: string) =>
      latest(
        nodeInitializedAt.get(cluster),
        ctx.nodeInitProgress?.movedAtMs(cluster, ctx.clock.now(), NODE_INIT_WAIT_MAX_MS),
      ),
    logger: ctx.logger.child({ component: SERVICE }),
    clock: ctx.clock,
    ...(ctx.signal !== undefined && { signal: ctx.signal }),
    loadBalancerClass: ownedClass,
    backendsFor,
    ...(ctx.decommissioning !== undefined && { decommissioning: ctx.decommissioning }),
  };
  return {
    name: "service-lb-controller",
    kinds: [SERVICE, SERVICE_NODES, SERVICE_VERIFY],
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
        const old = change.old;
        if (change.type === "delete") {
          // A node missing from a snapshot was not seen leaving.
          if (old !== undefined && isEligibleBackend(old) && change.origin === "delta") depart(cluster, old);
        } else {
          const cur = change.cur;
          if (
            old !== undefined &&
            isEligibleBackend(old) &&
            (!isEligibleBackend(cur) || cur.providerId !== old.providerId)
          )
            depart(cluster, old);
          if (isEligibleBackend(cur)) {
            const id = instanceOf(cluster, cur);
            if (id !== undefined) departed.get(cluster)?.delete(id);
          }
          if (old !== undefined && old.providerId === "" && cur.providerId !== "")
            nodeInitializedAt.set(cluster, ctx.clock.now());
        }
        const byLabel = ctx.cloudFor(cluster)?.provider.loadBalancers?.nodeSelector !== undefined;
        const before = backendFacts(change.old, byLabel);
        const after = change.type === "delete" ? "" : backendFacts(change.cur, byLabel);
        if (before === after) return;
        bump(cluster);
        queue.addAfter({ cluster, kind: SERVICE_NODES, name: "" }, NODE_SYNC_DELAY_MS);
      },
      onSynced(cluster) {
        bump(cluster);
        queue.add({ cluster, kind: SERVICE_VERIFY, name: "" });
      },
    },
    onReleased(cluster) {
      // Removed from the configuration, or handed to another replica: nothing of the cluster is
      // kept (a later owner starts from the cloud's and the agent's view, re-ensuring).
      const prefix = clusterKeyPrefix(cluster);
      for (const m of [ensured, pending, refused, waitingForNodes])
        for (const k of m.keys()) if (k.startsWith(prefix)) m.delete(k);
      for (const m of [nodeInitializedAt, fallback, nodeSetVersion, backendCache, computing, departed])
        m.delete(cluster);
    },
    async reconcile(k) {
      if (k.kind === SERVICE) return ensuresFor(k.cluster).run(() => reconcileService(k, deps));
      if (k.kind === SERVICE_VERIFY) return verify(k.cluster);
      // Batched node-set change: compute the new backend set once, then fan out to the Services
      // whose pass reads it. A cluster with none computes nothing: its next Service pass
      // computes the set it reads.
      const view = ctx.fleet.view(k.cluster);
      const cloud = ctx.cloudFor(k.cluster);
      if (view === undefined || cloud === undefined) return { requeue: { kind: "done" } };
      if (backendReaders(k.cluster, view).length === 0) return { requeue: { kind: "done" } };
      let set: BackendSet;
      try {
        set = await compute(k.cluster, view, cloud);
      } catch (err) {
        return { requeue: { kind: "backoff", error: err } };
      }
      // The readers again: Services and their publications may have changed during the await.
      // One waiting for the cluster's initializing nodes while they join is not woken: its own
      // timer, or this fan-out once none is left, wakes it.
      const stillJoining = (set.initializing ?? 0) > 0;
      for (const r of backendReaders(k.cluster, view))
        if (!(stillJoining && waitingForNodes.has(r.id))) queue.add(r.key);
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

function latest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b);
}
