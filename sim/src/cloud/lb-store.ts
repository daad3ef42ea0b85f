/**
 * Load balancers and their sub-resources, modelled on AWS ELB (listeners, target groups,
 * security groups) and OpenStack Octavia: every sub-resource is its own top-level resource
 * with its own id, name and tags, and references its parents by id. Deletion follows
 * dependency rules (409 DependencyViolation), so an interrupted multi-step create or delete
 * leaves real orphans behind, which auditLoadBalancers() reports.
 *
 * Asynchrony lives here, in the cloud, as Octavia's provisioning_status: an account with
 * `lbAsync.polls` N > 0 answers an API create with a PENDING_CREATE load balancer that stays so
 * for N API reads of it (gets, or lists that return it), then is ACTIVE, or ERROR with a
 * `statusMessage` when the create was drawn to fail (failNextLbCreates, failRate); an API
 * delete makes it PENDING_DELETE for N reads, then it is gone. With N = 0 (the default) a
 * create is ACTIVE (or ERROR) at once and a delete removes at once. Every client sees the same
 * states: they are the cloud's, not any client's.
 *
 * While a load balancer is PENDING_*, it is immutable, as in Octavia: a write to it or to a
 * listener, pool or firewall rule of it (create, update, delete; its own delete included) is
 * refused with 409 LoadBalancerBusy, to be tried again once it settled. An ERROR load balancer
 * is not immutable: it may be tagged, its sub-resources changed, and it may be deleted; it never
 * becomes ACTIVE. Health checks belong to no load balancer and are never refused. The
 * in-process handle's deletes (deleteLbResource, a hand in the console) remove at once,
 * whatever the state.
 */

import { hasTags, ResourceTable, type TablePage, type TableView } from "../fake-kit/table.js";
import {
  checkBoolean,
  checkInteger,
  checkName,
  checkObject,
  checkOneOf,
  checkPort,
  checkString,
  checkStringArray,
  checkTags,
  invalid,
} from "./checks.js";
import { parseCidr } from "./cidr.js";
import type { RandomSource } from "./random.js";
import { type CloudStore, SimCloudError } from "./store.js";
import {
  SIM_HEALTH_CHECK_PROTOCOLS,
  SIM_LB_PROTOCOLS,
  SIM_SESSION_AFFINITIES,
  type SimFirewallRule,
  type SimFirewallRuleSpec,
  type SimHealthCheck,
  type SimHealthCheckProtocol,
  type SimHealthCheckSpec,
  type SimLbAsyncSettings,
  type SimLbAudit,
  type SimLbAuditFilter,
  type SimLbDuplicate,
  type SimLbInventory,
  type SimLbOrphan,
  type SimLbResourceKind,
  type SimLbStatus,
  type SimListener,
  type SimListenerSpec,
  type SimLoadBalancer,
  type SimLoadBalancerSpec,
  type SimPool,
  type SimPoolSpec,
} from "./types.js";

/** A load balancer as stored: the child id lists and its status are derived when it is read. */
type LbRecord = Omit<
  SimLoadBalancer,
  "listenerIds" | "poolIds" | "healthCheckIds" | "firewallIds" | "status" | "statusMessage" | "pollAfterMs"
>;

/** A load balancer that is not plainly ACTIVE (LbStore.lifecycle); absent: ACTIVE. */
interface Lifecycle {
  status: SimLbStatus;
  /** PENDING_*: API reads left before it moves on. */
  readsLeft: number;
  /** PENDING_CREATE: where it ends, drawn at the create (a seed replays it). */
  failed: boolean;
  /** ERROR (or PENDING_CREATE that will fail): why, as the cloud says it. */
  message?: string;
}

/** The largest `lbAsync.polls` (reads) an account may take. */
const MAX_POLLS = 1_000;

export interface LoadBalancerPatch {
  readonly tags?: unknown;
}

export interface ListenerPatch {
  readonly protocol?: unknown;
  readonly port?: unknown;
  readonly poolId?: unknown;
  readonly proxyProtocol?: unknown;
  readonly idleTimeoutSeconds?: unknown;
  readonly tags?: unknown;
}

export interface PoolPatch {
  readonly targetPort?: unknown;
  readonly members?: unknown;
  readonly sessionAffinity?: unknown;
  /** null detaches the health check. */
  readonly healthCheckId?: unknown;
  readonly tags?: unknown;
}

export interface HealthCheckPatch {
  readonly protocol?: unknown;
  readonly port?: unknown;
  readonly path?: unknown;
  readonly intervalSeconds?: unknown;
  readonly timeoutSeconds?: unknown;
  readonly healthyThreshold?: unknown;
  readonly unhealthyThreshold?: unknown;
  readonly tags?: unknown;
}

export interface FirewallRulePatch {
  readonly protocol?: unknown;
  readonly port?: unknown;
  readonly sourceCidrs?: unknown;
  readonly tags?: unknown;
}

/** What a list call may filter on. */
export interface LbListFilter {
  readonly name?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /** Listeners, pools, firewall rules: only those of this load balancer. */
  readonly lbId?: string;
}

export const DEFAULT_IDLE_TIMEOUT_SECONDS = 60;
const MAX_MEMBERS = 1_000;
const MAX_SOURCE_CIDRS = 100;
const HOSTS_PER_24 = 254;
/** Internal ingress addresses: 10.200.0.1 up to 10.255.255.254, clear of the instances' 10.0-63. */
const INTERNAL_FIRST_OCTET2 = 200;
const INTERNAL_CAPACITY = (256 - INTERNAL_FIRST_OCTET2) * 256 * HOSTS_PER_24;
/** Public ingress addresses: 198.18.0.0/15 (RFC 2544 benchmarking space). */
const PUBLIC_CAPACITY = 2 * 256 * HOSTS_PER_24;

const RESOURCE_TYPE: Record<SimLbResourceKind, string> = {
  "load-balancer": "load-balancer",
  listener: "listener",
  pool: "pool",
  "health-check": "health-check",
  "firewall-rule": "firewall-rule",
};

export class LbStore {
  private readonly lbs: ResourceTable<LbRecord>;
  private readonly listenerTable: ResourceTable<SimListener>;
  private readonly poolTable: ResourceTable<SimPool>;
  private readonly hcTable: ResourceTable<SimHealthCheck>;
  private readonly fwTable: ResourceTable<SimFirewallRule>;
  /** Reference indexes: parent id → ids of what points at it, in creation order. */
  private readonly listenersByLb = new Map<string, Set<string>>();
  private readonly poolsByLb = new Map<string, Set<string>>();
  private readonly fwsByLb = new Map<string, Set<string>>();
  private readonly listenersByPool = new Map<string, Set<string>>();
  private readonly poolsByHc = new Map<string, Set<string>>();
  private internalAddresses = 0;
  private publicAddresses = 0;
  /** Load balancers pending or failed, by id (the module comment). */
  private readonly lifecycle = new Map<string, Lifecycle>();

  constructor(
    private readonly cloud: CloudStore,
    private readonly random: RandomSource,
    private readonly now: () => number,
    nextSeq: () => number,
  ) {
    const regional = (item: { account: string; region: string }): string =>
      scopeKey(item.account, item.region);
    this.lbs = new ResourceTable<LbRecord>(nextSeq, regional);
    this.listenerTable = new ResourceTable<SimListener>(nextSeq, regional);
    this.poolTable = new ResourceTable<SimPool>(nextSeq, regional);
    this.hcTable = new ResourceTable<SimHealthCheck>(nextSeq, regional);
    this.fwTable = new ResourceTable<SimFirewallRule>(nextSeq, regional);
  }

  // --- creation -----------------------------------------------------------------------------

  /**
   * `via` "api": the public API's create, which goes through the account's timing and failure
   * settings; "handle": made as if by another tool long ago, ACTIVE at once.
   */
  createLoadBalancer(
    accountName: string,
    spec: SimLoadBalancerSpec,
    via: "api" | "handle" = "handle",
  ): SimLoadBalancer {
    const account = this.cloud.account(accountName);
    checkObject(spec, "load balancer");
    const name = checkName(spec.name);
    const region = this.checkRegion(spec.region);
    const network =
      spec.network === undefined ? account.defaultNetwork : checkString(spec.network, "network");
    if (!this.cloud.networksIn(account.name, region).includes(network)) {
      throw invalid(`network ${network} is not a network of account ${account.name} in ${region}`);
    }
    const internal = spec.internal === undefined ? false : checkBoolean(spec.internal, "internal");
    const tags = checkTags(spec.tags);
    const id = this.newId("lb");
    const record: LbRecord = Object.freeze({
      id,
      account: account.name,
      region,
      name,
      tags: Object.freeze(tags),
      createdAt: this.isoNow(),
      network,
      internal,
      ingress: Object.freeze({
        ip: this.allocateIngress(internal),
        hostname: `${name}.${region}.lb.sim.example`,
      }),
    });
    this.lbs.insert(record, this.now());
    if (via === "api") this.startCreate(record);
    return this.lbView(record);
  }

  /** Draws the create's outcome now and starts its PENDING_CREATE, or settles it at once. */
  private startCreate(lb: LbRecord): void {
    const account = this.cloud.account(lb.account);
    let failed = false;
    if (account.failNextLbCreates > 0) {
      account.failNextLbCreates--;
      failed = true;
    } else if (account.lbAsync.failRate > 0) {
      // Drawn only when asked for, so accounts without failures replay the same ids.
      failed = this.random.next() < account.lbAsync.failRate;
    }
    const message = failed
      ? `provisioning of load balancer ${lb.name} failed: no capacity for its data plane in ${lb.region} (simulated)`
      : undefined;
    const life: Lifecycle = {
      status: "PENDING_CREATE",
      readsLeft: account.lbAsync.polls,
      failed,
      ...(message !== undefined && { message }),
    };
    if (life.readsLeft > 0) this.lifecycle.set(lb.id, life);
    else this.settle(lb.id, life);
  }

  /** A PENDING_* load balancer whose reads ran out: created (ACTIVE or ERROR), or deleted. */
  private settle(id: string, life: Lifecycle): void {
    if (life.status === "PENDING_DELETE") {
      this.removeLb(id);
      return;
    }
    if (!life.failed) {
      this.lifecycle.delete(id);
      return;
    }
    this.lifecycle.set(id, {
      status: "ERROR",
      readsLeft: 0,
      failed: true,
      message: life.message ?? "failed",
    });
  }

  /** One API read of a live load balancer: a pending one moves one read closer to its next state. */
  private observe(id: string): void {
    const life = this.lifecycle.get(id);
    if (life === undefined || (life.status !== "PENDING_CREATE" && life.status !== "PENDING_DELETE")) return;
    if (life.readsLeft > 0) life.readsLeft--;
    else this.settle(id, life);
  }

  private removeLb(id: string): void {
    this.lbs.remove(id, this.now());
    this.lifecycle.delete(id);
  }

  /** 409 LoadBalancerBusy while the load balancer is PENDING_* (immutable, as in Octavia). */
  private checkMutable(lbId: string): void {
    const status = this.lifecycle.get(lbId)?.status;
    if (status === "PENDING_CREATE" || status === "PENDING_DELETE") {
      throw new SimCloudError(
        409,
        "LoadBalancerBusy",
        `load balancer ${lbId} is ${status}: it and its listeners, pools and firewall rules cannot change until it is ACTIVE or ERROR`,
      );
    }
  }

  // --- asynchrony settings (per account) --------------------------------------------------------

  setAsync(accountName: string, settings: Partial<SimLbAsyncSettings>): void {
    const account = this.cloud.account(accountName);
    checkObject(settings, "load-balancer async settings");
    const { polls, pollMs, failRate } = settings as Record<string, unknown>;
    for (const key of Object.keys(settings)) {
      if (key !== "polls" && key !== "pollMs" && key !== "failRate")
        throw invalid(`unknown setting "${key}"`);
    }
    const next: SimLbAsyncSettings = {
      polls: polls === undefined ? account.lbAsync.polls : checkInteger(polls, "polls", 0, MAX_POLLS),
      pollMs: pollMs === undefined ? account.lbAsync.pollMs : checkInteger(pollMs, "pollMs", 1, 3_600_000),
      failRate: failRate === undefined ? account.lbAsync.failRate : checkRate(failRate, "failRate"),
    };
    account.lbAsync = Object.freeze(next);
  }

  asyncSettings(accountName: string): SimLbAsyncSettings {
    return this.cloud.account(accountName).lbAsync;
  }

  failNextCreates(accountName: string, count: number): void {
    const account = this.cloud.account(accountName);
    account.failNextLbCreates = checkInteger(count, "count", 0, 1_000_000);
  }

  createListener(accountName: string, spec: SimListenerSpec, region?: string): SimListener {
    const account = this.cloud.account(accountName).name;
    checkObject(spec, "listener");
    const name = checkName(spec.name);
    const lb = this.parentLb(account, spec.lbId, region);
    this.checkMutable(lb.id);
    const protocol = checkOneOf(spec.protocol, "protocol", SIM_LB_PROTOCOLS);
    const port = checkPort(spec.port);
    const poolId = this.checkPoolOf(lb, spec.poolId);
    const proxyProtocol =
      spec.proxyProtocol === undefined ? false : checkBoolean(spec.proxyProtocol, "proxyProtocol");
    const idleTimeoutSeconds =
      spec.idleTimeoutSeconds === undefined
        ? DEFAULT_IDLE_TIMEOUT_SECONDS
        : checkInteger(spec.idleTimeoutSeconds, "idleTimeoutSeconds", 1, 4_000);
    const tags = checkTags(spec.tags);
    this.checkListenerPortFree(lb.id, protocol, port, undefined);
    const listener: SimListener = Object.freeze({
      id: this.newId("lsn"),
      account,
      region: lb.region,
      name,
      tags: Object.freeze(tags),
      createdAt: this.isoNow(),
      lbId: lb.id,
      protocol,
      port,
      poolId,
      proxyProtocol,
      idleTimeoutSeconds,
    });
    this.listenerTable.insert(listener, this.now());
    link(this.listenersByLb, lb.id, listener.id);
    link(this.listenersByPool, poolId, listener.id);
    return listener;
  }

  createPool(accountName: string, spec: SimPoolSpec, region?: string): SimPool {
    const account = this.cloud.account(accountName).name;
    checkObject(spec, "pool");
    const name = checkName(spec.name);
    const lb = this.parentLb(account, spec.lbId, region);
    this.checkMutable(lb.id);
    const protocol = checkOneOf(spec.protocol, "protocol", SIM_LB_PROTOCOLS);
    const targetPort = checkPort(spec.targetPort, "targetPort");
    const members = spec.members === undefined ? [] : this.checkMembers(account, lb.region, spec.members);
    const sessionAffinity =
      spec.sessionAffinity === undefined
        ? "None"
        : checkOneOf(spec.sessionAffinity, "sessionAffinity", SIM_SESSION_AFFINITIES);
    const healthCheckId =
      spec.healthCheckId === undefined
        ? undefined
        : this.checkHealthCheckRef(account, lb.region, spec.healthCheckId);
    const tags = checkTags(spec.tags);
    const pool: SimPool = Object.freeze({
      id: this.newId("pool"),
      account,
      region: lb.region,
      name,
      tags: Object.freeze(tags),
      createdAt: this.isoNow(),
      lbId: lb.id,
      protocol,
      targetPort,
      members: Object.freeze(members),
      sessionAffinity,
      ...(healthCheckId !== undefined && { healthCheckId }),
    });
    this.poolTable.insert(pool, this.now());
    link(this.poolsByLb, lb.id, pool.id);
    if (healthCheckId !== undefined) link(this.poolsByHc, healthCheckId, pool.id);
    return pool;
  }

  createHealthCheck(accountName: string, spec: SimHealthCheckSpec): SimHealthCheck {
    const account = this.cloud.account(accountName).name;
    checkObject(spec, "health check");
    const name = checkName(spec.name);
    const region = this.checkRegion(spec.region);
    const protocol = checkOneOf(spec.protocol, "protocol", SIM_HEALTH_CHECK_PROTOCOLS);
    const hc: SimHealthCheck = Object.freeze({
      id: this.newId("hc"),
      account,
      region,
      name,
      tags: Object.freeze(checkTags(spec.tags)),
      createdAt: this.isoNow(),
      protocol,
      port: checkPort(spec.port),
      path: checkPath(protocol, spec.path),
      intervalSeconds: optInteger(spec.intervalSeconds, "intervalSeconds", 1, 3_600, 10),
      timeoutSeconds: optInteger(spec.timeoutSeconds, "timeoutSeconds", 1, 3_600, 5),
      healthyThreshold: optInteger(spec.healthyThreshold, "healthyThreshold", 1, 100, 2),
      unhealthyThreshold: optInteger(spec.unhealthyThreshold, "unhealthyThreshold", 1, 100, 3),
    });
    this.hcTable.insert(hc, this.now());
    return hc;
  }

  createFirewallRule(accountName: string, spec: SimFirewallRuleSpec, region?: string): SimFirewallRule {
    const account = this.cloud.account(accountName).name;
    checkObject(spec, "firewall rule");
    const name = checkName(spec.name);
    const lb = this.parentLb(account, spec.lbId, region);
    this.checkMutable(lb.id);
    const rule: SimFirewallRule = Object.freeze({
      id: this.newId("fw"),
      account,
      region: lb.region,
      name,
      tags: Object.freeze(checkTags(spec.tags)),
      createdAt: this.isoNow(),
      lbId: lb.id,
      protocol: checkOneOf(spec.protocol, "protocol", SIM_LB_PROTOCOLS),
      port: checkPort(spec.port),
      sourceCidrs: Object.freeze(checkSourceCidrs(spec.sourceCidrs)),
    });
    this.fwTable.insert(rule, this.now());
    link(this.fwsByLb, lb.id, rule.id);
    return rule;
  }

  // --- updates (API side: scoped to account and region) ---------------------------------------

  updateLoadBalancer(account: string, region: string, id: string, patch: LoadBalancerPatch): SimLoadBalancer {
    const lb = this.scopedOrThrow(this.lbs, "load-balancer", id, account, region);
    this.checkMutable(lb.id);
    const next: LbRecord = Object.freeze({
      ...lb,
      ...(patch.tags !== undefined && { tags: Object.freeze(checkTags(patch.tags)) }),
    });
    this.lbs.replace(next, this.now());
    return this.lbView(next);
  }

  updateListener(account: string, region: string, id: string, patch: ListenerPatch): SimListener {
    const current = this.scopedOrThrow(this.listenerTable, "listener", id, account, region);
    this.checkMutable(current.lbId);
    const lb = this.lbs.get(current.lbId);
    const protocol =
      patch.protocol === undefined
        ? current.protocol
        : checkOneOf(patch.protocol, "protocol", SIM_LB_PROTOCOLS);
    const port = patch.port === undefined ? current.port : checkPort(patch.port);
    let poolId = current.poolId;
    if (patch.poolId !== undefined) {
      if (lb === undefined) throw invalid(`load balancer ${current.lbId} of listener ${id} no longer exists`);
      poolId = this.checkPoolOf(lb, patch.poolId);
    }
    const next: SimListener = Object.freeze({
      ...current,
      protocol,
      port,
      poolId,
      proxyProtocol:
        patch.proxyProtocol === undefined
          ? current.proxyProtocol
          : checkBoolean(patch.proxyProtocol, "proxyProtocol"),
      idleTimeoutSeconds:
        patch.idleTimeoutSeconds === undefined
          ? current.idleTimeoutSeconds
          : checkInteger(patch.idleTimeoutSeconds, "idleTimeoutSeconds", 1, 4_000),
      tags: patch.tags === undefined ? current.tags : Object.freeze(checkTags(patch.tags)),
    });
    if (protocol !== current.protocol || port !== current.port) {
      this.checkListenerPortFree(current.lbId, protocol, port, id);
    }
    this.listenerTable.replace(next, this.now());
    if (poolId !== current.poolId) {
      unlink(this.listenersByPool, current.poolId, id);
      link(this.listenersByPool, poolId, id);
    }
    return next;
  }

  updatePool(account: string, region: string, id: string, patch: PoolPatch): SimPool {
    const current = this.scopedOrThrow(this.poolTable, "pool", id, account, region);
    this.checkMutable(current.lbId);
    let healthCheckId = current.healthCheckId;
    if (patch.healthCheckId === null) healthCheckId = undefined;
    else if (patch.healthCheckId !== undefined) {
      healthCheckId = this.checkHealthCheckRef(current.account, current.region, patch.healthCheckId);
    }
    const { healthCheckId: _old, ...rest } = current;
    const next: SimPool = Object.freeze({
      ...rest,
      targetPort:
        patch.targetPort === undefined ? current.targetPort : checkPort(patch.targetPort, "targetPort"),
      members:
        patch.members === undefined
          ? current.members
          : Object.freeze(this.checkMembers(current.account, current.region, patch.members)),
      sessionAffinity:
        patch.sessionAffinity === undefined
          ? current.sessionAffinity
          : checkOneOf(patch.sessionAffinity, "sessionAffinity", SIM_SESSION_AFFINITIES),
      tags: patch.tags === undefined ? current.tags : Object.freeze(checkTags(patch.tags)),
      ...(healthCheckId !== undefined && { healthCheckId }),
    });
    this.poolTable.replace(next, this.now());
    if (healthCheckId !== current.healthCheckId) {
      if (current.healthCheckId !== undefined) unlink(this.poolsByHc, current.healthCheckId, id);
      if (healthCheckId !== undefined) link(this.poolsByHc, healthCheckId, id);
    }
    return next;
  }

  updateHealthCheck(account: string, region: string, id: string, patch: HealthCheckPatch): SimHealthCheck {
    const current = this.scopedOrThrow(this.hcTable, "health-check", id, account, region);
    const protocol: SimHealthCheckProtocol =
      patch.protocol === undefined
        ? current.protocol
        : checkOneOf(patch.protocol, "protocol", SIM_HEALTH_CHECK_PROTOCOLS);
    const path =
      patch.path === undefined
        ? protocol === "HTTP" && !current.path.startsWith("/")
          ? "/"
          : current.path
        : checkPath(protocol, patch.path);
    const next: SimHealthCheck = Object.freeze({
      ...current,
      protocol,
      path,
      port: patch.port === undefined ? current.port : checkPort(patch.port),
      intervalSeconds: optInteger(
        patch.intervalSeconds,
        "intervalSeconds",
        1,
        3_600,
        current.intervalSeconds,
      ),
      timeoutSeconds: optInteger(patch.timeoutSeconds, "timeoutSeconds", 1, 3_600, current.timeoutSeconds),
      healthyThreshold: optInteger(
        patch.healthyThreshold,
        "healthyThreshold",
        1,
        100,
        current.healthyThreshold,
      ),
      unhealthyThreshold: optInteger(
        patch.unhealthyThreshold,
        "unhealthyThreshold",
        1,
        100,
        current.unhealthyThreshold,
      ),
      tags: patch.tags === undefined ? current.tags : Object.freeze(checkTags(patch.tags)),
    });
    this.hcTable.replace(next, this.now());
    return next;
  }

  updateFirewallRule(account: string, region: string, id: string, patch: FirewallRulePatch): SimFirewallRule {
    const current = this.scopedOrThrow(this.fwTable, "firewall-rule", id, account, region);
    this.checkMutable(current.lbId);
    const next: SimFirewallRule = Object.freeze({
      ...current,
      protocol:
        patch.protocol === undefined
          ? current.protocol
          : checkOneOf(patch.protocol, "protocol", SIM_LB_PROTOCOLS),
      port: patch.port === undefined ? current.port : checkPort(patch.port),
      sourceCidrs:
        patch.sourceCidrs === undefined
          ? current.sourceCidrs
          : Object.freeze(checkSourceCidrs(patch.sourceCidrs)),
      tags: patch.tags === undefined ? current.tags : Object.freeze(checkTags(patch.tags)),
    });
    this.fwTable.replace(next, this.now());
    return next;
  }

  // --- deletion -----------------------------------------------------------------------------

  /**
   * Deletes a resource of any kind by id. With `account`/`region`, the id must be in that
   * scope (the API), else 404, and a PENDING_* load balancer's resources are immutable (409
   * LoadBalancerBusy); without, it is the handle's delete, at once. Dependency rules: a load
   * balancer with listeners, a pool a listener forwards to, a health check a pool uses → 409
   * DependencyViolation. An API delete of a load balancer of an asynchronous account starts its
   * PENDING_DELETE.
   */
  delete(id: string, account?: string, region?: string): void {
    const kind = kindOfId(id);
    const api = account !== undefined;
    switch (kind) {
      case "load-balancer": {
        const lb = this.scopedOrThrow(this.lbs, kind, id, account, region);
        if (api) this.checkMutable(id);
        const users = [...(this.listenersByLb.get(id) ?? [])];
        if (users.length > 0) throw dependency(kind, id, "listener", users);
        const polls = this.asyncSettings(lb.account).polls;
        if (api && polls > 0) {
          const failed = this.lifecycle.get(id)?.failed ?? false;
          this.lifecycle.set(id, { status: "PENDING_DELETE", readsLeft: polls, failed });
        } else this.removeLb(lb.id);
        return;
      }
      case "listener": {
        const l = this.scopedOrThrow(this.listenerTable, kind, id, account, region);
        if (api) this.checkMutable(l.lbId);
        this.listenerTable.remove(id, this.now());
        unlink(this.listenersByLb, l.lbId, id);
        unlink(this.listenersByPool, l.poolId, id);
        return;
      }
      case "pool": {
        const p = this.scopedOrThrow(this.poolTable, kind, id, account, region);
        if (api) this.checkMutable(p.lbId);
        const users = [...(this.listenersByPool.get(id) ?? [])];
        if (users.length > 0) throw dependency(kind, id, "listener", users);
        this.poolTable.remove(id, this.now());
        unlink(this.poolsByLb, p.lbId, id);
        if (p.healthCheckId !== undefined) unlink(this.poolsByHc, p.healthCheckId, id);
        return;
      }
      case "health-check": {
        this.scopedOrThrow(this.hcTable, kind, id, account, region);
        const users = [...(this.poolsByHc.get(id) ?? [])];
        if (users.length > 0) throw dependency(kind, id, "pool", users);
        this.hcTable.remove(id, this.now());
        return;
      }
      case "firewall-rule": {
        const f = this.scopedOrThrow(this.fwTable, kind, id, account, region);
        if (api) this.checkMutable(f.lbId);
        this.fwTable.remove(id, this.now());
        unlink(this.fwsByLb, f.lbId, id);
        return;
      }
      default:
        throw new SimCloudError(404, "NotFound", `no load-balancer resource ${id}`, { type: "unknown", id });
    }
  }

  // --- reads (API side) -----------------------------------------------------------------------

  /** A direct API get: it counts as a read of a pending load balancer (the module comment). */
  readLoadBalancer(
    account: string,
    region: string,
    id: string,
    view: TableView,
  ): SimLoadBalancer | undefined {
    if (inScope(this.lbs.get(id), account, region) !== undefined) this.observe(id);
    const lb = inScope(this.lbs.read(id, view), account, region);
    return lb === undefined ? undefined : this.lbView(lb);
  }

  readListener(account: string, region: string, id: string, view: TableView): SimListener | undefined {
    return inScope(this.listenerTable.read(id, view), account, region);
  }

  readPool(account: string, region: string, id: string, view: TableView): SimPool | undefined {
    return inScope(this.poolTable.read(id, view), account, region);
  }

  readHealthCheck(account: string, region: string, id: string, view: TableView): SimHealthCheck | undefined {
    return inScope(this.hcTable.read(id, view), account, region);
  }

  readFirewallRule(
    account: string,
    region: string,
    id: string,
    view: TableView,
  ): SimFirewallRule | undefined {
    return inScope(this.fwTable.read(id, view), account, region);
  }

  pageLoadBalancers(
    account: string,
    region: string,
    filter: LbListFilter,
    pageSize: number,
    afterSeq?: number,
  ): TablePage<SimLoadBalancer> {
    const page = this.lbs.page(scopeKey(account, region), matcher(filter), pageSize, afterSeq);
    // Each one listed is read once; one whose PENDING_DELETE ends with this read is not shown.
    const items: SimLoadBalancer[] = [];
    for (const listed of page.items) {
      this.observe(listed.id);
      const lb = this.lbs.get(listed.id);
      if (lb !== undefined) items.push(this.lbView(lb));
    }
    return { ...page, items };
  }

  pageListeners(account: string, region: string, filter: LbListFilter, pageSize: number, afterSeq?: number) {
    return this.listenerTable.page(scopeKey(account, region), matcher(filter), pageSize, afterSeq);
  }

  pagePools(account: string, region: string, filter: LbListFilter, pageSize: number, afterSeq?: number) {
    return this.poolTable.page(scopeKey(account, region), matcher(filter), pageSize, afterSeq);
  }

  pageHealthChecks(
    account: string,
    region: string,
    filter: LbListFilter,
    pageSize: number,
    afterSeq?: number,
  ) {
    return this.hcTable.page(scopeKey(account, region), matcher(filter), pageSize, afterSeq);
  }

  pageFirewallRules(
    account: string,
    region: string,
    filter: LbListFilter,
    pageSize: number,
    afterSeq?: number,
  ) {
    return this.fwTable.page(scopeKey(account, region), matcher(filter), pageSize, afterSeq);
  }

  // --- inspection (the truth) -----------------------------------------------------------------

  loadBalancers(account?: string): SimLoadBalancer[] {
    return this.lbs.all(account).map((lb) => this.lbView(lb));
  }

  listeners(account?: string): SimListener[] {
    return this.listenerTable.all(account);
  }

  pools(account?: string): SimPool[] {
    return this.poolTable.all(account);
  }

  healthChecks(account?: string): SimHealthCheck[] {
    return this.hcTable.all(account);
  }

  firewallRules(account?: string): SimFirewallRule[] {
    return this.fwTable.all(account);
  }

  inventory(account?: string): SimLbInventory {
    return {
      loadBalancers: this.loadBalancers(account),
      listeners: this.listeners(account),
      pools: this.pools(account),
      healthChecks: this.healthChecks(account),
      firewallRules: this.firewallRules(account),
    };
  }

  audit(filter: SimLbAuditFilter = {}): SimLbAudit {
    const wanted = filter.tags ?? {};
    const judged = <T extends { account: string; tags: Readonly<Record<string, string>> }>(items: T[]): T[] =>
      items.filter((i) => hasTags(i.tags, wanted));
    const lbs = judged(this.lbs.all(filter.account));
    const listeners = judged(this.listeners(filter.account));
    const pools = judged(this.pools(filter.account));
    const hcs = judged(this.healthChecks(filter.account));
    const fws = judged(this.firewallRules(filter.account));

    const orphans: SimLbOrphan[] = [];
    const lbGone = (lbId: string): string | undefined =>
      this.lbs.has(lbId) ? undefined : `load balancer ${lbId} does not exist`;
    for (const l of listeners) {
      const reason = lbGone(l.lbId);
      if (reason !== undefined) orphans.push({ kind: "listener", id: l.id, name: l.name, reason });
    }
    for (const p of pools) {
      const reason =
        lbGone(p.lbId) ??
        (isEmpty(this.listenersByPool.get(p.id)) ? "no listener forwards to it" : undefined);
      if (reason !== undefined) orphans.push({ kind: "pool", id: p.id, name: p.name, reason });
    }
    for (const h of hcs) {
      if (isEmpty(this.poolsByHc.get(h.id)))
        orphans.push({ kind: "health-check", id: h.id, name: h.name, reason: "no pool uses it" });
    }
    for (const f of fws) {
      const reason = lbGone(f.lbId);
      if (reason !== undefined) orphans.push({ kind: "firewall-rule", id: f.id, name: f.name, reason });
    }

    const duplicates: SimLbDuplicate[] = [
      ...duplicatesOf("load-balancer", lbs),
      ...duplicatesOf("listener", listeners),
      ...duplicatesOf("pool", pools),
      ...duplicatesOf("health-check", hcs),
      ...duplicatesOf("firewall-rule", fws),
    ];
    return { orphans, duplicates };
  }

  // --- helpers --------------------------------------------------------------------------------

  private lbView(lb: LbRecord): SimLoadBalancer {
    const poolIds = [...(this.poolsByLb.get(lb.id) ?? [])];
    const healthCheckIds = new Set<string>();
    for (const id of poolIds) {
      const hc = this.poolTable.get(id)?.healthCheckId;
      if (hc !== undefined) healthCheckIds.add(hc);
    }
    const life = this.lifecycle.get(lb.id);
    const status = life?.status ?? "ACTIVE";
    const pending = status === "PENDING_CREATE" || status === "PENDING_DELETE";
    return Object.freeze({
      ...lb,
      status,
      ...(status === "ERROR" && { statusMessage: life?.message ?? "failed" }),
      ...(pending && { pollAfterMs: this.asyncSettings(lb.account).pollMs }),
      listenerIds: Object.freeze([...(this.listenersByLb.get(lb.id) ?? [])]),
      poolIds: Object.freeze(poolIds),
      healthCheckIds: Object.freeze([...healthCheckIds]),
      firewallIds: Object.freeze([...(this.fwsByLb.get(lb.id) ?? [])]),
    });
  }

  private checkRegion(region: unknown): string {
    if (typeof region !== "string") throw invalid("region is required");
    if (!this.cloud.hasRegion(region))
      throw new SimCloudError(400, "InvalidRegion", `unknown region "${region}"`);
    return region;
  }

  /** The load balancer a new sub-resource names: it must exist in the account (and region). */
  private parentLb(account: string, lbId: unknown, region: string | undefined): LbRecord {
    const id = checkString(lbId, "lbId");
    const lb = this.lbs.get(id);
    if (lb === undefined || lb.account !== account || (region !== undefined && lb.region !== region)) {
      throw invalid(`load balancer ${id} does not exist`);
    }
    return lb;
  }

  private checkPoolOf(lb: LbRecord, poolId: unknown): string {
    const id = checkString(poolId, "poolId");
    const pool = this.poolTable.get(id);
    if (pool === undefined || pool.account !== lb.account) throw invalid(`pool ${id} does not exist`);
    if (pool.lbId !== lb.id) throw invalid(`pool ${id} belongs to load balancer ${pool.lbId}, not ${lb.id}`);
    return id;
  }

  private checkHealthCheckRef(account: string, region: string, hcId: unknown): string {
    const id = checkString(hcId, "healthCheckId");
    const hc = this.hcTable.get(id);
    if (hc === undefined || hc.account !== account || hc.region !== region) {
      throw invalid(`health check ${id} does not exist`);
    }
    return id;
  }

  private checkMembers(account: string, region: string, value: unknown): string[] {
    const ids = checkStringArray(value, "members", MAX_MEMBERS);
    const unique = [...new Set(ids)];
    for (const id of unique) {
      const instance = this.cloud.get(id);
      if (instance === undefined || instance.account !== account || instance.region !== region) {
        throw invalid(`member ${id} is not an instance of this account in ${region}`);
      }
      if (instance.state === "terminated") throw invalid(`member ${id} is terminated`);
    }
    return unique;
  }

  private checkListenerPortFree(
    lbId: string,
    protocol: string,
    port: number,
    except: string | undefined,
  ): void {
    for (const id of this.listenersByLb.get(lbId) ?? []) {
      if (id === except) continue;
      const other = this.listenerTable.get(id);
      if (other !== undefined && other.protocol === protocol && other.port === port) {
        throw new SimCloudError(
          409,
          "DuplicateListener",
          `load balancer ${lbId} already has listener ${id} on ${protocol}/${port}`,
        );
      }
    }
  }

  private scopedOrThrow<
    T extends { id: string; account: string; region: string; tags: Readonly<Record<string, string>> },
  >(
    table: ResourceTable<T>,
    kind: SimLbResourceKind,
    id: string,
    account: string | undefined,
    region: string | undefined,
  ): T {
    const item = table.get(id);
    if (
      item === undefined ||
      (account !== undefined && item.account !== account) ||
      (region !== undefined && item.region !== region)
    ) {
      throw notFound(kind, id);
    }
    return item;
  }

  private newId(prefix: string): string {
    for (;;) {
      const id = `${prefix}-${this.random.hex(12)}`;
      if (!this.lbs.knows(id) && !this.listenerTable.knows(id) && !this.poolTable.knows(id)) {
        if (!this.hcTable.knows(id) && !this.fwTable.knows(id)) return id;
      }
    }
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  private allocateIngress(internal: boolean): string {
    if (internal) {
      const k = this.internalAddresses++;
      if (k >= INTERNAL_CAPACITY)
        throw new SimCloudError(507, "AddressSpaceExhausted", "no internal addresses left");
      return `10.${INTERNAL_FIRST_OCTET2 + Math.floor(k / (256 * HOSTS_PER_24))}.${Math.floor(k / HOSTS_PER_24) % 256}.${(k % HOSTS_PER_24) + 1}`;
    }
    const k = this.publicAddresses++;
    if (k >= PUBLIC_CAPACITY)
      throw new SimCloudError(507, "AddressSpaceExhausted", "no public addresses left");
    return `198.${18 + Math.floor(k / (256 * HOSTS_PER_24))}.${Math.floor(k / HOSTS_PER_24) % 256}.${(k % HOSTS_PER_24) + 1}`;
  }
}

/** The kind of a load-balancer resource from its id prefix. */
export function kindOfId(id: string): SimLbResourceKind | undefined {
  const prefix = id.slice(0, id.indexOf("-"));
  switch (prefix) {
    case "lb":
      return "load-balancer";
    case "lsn":
      return "listener";
    case "pool":
      return "pool";
    case "hc":
      return "health-check";
    case "fw":
      return "firewall-rule";
    default:
      return undefined;
  }
}

export function notFound(kind: SimLbResourceKind, id: string): SimCloudError {
  return new SimCloudError(404, "NotFound", `${kind} ${id} not found`, { type: RESOURCE_TYPE[kind], id });
}

function dependency(kind: SimLbResourceKind, id: string, userKind: string, users: string[]): SimCloudError {
  return new SimCloudError(
    409,
    "DependencyViolation",
    `${kind} ${id} is still used by ${userKind}${users.length > 1 ? "s" : ""} ${users.join(", ")}`,
  );
}

function scopeKey(account: string, region: string): string {
  return `${account}\u0000${region}`;
}

function inScope<T extends { account: string; region: string }>(
  item: T | undefined,
  account: string,
  region: string,
): T | undefined {
  return item !== undefined && item.account === account && item.region === region ? item : undefined;
}

function matcher(
  filter: LbListFilter,
): (item: { name: string; tags: Readonly<Record<string, string>> }) => boolean {
  const { name, tags, lbId } = filter;
  return (item) =>
    (name === undefined || item.name === name) &&
    (tags === undefined || hasTags(item.tags, tags)) &&
    (lbId === undefined || (item as { lbId?: string }).lbId === lbId);
}

function link(index: Map<string, Set<string>>, parent: string, child: string): void {
  const set = index.get(parent);
  if (set === undefined) index.set(parent, new Set([child]));
  else set.add(child);
}

function unlink(index: Map<string, Set<string>>, parent: string, child: string): void {
  const set = index.get(parent);
  if (set === undefined) return;
  set.delete(child);
  if (set.size === 0) index.delete(parent);
}

function isEmpty(set: Set<string> | undefined): boolean {
  return set === undefined || set.size === 0;
}

function optInteger(value: unknown, field: string, min: number, max: number, fallback: number): number {
  return value === undefined ? fallback : checkInteger(value, field, min, max);
}

function checkRate(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalid(`${field} must be a number from 0 to 1`);
  }
  return value;
}

function checkPath(protocol: SimHealthCheckProtocol, value: unknown): string {
  if (value === undefined) return protocol === "HTTP" ? "/" : "";
  if (typeof value !== "string" || value.length > 1024) throw invalid("path must be a string");
  if (protocol === "HTTP" && !value.startsWith("/"))
    throw invalid("an HTTP health check needs an absolute path");
  return value;
}

function checkSourceCidrs(value: unknown): string[] {
  const cidrs = checkStringArray(value, "sourceCidrs", MAX_SOURCE_CIDRS);
  if (cidrs.length === 0) throw invalid("sourceCidrs needs at least one CIDR (0.0.0.0/0 for everyone)");
  for (const c of cidrs) if (parseCidr(c) === undefined) throw invalid(`${c} is not a CIDR`);
  return cidrs;
}

function duplicatesOf(
  kind: SimLbResourceKind,
  items: ReadonlyArray<{ id: string; account: string; region: string; name: string }>,
): SimLbDuplicate[] {
  const groups = new Map<string, string[]>();
  for (const i of items) {
    const key = `${i.account}\u0000${i.region}\u0000${i.name}`;
    const ids = groups.get(key);
    if (ids === undefined) groups.set(key, [i.id]);
    else ids.push(i.id);
  }
  const out: SimLbDuplicate[] = [];
  for (const [key, ids] of groups) {
    if (ids.length < 2) continue;
    const [account = "", region = "", name = ""] = key.split("\u0000");
    out.push({ kind, account, region, name, ids });
  }
  return out;
}
