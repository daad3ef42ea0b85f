import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { AccountConfig, ClusterConfig } from "../config/schema.js";
import { namedRefs, RotatingSecret } from "../config/secret.js";
import type { HubMetrics } from "../metrics.js";
import type { Clock } from "../util/clock.js";
import { KeyedLock } from "../util/keyed-lock.js";
import { TokenBucket } from "../util/rate-limiter.js";
import { Semaphore } from "../util/semaphore.js";
import { createProvider, credentialNames } from "./bind-provider.js";
import { type AccountRate, CallRates } from "./call-rates.js";
import { CloudError, ThrottledError, TransientCloudError } from "./errors.js";
import { InstanceCache } from "./instance-cache.js";
import { InstanceLookups } from "./instance-lookups.js";
import {
  type AccountBinding,
  AccountConfigError,
  type CloudCallWrapper,
  type CloudProvider,
  type RateLimit,
} from "./provider.js";
import type { ProviderRegistry } from "./registry.js";
import { type ClusterCloud, clusterCloud } from "./scope.js";

/** One provider client and instance cache per account and region. */
interface RegionRuntime {
  readonly binding: AccountBinding;
  readonly provider: CloudProvider;
  readonly cache: InstanceCache;
  readonly lookups: InstanceLookups;
  readonly lbSettings?: ClusterCloud["lbSettings"];
}

/** One rate limiter (or one per region), route and load-balancer bounds per account, shared by its clusters. */
interface AccountRuntime {
  readonly regions: ReadonlyMap<string, RegionRuntime>;
  /** The account's rate limiter, or one per region (distinct buckets only). */
  readonly limiters: readonly TokenBucket[];
  /** Bounds concurrent route writes for the account. */
  readonly routeWrites: Semaphore;
  /** Bounds concurrent load-balancer syncs for the account (accounts.maxConcurrentLoadBalancerOps). */
  readonly loadBalancerOps: Semaphore;
  /** Serializes writes of one shared cloud object (LockKey) across the account's clusters. */
  readonly writeLocks: KeyedLock;
  /** The networks of the account's clusters now (ProviderContext.clusterNetworks), replaced by setClusters. */
  readonly networks: { current: readonly (string | undefined)[] };
  readonly rateLimit: RateLimit;
}

/** An account's rate limit when neither it nor its provider names one. */
export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 20, burst: 40 };

export interface CloudAccountsDeps {
  readonly registry: ProviderRegistry;
  /** Instance-list refresh period and whether one list serves the account or each cluster lists on its own. */
  readonly refresh: { readonly periodMs: number; readonly cacheScope: "account" | "cluster" };
  readonly maxConcurrentRouteWrites: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: HubMetrics;
  readonly env?: NodeJS.ProcessEnv;
  /** Aborted when the hub shuts down: every cloud call in flight ends with it. */
  readonly signal?: AbortSignal;
  /**
   * Checked right before every cloud call (hub replicas: the lease of the cluster the call is
   * made for); throws to refuse the call, or returns a signal that aborts it when the lease ends.
   */
  readonly guard?: (op: string) => AbortSignal | undefined;
  /** Sent as the User-Agent where the provider's API takes one (names the hub replica). */
  readonly userAgent?: string;
}

/** What the fleet API shows of an account (no credential). */
export interface AccountSummary {
  readonly name: string;
  /** Its calls per second and throttled answers, counted as the calls are made. */
  readonly rate: AccountRate;
  readonly provider: string;
  readonly region: string;
  readonly rateLimit: RateLimit;
  readonly clusters: readonly string[];
  /** Calls waiting for a token of the account's limiter. */
  readonly waitingForToken: number;
  /** The latest instance list among the caches serving the account's clusters. */
  readonly cacheListedAtMs: number | undefined;
}

/** Why cluster `i` cannot run in its account's regions `served`, or undefined. */
export function clusterRegionProblem(
  c: Pick<ClusterConfig, "account" | "region">,
  i: number,
  served: readonly string[],
): string | undefined {
  if (c.region === undefined && served.length > 1)
    return `clusters[${i}].region: required: account "${c.account}" serves several regions (${served.join(", ")})`;
  if (c.region !== undefined && !served.includes(c.region))
    return `clusters[${i}].region: account "${c.account}" does not serve region "${c.region}" (it serves ${served.join(", ")})`;
  return undefined;
}

/** Binds the configured accounts to providers, and clusters to accounts. */
export class CloudAccounts {
  private readonly accounts = new Map<string, AccountRuntime>();
  private clusters = new Map<string, ClusterCloud>();
  private caches = new Map<string, InstanceCache>();
  private lookups = new Map<string, InstanceLookups>();
  private routeWrites = new Map<string, Semaphore>();
  private readonly configs: readonly AccountConfig[];
  private clusterAccounts: readonly (readonly [string, string])[] = [];
  private loadBalancerOps = new Map<string, Semaphore>();
  private byAccount: Map<string, string[]> | undefined;

  private constructor(
    accounts: readonly AccountConfig[],
    runtimes: ReadonlyMap<string, AccountRuntime>,
    private readonly deps: CloudAccountsDeps,
    private readonly rates: CallRates,
  ) {
    this.configs = accounts;
    for (const [name, runtime] of runtimes) this.accounts.set(name, runtime);
  }

  /**
   * Binds every account to its provider (one per account and region; creating one may load
   * its SDK), then the clusters to the accounts. Throws naming the config field at fault.
   */
  static async create(
    accounts: readonly AccountConfig[],
    clusters: readonly ClusterConfig[],
    deps: CloudAccountsDeps,
  ): Promise<CloudAccounts> {
    const runtimes = new Map<string, AccountRuntime>();
    const rates = new CallRates(() => deps.clock.now());
    for (const [i, a] of accounts.entries()) runtimes.set(a.name, await bindAccount(a, i, deps, rates));
    const bound = new CloudAccounts(accounts, runtimes, deps, rates);
    bound.setClusters(clusters);
    return bound;
  }

  /**
   * Binds the clusters to their accounts, replacing the previous set (a configuration reload):
   * all or nothing, so a bad entry leaves the running bindings as they were.
   */
  setClusters(clusters: readonly ClusterConfig[]): void {
    const deps = this.deps;
    const bound = new Map<string, ClusterCloud>();
    const caches = new Map<string, InstanceCache>();
    const lookups = new Map<string, InstanceLookups>();
    const routeWrites = new Map<string, Semaphore>();
    const loadBalancerOps = new Map<string, Semaphore>();
    clusters.forEach((c, i) => {
      const runtime = this.accounts.get(c.account);
      if (runtime === undefined)
        throw new Error(`clusters: "${c.name}" names unknown account "${c.account}"`);
      const served = [...runtime.regions.keys()];
      const problem = clusterRegionProblem(c, i, served);
      if (problem !== undefined) throw new Error(problem);
      const account = runtime.regions.get(c.region ?? served[0] ?? "");
      if (account === undefined) throw new Error(`clusters[${i}].region: not served`);
      const scope = {
        ...c.scope,
        ...(c.network !== undefined && c.scope.network === undefined && { network: c.network }),
        ...(c.adoptFrom !== undefined && { adoptFrom: c.adoptFrom }),
      };
      bound.set(
        c.name,
        clusterCloud(c.name, {
          provider: account.provider,
          account: account.binding,
          scope,
          writeLocks: runtime.writeLocks,
          ...(account.lbSettings !== undefined && { lbSettings: account.lbSettings }),
        }),
      );
      routeWrites.set(c.name, runtime.routeWrites);
      loadBalancerOps.set(c.name, runtime.loadBalancerOps);
      // "cluster" scope is the per-cluster-CCM baseline: each cluster lists on its own.
      if (deps.refresh.cacheScope === "account") {
        caches.set(c.name, account.cache);
        lookups.set(c.name, account.lookups);
      } else if (this.clusters.get(c.name)?.provider === account.provider && this.caches.has(c.name)) {
        caches.set(c.name, this.caches.get(c.name) as InstanceCache);
        lookups.set(c.name, this.lookups.get(c.name) as InstanceLookups);
      } else {
        const logger = deps.logger.child({ component: "cloud", cluster: c.name });
        const cache = new InstanceCache(
          account.provider.instances,
          deps.clock,
          deps.refresh.periodMs,
          logger,
        );
        caches.set(c.name, cache);
        lookups.set(c.name, new InstanceLookups(account.provider.instances, cache, deps.clock));
      }
    });
    const networks = new Map<string, (string | undefined)[]>();
    for (const c of clusters) {
      const network = bound.get(c.name)?.target.network;
      networks.set(c.account, [...(networks.get(c.account) ?? []), network]);
    }
    for (const [name, runtime] of this.accounts)
      runtime.networks.current = networks.get(name) ?? [this.configs.find((a) => a.name === name)?.network];
    this.clusters = bound;
    this.caches = caches;
    this.lookups = lookups;
    this.routeWrites = routeWrites;
    this.loadBalancerOps = loadBalancerOps;
    this.clusterAccounts = clusters.map((c) => [c.name, c.account] as const);
    this.byAccount = undefined;
  }

  /** Coalesced instance lookups for this cluster's node initialization (same scope as its cache). */
  lookupsFor(cluster: string): InstanceLookups | undefined {
    return this.lookups.get(cluster);
  }

  /** The instance view that serves this cluster's periodic refresh. */
  cacheFor(cluster: string): InstanceCache | undefined {
    return this.caches.get(cluster);
  }

  /** The account-wide bound on concurrent route writes, for this cluster's account. */
  routeWritesFor(cluster: string): Semaphore | undefined {
    return this.routeWrites.get(cluster);
  }

  /** The account-wide bound on concurrent load-balancer syncs, for this cluster's account. */
  loadBalancerOpsFor(cluster: string): Semaphore | undefined {
    return this.loadBalancerOps.get(cluster);
  }

  /**
   * Hub replicas share each account's rate limit: this replica gets `share` (0..1) of the
   * configured rate and burst (at least one token of burst, and a trickle when it owns nothing).
   */
  setRateShare(account: string, share: number): void {
    const runtime = this.accounts.get(account);
    if (runtime === undefined) return;
    const s = Math.min(1, Math.max(share, MIN_RATE_SHARE));
    for (const l of runtime.limiters)
      l.setRate(runtime.rateLimit.perSecond * s, Math.max(1, Math.floor(runtime.rateLimit.burst * s)));
  }

  /** The clusters bound to each account. */
  clustersByAccount(): ReadonlyMap<string, readonly string[]> {
    if (this.byAccount === undefined) {
      const m = new Map<string, string[]>();
      for (const [cluster, account] of this.clusterAccounts) {
        const list = m.get(account) ?? [];
        list.push(cluster);
        m.set(account, list);
      }
      this.byAccount = m;
    }
    return this.byAccount;
  }

  cloudFor(cluster: string): ClusterCloud | undefined {
    return this.clusters.get(cluster);
  }

  summaries(): AccountSummary[] {
    return this.configs.map((a) => {
      const clusters = this.clusterAccounts.filter(([, acc]) => acc === a.name).map(([c]) => c);
      let listed: number | undefined;
      const runtime = this.accounts.get(a.name);
      const regionCaches = [...(runtime?.regions.values() ?? [])].map((r) => r.cache);
      for (const c of [...regionCaches, ...clusters.map((n) => this.caches.get(n))]) {
        const t = c?.listedAtMs();
        if (t !== undefined && (listed === undefined || t > listed)) listed = t;
      }
      return {
        name: a.name,
        rate: this.rates.of(a.name),
        provider: a.provider,
        region: a.region,
        rateLimit: { ...(runtime?.rateLimit ?? a.rateLimit ?? DEFAULT_RATE_LIMIT) },
        clusters,
        waitingForToken: (runtime?.limiters ?? []).reduce((n, l) => n + l.waitingCount, 0),
        cacheListedAtMs: listed,
      };
    });
  }
}

function outcomeOf(err: unknown): string {
  if (err === undefined) return "ok";
  if (err instanceof ThrottledError) return "throttled";
  if (err instanceof TransientCloudError) return "transient";
  if (err instanceof CloudError) return err.name.replace(/Error$/, "").toLowerCase();
  return "error";
}

/** A replica owning none of an account's clusters keeps this share (it makes no cluster's calls). */
const MIN_RATE_SHARE = 0.001;

/** Never aborted: for a CloudAccounts without a shutdown signal (tests). */
const NEVER = new AbortController().signal;

/**
 * Every cloud call: wait for the account's token, time it, count it by outcome. The signal it
 * hands the call is the hub's shutdown; the request timeout is the provider client's, on the
 * injected clock (one timeout per call, not two).
 */
function instrumentedCall(
  binding: AccountBinding,
  limiter: TokenBucket,
  metrics: HubMetrics,
  rates: CallRates,
  shutdown: AbortSignal = NEVER,
  guard?: (op: string) => AbortSignal | undefined,
): CloudCallWrapper {
  // Every call in flight listens to it, hundreds at once in a storm: no leak for Node to warn of.
  setMaxListeners(0, shutdown);
  return async (op, fn) => {
    guard?.(op);
    await limiter.take();
    // Checked again after the wait for a token: the lease may have ended meanwhile.
    const fence = guard?.(op);
    const startedAt = performance.now();
    const signal = fence === undefined ? shutdown : AbortSignal.any([shutdown, fence]);
    let failure: unknown;
    try {
      return await fn(signal);
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      metrics.cloudCallDuration.series(binding.provider, op).observe((performance.now() - startedAt) / 1000);
      rates.record(binding.name, failure instanceof ThrottledError);
      metrics.cloudCalls.series(binding.provider, binding.name, op, outcomeOf(failure)).inc();
    }
  };
}

/** One account's providers (per region), limiters and bounds; errors name `accounts[i].<field>`. */
async function bindAccount(
  a: AccountConfig,
  i: number,
  deps: CloudAccountsDeps,
  rates: CallRates,
): Promise<AccountRuntime> {
  const factory = deps.registry.get(a.provider);
  if (factory === undefined)
    throw new Error(
      `accounts[${i}].provider: unknown provider "${a.provider}" (known: ${deps.registry.names().join(", ")})`,
    );
  try {
    const given = namedRefs(a.credentials);
    const names = credentialNames(
      factory.credentials,
      given.map(([name]) => name),
    );
    // Keyed by the name the provider reads (a bare reference: its `bare` credential).
    const secrets = new Map(
      given.map(([name, ref], j) => {
        const field = `accounts[${i}].credentials${name === "" ? "" : `.${name}`}`;
        return [names[j] ?? name, new RotatingSecret(ref, field, deps.env)] as const;
      }),
    );
    const primary = [...secrets.values()][0];
    const rateLimit = a.rateLimit ?? factory.defaultRateLimit ?? DEFAULT_RATE_LIMIT;
    const newLimiter = () =>
      new TokenBucket({ ratePerSecond: rateLimit.perSecond, burst: rateLimit.burst, clock: deps.clock });
    const accountLimiter = newLimiter();
    const networks = { current: [a.network] as readonly (string | undefined)[] };
    const regions = new Map<string, RegionRuntime>();
    const limiters = new Set<TokenBucket>();
    for (const region of a.regions) {
      const binding: AccountBinding = {
        name: a.name,
        provider: a.provider,
        region,
        network: a.network,
        endpoint: a.endpoint,
        credential: primary?.current() ?? "",
        secret: (name) => (name === undefined ? primary : (secrets.get(name) ?? primary))?.current() ?? "",
        credentialNames: names,
        requestTimeoutMs: a.requestTimeoutMs,
        ...(deps.userAgent !== undefined && { userAgent: deps.userAgent }),
      };
      const limiter = factory.rateLimitScope === "region" ? newLimiter() : accountLimiter;
      limiters.add(limiter);
      const logger = deps.logger.child({ component: "cloud", account: a.name, provider: a.provider, region });
      const call = instrumentedCall(binding, limiter, deps.metrics, rates, deps.signal, deps.guard);
      const provider = await createProvider(
        factory,
        {
          account: binding,
          logger,
          clock: deps.clock,
          call,
          clusterNetworks: () => networks.current,
          rateBudget: (b) => limiter.observe(b.remaining, b.nextFreeAtMs),
        },
        a.options,
      );
      const cache = new InstanceCache(provider.instances, deps.clock, deps.refresh.periodMs, logger);
      regions.set(region, {
        binding,
        provider,
        cache,
        lookups: new InstanceLookups(provider.instances, cache, deps.clock),
        ...(factory.lbSettings !== undefined && { lbSettings: factory.lbSettings.bind(factory) }),
      });
    }
    return {
      regions,
      limiters: [...limiters],
      routeWrites: new Semaphore(deps.maxConcurrentRouteWrites),
      loadBalancerOps: new Semaphore(a.maxConcurrentLoadBalancerOps),
      writeLocks: new KeyedLock(),
      networks,
      rateLimit,
    };
  } catch (err) {
    if (err instanceof AccountConfigError) throw new Error(`accounts[${i}].${err.message}`);
    throw err;
  }
}
