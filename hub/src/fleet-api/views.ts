import type { Node, Service } from "@fleet-ccm/proto";
import type { UnclaimedDisk } from "../cloud/unclaimed-disks.js";
import { type ClusterView, objectKeyOf } from "../fleet/state.js";
import { TAINT_SHUTDOWN } from "../k8s/well-known.js";
import { needsInit } from "../reconcilers/node-init/predicates.js";
import { REASON_DELETION_LIMITED } from "../reconcilers/node-lifecycle/reconcile.js";
import { CONDITION_NETWORK_UNAVAILABLE } from "../reconcilers/route/reconcile.js";
import { decommissionPending } from "../reconcilers/service/predicates.js";
import type { ClusterObservations, LastEvent } from "./observations.js";

/** ok; warning: worth a look, nothing is stuck; unhealthy: an operator must act (non-zero `status` exit). */
export type Health = "ok" | "warning" | "unhealthy";

export interface Problem {
  readonly health: Exclude<Health, "ok">;
  readonly message: string;
}

export type NodeState = "initialized" | "waiting" | "shutdown" | "deletion-held" | "deleting";

export interface NodeJson {
  readonly name: string;
  readonly state: NodeState;
  readonly ready: string;
  readonly providerID: string;
  /** Why it waits or is held: the reason of the hub's last Warning Event on it. */
  readonly reason?: string;
  readonly message?: string;
  /** Waiting for initialization since (ISO 8601). */
  readonly since?: string;
  /** Kept in the hub's view after a large snapshot drop. */
  readonly heldBySnapshot: boolean;
}

export type LoadBalancerState = "ready" | "in-progress" | "failing";

export interface LoadBalancerJson {
  readonly namespace: string;
  readonly name: string;
  readonly state: LoadBalancerState;
  readonly ingress: readonly string[];
  readonly reason?: string;
  readonly message?: string;
  readonly eventAt?: string;
}

export interface ClusterSummaryJson {
  readonly name: string;
  readonly account: string;
  readonly health: Health;
  readonly problems: readonly Problem[];
  readonly agent: {
    readonly connected: boolean;
    /** Connected since, or disconnected since when not connected (ISO 8601, null: never seen). */
    readonly since: string | null;
    readonly agentVersion: string;
    readonly kubernetesVersion: string;
    readonly lastSnapshot: string | null;
  };
  readonly nodes: {
    readonly total: number;
    readonly initialized: number;
    readonly waiting: number;
    /** Waiting nodes by reason ("Initializing": no answer from the cloud yet). */
    readonly waitingReasons: Readonly<Record<string, number>>;
    readonly oldestWaitingSince: string | null;
    readonly shutdown: number;
    readonly deletedByLifecycle: number;
    readonly deletionsHeld: number;
  };
  readonly services: {
    readonly loadBalancers: number;
    readonly ready: number;
    readonly inProgress: number;
    readonly failing: number;
  };
  readonly routes: { readonly enabled: boolean; readonly nodesWithPodCidrs: number; readonly routed: number };
  readonly patches: { readonly inflight: number; readonly republished: number; readonly failedApply: number };
  readonly objects: { readonly refused: number; readonly held: number };
}

/** A Service of a leaving cluster that still has its finalizer or ingress (as the agent last reported). */
export interface DecommissionServiceJson {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly finalizers: readonly string[];
  readonly ingress: readonly string[];
}

/** A cluster leaving the hub (clusters[].decommission): what is left to clear. */
export interface DecommissionJson {
  /** The hub's view comes from a complete snapshot of the connected agent: `pending` is all there is. */
  readonly current: boolean;
  readonly pending: readonly DecommissionServiceJson[];
}

export interface ClusterDetailJson extends ClusterSummaryJson {
  /** Present while the cluster is being decommissioned. */
  readonly decommission?: DecommissionJson;
  readonly nodeList: readonly NodeJson[];
  readonly loadBalancerList: readonly LoadBalancerJson[];
  readonly refusedList: readonly { kind: string; key: string; limit: string; message: string }[];
  readonly heldList: readonly { kind: string; key: string; since: string }[];
}

/** GET /api/v1/clusters/<name>: the cluster, with the hub's own health first. */
export interface ClusterAnswerJson extends ClusterDetailJson {
  readonly generatedAt: string;
  readonly hub: HubHealthJson;
}

export interface AccountJson {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly clusters: readonly string[];
  readonly health: Health;
  readonly problems: readonly Problem[];
  readonly rateLimit: { readonly perSecond: number; readonly burst: number };
  /** Over the sampling window (calls per second). */
  readonly callsPerSecond: number;
  /** callsPerSecond / rateLimit.perSecond. */
  readonly utilization: number;
  /** Calls waiting for a token of the account's rate limiter now. */
  readonly waitingForToken: number;
  readonly throttled: { readonly recent: number; readonly total: number; readonly last: string | null };
  readonly cache: { readonly listedAt: string | null; readonly ageSeconds: number | null };
}

/** What the hub's own health is built from (the same facts /readyz answers from). */
export interface HubHealthInput {
  readonly nats: {
    readonly connected: boolean;
    /** Why not connected; null when connected. */
    readonly problem: string | null;
    readonly sinceMs: number | undefined;
    readonly kept: number;
    readonly dropped: number;
    /** Decentralized auth: why the fleet account JWT is not (yet) on NATS; null when it is. */
    readonly accountProblem: string | null;
  };
  readonly grpc: { readonly listening: boolean; readonly listen: string };
  /** Hub replicas only: why the lease store cannot be used; null when it can. */
  readonly leases: { readonly problem: string | null } | undefined;
}

/** The hub itself: can it take agents' reports (gRPC), deliver results (NATS), hold leases? */
export interface HubHealthJson {
  readonly health: Health;
  /** Also what /readyz answers when not ready. */
  readonly problems: readonly Problem[];
  readonly nats: {
    readonly connected: boolean;
    /** Connected since, or disconnected since (ISO 8601). */
    readonly since: string | null;
    readonly problem: string | null;
    /** Results kept for delivery until NATS is back. */
    readonly kept: number;
    /** Oldest kept results dropped over the bound (the reconcilers publish them again). */
    readonly dropped: number;
    readonly accountProblem: string | null;
  };
  readonly grpc: { readonly listening: boolean; readonly listen: string };
  /** null: no hub replicas, no lease store. */
  readonly leases: { readonly ok: boolean; readonly problem: string | null } | null;
}

export function hubHealthJson(input: HubHealthInput): HubHealthJson {
  const problems: Problem[] = [];
  if (!input.grpc.listening)
    problems.push({ health: "unhealthy", message: "gRPC: the agents' listener is not up yet" });
  if (input.nats.problem !== null)
    problems.push({ health: "unhealthy", message: `NATS: ${input.nats.problem}` });
  if (input.nats.accountProblem !== null)
    problems.push({ health: "unhealthy", message: `NATS: ${input.nats.accountProblem}` });
  const leaseProblem = input.leases?.problem ?? null;
  if (leaseProblem !== null) problems.push({ health: "unhealthy", message: `leases: ${leaseProblem}` });
  return {
    health: worst(problems),
    problems,
    nats: {
      connected: input.nats.connected,
      since: iso(input.nats.sinceMs),
      problem: input.nats.problem,
      kept: input.nats.kept,
      dropped: input.nats.dropped,
      accountProblem: input.nats.accountProblem,
    },
    grpc: input.grpc,
    leases: input.leases === undefined ? null : { ok: leaseProblem === null, problem: leaseProblem },
  };
}

/**
 * Why the hub's results cannot reach a cluster's agent now, or null. Results travel over NATS
 * only: with NATS down (or the fleet account not on it) they are kept, none lands; connected,
 * NATS may still refuse the cluster's subject (the hub's user's permissions).
 */
export function undeliverable(
  hub: HubHealthInput,
  delivery: { readonly kept: number; readonly refused: string | null },
): string | null {
  const why = hub.nats.problem ?? hub.nats.accountProblem ?? delivery.refused;
  if (why === null) return null;
  return `results cannot reach the agent (NATS: ${why})${delivery.kept > 0 ? `; ${plural(delivery.kept, "result")} kept for delivery` : ""}`;
}

/** The reason a waiting node or an in-progress load balancer gives while results cannot be delivered. */
export const REASON_UNDELIVERABLE = "ResultsUndeliverable";

export interface FleetJson {
  readonly generatedAt: string;
  /** The hub's own health first: without it no cluster's figures can be trusted to move. */
  readonly hub: HubHealthJson;
  readonly health: Health;
  readonly counts: { readonly clusters: number; readonly unhealthy: number; readonly warning: number };
  readonly clusters: readonly ClusterSummaryJson[];
  readonly accounts: readonly AccountJson[];
  /** Disks tagged for a cluster that back none of its PersistentVolumes (absent: no provider has volumes). */
  readonly unclaimedDisks?: UnclaimedDisksJson;
}

/** Report only: fleet-ccm never deletes a disk. */
export interface UnclaimedDisksJson {
  readonly disks: readonly (UnclaimedDisk & { readonly ageSeconds: number | null })[];
  /** Clusters not judged (a partial view, or a failed listing), and why. */
  readonly unknown: readonly { readonly cluster: string; readonly reason: string }[];
  readonly checkedAt: string | null;
}

/** Everything one cluster's view is built from. */
export interface ClusterInput {
  readonly name: string;
  readonly account: string;
  readonly routesEnabled: boolean;
  /** clusters[].decommission, and whether the service controller runs for the cluster. */
  readonly decommission?: { readonly services: boolean };
  /** spec.loadBalancerClass the hub handles besides Services without one. */
  readonly loadBalancerClass: string | undefined;
  readonly view: ClusterView | undefined;
  readonly observations: ClusterObservations | undefined;
  readonly agent: { readonly agentVersion: string; readonly kubernetesVersion: string } | undefined;
  readonly patches: { readonly inflight: number; readonly republished: number; readonly failedApply: number };
  /** The cluster's account is throttled (its problems are reported on the account too). */
  readonly accountThrottled: boolean;
  /** Why the hub's results cannot reach this cluster now (`undeliverable`); null: they can. */
  readonly undeliverable: string | null;
}

export interface HealthPolicy {
  readonly nowMs: number;
  /** Nodes waiting for initialization longer than this make the cluster unhealthy. */
  readonly waitingUnhealthyAfterMs: number;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

function readyOf(node: Readonly<Node>): string {
  return node.conditions.find((c) => c.type === "Ready")?.status ?? "Unknown";
}

function eventFor(events: ReadonlyMap<string, LastEvent> | undefined, key: string, uid: string) {
  const e = events?.get(key);
  return e !== undefined && e.uid === uid ? e : undefined;
}

export function nodeJson(node: Readonly<Node>, input: ClusterInput): NodeJson {
  const obs = input.observations;
  const ev = eventFor(obs?.nodeEvents, node.name, node.uid);
  const warning = ev?.type === "Warning" ? ev : undefined;
  const ready = readyOf(node);
  const base = {
    name: node.name,
    ready,
    providerID: node.providerId,
    heldBySnapshot: input.view?.held.has(`node/${node.name}`) ?? false,
  };
  if (node.deletionTimestamp !== undefined) return { ...base, state: "deleting" };
  if (needsInit(node)) {
    const w = obs?.waitingSince.get(node.name);
    const since = w !== undefined && w.uid === node.uid ? iso(w.sinceMs) : null;
    // A cloud's answer (a Warning) says more than the delivery; without one, the delivery is why.
    const why =
      warning ??
      (input.undeliverable === null
        ? { reason: "Initializing", message: undefined }
        : { reason: REASON_UNDELIVERABLE, message: input.undeliverable });
    return {
      ...base,
      state: "waiting",
      reason: why.reason,
      ...(why.message === undefined ? {} : { message: why.message }),
      ...(since === null ? {} : { since }),
    };
  }
  if (warning?.reason === REASON_DELETION_LIMITED && ready !== "True")
    return { ...base, state: "deletion-held", reason: warning.reason, message: warning.message };
  if (node.taints.some((t) => t.key === TAINT_SHUTDOWN)) return { ...base, state: "shutdown" };
  return { ...base, state: "initialized" };
}

/** Services the hub's service controller handles: type LoadBalancer, no class or the hub's class. */
export function isHandledLoadBalancer(svc: Readonly<Service>, lbClass: string | undefined): boolean {
  return svc.type === "LoadBalancer" && (svc.loadBalancerClass === "" || svc.loadBalancerClass === lbClass);
}

export function loadBalancerJson(svc: Readonly<Service>, input: ClusterInput): LoadBalancerJson {
  const key = `${svc.namespace}/${svc.name}`;
  const ev = eventFor(input.observations?.serviceEvents, key, svc.uid);
  const ingress = svc.ingress.map((i) => i.ip || i.hostname).filter((x) => x !== "");
  // The last Event tells: a Warning after the last success is a failure, whatever ingress is kept.
  const state: LoadBalancerState =
    ev?.type === "Warning" ? "failing" : ingress.length > 0 ? "ready" : "in-progress";
  // In progress with results undeliverable: that is why, whatever the hub's last Event says
  // (its Events travel over NATS too, so the cluster never saw it).
  const why =
    state === "in-progress" && input.undeliverable !== null
      ? { reason: REASON_UNDELIVERABLE, message: input.undeliverable }
      : ev === undefined
        ? {}
        : { reason: ev.reason, message: ev.message, eventAt: iso(ev.atMs) ?? "" };
  return { namespace: svc.namespace, name: svc.name, state, ingress, ...why };
}

const RANK: Record<Health, number> = { unhealthy: 2, warning: 1, ok: 0 };

export function worst(problems: readonly { health: Health }[]): Health {
  let h: Health = "ok";
  for (const p of problems) if (RANK[p.health] > RANK[h]) h = p.health;
  return h;
}

/** Trouble first, then by name. */
export function byTrouble<T extends { health: Health; name: string }>(a: T, b: T): number {
  return RANK[b.health] - RANK[a.health] || a.name.localeCompare(b.name);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function clusterDetail(input: ClusterInput, policy: HealthPolicy): ClusterDetailJson {
  const view = input.view;
  const obs = input.observations;
  const nodeList = [...(view?.nodes.values() ?? [])]
    .map((n) => nodeJson(n, input))
    .sort((a, b) => a.name.localeCompare(b.name));
  const loadBalancerList = [...(view?.services.values() ?? [])]
    .filter((s) => isHandledLoadBalancer(s, input.loadBalancerClass))
    .map((s) => loadBalancerJson(s, input))
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));

  const waitingReasons: Record<string, number> = {};
  let oldestWaiting: number | undefined;
  let stuck = 0;
  let nodesWithPodCidrs = 0;
  let routed = 0;
  for (const n of nodeList) {
    if (n.state !== "waiting") continue;
    const reason = n.reason ?? "Initializing";
    waitingReasons[reason] = (waitingReasons[reason] ?? 0) + 1;
    const since = n.since === undefined ? undefined : Date.parse(n.since);
    if (since !== undefined && (oldestWaiting === undefined || since < oldestWaiting)) oldestWaiting = since;
    if (since !== undefined && policy.nowMs - since > policy.waitingUnhealthyAfterMs) stuck++;
  }
  for (const n of view?.nodes.values() ?? []) {
    if (n.podCidrs.length === 0) continue;
    nodesWithPodCidrs++;
    if (n.conditions.some((c) => c.type === CONDITION_NETWORK_UNAVAILABLE && c.status === "False")) routed++;
  }
  const count = (s: NodeState) => nodeList.filter((n) => n.state === s).length;
  const waiting = count("waiting");
  const deletionsHeld = count("deletion-held");
  const lbCount = (s: LoadBalancerState) => loadBalancerList.filter((l) => l.state === s).length;
  const failing = lbCount("failing");

  const connected = view?.connected ?? false;
  const problems: Problem[] = [];
  if (!connected)
    problems.push({
      health: "unhealthy",
      message: obs?.connectionChangedMs === undefined ? "agent never connected" : "agent disconnected",
    });
  if (stuck > 0)
    problems.push({
      health: "unhealthy",
      message: `${plural(stuck, "node")} waiting for initialization over ${Math.round(policy.waitingUnhealthyAfterMs / 60_000)} min`,
    });
  else if (waiting > 0)
    problems.push({ health: "warning", message: `${plural(waiting, "node")} waiting for initialization` });
  if (input.undeliverable !== null) problems.push({ health: "unhealthy", message: input.undeliverable });
  if (failing > 0)
    problems.push({ health: "unhealthy", message: `${plural(failing, "load balancer")} failing` });
  if (input.accountThrottled)
    problems.push({ health: "unhealthy", message: `account ${input.account} throttled by the cloud` });
  if (deletionsHeld > 0)
    problems.push({
      health: "warning",
      message: `${plural(deletionsHeld, "node deletion")} held by the blast-radius limit`,
    });
  const held = view?.held.size ?? 0;
  const refused = view?.refused.size ?? 0;
  if (held > 0)
    problems.push({ health: "warning", message: `${plural(held, "object")} held after a snapshot drop` });
  if (refused > 0)
    problems.push({ health: "warning", message: `${plural(refused, "object")} refused by the hub's limits` });

  return {
    name: input.name,
    account: input.account,
    health: worst(problems),
    problems,
    agent: {
      connected,
      since: iso(obs?.connectionChangedMs),
      agentVersion: input.agent?.agentVersion ?? "",
      kubernetesVersion: input.agent?.kubernetesVersion ?? "",
      lastSnapshot: iso(obs?.lastSnapshotMs),
    },
    nodes: {
      total: nodeList.length,
      initialized: nodeList.length - waiting - count("deleting"),
      waiting,
      waitingReasons,
      oldestWaitingSince: iso(oldestWaiting),
      shutdown: count("shutdown"),
      deletedByLifecycle: obs?.lifecycleDeletions ?? 0,
      deletionsHeld,
    },
    services: {
      loadBalancers: loadBalancerList.length,
      ready: lbCount("ready"),
      inProgress: lbCount("in-progress"),
      failing,
    },
    routes: { enabled: input.routesEnabled, nodesWithPodCidrs, routed },
    patches: input.patches,
    objects: { refused, held },
    ...(input.decommission !== undefined && {
      decommission: {
        current: connected && view?.synced === true,
        pending: input.decommission.services
          ? [...(view?.services.values() ?? [])]
              .filter((s) => decommissionPending(s, input.loadBalancerClass))
              .map((s) => ({
                namespace: s.namespace,
                name: s.name,
                uid: s.uid,
                finalizers: [...s.finalizers],
                ingress: s.ingress.map((i) => i.ip || i.hostname).filter((x) => x !== ""),
              }))
              .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`))
          : [],
      },
    }),
    nodeList,
    loadBalancerList,
    refusedList: [...(view?.refused.values() ?? [])].map((r) => ({
      kind: r.kind,
      key: objectKeyOf(r.kind, r.namespace, r.name),
      limit: r.limit,
      message: r.message,
    })),
    heldList: [...(view?.held.values() ?? [])].map((h) => ({
      kind: h.kind,
      key: h.key,
      since: iso(h.sinceMs) ?? "",
    })),
  };
}

export function clusterSummary(input: ClusterInput, policy: HealthPolicy): ClusterSummaryJson {
  const {
    decommission: _d,
    nodeList: _n,
    loadBalancerList: _l,
    refusedList: _r,
    heldList: _h,
    ...summary
  } = clusterDetail(input, policy);
  return summary;
}

export function fleetJson(
  hub: HubHealthJson,
  clusters: readonly ClusterSummaryJson[],
  accounts: readonly AccountJson[],
  nowMs: number,
): FleetJson {
  const sorted = [...clusters].sort(byTrouble);
  return {
    generatedAt: new Date(nowMs).toISOString(),
    hub,
    health: worst([hub, ...sorted, ...accounts]),
    counts: {
      clusters: sorted.length,
      unhealthy: sorted.filter((c) => c.health === "unhealthy").length,
      warning: sorted.filter((c) => c.health === "warning").length,
    },
    clusters: sorted,
    accounts: [...accounts].sort(byTrouble),
  };
}
