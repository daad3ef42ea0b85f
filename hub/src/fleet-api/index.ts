import type { AccountSummary } from "../cloud/accounts.js";
import type { UnclaimedReport } from "../cloud/unclaimed-disks.js";
import type { HubConfig } from "../config/schema.js";
import { resolveSecret, type SecretRef } from "../config/secret.js";
import type { FleetState } from "../fleet/state.js";
import { clusterKeyPrefix } from "../queue/index.js";
import type { Clock } from "../util/clock.js";
import { FleetObservations } from "./observations.js";
import type { FleetApiViews } from "./server.js";
import {
  type AccountJson,
  type ClusterAnswerJson,
  type ClusterInput,
  clusterDetail,
  clusterSummary,
  type FleetJson,
  fleetJson,
  type HealthPolicy,
  type HubHealthInput,
  hubHealthJson,
  type Problem,
  undeliverable,
  worst,
} from "./views.js";

export interface FleetApiDeps {
  readonly config: HubConfig;
  readonly fleet: FleetState;
  readonly clock: Clock;
  accounts(): readonly AccountSummary[];
  /** The connected agent's Hello, if any. */
  agent(cluster: string): { agentVersion: string; kubernetesVersion: string } | undefined;
  /** Publications in flight, by cluster key prefix. */
  patches(): ReadonlyMap<string, { inflight: number; republished: number; failedApply: number }>;
  /** The hub's own health (the facts /readyz answers from). */
  hubHealth(): HubHealthInput;
  /** A cluster's results kept until NATS is back, and why NATS refused its last ones (null: it did not). */
  delivery(cluster: string): { kept: number; refused: string | null };
  /** Whether the service controller runs for the cluster (absent: it does). */
  servicesEnabled?(cluster: string): boolean;
  /** Disks nobody claims (absent: no volumes capability in the fleet). */
  unclaimedDisks?(): Promise<UnclaimedReport>;
}

/** Builds the fleet API's JSON views from what the hub holds. */
export class FleetApi implements FleetApiViews {
  readonly observations: FleetObservations;
  private clusters: ReadonlyMap<string, HubConfig["clusters"][number]>;

  constructor(private readonly deps: FleetApiDeps) {
    this.clusters = new Map(deps.config.clusters.map((c) => [c.name, c]));
    const now = () => deps.clock.now();
    this.observations = new FleetObservations(now);
  }

  /** The configured clusters changed (a configuration reload). */
  setClusters(clusters: HubConfig["clusters"]): void {
    this.clusters = new Map(clusters.map((c) => [c.name, c]));
    this.observations.retainClusters(this.clusters);
  }

  private policy(): HealthPolicy {
    return {
      nowMs: this.deps.clock.now(),
      waitingUnhealthyAfterMs: this.deps.config.api?.waitingUnhealthyAfterMs ?? 300_000,
    };
  }

  private accountJson(): AccountJson[] {
    const now = this.deps.clock.now();
    return this.deps.accounts().map((a) => {
      const r = a.rate;
      const problems: Problem[] = [];
      if (r.throttledRecent > 0)
        problems.push({
          health: "unhealthy",
          message: `${r.throttledRecent} calls throttled by the cloud in the last minute`,
        });
      const utilization = a.rateLimit.perSecond > 0 ? r.callsPerSecond / a.rateLimit.perSecond : 0;
      if (a.waitingForToken > 0 || utilization >= 0.9)
        problems.push({
          health: "warning",
          message: "at its rate limit: calls wait for the account's limiter",
        });
      return {
        name: a.name,
        provider: a.provider,
        region: a.region,
        clusters: a.clusters,
        health: worst(problems),
        problems,
        rateLimit: a.rateLimit,
        callsPerSecond: Math.round(r.callsPerSecond * 100) / 100,
        utilization: Math.round(utilization * 1000) / 1000,
        waitingForToken: a.waitingForToken,
        throttled: {
          recent: r.throttledRecent,
          total: r.throttledTotal,
          last: r.lastThrottledMs === undefined ? null : new Date(r.lastThrottledMs).toISOString(),
        },
        cache: {
          listedAt: a.cacheListedAtMs === undefined ? null : new Date(a.cacheListedAtMs).toISOString(),
          ageSeconds: a.cacheListedAtMs === undefined ? null : Math.round((now - a.cacheListedAtMs) / 1000),
        },
      };
    });
  }

  private input(
    name: string,
    throttled: ReadonlySet<string>,
    patches: ReadonlyMap<string, ClusterInput["patches"]>,
    hub: HubHealthInput,
  ): ClusterInput | undefined {
    const c = this.clusters.get(name);
    if (c === undefined) return undefined;
    return {
      name,
      account: c.account,
      routesEnabled: c.configureCloudRoutes,
      ...(c.decommission && { decommission: { services: this.deps.servicesEnabled?.(name) ?? true } }),
      loadBalancerClass: this.deps.config.loadBalancerClass,
      view: this.deps.fleet.view(name),
      observations: this.observations.of(name),
      agent: this.deps.agent(name),
      patches: patches.get(clusterKeyPrefix(name)) ?? { inflight: 0, republished: 0, failedApply: 0 },
      accountThrottled: throttled.has(c.account),
      undeliverable: undeliverable(hub, this.deps.delivery(name)),
    };
  }

  private throttledAccounts(accounts: readonly AccountJson[]): Set<string> {
    return new Set(accounts.filter((a) => a.throttled.recent > 0).map((a) => a.name));
  }

  async fleet(): Promise<FleetJson> {
    const accounts = this.accountJson();
    const throttled = this.throttledAccounts(accounts);
    const patches = this.deps.patches();
    const policy = this.policy();
    const hub = this.deps.hubHealth();
    const clusters = [...this.clusters.values()].flatMap((c) => {
      const input = this.input(c.name, throttled, patches, hub);
      return input === undefined ? [] : [clusterSummary(input, policy)];
    });
    const fleet = fleetJson(hubHealthJson(hub), clusters, accounts, policy.nowMs);
    const unclaimed = await this.deps.unclaimedDisks?.();
    if (unclaimed === undefined) return fleet;
    return {
      ...fleet,
      unclaimedDisks: {
        ...unclaimed,
        disks: unclaimed.disks.map((d) => ({
          ...d,
          ageSeconds:
            d.createdAt === undefined
              ? null
              : Math.max(0, Math.round((policy.nowMs - Date.parse(d.createdAt)) / 1000)),
        })),
      },
    };
  }

  async cluster(name: string): Promise<ClusterAnswerJson | undefined> {
    const hub = this.deps.hubHealth();
    const input = this.input(name, this.throttledAccounts(this.accountJson()), this.deps.patches(), hub);
    if (input === undefined) return undefined;
    const policy = this.policy();
    return {
      generatedAt: new Date(policy.nowMs).toISOString(),
      hub: hubHealthJson(hub),
      ...clusterDetail(input, policy),
    };
  }
}

/** How often a rotated API token is read again. */
const TOKEN_REREAD_MS = 5000;

/**
 * The API token, read again at most every few seconds, so a rotated file (a Kubernetes Secret
 * volume) takes effect without a restart; a failed read keeps the last good token. Resolves once
 * up front so a missing secret fails start-up.
 */
export function rotatingSecret(
  ref: SecretRef,
  field: string,
  env: NodeJS.ProcessEnv | undefined,
  now: () => number,
): () => string {
  let value = resolveSecret(ref, field, env);
  let readAt = now();
  return () => {
    if (now() - readAt >= TOKEN_REREAD_MS) {
      readAt = now();
      try {
        value = resolveSecret(ref, field, env);
      } catch {
        // Keep the last good token: a Secret volume swaps its files, a read can fall in between.
      }
    }
    return value;
  };
}

export { fleetApiHandler } from "./server.js";
export type * from "./views.js";
