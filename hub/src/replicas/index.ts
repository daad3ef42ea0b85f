import { AsyncLocalStorage } from "node:async_hooks";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";
import { TransientCloudError } from "../cloud/errors.js";
import type { HubConfig } from "../config/schema.js";
import type { NatsOptions } from "../nats/publisher.js";
import { KvLeaseStore, type LeaseStore } from "./lease-store.js";
import { ClusterLeases, type LossReason } from "./leases.js";

export type { LeaseStore, LeaseValue, StoredLease } from "./lease-store.js";
export { KvLeaseStore, LeaseConflict } from "./lease-store.js";
export type { LeaseEvents, LeaseSettings, LossReason } from "./leases.js";
export { ClusterLeases } from "./leases.js";

export type ReplicasConfig = NonNullable<HubConfig["replicas"]>;

/** A cloud call for a cluster this replica does not hold (any more): nothing was sent. */
export class LeaseLostError extends TransientCloudError {
  override name = "LeaseLostError";
}

export interface ReplicaHooks {
  /** The cluster is ours now: rebuild from the agent's snapshot and the cloud. */
  onAcquired(cluster: string, from: string | undefined): void;
  /** The cluster is no longer ours: stop acting, close its streams, drop per-cluster memory. */
  onLost(cluster: string, reason: LossReason): void;
  /** The lease store has been unusable for a TTL while the cluster's stream is here. */
  onStalled(cluster: string): void;
  /** The lease went to the replica that asked for it: this replica's stream is stale. */
  onYielded(cluster: string): void;
}

/**
 * How often the hub speaks on every agent stream (Welcome.hub_heartbeat_interval_ms); an agent
 * drops a stream silent for three of these and dials again. Without replicas, a fifth longer
 * than the agents' heartbeat interval: the hub's Ack of each agent heartbeat is what it says,
 * and a HubHeartbeat due at the same interval would race the agent's next heartbeat and go out
 * about every other time, for nothing. With replicas, a tenth of the lease TTL (when shorter):
 * an agent leaves a frozen replica (whose connections stay open) in under a third of a TTL, and
 * still within a TTL when its new connection first lands on that replica again.
 */
export function hubHeartbeatIntervalMs(
  heartbeatIntervalMs: number,
  replicas: ReplicasConfig | undefined,
): number {
  const afterAgents = Math.ceil(heartbeatIntervalMs * 1.2);
  if (replicas === undefined) return afterAgents;
  return Math.min(afterAgents, Math.max(250, Math.floor(replicas.leaseTtlMs / 10)));
}

/** The replica id: the config's, else the pod name (HOSTNAME), else the host name. */
export function replicaIdOf(cfg: ReplicasConfig, env: NodeJS.ProcessEnv = process.env): string {
  return cfg.id ?? env["HOSTNAME"] ?? hostname();
}

/**
 * One hub replica among several sharing the fleet: holds the leases, tells the hub whether it
 * may act for a cluster, and carries the cluster being acted for through async calls so every
 * cloud call checks the lease of *its* cluster right before it is sent.
 */
export class HubReplicas {
  readonly id: string;
  readonly leases: ClusterLeases;
  private readonly store: LeaseStore;
  private readonly context = new AsyncLocalStorage<string>();
  private readonly handovers: Counter<"event" | "reason">;
  private readonly renewFailures: Counter;

  constructor(
    cfg: ReplicasConfig,
    nats: NatsOptions,
    deps: {
      readonly logger: Logger;
      readonly registry: Registry;
      readonly deletionWindowMs: number;
      readonly hooks: ReplicaHooks;
      readonly env?: NodeJS.ProcessEnv;
      /** Tests: a store other than NATS KV. */
      readonly store?: LeaseStore;
    },
  ) {
    this.id = replicaIdOf(cfg, deps.env);
    const logger = deps.logger.child({ component: "leases", replica: this.id });
    const kv =
      deps.store ??
      new KvLeaseStore({
        nats,
        bucket: cfg.bucket,
        streamReplicas: cfg.streamReplicas,
        requestTimeoutMs: Math.max(200, Math.floor(cfg.renewIntervalMs * 0.8)),
        replicaId: this.id,
        logger,
      });
    this.store = kv;
    this.handovers = new Counter({
      name: "fleet_ccm_hub_lease_transitions_total",
      help: "Cluster leases acquired, taken over from another replica, or lost, by reason.",
      labelNames: ["event", "reason"] as const,
      registers: [deps.registry],
    });
    this.renewFailures = new Counter({
      name: "fleet_ccm_hub_lease_renew_failures_total",
      help: "Lease renewals that failed (NATS unreachable, timeouts); the lease is fenced at TTL minus margin.",
      registers: [deps.registry],
    });
    const leases = () => this.leases;
    new Gauge({
      name: "fleet_ccm_hub_owned_clusters",
      help: "Clusters whose lease this hub replica holds.",
      registers: [deps.registry],
      collect() {
        this.set(leases().owned().length);
      },
    });
    this.leases = new ClusterLeases(
      {
        replicaId: this.id,
        ttlMs: cfg.leaseTtlMs,
        marginMs: cfg.marginMs,
        renewIntervalMs: cfg.renewIntervalMs,
        pollIntervalMs: cfg.pollIntervalMs,
        deletionWindowMs: deps.deletionWindowMs,
      },
      {
        store: kv,
        logger,
        events: {
          onAcquired: (cluster, from) => {
            this.handovers.inc({ event: from === undefined ? "acquired" : "taken-over", reason: "stream" });
            deps.hooks.onAcquired(cluster, from);
          },
          onLost: (cluster, reason) => {
            this.handovers.inc({ event: "lost", reason });
            deps.hooks.onLost(cluster, reason);
          },
          onRenewFailure: () => this.renewFailures.inc(),
          onStalled: (cluster) => deps.hooks.onStalled(cluster),
          onYielded: (cluster) => deps.hooks.onYielded(cluster),
        },
      },
    );
  }

  start(): void {
    if (this.store instanceof KvLeaseStore) this.store.start();
  }

  /** Why this replica cannot take clusters (readiness), or null. */
  notReady(): string | null {
    const p = this.leaseProblem();
    return p === null ? null : `leases: ${p}`;
  }

  /** Why the lease store cannot be used now; null when it can. */
  leaseProblem(): string | null {
    return this.store.problem();
  }

  holds(cluster: string): boolean {
    return this.leases.holds(cluster);
  }

  /** Runs `fn` as work for `cluster`: its cloud calls are fenced by the cluster's lease. */
  runFor<T>(cluster: string, fn: () => Promise<T>): Promise<T> {
    return this.context.run(cluster, fn);
  }

  /**
   * Before a cloud call: outside any cluster's work (shared account-wide lists), nothing to
   * check; inside, the lease must be held, and the call is aborted when the tenure ends.
   */
  guard(op: string): AbortSignal | undefined {
    const cluster = this.context.getStore();
    if (cluster === undefined) return undefined;
    const signal = this.leases.signal(cluster);
    if (signal === undefined || signal.aborted || !this.leases.holds(cluster))
      throw new LeaseLostError(`${op} not sent: this replica does not hold the lease of cluster ${cluster}`);
    return signal;
  }

  async stop(): Promise<void> {
    await this.leases.releaseAll();
    this.leases.stop();
    await this.store.close();
  }
}
