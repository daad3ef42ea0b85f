import type { Logger } from "pino";
import type { AccountConfig, ClusterConfig } from "../config/schema.js";
import { namedRefs, RotatingSecret } from "../config/secret.js";
import type { HubMetrics } from "../metrics.js";
import type { Clock } from "../util/clock.js";
import { TokenBucket } from "../util/rate-limiter.js";
import { Semaphore } from "../util/semaphore.js";
import { CloudError, ThrottledError, TransientCloudError } from "./errors.js";
import { InstanceCache } from "./instance-cache.js";
import { InstanceLookups } from "./instance-lookups.js";
import {
  type AccountBinding,
  AccountConfigError,
  type CloudCallWrapper,
  type CloudProvider,
} from "./provider.js";
import type { ProviderRegistry } from "./registry.js";
import type { ClusterCloud } from "./scope.js";

/** One provider client and instance cache per account and region. */
interface RegionRuntime {
  readonly binding: AccountBinding;
  readonly provider: CloudProvider;
  readonly cache: InstanceCache;
  readonly lookups: InstanceLookups;
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
}

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
}

/** What the fleet API shows of an account (no credential). */
export interface AccountSummary {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly rateLimit: { readonly perSecond: number; readonly burst: number };
  readonly clusters: readonly string[];
  /** Calls waiting for a token of the account's limiter. */
  readonly waitingForToken: number;
  /** The latest instance list among the caches serving the account's clusters. */
  readonly cacheListedAtMs: number | undefined;
}

/** Binds the configured accounts to providers, and clusters to accounts. */
export class CloudAccounts {
  private readonly accounts = new Map<string, AccountRuntime>();
  private readonly clusters = new Map<string, ClusterCloud>();
  private readonly caches = new Map<string, InstanceCache>();
  private readonly lookups = new Map<string, InstanceLookups>();
  private readonly routeWrites = new Map<string, Semaphore>();
  private readonly configs: readonly AccountConfig[];
  private readonly clusterAccounts: readonly (readonly [string, string])[];
  private readonly loadBalancerOps = new Map<string, Semaphore>();

  constructor(
    accounts: readonly AccountConfig[],
    clusters: readonly ClusterConfig[],
    deps: CloudAccountsDeps,
  ) {
    this.configs = accounts;
    this.clusterAccounts = clusters.map((c) => [c.name, c.account] as const);
    accounts.forEach((a, i) => {
      const factory = deps.registry.get(a.provider);
      if (factory === undefined)
        throw new Error(
          `accounts[${i}].provider: unknown provider "${a.provider}" (known: ${deps.registry.names().join(", ")})`,
        );
      const refs = namedRefs(a.credentials);
      try {
        if (factory.checkCredentials !== undefined) factory.checkCredentials(refs.map(([name]) => name));
        else if (refs.length !== 1 || refs[0]?.[0] !== "")
          throw new AccountConfigError("credentials", `provider ${a.provider} takes one secret reference`);
      } catch (err) {
        if (err instanceof AccountConfigError) throw new Error(`accounts[${i}].${err.message}`);
        throw err;
      }
      const secrets = new Map(
        refs.map(([name, ref]) => {
          const field = `accounts[${i}].credentials${name === "" ? "" : `.${name}`}`;
          return [name, new RotatingSecret(ref, field, deps.env)] as const;
        }),
      );
      const primary = secrets.get("") ?? [...secrets.values()][0];
      const newLimiter = () =>
        new TokenBucket({
          ratePerSecond: a.rateLimit.perSecond,
          burst: a.rateLimit.burst,
          clock: deps.clock,
        });
      const accountLimiter = newLimiter();
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
          secret: (name = "") => (secrets.get(name) ?? primary)?.current() ?? "",
          credentialNames: refs.map(([name]) => name),
          requestTimeoutMs: a.requestTimeoutMs,
          ...(a.options !== undefined && { options: a.options }),
        };
        const limiter = factory.rateLimitScope === "region" ? newLimiter() : accountLimiter;
        limiters.add(limiter);
        const logger = deps.logger.child({
          component: "cloud",
          account: a.name,
          provider: a.provider,
          region,
        });
        const call = instrumentedCall(binding, limiter, deps.metrics, deps.signal);
        let provider: CloudProvider;
        try {
          provider = factory.create({ account: binding, logger, clock: deps.clock, call });
        } catch (err) {
          if (err instanceof AccountConfigError) throw new Error(`accounts[${i}].${err.message}`);
          throw err;
        }
        const cache = new InstanceCache(provider.instances, deps.clock, deps.refresh.periodMs, logger);
        regions.set(region, {
          binding,
          provider,
          cache,
          lookups: new InstanceLookups(provider.instances, cache, deps.clock),
        });
      }
      this.accounts.set(a.name, {
        regions,
        limiters: [...limiters],
        routeWrites: new Semaphore(deps.maxConcurrentRouteWrites),
        loadBalancerOps: new Semaphore(a.maxConcurrentLoadBalancerOps),
      });
    });
    clusters.forEach((c, i) => {
      const runtime = this.accounts.get(c.account);
      if (runtime === undefined)
        throw new Error(`clusters: "${c.name}" names unknown account "${c.account}"`);
      const served = [...runtime.regions.keys()];
      if (c.region === undefined && served.length > 1)
        throw new Error(
          `clusters[${i}].region: required: account "${c.account}" serves several regions (${served.join(", ")})`,
        );
      const account = runtime.regions.get(c.region ?? served[0] ?? "");
      if (account === undefined)
        throw new Error(
          `clusters[${i}].region: account "${c.account}" does not serve region "${c.region}" (it serves ${served.join(", ")})`,
        );
      const scope =
        c.network !== undefined && c.scope.network === undefined
          ? { ...c.scope, network: c.network }
          : c.scope;
      this.clusters.set(c.name, { provider: account.provider, account: account.binding, scope });
      this.routeWrites.set(c.name, runtime.routeWrites);
      this.loadBalancerOps.set(c.name, runtime.loadBalancerOps);
      // "cluster" scope is the per-cluster-CCM baseline: each cluster lists on its own.
      if (deps.refresh.cacheScope === "account") {
        this.caches.set(c.name, account.cache);
        this.lookups.set(c.name, account.lookups);
      } else {
        const logger = deps.logger.child({ component: "cloud", cluster: c.name });
        const cache = new InstanceCache(
          account.provider.instances,
          deps.clock,
          deps.refresh.periodMs,
          logger,
        );
        this.caches.set(c.name, cache);
        this.lookups.set(c.name, new InstanceLookups(account.provider.instances, cache, deps.clock));
      }
    });
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
        provider: a.provider,
        region: a.region,
        rateLimit: { perSecond: a.rateLimit.perSecond, burst: a.rateLimit.burst },
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
  shutdown: AbortSignal = NEVER,
): CloudCallWrapper {
  return async (op, fn) => {
    await limiter.take();
    const timer = metrics.cloudCallDuration.startTimer({ provider: binding.provider, op });
    const signal = shutdown;
    let failure: unknown;
    try {
      return await fn(signal);
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      timer();
      metrics.cloudCalls.inc({
        provider: binding.provider,
        account: binding.name,
        op,
        outcome: outcomeOf(failure),
      });
    }
  };
}
