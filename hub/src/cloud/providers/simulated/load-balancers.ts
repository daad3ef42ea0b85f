/**
 * Load balancers on the simulated cloud. A Service's load balancer is six kinds of cloud
 * resource (load balancer, health check, pools, listeners, firewall rules), each created by
 * its own call, so any call may be the last one before a crash. Every resource is therefore
 * named deterministically from the load balancer's name and carries the owner tags, and
 * every method starts from what tag-filtered lists show:
 *
 * - ensure adopts what exists (the oldest of duplicates), updates in place what differs,
 *   creates what is missing (health check → pools → listeners → firewall rules), then
 *   deletes, in reverse order, every owned resource the spec no longer wants: removed
 *   ports, orphans of earlier attempts, duplicate load balancers and their sub-resources.
 * - ensureDeleted deletes everything owned, in dependency order, then lists again until
 *   nothing owned is left (a list that dropped an item may have hidden an orphan).
 *
 * The hub addresses a load balancer by its owner (cluster, Service uid); the name and the owner
 * tags are derived here (naming.ts). Nothing without the owner tags is ever changed or deleted.
 *
 * The cloud may be asynchronous: a load balancer has a status (PENDING_CREATE, ACTIVE,
 * PENDING_DELETE, ERROR) and refuses every write while PENDING_* (409 LoadBalancerBusy). Every
 * method reads that status from the cloud, never from memory, so any replica carries on where
 * another stopped:
 *
 * - PENDING_* → in progress, after the delay the cloud suggests (`poll_after_ms`).
 * - ERROR (the create failed in the cloud) → ensure reports OperationFailedError once, and marks
 *   the load balancer so in the cloud (FAILURE_REPORTED_TAG); the next ensure, whichever replica
 *   makes it, deletes it and creates afresh. updateBackends leaves it to ensure; ensureDeleted
 *   deletes it like any other.
 */
import {
  CloudError,
  NeedsEnsureError,
  OperationFailedError,
  SuspectAnswerError,
  TransientCloudError,
} from "../../errors.js";
import {
  backendsDigest,
  DIGEST_TAG_BACKENDS,
  DIGEST_TAG_SPEC,
  FAILURE_REPORTED_TAG,
  loadBalancerName,
  loadBalancerOwnerTags,
  loadBalancerSpecDigest,
  OWNER_TAG_CLUSTER,
  OWNER_TAG_SERVICE_UID,
} from "../../naming.js";
import {
  type BackendAnnotations,
  type InProgress,
  inProgress,
  type LbIngress,
  type LbListener,
  type LbOwner,
  type LbProtocol,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  type OwnedLoadBalancer,
  type OwnedLoadBalancerPage,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import type { LbCollection, SimulatedClient } from "./client.js";
import {
  parseWireFirewallRule,
  parseWireFirewallRulePage,
  parseWireHealthCheck,
  parseWireHealthCheckPage,
  parseWireListener,
  parseWireListenerPage,
  parseWireLoadBalancer,
  parseWireLoadBalancerPage,
  parseWirePool,
  parseWirePoolPage,
  type WireFirewallRule,
  type WireHealthCheck,
  type WireListener,
  type WireLoadBalancer,
  type WirePage,
  type WirePool,
} from "./convert.js";
import { isConflict, isNotFoundOf, toContractError } from "./errors.js";

type Tags = Readonly<Record<string, string>>;

/** A spec with the cloud identity this provider derives from its owner. */
interface NamedSpec extends LoadBalancerSpec {
  readonly name: string;
  readonly tags: Tags;
}

/** The cloud name and owner tags of an owner's load balancer; refuses an incomplete owner. */
function identity(owner: LbOwner): { name: string; tags: Tags } {
  if (owner.cluster === "" || owner.serviceUid === "")
    throw new CloudError("refusing to act without an owner (cluster and Service uid): no ownership tags");
  return {
    name: loadBalancerName(owner.cluster, owner.serviceUid),
    tags: loadBalancerOwnerTags(owner.cluster, owner.serviceUid),
  };
}

function ownerOf(tags: Tags): LbOwner {
  return { cluster: tags[OWNER_TAG_CLUSTER] ?? "", serviceUid: tags[OWNER_TAG_SERVICE_UID] ?? "" };
}

export interface SimulatedLoadBalancersOptions {
  /** Items per list call; the cloud caps it at 500. */
  readonly pageSize?: number;
  /** A tag-filtered list with more pages than this is suspect (owned resources are few). */
  readonly maxPages?: number;
  /** ensureDeleted: delete-and-list rounds before giving up with TransientCloudError. */
  readonly deleteRounds?: number;
}

/** The delay of an in-progress answer when the cloud suggests none. */
const DEFAULT_POLL_MS = 1000;

const DEFAULT_PAGE_SIZE = 100;
const DEFAULT_MAX_PAGES = 20;
const DEFAULT_DELETE_ROUNDS = 3;
/** The cloud's default, used when the spec leaves the idle timeout unset (0). */
const DEFAULT_IDLE_TIMEOUT_SECONDS = 60;
/** Firewall rules for "open to all": both families. */
const OPEN_TO_ALL: readonly string[] = ["0.0.0.0/0", "::/0"];

const SUPPORTED_PROTOCOLS: readonly LbProtocol[] = ["TCP", "UDP", "HTTP", "HTTPS"];

export const CAPABILITIES: LoadBalancerCapabilities = Object.freeze({
  sessionAffinity: true,
  proxyProtocol: true,
  internal: true,
  protocols: SUPPORTED_PROTOCOLS,
  // The simulated cloud, like most, caps a pool at 1,000 members.
  maxBackends: 1000,
});

interface KindInfo<T> {
  readonly collection: LbCollection;
  /** Operation prefix for ctx.call, e.g. "lb" → "lb.list". */
  readonly op: string;
  /** `error.resource.type` of the cloud's NotFound. */
  readonly type: string;
  parsePage(body: unknown): WirePage<T>;
  parse(body: unknown): T;
}

const LB: KindInfo<WireLoadBalancer> = {
  collection: "load-balancers",
  op: "lb",
  type: "load-balancer",
  parsePage: parseWireLoadBalancerPage,
  parse: parseWireLoadBalancer,
};
const LISTENER: KindInfo<WireListener> = {
  collection: "listeners",
  op: "listener",
  type: "listener",
  parsePage: parseWireListenerPage,
  parse: parseWireListener,
};
const POOL: KindInfo<WirePool> = {
  collection: "pools",
  op: "pool",
  type: "pool",
  parsePage: parseWirePoolPage,
  parse: parseWirePool,
};
const HEALTH_CHECK: KindInfo<WireHealthCheck> = {
  collection: "health-checks",
  op: "healthcheck",
  type: "health-check",
  parsePage: parseWireHealthCheckPage,
  parse: parseWireHealthCheck,
};
const FIREWALL: KindInfo<WireFirewallRule> = {
  collection: "firewall-rules",
  op: "firewall",
  type: "firewall-rule",
  parsePage: parseWireFirewallRulePage,
  parse: parseWireFirewallRule,
};

/** Everything owned (by tags) that one round of lists showed. */
interface Owned {
  /** Named like the load balancer, oldest first. */
  readonly lbs: readonly WireLoadBalancer[];
  readonly listeners: readonly WireListener[];
  readonly pools: readonly WirePool[];
  readonly healthChecks: readonly WireHealthCheck[];
  readonly firewallRules: readonly WireFirewallRule[];
}

/** One listener of the spec with the names of its resources. */
interface PlannedListener {
  readonly listenerName: string;
  readonly poolName: string;
  readonly listener: LbListener;
}

interface PlannedFirewallRule {
  readonly name: string;
  readonly protocol: "TCP" | "UDP";
  readonly port: number;
  /** Sorted; at most MAX_SOURCE_CIDRS_PER_RULE. */
  readonly sourceCidrs: readonly string[];
}

/** The simulated cloud takes at most this many source CIDRs per firewall rule (a 400 beyond). */
const MAX_SOURCE_CIDRS_PER_RULE = 100;

/** Names of a load balancer's sub-resources: deterministic, so a restart finds them. */
export function subResourceNames(lbName: string) {
  const key = (protocol: string, port: number): string => `${protocol.toLowerCase()}-${port}`;
  return {
    listener: (protocol: string, port: number): string => `${lbName}-${key(protocol, port)}`,
    pool: (protocol: string, port: number): string => `${lbName}-pool-${key(protocol, port)}`,
    healthCheck: `${lbName}-hc`,
    /** Part 0 keeps the unsuffixed name; a long source-range list continues in -1, -2, … */
    firewallRule: (protocol: string, port: number, part = 0): string =>
      `${lbName}-fw-${key(protocol, port)}${part === 0 ? "" : `-${part}`}`,
  };
}

export class SimulatedLoadBalancers implements LoadBalancers {
  readonly capabilities = CAPABILITIES;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly deleteRounds: number;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: SimulatedClient,
    opts: SimulatedLoadBalancersOptions = {},
  ) {
    this.pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    this.maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
    this.deleteRounds = opts.deleteRounds ?? DEFAULT_DELETE_ROUNDS;
  }

  async get(owner: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const { name, tags: ownerTags } = identity(owner);
    const lb = oldest(await this.listFiltered(LB, { name, tags: ownerTags }, signal));
    if (lb === undefined) return undefined;
    const pools = await this.listFiltered(POOL, { tags: ownerTags, lbId: lb.id }, signal);
    const backends = [...new Set(pools.flatMap((p) => p.members))].sort();
    return { id: lb.id, name: lb.name, owner: ownerOf(lb.tags), ingress: ingressOf(lb), backends };
  }

  async ensure(
    owner: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const digests = {
      [DIGEST_TAG_SPEC]: loadBalancerSpecDigest(spec),
      [DIGEST_TAG_BACKENDS]: backendsDigest(spec.backends, spec.backendAnnotations),
    };
    return await this.ensureNamed({ ...spec, ...identity(owner) }, owner.network, digests, signal);
  }

  private async ensureNamed(
    spec: NamedSpec,
    network: string | undefined,
    digests: Tags,
    signal: AbortSignal | undefined,
  ): Promise<readonly LbIngress[] | InProgress> {
    checkOwnership(spec.name, spec.tags);
    const planned = plan(spec);
    const firewallPlan = planFirewall(spec);
    let owned = await this.ensureSnapshot(spec.name, spec.tags, signal);
    // The cloud's status of what exists decides; nothing of it is remembered here.
    const waiting = busy(owned.lbs);
    if (waiting !== undefined) return waiting;
    const failed = owned.lbs.filter((l) => l.status === "ERROR");
    // Beside a working one, a failed one is just a duplicate (step 5 deletes it).
    if (failed.length > 0 && failed.length === owned.lbs.length) {
      const unreported = failed.filter((l) => l.tags[FAILURE_REPORTED_TAG] !== "true");
      if (unreported.length > 0) return await this.reportFailure(unreported, signal);
      await this.replaceFailed(failed, owned, signal);
      // The failed ones are deleting (wait for them) or gone (start afresh now).
      owned = await this.snapshot(spec.name, spec.tags, signal);
      const stillGoing = busy(owned.lbs);
      if (stillGoing !== undefined) return stillGoing;
    }

    let lb = oldest(owned.lbs.filter((l) => l.status === "ACTIVE"));
    if (lb === undefined) {
      lb = await this.createLoadBalancer(spec, network, signal);
      // The cloud accepted it; the next ensure sees how it went.
      if (isPending(lb)) return pendingAnswer(lb);
      if (lb.status === "ERROR") return await this.reportFailure([lb], signal);
    }
    if (lb.internal !== spec.internal) {
      throw new CloudError(
        `load balancer ${lb.name} (${lb.id}) is ${lb.internal ? "internal" : "public"}, the spec wants it ` +
          `${spec.internal ? "internal" : "public"}: the cloud cannot change this in place, it must be deleted and recreated`,
      );
    }
    const names = subResourceNames(spec.name);
    const mine = <T extends { lb_id: string; name: string }>(items: readonly T[], name: string): T[] =>
      items.filter((i) => i.lb_id === lb.id && i.name === name);

    // What to adopt, decided before any change: for each listener key, the oldest owned
    // listener, then the pool it forwards to if that is a candidate, then their health check.
    const chosenListeners = new Map<string, WireListener>();
    const chosenPools = new Map<string, WirePool>();
    for (const p of planned) {
      const listener = oldest(mine(owned.listeners, p.listenerName));
      if (listener !== undefined) chosenListeners.set(p.listenerName, listener);
      const pools = mine(owned.pools, p.poolName);
      const pool = pools.find((c) => c.id === listener?.pool_id) ?? oldest(pools);
      if (pool !== undefined) chosenPools.set(p.poolName, pool);
    }
    const hcCandidates = owned.healthChecks.filter((h) => h.name === names.healthCheck);
    const usedHc = new Set([...chosenPools.values()].map((p) => p.health_check_id));
    let hc = hcCandidates.find((h) => usedHc.has(h.id)) ?? oldest(hcCandidates);

    // 1. Health check (pools use it; without listeners there are no pools and no health check).
    const wantHc = healthCheckBody(spec);
    if (planned.length === 0) hc = undefined;
    else if (hc === undefined) {
      hc = await this.create(HEALTH_CHECK, { name: names.healthCheck, tags: spec.tags, ...wantHc }, signal);
    } else {
      const patch = diff(hc, wantHc);
      if (patch !== undefined) hc = await this.update(HEALTH_CHECK, hc.id, patch, signal);
    }
    const hcId = hc?.id;

    // 2. Pools (with their members).
    const poolIds = new Map<string, string>();
    for (const p of planned) {
      const want = {
        target_port: p.listener.nodePort,
        members: [...new Set(spec.backends)].sort(),
        session_affinity: spec.sessionAffinity,
        health_check_id: hcId ?? null,
      };
      const found = chosenPools.get(p.poolName);
      let pool: WirePool;
      if (found === undefined) {
        pool = await this.create(
          POOL,
          { name: p.poolName, lb_id: lb.id, protocol: p.listener.protocol, tags: spec.tags, ...want },
          signal,
        );
      } else {
        const patch = diff({ ...found, members: [...found.members].sort() }, want);
        pool = patch === undefined ? found : await this.update(POOL, found.id, patch, signal);
      }
      poolIds.set(p.poolName, pool.id);
    }

    // 3. Listeners.
    const keptListeners = new Set<string>();
    for (const p of planned) {
      const want = {
        pool_id: poolIds.get(p.poolName) ?? "",
        proxy_protocol: p.listener.proxyProtocol,
        idle_timeout_seconds:
          spec.idleTimeoutSeconds > 0 ? spec.idleTimeoutSeconds : DEFAULT_IDLE_TIMEOUT_SECONDS,
      };
      const found = chosenListeners.get(p.listenerName);
      if (found === undefined) {
        const created = await this.create(
          LISTENER,
          {
            name: p.listenerName,
            lb_id: lb.id,
            protocol: p.listener.protocol,
            port: p.listener.port,
            tags: spec.tags,
            ...want,
          },
          signal,
        );
        keptListeners.add(created.id);
      } else {
        const patch = diff(found, want);
        if (patch !== undefined) await this.update(LISTENER, found.id, patch, signal);
        keptListeners.add(found.id);
      }
    }

    // 4. Firewall rules.
    const keptFirewallRules = new Set<string>();
    for (const f of firewallPlan) {
      const found = oldest(mine(owned.firewallRules, f.name));
      if (found === undefined) {
        const created = await this.create(
          FIREWALL,
          {
            name: f.name,
            lb_id: lb.id,
            protocol: f.protocol,
            port: f.port,
            source_cidrs: f.sourceCidrs,
            tags: spec.tags,
          },
          signal,
        );
        keptFirewallRules.add(created.id);
      } else {
        if (!sameSet(found.source_cidrs, f.sourceCidrs)) {
          await this.update(FIREWALL, found.id, { source_cidrs: f.sourceCidrs }, signal);
        }
        keptFirewallRules.add(found.id);
      }
    }

    // 5. Everything else that is owned goes, dependents first: removed ports, duplicates,
    // orphans of interrupted attempts, duplicate load balancers.
    const keptPools = new Set(poolIds.values());
    await this.deleteAll(
      {
        lbs: owned.lbs.filter((l) => l.id !== lb.id),
        listeners: owned.listeners.filter((l) => !keptListeners.has(l.id)),
        pools: owned.pools.filter((p) => !keptPools.has(p.id)),
        healthChecks: owned.healthChecks.filter((h) => h.id !== hcId),
        firewallRules: owned.firewallRules.filter((f) => !keptFirewallRules.has(f.id)),
      },
      false,
      signal,
    );
    // Last: the digests vouch for everything above, so a crash before here leaves them stale.
    await this.recordDigests(lb, digests, signal);
    return ingressOf(lb);
  }

  /** Writes the digest tags onto the load balancer when they differ (listOwned returns them). */
  private async recordDigests(lb: WireLoadBalancer, digests: Tags, signal: AbortSignal | undefined) {
    if (Object.entries(digests).every(([k, v]) => lb.tags[k] === v)) return;
    await this.update(LB, lb.id, { tags: { ...lb.tags, ...digests } }, signal);
  }

  /**
   * The first ensure to see a load balancer in ERROR reports it: it marks it reported in the
   * cloud (so the next ensure, on any replica, replaces it) and throws OperationFailedError.
   */
  private async reportFailure(
    unreported: readonly WireLoadBalancer[],
    signal: AbortSignal | undefined,
  ): Promise<never> {
    for (const l of unreported) {
      await this.update(LB, l.id, { tags: { ...l.tags, [FAILURE_REPORTED_TAG]: "true" } }, signal);
    }
    const [first] = unreported;
    throw new OperationFailedError(
      `load balancer ${first?.name} (${first?.id}) failed in the cloud: ${first?.status_message ?? "no reason given"}; ` +
        "the next attempt replaces it",
    );
  }

  /** Deletes reported failed load balancers with their listeners, pools and firewall rules. */
  private async replaceFailed(
    failed: readonly WireLoadBalancer[],
    owned: Owned,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const ids = new Set(failed.map((l) => l.id));
    const of = <T extends { lb_id: string }>(items: readonly T[]): T[] =>
      items.filter((i) => ids.has(i.lb_id));
    this.ctx.logger.info({ ids: [...ids] }, "replacing failed load balancer");
    await this.deleteAll(
      {
        lbs: failed,
        listeners: of(owned.listeners),
        pools: of(owned.pools),
        healthChecks: [],
        firewallRules: of(owned.firewallRules),
      },
      false,
      signal,
    );
  }

  async updateBackends(
    owner: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: BackendAnnotations,
  ): Promise<undefined | InProgress> {
    const { name, tags: ownerTags } = identity(owner);
    checkOwnership(name, ownerTags);
    const listed = await this.listFiltered(LB, { name, tags: ownerTags }, signal);
    const waiting = busy(listed);
    if (waiting !== undefined) return waiting;
    const lb = oldest(listed);
    if (lb === undefined) {
      // The hub only calls this for a load balancer it ensured: absence is a suspect answer.
      throw new SuspectAnswerError(`load balancer ${name} is not listed; cannot update its backends`);
    }
    if (lb.status === "ERROR") {
      throw new NeedsEnsureError(`load balancer ${name} (${lb.id}) failed in the cloud: ensure replaces it`);
    }
    const members = [...new Set(backends)].sort();
    const pools = await this.listFiltered(POOL, { tags: ownerTags, lbId: lb.id }, signal);
    for (const pool of pools) {
      if (!sameSet(pool.members, members)) await this.update(POOL, pool.id, { members }, signal);
    }
    await this.recordDigests(
      lb,
      { [DIGEST_TAG_BACKENDS]: backendsDigest(members, backendAnnotations) },
      signal,
    );
  }

  async ensureDeleted(owner: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
    const { name, tags: ownerTags } = identity(owner);
    for (let round = 0; ; round++) {
      const owned = await this.snapshot(name, ownerTags, signal);
      const left = count(owned);
      if (left === 0) return undefined;
      // A PENDING_* load balancer takes no write, nor do its listeners, pools and firewall
      // rules: what the cloud is still creating is deleted once it settles, what it is deleting
      // is waited for.
      const pending = owned.lbs.filter(isPending);
      const frozen = new Set(pending.map((l) => l.id));
      const writable = <T extends { lb_id: string }>(items: readonly T[]): T[] =>
        items.filter((i) => !frozen.has(i.lb_id));
      const deletable: Owned = {
        lbs: owned.lbs.filter((l) => !frozen.has(l.id)),
        listeners: writable(owned.listeners),
        pools: writable(owned.pools),
        healthChecks: owned.healthChecks,
        firewallRules: writable(owned.firewallRules),
      };
      if (count(deletable) === 0) return busy(pending);
      if (round >= this.deleteRounds) {
        throw new TransientCloudError(
          `load balancer ${name}: ${left} owned resource(s) still listed after ${round} delete rounds (${describe(owned)})`,
        );
      }
      await this.deleteAll(deletable, true, signal);
    }
  }

  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const body = await this.call(`${LB.op}.list`, signal, undefined, (signals) =>
      this.client.listLbResources(
        LB.collection,
        { pageSize: this.pageSize, ...(pageToken !== undefined && { pageToken }) },
        signals,
      ),
    );
    const { items, next_page_token } = LB.parsePage(body);
    const owned: OwnedLoadBalancer[] = [];
    for (const lb of items) {
      const owner = ownerOf(lb.tags);
      // Ours only when both owner tags are there and the name is the one derived from them.
      if (owner.cluster === "" || owner.serviceUid === "") continue;
      if (lb.name !== loadBalancerName(owner.cluster, owner.serviceUid)) continue;
      const specDigest = lb.tags[DIGEST_TAG_SPEC];
      const backends = lb.tags[DIGEST_TAG_BACKENDS];
      owned.push({
        id: lb.id,
        name: lb.name,
        owner,
        ingress: ingressOf(lb),
        ...(specDigest !== undefined && { specDigest }),
        ...(backends !== undefined && { backendsDigest: backends }),
      });
    }
    return { items: owned, ...(next_page_token !== undefined && { nextPageToken: next_page_token }) };
  }

  // --- steps ----------------------------------------------------------------------------------

  /** In the cluster's network (ClusterTarget.network), else the account's default one. */
  private createLoadBalancer(
    spec: NamedSpec,
    network: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<WireLoadBalancer> {
    return this.create(
      LB,
      {
        name: spec.name,
        internal: spec.internal,
        tags: spec.tags,
        ...(network !== undefined && network !== "" && { network }),
      },
      signal,
    );
  }

  /**
   * What ensure starts from, in as few lists as the cloud allows. Listeners, pools and firewall
   * rules are created under an existing load balancer and only ever adopted under the one
   * chosen, so with no load balancer of this name listed there is none of them to adopt, and a
   * new Service's ensure lists only the two kinds that stand alone: load balancers and health
   * checks (an earlier attempt's health check is adopted). With a load balancer listed, the
   * whole snapshot: its sub-resources are adopted and every owned leftover (removed ports,
   * duplicates, orphans a delete missed) is deleted as before; ensureDeleted lists them all.
   */
  private async ensureSnapshot(name: string, tags: Tags, signal: AbortSignal | undefined): Promise<Owned> {
    const [lbs, healthChecks] = await Promise.all([
      this.listFiltered(LB, { name, tags }, signal),
      this.listFiltered(HEALTH_CHECK, { tags }, signal),
    ]);
    if (lbs.length === 0) return { lbs, listeners: [], pools: [], healthChecks, firewallRules: [] };
    const [listeners, pools, firewallRules] = await Promise.all([
      this.listFiltered(LISTENER, { tags }, signal),
      this.listFiltered(POOL, { tags }, signal),
      this.listFiltered(FIREWALL, { tags }, signal),
    ]);
    return { lbs: sortOldestFirst(lbs), listeners, pools, healthChecks, firewallRules };
  }

  /** The load balancers of this name and everything else carrying the owner tags. */
  private async snapshot(name: string, tags: Tags, signal: AbortSignal | undefined): Promise<Owned> {
    const [lbs, listeners, pools, healthChecks, firewallRules] = await Promise.all([
      this.listFiltered(LB, { name, tags }, signal),
      this.listFiltered(LISTENER, { tags }, signal),
      this.listFiltered(POOL, { tags }, signal),
      this.listFiltered(HEALTH_CHECK, { tags }, signal),
      this.listFiltered(FIREWALL, { tags }, signal),
    ]);
    return { lbs: sortOldestFirst(lbs), listeners, pools, healthChecks, firewallRules };
  }

  /**
   * Deletes in dependency order: firewall rules, listeners, pools, health checks, load
   * balancers. With `tolerateDependents`, a 409 (something unseen still depends on it) is
   * left for the next round instead of failing the call.
   */
  private async deleteAll(
    owned: Owned,
    tolerateDependents: boolean,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const steps: Array<[KindInfo<{ id: string }>, readonly { id: string }[]]> = [
      [FIREWALL, owned.firewallRules],
      [LISTENER, owned.listeners],
      [POOL, owned.pools],
      [HEALTH_CHECK, owned.healthChecks],
      [LB, owned.lbs],
    ];
    for (const [kind, items] of steps) {
      for (const item of items) {
        try {
          await this.remove(kind, item.id, signal);
        } catch (err) {
          if (!(tolerateDependents && isBlocked(err))) throw err;
          this.ctx.logger.debug({ id: item.id, err: (err as Error).message }, "delete blocked; next round");
        }
      }
    }
  }

  // --- calls ----------------------------------------------------------------------------------

  /**
   * Every page of a filtered list. Each item must match the filter (a cloud that ignored it
   * is suspect: acting on what it returned could touch what is not ours).
   */
  private async listFiltered<T extends { id: string; name: string; tags: Tags; lb_id?: string }>(
    kind: KindInfo<T>,
    filter: { name?: string; tags: Tags; lbId?: string },
    signal: AbortSignal | undefined,
  ): Promise<T[]> {
    const out: T[] = [];
    let pageToken: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= this.maxPages) {
        throw new SuspectAnswerError(`${kind.collection} list still had pages after ${page}`);
      }
      const body = await this.call(`${kind.op}.list`, signal, undefined, (signals) =>
        this.client.listLbResources(
          kind.collection,
          {
            ...filter,
            pageSize: this.pageSize,
            ...(pageToken !== undefined && { pageToken }),
          },
          signals,
        ),
      );
      const { items, next_page_token } = kind.parsePage(body);
      for (const item of items) {
        const matches =
          (filter.name === undefined || item.name === filter.name) &&
          hasTags(item.tags, filter.tags) &&
          (filter.lbId === undefined || item.lb_id === filter.lbId);
        if (!matches) {
          throw new SuspectAnswerError(
            `${kind.collection} list answered ${item.id}, which does not match the filter`,
          );
        }
        out.push(item);
      }
      pageToken = next_page_token;
      if (pageToken === undefined) return out;
    }
  }

  private async create<T>(
    kind: KindInfo<T>,
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const answer = await this.call(`${kind.op}.create`, signal, undefined, (signals) =>
      this.client.createLbResource(kind.collection, body, signals),
    );
    const created = kind.parse(answer);
    this.ctx.logger.debug({ kind: kind.type, name: body["name"] }, "created");
    return created;
  }

  private async update<T>(
    kind: KindInfo<T>,
    id: string,
    patch: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const answer = await this.call(`${kind.op}.update`, signal, undefined, (signals) =>
      this.client.updateLbResource(kind.collection, id, patch, signals),
    );
    return kind.parse(answer);
  }

  /** Deletes; the cloud's own NotFound for this id counts as done. */
  private async remove(kind: KindInfo<unknown>, id: string, signal: AbortSignal | undefined): Promise<void> {
    await this.call(`${kind.op}.delete`, signal, { type: kind.type, id }, (signals) =>
      this.client.deleteLbResource(kind.collection, id, signals),
    );
  }

  private call(
    op: string,
    signal: AbortSignal | undefined,
    goneOk: { type: string; id: string } | undefined,
    fn: (signals: AbortSignal[]) => Promise<unknown>,
  ): Promise<unknown> {
    return this.ctx.call(op, async (callSignal) => {
      try {
        return await fn(signal === undefined ? [callSignal] : [callSignal, signal]);
      } catch (err) {
        if (goneOk !== undefined && isNotFoundOf(err, goneOk.type, goneOk.id)) return null;
        throw toContractError(err, { lookup: { kind: "call" }, nowMs: this.ctx.clock.now() });
      }
    });
  }
}

// --- pure helpers ---------------------------------------------------------------------------------

/** Refuses to manage anything by an empty name or without ownership tags (a tag filter of nothing matches all). */
function checkOwnership(name: string, tags: Tags): void {
  if (name === "") throw new CloudError("load balancer name is empty");
  if (Object.keys(tags).length === 0) {
    throw new CloudError(`load balancer ${name}: refusing to act without ownership tags`);
  }
}

function plan(spec: NamedSpec): PlannedListener[] {
  const names = subResourceNames(spec.name);
  const seen = new Set<string>();
  return spec.listeners.map((listener) => {
    if (!SUPPORTED_PROTOCOLS.includes(listener.protocol)) {
      throw new CloudError(
        `load balancer ${spec.name}: protocol ${listener.protocol} (port ${listener.port}) is not supported ` +
          `by the simulated cloud (supported: ${SUPPORTED_PROTOCOLS.join(", ")})`,
      );
    }
    const key = `${listener.protocol}/${listener.port}`;
    if (seen.has(key)) throw new CloudError(`load balancer ${spec.name}: two listeners on ${key}`);
    seen.add(key);
    return {
      listenerName: names.listener(listener.protocol, listener.port),
      poolName: names.pool(listener.protocol, listener.port),
      listener,
    };
  });
}

/**
 * One rule per transport protocol and port (HTTP and HTTPS are TCP), split in parts of at most
 * MAX_SOURCE_CIDRS_PER_RULE source CIDRs: a Service with 500 source ranges is a real one.
 */
function planFirewall(spec: NamedSpec): PlannedFirewallRule[] {
  const names = subResourceNames(spec.name);
  const cidrs = spec.sourceRanges.length === 0 ? [...OPEN_TO_ALL] : [...new Set(spec.sourceRanges)].sort();
  const rules = new Map<string, PlannedFirewallRule>();
  for (const l of spec.listeners) {
    const protocol = l.protocol === "UDP" ? "UDP" : "TCP";
    for (let part = 0; part * MAX_SOURCE_CIDRS_PER_RULE < cidrs.length; part++) {
      const name = names.firewallRule(protocol, l.port, part);
      const sourceCidrs = cidrs.slice(
        part * MAX_SOURCE_CIDRS_PER_RULE,
        (part + 1) * MAX_SOURCE_CIDRS_PER_RULE,
      );
      if (!rules.has(name)) rules.set(name, { name, protocol, port: l.port, sourceCidrs });
    }
  }
  return [...rules.values()];
}

function healthCheckBody(spec: LoadBalancerSpec): Record<string, unknown> {
  const h = spec.healthCheck;
  return {
    protocol: h.protocol,
    port: h.port,
    path: h.protocol === "HTTP" && !h.path.startsWith("/") ? "/" : h.path,
    interval_seconds: h.intervalSeconds,
    timeout_seconds: h.timeoutSeconds,
    healthy_threshold: h.healthyThreshold,
    unhealthy_threshold: h.unhealthyThreshold,
  };
}

/** The fields of `want` that `have` does not already have; undefined when none. */
function diff(have: object, want: Record<string, unknown>): Record<string, unknown> | undefined {
  const current = have as Record<string, unknown>;
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(want)) {
    const c = current[k] ?? null;
    const same = Array.isArray(v) && Array.isArray(c) ? sameSet(c as string[], v as string[]) : c === v;
    if (!same) patch[k] = v;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}

function hasTags(tags: Tags, wanted: Tags): boolean {
  return Object.entries(wanted).every(([k, v]) => tags[k] === v);
}

/** Oldest first by creation time; the cloud's list order (creation order) breaks ties. */
function sortOldestFirst<T extends { created_at: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
}

function oldest<T extends { created_at: string }>(items: readonly T[]): T | undefined {
  return sortOldestFirst(items)[0];
}

function ingressOf(lb: WireLoadBalancer): LbIngress[] {
  return [{ ip: lb.ingress.ip, hostname: lb.ingress.hostname }];
}

function count(o: Owned): number {
  return o.lbs.length + o.listeners.length + o.pools.length + o.healthChecks.length + o.firewallRules.length;
}

function describe(o: Owned): string {
  return [...o.lbs, ...o.listeners, ...o.pools, ...o.healthChecks, ...o.firewallRules]
    .slice(0, 10)
    .map((r) => r.id)
    .join(", ");
}

/**
 * A contract error made from the cloud's 409 DependencyViolation, or LoadBalancerBusy (its load
 * balancer went PENDING_* meanwhile): the next round, or the next call, sees why.
 */
function isBlocked(err: unknown): boolean {
  return (
    err instanceof TransientCloudError &&
    (isConflict(err.cause, "DependencyViolation") || isConflict(err.cause, "LoadBalancerBusy"))
  );
}

function isPending(lb: WireLoadBalancer): boolean {
  return lb.status === "PENDING_CREATE" || lb.status === "PENDING_DELETE";
}

/** In progress for a PENDING_* load balancer, after the delay the cloud suggests. */
function pendingAnswer(lb: WireLoadBalancer): InProgress {
  const what = lb.status === "PENDING_CREATE" ? "provisioning" : "being deleted";
  return inProgress(lb.poll_after_ms ?? DEFAULT_POLL_MS, `load balancer ${lb.name} (${lb.id}) is ${what}`);
}

/** In progress when any of these load balancers is PENDING_* (the cloud takes no write to it), else undefined. */
function busy(lbs: readonly WireLoadBalancer[]): InProgress | undefined {
  const pending = lbs.find(isPending);
  return pending === undefined ? undefined : pendingAnswer(pending);
}
