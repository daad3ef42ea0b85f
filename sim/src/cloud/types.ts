/**
 * Public types of the simulated cloud. Names carry a `Sim`/`Cloud` prefix because
 * `sim/src/index.ts` re-exports this module next to the Kubernetes simulator.
 */
import type { FaultConfig } from "../fake-kit/faults.js";
import type {
  CallCount,
  CallStats,
  CallStatsGroup,
  LoggedRequest,
  RequestFilter,
} from "../fake-kit/request-log.js";
import type { SimDisk, SimDiskSpec } from "./disks.js";

export const SIM_INSTANCE_STATES = ["pending", "running", "stopping", "stopped", "terminated"] as const;
export type SimInstanceState = (typeof SIM_INSTANCE_STATES)[number];

export const SIM_ADDRESS_TYPES = [
  "InternalIP",
  "ExternalIP",
  "Hostname",
  "InternalDNS",
  "ExternalDNS",
] as const;
export type SimAddressType = (typeof SIM_ADDRESS_TYPES)[number];

export interface SimAddress {
  readonly type: SimAddressType;
  readonly address: string;
}

/** One instance as the cloud holds it (the admin view; the public API serves it in snake_case). */
export interface SimInstance {
  /** "i-" + 12 hex digits. */
  readonly id: string;
  readonly account: string;
  readonly name: string;
  readonly region: string;
  readonly zone: string;
  readonly instanceType: string;
  readonly state: SimInstanceState;
  readonly addresses: readonly SimAddress[];
  /** VPC id. */
  readonly network: string;
  readonly tags: Readonly<Record<string, string>>;
  /** RFC 3339. */
  readonly createdAt: string;
}

export interface SimInstanceSpec {
  readonly name: string;
  readonly region: string;
  /** Default: `${region}a`. */
  readonly zone?: string;
  /** Default: "sim.small". */
  readonly instanceType?: string;
  /** Default: the account's default network. */
  readonly network?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /** Default: "running". */
  readonly state?: SimInstanceState;
  /** Default: true. Without it the instance has no ExternalIP. */
  readonly externalIP?: boolean;
  /** Replaces the generated addresses (tests that need duplicates or odd shapes). */
  readonly addresses?: readonly SimAddress[];
}

export interface SimInstanceUpdate {
  readonly state?: SimInstanceState;
  /** Replaces all tags. */
  readonly tags?: Readonly<Record<string, string>>;
  readonly instanceType?: string;
  readonly addresses?: readonly SimAddress[];
}

export interface SimAccountOptions {
  /** Default: generated from the seed ("sk-sim-" + 32 hex). */
  readonly apiKey?: string;
  /** Token bucket refill rate; 0 (default) = unlimited. */
  readonly rateLimitPerSecond?: number;
  /** Bucket size; default max(1, rateLimitPerSecond). */
  readonly rateLimitBurst?: number;
}

export interface SimAccountInfo {
  readonly name: string;
  readonly apiKey: string;
  /** The VPC id instances get when their spec names none. */
  readonly defaultNetwork: string;
}

/**
 * Faults injected into public API calls (never into /admin). A global config and a
 * per-account override exist; the override wins field by field. Rates are fractions in
 * [0, 1], drawn per call from the cloud's seeded random source.
 *
 * Order for one call: authenticate → account rate limit → latency → timeout → throttle →
 * error → the real answer → answer faults (stale read, empty answer, dropped list items,
 * lost answer of a change).
 *
 * `staleReadMs`: instances lag in gets and lists (a new one is absent from both); load
 * balancer resources and routes in direct gets only (a deleted one is still seen), their
 * lists are consistent.
 */
export type CloudFaultConfig = FaultConfig;
export type CloudCallCount = CallCount;
export type CloudStatsGroup = CallStatsGroup;
export type CloudStats = CallStats;

export interface SimulatedCloudOptions {
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Default "127.0.0.1". */
  readonly host?: string;
  /** Seeds ids, keys, addresses order and fault draws. Default 1. */
  readonly seed?: number;
  /** How long a terminated instance stays visible to the API. Default 0: immediately 404. */
  readonly terminatedLingerMs?: number;
  /** Regions known from the start; creating an instance in another region adds it. */
  readonly regions?: readonly string[];
  /** Wall clock in ms (tests of linger and stale reads). Default Date.now. */
  readonly now?: () => number;
}

export interface SimulatedCloud {
  /** http://HOST:PORT, no trailing slash. */
  readonly url: string;
  createAccount(name: string, opts?: SimAccountOptions): SimAccountInfo;
  setAccountRateLimit(account: string, rateLimitPerSecond: number, burst?: number): void;
  /** A suspended account's key still authenticates but every call is answered 403. */
  setAccountSuspended(account: string, suspended: boolean): void;
  addRegion(region: string): void;
  /** A disk, as if made in the console (the public API only reads disks). */
  createDisk(account: string, spec: SimDiskSpec): SimDisk;
  deleteDisk(id: string): void;
  /** Every disk (of `account` if given), in creation order. */
  disks(account?: string): SimDisk[];
  createInstance(account: string, spec: SimInstanceSpec): SimInstance;
  updateInstance(id: string, update: SimInstanceUpdate): SimInstance;
  setInstanceState(id: string, state: SimInstanceState): void;
  terminateInstance(id: string): void;
  /** The current truth, regardless of linger, staleness or faults. */
  getInstance(id: string): SimInstance | undefined;
  /** Every instance (of `account` if given), terminated ones included, in creation order. */
  listInstances(account?: string): SimInstance[];
  /** Merges into the global config, or into `account`'s override. Throws RangeError on bad values. */
  setFaults(faults: Partial<CloudFaultConfig>, account?: string): void;
  /** Back to no faults: globally (and every override) without `account`, else that override only. */
  resetFaults(account?: string): void;
  /** The config in force for `account` (global merged with its override), or the global one. */
  faults(account?: string): CloudFaultConfig;
  stats(): CloudStats;
  /** The last public API calls in full (method, path, query, outcome, injected fault), oldest first. */
  requests(filter?: RequestFilter): LoggedRequest[];
  /** Clears the counts and the request log. */
  resetStats(): void;
  close(): Promise<void>;

  // --- load balancers: the truth, regardless of faults ----------------------------------------
  // Creation and deletion follow the same rules as the API (references, dependencies) and
  // throw SimCloudError-like errors (`status`, `code`) when refused.

  createLoadBalancer(account: string, spec: SimLoadBalancerSpec): SimLoadBalancer;
  createListener(account: string, spec: SimListenerSpec): SimListener;
  createPool(account: string, spec: SimPoolSpec): SimPool;
  createHealthCheck(account: string, spec: SimHealthCheckSpec): SimHealthCheck;
  createFirewallRule(account: string, spec: SimFirewallRuleSpec): SimFirewallRule;
  /**
   * Deletes a load-balancer resource of any kind by id, at once whatever the load balancer's
   * status or the account's timing (a hand in the console); dependency rules apply (409).
   */
  deleteLbResource(id: string): void;
  /**
   * The account's load-balancer timing from now on (merged into the current one): what the
   * public API's creates and deletes go through. Creates made here (createLoadBalancer) are
   * ACTIVE at once.
   */
  setLoadBalancerAsync(account: string, settings: Partial<SimLbAsyncSettings>): void;
  loadBalancerAsync(account: string): SimLbAsyncSettings;
  /** The account's next `count` load-balancer creates through the API end in ERROR (replaces any count left). */
  failNextLoadBalancerCreates(account: string, count: number): void;
  /** Every load balancer (of `account` if given), in creation order. */
  loadBalancers(account?: string): SimLoadBalancer[];
  listeners(account?: string): SimListener[];
  pools(account?: string): SimPool[];
  healthChecks(account?: string): SimHealthCheck[];
  firewallRules(account?: string): SimFirewallRule[];
  /** All of the above at once. */
  inventory(account?: string): SimLbInventory;
  /** Orphans and duplicates among the load-balancer resources (optionally only those carrying `tags`). */
  auditLoadBalancers(filter?: SimLbAuditFilter): SimLbAudit;

  // --- networks and routes --------------------------------------------------------------------

  /** The account's networks in `region`: its default network, plus every network its instances or routes use. */
  networks(account: string, region: string): SimNetwork[];
  /** Adds a route as if some other client made it (tests: a "foreign" route). Same rules as the API. */
  createRoute(account: string, spec: SimRouteSpec): SimRoute;
  deleteRoute(id: string): void;
  /** Every route (of `network` if given), in creation order; `blackhole` reflects the target now. */
  routes(network?: string): SimRoute[];
}

// ---- load balancers -------------------------------------------------------------------------

export const SIM_LB_PROTOCOLS = ["TCP", "UDP", "SCTP", "HTTP", "HTTPS"] as const;
export type SimLbProtocol = (typeof SIM_LB_PROTOCOLS)[number];

export const SIM_HEALTH_CHECK_PROTOCOLS = ["TCP", "HTTP"] as const;
export type SimHealthCheckProtocol = (typeof SIM_HEALTH_CHECK_PROTOCOLS)[number];

export const SIM_SESSION_AFFINITIES = ["None", "ClientIP"] as const;
export type SimSessionAffinity = (typeof SIM_SESSION_AFFINITIES)[number];

export type SimLbResourceKind = "load-balancer" | "listener" | "pool" | "health-check" | "firewall-rule";

/** What every load-balancer resource has: its own id, name and tags, in one account and region. */
export interface SimLbResourceBase {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  /** Not unique: two resources of a kind may share a name (like AWS Name tags). */
  readonly name: string;
  readonly tags: Readonly<Record<string, string>>;
  /** RFC 3339, ms precision. */
  readonly createdAt: string;
}

export interface SimLbIngress {
  readonly ip: string;
  readonly hostname: string;
}

/**
 * Where a load balancer is in its life, as Octavia's provisioning_status: an account with
 * asynchronous load balancers (setLoadBalancerAsync) creates them PENDING_CREATE and deletes
 * them through PENDING_DELETE; PENDING_* states are immutable. ERROR is final: the load balancer
 * never works, it can only be deleted (or tagged).
 */
export const SIM_LB_STATUSES = ["PENDING_CREATE", "ACTIVE", "PENDING_DELETE", "ERROR"] as const;
export type SimLbStatus = (typeof SIM_LB_STATUSES)[number];

/** An account's load-balancer timing (setLoadBalancerAsync); the default is synchronous. */
export interface SimLbAsyncSettings {
  /**
   * API reads (gets, or lists that return it) a load balancer stays PENDING_CREATE after its
   * create, or PENDING_DELETE after its delete, before it is ACTIVE (or ERROR), or gone. 0: at once.
   */
  readonly polls: number;
  /** The delay the cloud suggests between reads of a pending load balancer (`poll_after_ms`). */
  readonly pollMs: number;
  /** Chance in [0, 1] that a create ends in ERROR (seeded draws), besides failNextLoadBalancerCreates. */
  readonly failRate: number;
}

export interface SimLoadBalancer extends SimLbResourceBase {
  /** "lb-" + 12 hex. */
  readonly id: string;
  readonly status: SimLbStatus;
  /** ERROR only: why, as the cloud says it. */
  readonly statusMessage?: string;
  /** PENDING_* only: the delay the cloud suggests before reading it again. */
  readonly pollAfterMs?: number;
  readonly network: string;
  /** Internal: a 10.x ingress address; else a public one from 198.18.0.0/15. Fixed at creation. */
  readonly internal: boolean;
  readonly ingress: SimLbIngress;
  /** Derived from the sub-resources that name this load balancer (pools: by lbId; health checks: via its pools). */
  readonly listenerIds: readonly string[];
  readonly poolIds: readonly string[];
  readonly healthCheckIds: readonly string[];
  readonly firewallIds: readonly string[];
}

export interface SimListener extends SimLbResourceBase {
  /** "lsn-" + 12 hex. */
  readonly id: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  /** Unique per load balancer and protocol (409 DuplicateListener). */
  readonly port: number;
  readonly poolId: string;
  readonly proxyProtocol: boolean;
  readonly idleTimeoutSeconds: number;
}

export interface SimPool extends SimLbResourceBase {
  /** "pool-" + 12 hex. */
  readonly id: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  /** The port on each member (a Service's nodePort). */
  readonly targetPort: number;
  /** Instance ids. */
  readonly members: readonly string[];
  readonly sessionAffinity: SimSessionAffinity;
  readonly healthCheckId?: string;
}

export interface SimHealthCheck extends SimLbResourceBase {
  /** "hc-" + 12 hex. */
  readonly id: string;
  readonly protocol: SimHealthCheckProtocol;
  readonly port: number;
  /** HTTP: an absolute path; TCP: usually "". */
  readonly path: string;
  readonly intervalSeconds: number;
  readonly timeoutSeconds: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

export interface SimFirewallRule extends SimLbResourceBase {
  /** "fw-" + 12 hex. */
  readonly id: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  readonly port: number;
  readonly sourceCidrs: readonly string[];
}

export interface SimLoadBalancerSpec {
  readonly name: string;
  readonly region: string;
  /** Default: the account's default network. Must be a network of the account in that region. */
  readonly network?: string;
  /** Default false. */
  readonly internal?: boolean;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimListenerSpec {
  readonly name: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  readonly port: number;
  /** A pool of the same load balancer. */
  readonly poolId: string;
  /** Default false. */
  readonly proxyProtocol?: boolean;
  /** Default 60; 1 to 4000. */
  readonly idleTimeoutSeconds?: number;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimPoolSpec {
  readonly name: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  readonly targetPort: number;
  /** Existing, non-terminated instances of the account in the load balancer's region. Default []. */
  readonly members?: readonly string[];
  /** Default "None". */
  readonly sessionAffinity?: SimSessionAffinity;
  readonly healthCheckId?: string;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimHealthCheckSpec {
  readonly name: string;
  readonly region: string;
  readonly protocol: SimHealthCheckProtocol;
  readonly port: number;
  /** Default "/" for HTTP, "" for TCP. */
  readonly path?: string;
  /** Defaults: 10, 5, 2, 3. */
  readonly intervalSeconds?: number;
  readonly timeoutSeconds?: number;
  readonly healthyThreshold?: number;
  readonly unhealthyThreshold?: number;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimFirewallRuleSpec {
  readonly name: string;
  readonly lbId: string;
  readonly protocol: SimLbProtocol;
  readonly port: number;
  /** At least one CIDR (IPv4 or IPv6). */
  readonly sourceCidrs: readonly string[];
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimLbInventory {
  readonly loadBalancers: SimLoadBalancer[];
  readonly listeners: SimListener[];
  readonly pools: SimPool[];
  readonly healthChecks: SimHealthCheck[];
  readonly firewallRules: SimFirewallRule[];
}

export interface SimLbAuditFilter {
  readonly account?: string;
  /** Only resources carrying every one of these tags are judged (their parents are looked up among all). */
  readonly tags?: Readonly<Record<string, string>>;
}

export interface SimLbOrphan {
  readonly kind: Exclude<SimLbResourceKind, "load-balancer">;
  readonly id: string;
  readonly name: string;
  readonly reason: string;
}

export interface SimLbDuplicate {
  readonly kind: SimLbResourceKind;
  readonly account: string;
  readonly region: string;
  readonly name: string;
  /** Oldest first. */
  readonly ids: readonly string[];
}

export interface SimLbAudit {
  /**
   * Sub-resources nothing uses: a listener, pool or firewall rule whose load balancer is gone,
   * a pool no listener forwards to, a health check no pool uses.
   */
  readonly orphans: SimLbOrphan[];
  /** More than one resource of a kind with the same name in one account and region. */
  readonly duplicates: SimLbDuplicate[];
}

// ---- networks and routes --------------------------------------------------------------------

export interface SimNetwork {
  /** "vpc-…". */
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly isDefault: boolean;
  /** One route table per network and region. */
  readonly routeTableId: string;
}

export interface SimRoute {
  /** "rt-" + 12 hex. */
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly network: string;
  readonly routeTableId: string;
  /** Unique within the route table (409 RouteAlreadyExists). */
  readonly destinationCidr: string;
  readonly targetInstanceId: string;
  readonly description: string;
  readonly tags: Readonly<Record<string, string>>;
  /** The target instance is terminated (or gone): the route stays, traffic goes nowhere. */
  readonly blackhole: boolean;
  readonly createdAt: string;
}

export interface SimRouteSpec {
  readonly region: string;
  /** Default: the target instance's network. */
  readonly network?: string;
  readonly destinationCidr: string;
  /** A non-terminated instance of the account in that region and network. */
  readonly targetInstanceId: string;
  /** Default "". */
  readonly description?: string;
  readonly tags?: Readonly<Record<string, string>>;
}

/** An account with its current limits, as the admin API shows it. */
export interface SimAccountDetail extends SimAccountInfo {
  readonly rateLimitPerSecond: number;
  readonly rateLimitBurst: number;
  readonly suspended: boolean;
  readonly loadBalancerAsync: SimLbAsyncSettings;
  /** API load-balancer creates still to end in ERROR (failNextLoadBalancerCreates). */
  readonly failNextLoadBalancerCreates: number;
}
