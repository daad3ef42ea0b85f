/**
 * Public types of the simulated cloud. Names carry a `Sim`/`Cloud` prefix because
 * `sim/src/index.ts` re-exports this module next to the Kubernetes simulator.
 */

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
 * error → the real answer → answer faults (stale read, empty answer, dropped list items).
 */
export interface CloudFaultConfig {
  /** Added to every call. */
  readonly latencyMs: number;
  /** Plus a uniform random [0, latencyJitterMs). */
  readonly latencyJitterMs: number;
  /** Fraction of calls answered 500 or 503 (half each; a 503 carries Retry-After half the time). */
  readonly errorRate: number;
  /** Retry-After (seconds) sent with an injected 503. */
  readonly errorRetryAfterSeconds: number;
  /** Fraction of calls answered 429 with Retry-After. */
  readonly throttleRate: number;
  /** Retry-After (seconds) sent with an injected 429. */
  readonly throttleRetryAfterSeconds: number;
  /** Fraction of calls that hang: no answer for `timeoutHangMs` (then 504), or until the client goes away. */
  readonly timeoutRate: number;
  readonly timeoutHangMs: number;
  /** Fraction of the items of each list page silently left out (the page token still advances). */
  readonly dropFromListRate: number;
  /** Fraction of list calls answered 200 `{"instances": []}` with no next_page_token. */
  readonly emptyListRate: number;
  /** Fraction of get calls answered 200 `{}`. */
  readonly emptyGetRate: number;
  /**
   * Eventual consistency: a read within this many ms of an instance's last change sees the
   * version before it (for a new instance: nothing, so 404 / absent from lists).
   */
  readonly staleReadMs: number;
}

export interface CloudCallCount {
  readonly account: string;
  readonly operation: string;
  /** HTTP status as a string ("200", "429", ...), or "aborted" when the client left first. */
  readonly outcome: string;
  readonly count: number;
}

export interface CloudStatsGroup {
  readonly totalCalls: number;
  readonly byOperation: Record<string, number>;
  readonly byOutcome: Record<string, number>;
}

export interface CloudStats extends CloudStatsGroup {
  readonly byAccount: Record<string, CloudStatsGroup>;
  /** Every (account, operation, outcome) with its count, sorted. */
  readonly calls: readonly CloudCallCount[];
}

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
  resetStats(): void;
  close(): Promise<void>;
}

/** An account with its current limits, as the admin API shows it. */
export interface SimAccountDetail extends SimAccountInfo {
  readonly rateLimitPerSecond: number;
  readonly rateLimitBurst: number;
  readonly suspended: boolean;
}
