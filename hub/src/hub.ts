import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ApplyOutcome,
  type ApplyResult,
  type ClusterEvent,
  ObjectKind,
  RELEASE_VERSION,
} from "@fleet-ccm/proto";
import { status } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { CloudAccounts } from "./cloud/accounts.js";
import type { ProviderFactory } from "./cloud/provider.js";
import { ProviderRegistry } from "./cloud/registry.js";
import { UnclaimedDisks } from "./cloud/unclaimed-disks.js";
import { VerifiedInstances } from "./cloud/verified-instances.js";
import type { ClusterConfig, HubConfig } from "./config/schema.js";
import { resolveSecret } from "./config/secret.js";
import { type ControllerName, isControllerEnabled } from "./controllers.js";
import {
  type FleetListener,
  FleetState,
  type ObjectKindName,
  objectKeyOf,
  type Refusal,
  type ReplaceOutcome,
  splitObjectKey,
} from "./fleet/state.js";
import { FleetApi, fleetApiHandler, rotatingSecret } from "./fleet-api/index.js";
import { type HubHealthInput, hubHealthJson } from "./fleet-api/views.js";
import { loadBalancerStats, NodesWaitingStats } from "./fleet-stats.js";
import { clusterCredentials, TokenAuthenticator } from "./grpc/auth.js";
import { HubGrpcServer } from "./grpc/server.js";
import { startApiServer, startHttpServer } from "./http.js";
import { HubMetrics } from "./metrics.js";
import { pushFleetAccount } from "./nats/decentralized.js";
import { DesiredPublisher, describeNatsError } from "./nats/publisher.js";
import {
  clusterKeyPrefix,
  keyOf,
  parseKey,
  type Requeue,
  runWorkers,
  type WorkKey,
  WorkQueue,
} from "./queue/index.js";
import { ApplyFailureLog } from "./reconcilers/apply-failures.js";
import type { Controller, ControllerContext } from "./reconcilers/controller.js";
import { ConvergenceTracker } from "./reconcilers/convergence.js";
import { REASON_SYNCED } from "./reconcilers/node-init/events.js";
import { cloudNodeController } from "./reconcilers/node-init/index.js";
import { NodeInitProgress } from "./reconcilers/node-init/progress.js";
import { nodeIpamController } from "./reconcilers/node-ipam/index.js";
import { nodeLifecycleController } from "./reconcilers/node-lifecycle/index.js";
import { routeController } from "./reconcilers/route/index.js";
import { REASON as SERVICE_REASON } from "./reconcilers/service/events.js";
import { SERVICE, serviceController } from "./reconcilers/service/index.js";
import { persistentVolumeLabelController } from "./reconcilers/volume/index.js";
import { HubReplicas, hubHeartbeatIntervalMs, type LossReason } from "./replicas/index.js";
import { backoffDelayMs } from "./util/backoff.js";
import { type Clock, systemClock } from "./util/clock.js";

/** How long one listing of the disks nobody claims is served by the fleet API. */
const UNCLAIMED_DISKS_MAX_AGE_MS = 60_000;

export interface HubOptions {
  readonly config: HubConfig;
  readonly providers: readonly ProviderFactory[];
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly env?: NodeJS.ProcessEnv;
  /** Replaces config.controllers (the --controllers flag). */
  readonly controllers?: readonly string[];
}

/** Retries of a fleet account JWT push NATS did not take: 500 ms doubling to 30 s. */
const ACCOUNT_PUSH_BACKOFF = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.2 };

/** What a configuration reload changed. */
export interface ReloadOutcome {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Clusters whose entry changed (their streams are closed so the agent resyncs). */
  readonly changed: readonly string[];
  /** Top-level sections that differ but take effect only at the next restart. */
  readonly needsRestart: readonly string[];
}

/** Backoff of failed reconciles, per key: 250 ms doubling to 5 min (upstream's service controller caps at 300 s too). */
const RECONCILE_BACKOFF = { initialMs: 250, maxMs: 300_000, factor: 2, jitter: 0.1 };

const SERVICE_FAILURE_REASONS: ReadonlySet<string> = new Set([
  SERVICE_REASON.syncFailed,
  SERVICE_REASON.updateFailed,
  SERVICE_REASON.deleteFailed,
]);

/** Event reasons of the ingest side (on the object concerned, source fleet-ccm-hub). */
export const REASON_OBJECT_REFUSED = "ObjectRefused";
export const REASON_SNAPSHOT_DROP_HELD = "SnapshotDropHeld";
const INGEST_EVENT_SOURCE = "fleet-ccm-hub";
/** Events per snapshot for refused or held objects; the log line and the metric count them all. */
const MAX_EVENTS_PER_SNAPSHOT = 500;
/** Log lines per batch of refusals; the rest are summarized. */
const MAX_REFUSAL_LOG_LINES = 20;

/** The hub process: gRPC ingest, fleet state, work queue, controllers, NATS publisher, health and metrics. */
export class Hub {
  readonly fleet: FleetState;
  readonly metrics = new HubMetrics();
  readonly queue: WorkQueue;
  readonly tracker: ConvergenceTracker;
  private readonly applyFailures: ApplyFailureLog;
  private readonly clock: Clock;
  private readonly log: Logger;
  // Bound by create(), before anything can call the cloud.
  private accounts!: CloudAccounts;
  private readonly registry: ProviderRegistry;
  private readonly grpc: HubGrpcServer;
  private readonly publisher: DesiredPublisher;
  private readonly controllerLists = new Map<string, readonly string[]>();
  private readonly routesWanted = new Set<string>();
  private readonly ipamWanted = new Set<string>();
  /** Clusters leaving the hub (clusters[].decommission): only their load-balancer cleanup runs. */
  private readonly leaving = new Set<string>();
  private readonly auth: TokenAuthenticator;
  /** The configured clusters (replaced by reload). */
  private clusterConfigs: readonly ClusterConfig[];
  /** Fleet account JWT pushes (nats.operator): the generation wanted and the one NATS took. */
  private accountWanted = 0;
  private accountPushed = 0;
  private accountPushing = false;
  private accountProblem: string | undefined;
  private accountRetry: NodeJS.Timeout | undefined;
  private stopped = false;
  /** When each cluster's agent stream last closed (metrics). */
  private readonly disconnectedAt = new Map<string, number>();
  /** Service work keys whose last sync failed (metrics). */
  private readonly failingServices = new Set<string>();
  private readonly controllers: readonly Controller[];
  private readonly byKind = new Map<string, Controller>();
  private http: HttpServer | undefined;
  /** The agents' gRPC listener is up (readiness). */
  private grpcUp = false;
  /** The fleet API and page (api.*): undefined when not configured. */
  private readonly api: { readonly views: FleetApi; readonly token: () => string } | undefined;
  private apiServer: HttpServer | undefined;
  private workers: { stop(): Promise<void> } | undefined;
  private readonly cloudShutdown = new AbortController();
  /** Several hub replicas share the fleet (config `replicas`); undefined: this hub acts for every cluster. */
  private readonly replicas: HubReplicas | undefined;
  private readonly fleetEvents: FleetListener;
  private lastDrainMs = 0;
  /** Clusters of each account whose lease this replica holds (its share of the rate limit). */
  private readonly ownedByAccount = new Map<string, number>();

  /** A hub with every account bound to its provider (creating a provider may load its SDK). */
  static async create(opts: HubOptions): Promise<Hub> {
    const hub = new Hub(opts);
    await hub.bindAccounts();
    return hub;
  }

  private async bindAccounts(): Promise<void> {
    const cfg = this.opts.config;
    const replicas = this.replicas;
    this.accounts = await CloudAccounts.create(cfg.accounts, cfg.clusters, {
      registry: this.registry,
      clock: this.clock,
      logger: this.log,
      metrics: this.metrics,
      env: this.opts.env,
      refresh: cfg.refresh,
      maxConcurrentRouteWrites: cfg.routes.maxConcurrentPerAccount,
      signal: this.cloudShutdown.signal,
      ...(replicas !== undefined && {
        guard: (op: string) => replicas.guard(op),
        userAgent: `fleet-ccm-hub replica/${replicas.id}`,
      }),
    });
    if (replicas !== undefined) this.reshareRateLimits();
  }

  private constructor(private readonly opts: HubOptions) {
    const cfg = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger;
    this.queue = new WorkQueue({ clock: this.clock, backoff: RECONCILE_BACKOFF });
    this.fleet = new FleetState({ hold: cfg.snapshotHold, now: () => this.clock.now() });
    this.tracker = new ConvergenceTracker(
      this.clock,
      cfg.reconcile.convergeDeadlineMs,
      Math.random,
      (cluster) => this.grpc.requestEcho(cluster),
    );
    this.applyFailures = new ApplyFailureLog(this.log, this.clock);
    this.clusterConfigs = cfg.clusters;
    this.applyClusterSettings(cfg.clusters);

    const natsOptions = {
      servers: cfg.nats.servers,
      creds:
        cfg.nats.credentials === undefined
          ? undefined
          : resolveSecret(cfg.nats.credentials, "nats.credentials", opts.env),
      user: cfg.nats.user,
      password:
        cfg.nats.password === undefined
          ? undefined
          : resolveSecret(cfg.nats.password, "nats.password", opts.env),
    };
    this.replicas =
      cfg.replicas === undefined
        ? undefined
        : new HubReplicas(cfg.replicas, natsOptions, {
            logger: this.log,
            registry: this.metrics.registry,
            deletionWindowMs: cfg.lifecycle.blastRadius.windowMs,
            env: opts.env,
            hooks: {
              onAcquired: (cluster) => this.onLeaseAcquired(cluster),
              onLost: (cluster, reason) => this.onLeaseLost(cluster, reason),
              onStalled: () => this.sendAgentsElsewhere(),
              onYielded: (cluster) =>
                this.grpc.disconnectCluster(
                  cluster,
                  "another hub replica took the cluster's lease; reconnect",
                  status.UNAVAILABLE,
                ),
            },
          });
    const replicas = this.replicas;
    this.registry = new ProviderRegistry(opts.providers);
    const auth = new TokenAuthenticator();
    auth.replace(clusterCredentials(cfg.clusters, opts.env));
    this.auth = auth;
    this.publisher = new DesiredPublisher(natsOptions, this.log.child({ component: "nats" }));
    this.publisher.onConnected = () => this.onNatsConnected();
    if (replicas !== undefined) this.publisher.mayPublish = (cluster) => replicas.holds(cluster);
    this.metrics.heldObjects = () => {
      let n = 0;
      for (const c of this.fleet.clusterNames()) n += this.fleet.view(c)?.held.size ?? 0;
      return n;
    };
    this.exportFleetState();
    this.grpc = new HubGrpcServer(
      {
        listen: cfg.grpc.listen,
        insecure: cfg.grpc.insecure,
        tls: cfg.grpc.tls,
        maxMessageBytes: cfg.limits.maxMessageBytes,
        maxStreamsPerCluster: cfg.limits.maxStreamsPerCluster,
        maxStreamOpensPerMinute: cfg.limits.maxStreamOpensPerMinute,
        limits: cfg.limits,
        heartbeatIntervalMs: cfg.reconcile.heartbeatIntervalMs,
        pingIntervalMs: cfg.reconcile.pingIntervalMs,
        hubHeartbeatIntervalMs: hubHeartbeatIntervalMs(cfg.reconcile.heartbeatIntervalMs, cfg.replicas),
        confirmAfterMs: cfg.snapshotHold.confirmAfterMs,
      },
      {
        fleet: this.fleet,
        auth,
        clock: this.clock,
        logger: this.log.child({ component: "grpc" }),
        onApplyResult: (cluster, r) => this.onApplyResult(cluster, r),
        onReceived: (cluster, generation, acked) => this.tracker.received(cluster, generation, acked),
        onStreamsChanged: (n) => this.metrics.streamsConnected.set(n),
        onStreamRefused: (cluster, code, reason) =>
          this.metrics.streamsRefused.inc({ cluster, code: status[code], reason }),
        isCluster: (name) => this.accounts.cloudFor(name) !== undefined,
        hubVersion: RELEASE_VERSION,
        onRefused: (cluster, refusals) => this.onRefused(cluster, refusals),
        onSnapshotApplied: (cluster, outcome) => this.onSnapshotApplied(cluster, outcome),
        ...(replicas !== undefined && {
          admit: () => {
            const why = replicas.notReady();
            if (why === null) return null;
            this.sendAgentsElsewhere();
            return `this hub replica cannot take clusters now (${why}); try another`;
          },
        }),
        providerAnnotationPrefixes: (cluster) => {
          const provider = this.accounts.cloudFor(cluster)?.account.provider;
          return (provider === undefined ? undefined : this.registry.get(provider)?.annotationPrefixes) ?? [];
        },
        // Only where the provider looks disks up and the controller runs: else no PV is read.
        volumeSources: (cluster) =>
          this.enabled(cluster, "persistentvolume-label-controller")
            ? this.accounts.cloudFor(cluster)?.provider.volumes?.sources
            : undefined,
        providerSecretReferences: (cluster) => {
          const provider = this.accounts.cloudFor(cluster)?.account.provider;
          return (provider === undefined ? undefined : this.registry.get(provider)?.secretReferences) ?? [];
        },
      },
    );

    const ctx: ControllerContext = {
      config: cfg,
      fleet: this.fleet,
      queue: this.queue,
      tracker: this.tracker,
      verified: new VerifiedInstances(this.clock, (cluster) =>
        this.metrics.instancesOutOfScope.inc({ cluster }),
      ),
      metrics: this.metrics,
      clock: this.clock,
      logger: this.log,
      signal: this.cloudShutdown.signal,
      cloudFor: (c) => this.accounts.cloudFor(c),
      cacheFor: (c) => this.accounts.cacheFor(c),
      lookupsFor: (c) => this.accounts.lookupsFor(c),
      routeWritesFor: (c) => this.accounts.routeWritesFor(c),
      loadBalancerOpsFor: (c) => this.accounts.loadBalancerOpsFor(c),
      ...(replicas !== undefined && {
        recordedDeletions: (c: string) => replicas.leases.recordedDeletions(c),
      }),
      decommissioning: (c) => this.leaving.has(c),
      nodeInitProgress: new NodeInitProgress(),
      podNetworkFor: (c) => this.clusterConfigs.find((x) => x.name === c)?.podNetwork,
    };
    this.controllers = [
      cloudNodeController(ctx),
      nodeLifecycleController(ctx),
      serviceController(ctx),
      routeController(ctx),
      nodeIpamController(ctx),
      persistentVolumeLabelController(ctx),
    ];
    for (const c of this.controllers) for (const kind of c.kinds) this.byKind.set(kind, c);
    this.fleetEvents = this.dispatchFleetEvents();
    this.fleet.subscribe(this.fleetEvents);
    if (cfg.api !== undefined) {
      const unclaimed = new UnclaimedDisks({
        clusters: () => this.fleet.clusterNames(),
        cloudFor: (c) => this.accounts.cloudFor(c),
        view: (c) => this.fleet.view(c),
        followsVolumes: (c) => this.enabled(c, "persistentvolume-label-controller"),
        clock: this.clock,
        maxAgeMs: UNCLAIMED_DISKS_MAX_AGE_MS,
      });
      const views = new FleetApi({
        config: cfg,
        fleet: this.fleet,
        clock: this.clock,
        accounts: () => this.accounts.summaries(),
        agent: (c) => this.grpc.agentOf(c),
        patches: () => this.tracker.countsByPrefix(),
        hubHealth: () => this.healthInput(),
        delivery: (c) => {
          const s = this.publisher.status();
          return { kept: s.keptBy.get(c) ?? 0, refused: s.refusedBy.get(c) ?? null };
        },
        servicesEnabled: (c) => this.enabled(c, "service-lb-controller"),
        unclaimedDisks: () => unclaimed.current(),
      });
      this.fleet.subscribe(views.observations.listener());
      const token = rotatingSecret(cfg.api.token, "api.token", opts.env, () => this.clock.now());
      this.api = { views, token };
    }
  }

  private applyClusterSettings(clusters: readonly ClusterConfig[]): void {
    const globalControllers = this.opts.controllers ?? this.opts.config.controllers;
    this.controllerLists.clear();
    this.routesWanted.clear();
    this.ipamWanted.clear();
    this.leaving.clear();
    for (const c of clusters) {
      this.controllerLists.set(c.name, c.controllers ?? globalControllers);
      if (c.configureCloudRoutes) this.routesWanted.add(c.name);
      if (c.podNetwork !== undefined) this.ipamWanted.add(c.name);
      if (c.decommission) this.leaving.add(c.name);
    }
  }

  /** The clusters of the running configuration. */
  clusterNames(): string[] {
    return this.clusterConfigs.map((c) => c.name);
  }

  /**
   * Applies a new configuration's clusters without a restart: a new cluster's agent is
   * admitted, a removed one's streams close at once and its state is dropped, a cluster whose
   * token changed has its streams closed (the old token no longer admits). With decentralized
   * NATS auth the fleet account JWT follows. Other sections take effect at the next restart
   * (listed in the outcome). All or nothing: on an error nothing changes.
   */
  reload(next: HubConfig): ReloadOutcome {
    const before = new Map(this.clusterConfigs.map((c) => [c.name, c]));
    const after = new Map(next.clusters.map((c) => [c.name, c]));
    const credentials = clusterCredentials(next.clusters, this.opts.env);
    // Every check before any change: duplicate tokens, then the account bindings.
    new TokenAuthenticator().replace(credentials);
    this.accounts.setClusters(next.clusters);
    const revoked = new Set(this.auth.replace(credentials));
    const added = [...after.keys()].filter((n) => !before.has(n));
    const removed = [...before.keys()].filter((n) => !after.has(n));
    // Starting (or ending) a decommission changes what the hub does, not what the agent streams.
    const entry = (c: ClusterConfig | undefined) =>
      c === undefined ? "" : JSON.stringify({ ...c, decommission: undefined });
    const changed = [...after.keys()].filter(
      (n) => before.has(n) && entry(before.get(n)) !== entry(after.get(n)),
    );
    const decommissioned = [...after.keys()].filter(
      (n) =>
        !changed.includes(n) && before.has(n) && before.get(n)?.decommission !== after.get(n)?.decommission,
    );
    this.clusterConfigs = next.clusters;
    this.applyClusterSettings(next.clusters);
    this.api?.views.setClusters(next.clusters);
    for (const name of removed) {
      this.grpc.disconnectCluster(name, "the cluster was removed from the hub configuration");
      this.queue.removeCluster(name);
      this.tracker.forgetProgress(name);
      this.fleet.removeCluster(name);
      this.disconnectedAt.delete(name);
      this.forgetCluster(name);
    }
    for (const name of decommissioned) this.replayServices(name);
    for (const name of changed) {
      this.grpc.disconnectCluster(
        name,
        revoked.has(name) ? "the cluster's credential was revoked" : "the cluster's configuration changed",
      );
      this.queue.removeCluster(name);
    }
    const needsRestart = Object.keys(next).filter(
      (k) =>
        k !== "clusters" &&
        JSON.stringify((next as Record<string, unknown>)[k]) !==
          JSON.stringify((this.opts.config as Record<string, unknown>)[k]),
    );
    if (added.length + removed.length + changed.length > 0) this.syncNatsAccount();
    this.log.info({ added, removed, changed, decommissioned, needsRestart }, "configuration reloaded");
    if (needsRestart.length > 0)
      this.log.warn(
        { sections: needsRestart },
        "these configuration sections change only at the next restart",
      );
    return { added, removed, changed, needsRestart };
  }

  /** Decentralized NATS auth: pushes the fleet account JWT for the current clusters (retried until NATS takes it). */
  private syncNatsAccount(): void {
    if (this.opts.config.nats.operator === undefined) return;
    this.accountWanted++;
    void this.pushAccount();
  }

  private async pushAccount(): Promise<void> {
    if (this.opts.config.nats.operator === undefined || this.accountPushing || this.stopped) return;
    this.accountPushing = true;
    clearTimeout(this.accountRetry);
    let attempt = 0;
    try {
      while (this.accountPushed < this.accountWanted && !this.stopped) {
        const generation = this.accountWanted;
        try {
          await pushFleetAccount(this.opts.config.nats, this.clusterConfigs, this.opts.env);
          this.accountPushed = generation;
          if (this.accountProblem !== undefined) this.log.info("fleet account JWT pushed to NATS");
          this.accountProblem = undefined;
          this.log.debug({ clusters: this.clusterConfigs.length }, "fleet account JWT pushed to NATS");
        } catch (err) {
          const problem = `cannot update the fleet account on NATS: ${describeNatsError(err, this.opts.config.nats.servers)}`;
          if (problem !== this.accountProblem) this.log.warn({ attempt }, `${problem}; retrying`);
          this.accountProblem = problem;
          const delay = backoffDelayMs(Math.min(attempt++, 16), ACCOUNT_PUSH_BACKOFF);
          await new Promise<void>((resolve) => {
            this.accountRetry = setTimeout(resolve, delay);
            this.accountRetry.unref();
          });
        }
      }
    } finally {
      this.accountPushing = false;
    }
  }

  /** Whether a controller runs for a cluster: its --controllers list, and routes only where configured. */
  private enabled(cluster: string, controller: ControllerName): boolean {
    const list = this.controllerLists.get(cluster);
    if (list === undefined || !isControllerEnabled(list, controller)) return false;
    // Leaving: nothing is initialized, deleted or routed any more; load balancers are removed.
    if (this.leaving.has(cluster) && controller !== "service-lb-controller") return false;
    if (controller === "node-ipam-controller") return this.ipamWanted.has(cluster);
    return controller !== "node-route-controller" || this.routesWanted.has(cluster);
  }

  private dispatchFleetEvents(): FleetListener {
    const each = (cluster: string, fn: (l: FleetListener) => void) => {
      // Another replica's cluster: its work is queued once this one takes the lease.
      if (this.replicas !== undefined && !this.replicas.holds(cluster)) return;
      for (const c of this.controllers) if (this.enabled(cluster, c.name)) fn(c.triggers);
    };
    const synced = () =>
      this.metrics.clustersSynced.set(
        this.fleet.clusterNames().filter((c) => this.grpc.isConnected(c)).length,
      );
    return {
      onNode: (cluster, name, change) => each(cluster, (l) => l.onNode?.(cluster, name, change)),
      onService: (cluster, key, change) => each(cluster, (l) => l.onService?.(cluster, key, change)),
      onPersistentVolume: (cluster, name, change) =>
        each(cluster, (l) => l.onPersistentVolume?.(cluster, name, change)),
      onSynced: (cluster, view) => {
        if (this.replicas !== undefined && !this.replicas.holds(cluster)) {
          // Ownership follows the agent's stream: take the lease (this runs again once held).
          this.replicas.leases.want(cluster);
          synced();
          return;
        }
        // The agent (re)connected: whatever was in flight may have been lost with it. Publish again now.
        const prefix = clusterKeyPrefix(cluster);
        this.tracker.expireWhere((k) => k.startsWith(prefix));
        this.tracker.restartProgress(cluster);
        each(cluster, (l) => l.onSynced?.(cluster, view));
        synced();
      },
      onDisconnected: (cluster) => {
        this.disconnectedAt.set(cluster, this.clock.now());
        this.tracker.forgetProgress(cluster);
        each(cluster, (l) => l.onDisconnected?.(cluster));
        synced();
        // The agent went away (maybe to another replica): stop acting and free the lease now.
        if (this.replicas !== undefined) void this.replicas.leases.unwant(cluster);
      },
    };
  }

  /**
   * Starts HTTP first (so /healthz answers from start-up), then the NATS connection in the
   * background, the workers and gRPC. Agents are served while NATS is down. Resolves with the
   * bound ports.
   */
  async start(): Promise<{ grpcPort: number; httpPort: number; apiPort?: number }> {
    this.replicas?.start();
    const httpListen = this.opts.config.http.listen;
    this.http = await startHttpServer(httpListen, {
      healthy: () => true,
      notReady: () => {
        const missing = hubHealthJson(this.healthInput()).problems;
        return missing.length === 0 ? null : missing.map((p) => p.message).join("; ");
      },
      registry: this.metrics.registry,
    }).catch((err: Error) => {
      throw new Error(`cannot serve HTTP on http.listen ${httpListen}: ${err.message}`);
    });
    const httpPort = (this.http.address() as AddressInfo).port;
    let apiPort: number | undefined;
    const apiCfg = this.opts.config.api;
    if (this.api !== undefined && apiCfg !== undefined) {
      this.apiServer = await startApiServer(
        apiCfg.listen,
        fleetApiHandler(this.api.token, this.api.views),
      ).catch(async (err: Error) => {
        await this.stop();
        throw new Error(`cannot serve the fleet API on api.listen ${apiCfg.listen}: ${err.message}`);
      });
      apiPort = (this.apiServer.address() as AddressInfo).port;
    }
    this.publisher.start();
    this.syncNatsAccount();
    this.workers = runWorkers(this.queue, {
      concurrency: this.opts.config.reconcile.workers,
      handler: (key) => this.reconcile(key),
      onProcessed: (key, requeue, durationMs) => {
        this.metrics.reconcileDuration.series(key.kind, requeue.kind).observe(durationMs / 1000);
        this.metrics.queueDepth.set(this.queue.len());
      },
    });
    let grpcPort: number;
    try {
      grpcPort = await this.grpc.start();
    } catch (err) {
      await this.stop();
      throw new Error(
        `cannot listen for agents on grpc.listen ${this.opts.config.grpc.listen}: ${(err as Error).message}`,
      );
    }
    this.grpcUp = true;
    this.log.info(
      { grpcPort, httpPort, apiPort, clusters: this.opts.config.clusters.length, replica: this.replicas?.id },
      "hub started",
    );
    return { grpcPort, httpPort, ...(apiPort === undefined ? {} : { apiPort }) };
  }

  /** The hub's own health: what /readyz answers and the fleet API shows first. */
  private healthInput(): HubHealthInput {
    const nats = this.publisher.status();
    return {
      nats: {
        connected: nats.connected,
        problem: nats.problem,
        sinceMs: nats.sinceMs,
        kept: nats.kept,
        dropped: nats.dropped,
        accountProblem:
          this.accountPushed < this.accountWanted
            ? (this.accountProblem ?? "the fleet account JWT is not pushed yet")
            : null,
      },
      grpc: { listening: this.grpcUp, listen: this.opts.config.grpc.listen },
      leases: this.replicas === undefined ? undefined : { problem: this.replicas.leaseProblem() },
    };
  }

  /**
   * NATS is (back) up. What the publisher kept is flushed; publications made while the link was
   * silently dead may still be lost, so everything in flight is published again now.
   */
  private onNatsConnected(): void {
    // A restarted NATS without its resolver directory holds only the preloaded account JWT.
    this.syncNatsAccount();
    const keys: string[] = [];
    this.tracker.expireWhere((k) => {
      keys.push(k);
      return true;
    });
    for (const id of keys) {
      const k = parseKey(id);
      if (k !== undefined && this.byKind.has(k.kind)) this.queue.add(k);
    }
  }

  /** This replica now holds the cluster's lease: rebuild it from the agent's snapshot and the cloud. */
  private onLeaseAcquired(cluster: string): void {
    this.reshareRateLimits(cluster, +1);
    const view = this.fleet.view(cluster);
    if (!view?.connected || !view.synced) return;
    // The snapshot's per-object events went by while another replica held the cluster: replay
    // the whole view to the controllers, as if the snapshot had just been applied.
    const l = this.fleetEvents;
    for (const [name, cur] of view.nodes)
      l.onNode?.(cluster, name, { type: "upsert", origin: "snapshot", old: undefined, cur });
    for (const [key, cur] of view.services)
      l.onService?.(cluster, key, { type: "upsert", origin: "snapshot", old: undefined, cur });
    l.onSynced?.(cluster, view);
  }

  /** Every Service of the cluster's current view goes to the controllers again (a decommission began or ended). */
  private replayServices(cluster: string): void {
    const view = this.fleet.view(cluster);
    if (view === undefined || !view.synced) return;
    for (const [key, cur] of view.services)
      this.fleetEvents.onService?.(cluster, key, { type: "upsert", origin: "snapshot", old: undefined, cur });
  }

  /** The controllers' memory of the cluster and its metric series: nothing more is done for it here. */
  private forgetCluster(cluster: string): void {
    for (const c of this.controllers) c.onReleased?.(cluster);
    void this.metrics.forgetCluster(cluster);
  }

  /** The lease ended (fenced already): nothing more is done or published for the cluster here. */
  private onLeaseLost(cluster: string, reason: LossReason): void {
    this.reshareRateLimits(cluster, -1);
    this.tracker.forgetProgress(cluster);
    const prefix = clusterKeyPrefix(cluster);
    this.tracker.expireWhere((k) => k.startsWith(prefix));
    this.forgetCluster(cluster);
    // Cut off from the lease store: every agent here is better served elsewhere.
    if (reason === "renew-failed" && this.replicas?.notReady() !== null) this.sendAgentsElsewhere();
    // Handed over or fenced: the agent must stream to the replica that can act for it.
    else if (reason !== "released")
      this.grpc.disconnectCluster(
        cluster,
        `this hub replica no longer holds the cluster's lease (${reason}); reconnect`,
        status.UNAVAILABLE,
      );
  }

  /**
   * This replica cannot take clusters (lease store unreachable): close the agents' connections,
   * at most once a second, so their retries reach another replica through the Service.
   */
  private sendAgentsElsewhere(): void {
    const now = this.clock.now();
    if (now - this.lastDrainMs < 1000) return;
    this.lastDrainMs = now;
    this.log.warn(
      "cannot reach the lease store: closing agent connections so they reconnect to another replica",
    );
    this.grpc.drainConnections();
  }

  /**
   * Each account's rate limit is shared by the share of its clusters this replica holds: `delta`
   * is +1 when `cluster` was acquired, -1 when lost; without a cluster, every account is set.
   */
  private reshareRateLimits(cluster?: string, delta = 0): void {
    if (this.replicas === undefined) return;
    const account = cluster === undefined ? undefined : this.accounts.cloudFor(cluster)?.account.name;
    for (const [name, clusters] of this.accounts.clustersByAccount()) {
      if (account !== undefined && name !== account) continue;
      const owned = Math.max(0, (this.ownedByAccount.get(name) ?? 0) + delta);
      this.ownedByAccount.set(name, owned);
      this.accounts.setRateShare(name, clusters.length === 0 ? 0 : owned / clusters.length);
    }
  }

  /** The scrape-time gauges: agents connected, nodes waiting for initialization, load balancers by state. */
  private exportFleetState(): void {
    const cfg = this.opts.config;
    const startedAt = this.clock.now();
    const names = () => this.clusterNames();
    this.metrics.clusterAgents = () => {
      const now = this.clock.now();
      return names().map((cluster) => {
        const connected = this.fleet.view(cluster)?.connected ?? false;
        const since = this.disconnectedAt.get(cluster) ?? startedAt;
        return { cluster, connected, disconnectedSeconds: connected ? 0 : (now - since) / 1000 };
      });
    };
    const waiting = new NodesWaitingStats();
    this.metrics.nodesWaiting = () =>
      waiting.of(
        this.fleet,
        names().filter((c) => this.enabled(c, "cloud-node-controller")),
        this.clock.now(),
      );
    this.metrics.loadBalancers = () =>
      loadBalancerStats(
        this.fleet,
        names().filter((c) => this.enabled(c, "service-lb-controller")),
        cfg.loadBalancerClass,
        (cluster, name) => this.failingServices.has(keyOf({ cluster, kind: SERVICE, name })),
      );
  }

  private onRefused(cluster: string, refusals: readonly Refusal[]): void {
    const events: ClusterEvent[] = [];
    refusals.forEach((r, i) => {
      this.metrics.objectsRefused.inc({ kind: r.kind, reason: r.limit });
      const object = objectKeyOf(r.kind, r.namespace, r.name);
      if (i < MAX_REFUSAL_LOG_LINES)
        this.log.warn(
          { cluster, kind: r.kind, object, limit: r.limit, reason: r.message },
          "object refused: left out of the hub's view",
        );
      if (i < MAX_EVENTS_PER_SNAPSHOT)
        events.push(
          ingestEvent(
            r.kind,
            r.namespace,
            r.name,
            r.uid,
            REASON_OBJECT_REFUSED,
            `The hub refused this ${r.kind}: ${r.message}. It ignores the object until it is within the limits; the cluster's other objects are unaffected.`,
          ),
        );
    });
    if (refusals.length > MAX_REFUSAL_LOG_LINES)
      this.log.warn(
        { cluster, refused: refusals.length, logged: MAX_REFUSAL_LOG_LINES },
        "more objects refused (counted in fleet_ccm_objects_refused_total)",
      );
    this.publisher.enqueue(cluster, { events });
  }

  private onSnapshotApplied(cluster: string, outcome: ReplaceOutcome): void {
    this.api?.views.observations.snapshotApplied(cluster);
    const view = this.fleet.view(cluster);
    const count = (kind: ObjectKindName, outcomeName: string, n: number) => {
      if (n > 0) this.metrics.snapshotDrops.inc({ kind, outcome: outcomeName }, n);
    };
    for (const kind of ["node", "service", "persistentVolume"] as const) {
      count(kind, "removed", outcome.removed[kind]);
      count(kind, "held", outcome.held.filter((h) => h.kind === kind).length);
      count(kind, "confirmed", outcome.confirmed.filter((h) => h.kind === kind).length);
      count(kind, "released", outcome.released[kind]);
    }
    const hold = this.opts.config.snapshotHold;
    if (outcome.held.length > 0) {
      const { node, service } = outcome.dropped;
      this.log.warn(
        {
          cluster,
          held: outcome.held.length,
          nodesDropped: `${node.count}/${node.of}`,
          servicesDropped: `${service.count}/${service.of}`,
          confirmAfterMs: hold.confirmAfterMs,
        },
        "snapshot dropped a large share of the cluster at once: held, not acted on, until a later snapshot confirms it",
      );
      const events = outcome.held.slice(0, MAX_EVENTS_PER_SNAPSHOT).map((h) => {
        const d = outcome.dropped[h.kind];
        const { namespace, name } = splitObjectKey(h.kind, h.key);
        return ingestEvent(
          h.kind,
          namespace,
          name,
          h.uid,
          REASON_SNAPSHOT_DROP_HELD,
          `The agent's snapshot no longer lists this ${h.kind}, with ${d.count} of ${d.of} ${h.kind}s at once (more than max(${hold.maxObjects}, ${hold.maxPercent}%)). The hub keeps treating it as present until a snapshot at least ${Math.round(hold.confirmAfterMs / 1000)} s later confirms the drop, or the agent reports its deletion.`,
        );
      });
      this.publisher.enqueue(cluster, { events });
    }
    if (outcome.confirmed.length > 0)
      this.log.warn(
        { cluster, confirmed: outcome.confirmed.length, stillHeld: view?.held.size ?? 0 },
        "held snapshot drop confirmed by a later snapshot: objects removed from the view",
      );
    const released = outcome.released.node + outcome.released.service + outcome.released.persistentVolume;
    if (released > 0) this.log.info({ cluster, released }, "held objects listed again: hold released");
  }

  private async reconcile(key: WorkKey): Promise<Requeue> {
    const controller = this.byKind.get(key.kind);
    if (controller === undefined) {
      this.log.error({ key: keyOf(key) }, "no controller for this key kind");
      return { kind: "done" };
    }
    if (!this.enabled(key.cluster, controller.name)) return { kind: "done" };
    const replicas = this.replicas;
    if (replicas !== undefined && !replicas.holds(key.cluster)) return { kind: "done" };
    const outcome =
      replicas === undefined
        ? await controller.reconcile(key)
        : await replicas.runFor(key.cluster, () => controller.reconcile(key));
    if (replicas !== undefined) {
      // Lost while reconciling: another replica rebuilds the cluster; nothing of this goes out.
      if (!replicas.holds(key.cluster)) return { kind: "done" };
      const deletions = outcome.nodes?.filter((n) => n.delete).length ?? 0;
      if (deletions > 0 && !(await replicas.leases.recordDeletions(key.cluster, deletions)))
        return { kind: "backoff", error: new Error("node deletion not recorded in the cluster's lease") };
    }
    if (key.kind === SERVICE) {
      // Failed: backing off, or waiting out the cloud's Retry-After with a failure Event.
      const failed =
        outcome.requeue.kind === "backoff" ||
        (outcome.events ?? []).some((e) => SERVICE_FAILURE_REASONS.has(e.reason));
      if (failed) this.failingServices.add(keyOf(key));
      else this.failingServices.delete(keyOf(key));
    }
    if (outcome.events !== undefined) this.api?.views.observations.published(key.cluster, outcome.events);
    const nodes = outcome.nodes?.length ?? 0;
    const services = outcome.services?.length ?? 0;
    const volumes = outcome.persistentVolumes?.length ?? 0;
    const events = outcome.events?.length ?? 0;
    if (nodes + services + volumes + events > 0) {
      this.publisher.enqueue(key.cluster, outcome);
      if (nodes > 0) this.metrics.patchesPublished.series("node").inc(nodes);
      if (services > 0) this.metrics.patchesPublished.series("service").inc(services);
      if (volumes > 0) this.metrics.patchesPublished.series("persistentVolume").inc(volumes);
      if (events > 0) this.metrics.patchesPublished.series("event").inc(events);
      for (const e of outcome.events ?? [])
        if (e.reason === REASON_SYNCED) this.metrics.nodesInitialized.inc();
    }
    if (outcome.requeue.kind === "backoff")
      this.log.debug({ key: keyOf(key), err: String(outcome.requeue.error) }, "reconcile backing off");
    return outcome.requeue;
  }

  private onApplyResult(cluster: string, result: ApplyResult): void {
    this.metrics.applyResults.series(ApplyOutcome[result.outcome] ?? "unknown").inc();
    if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED) this.applyFailures.failed(cluster, result);
    this.tracker.reported(cluster, result.generation);
    for (const c of this.controllers) c.onApplyResult?.(cluster, result);
  }

  grpcPort(): number {
    return this.grpc.port;
  }

  /** The bound port of /healthz, /readyz and /metrics (undefined: not started). */
  healthPort(): number | undefined {
    const a = this.http?.address();
    return typeof a === "object" && a !== null ? a.port : undefined;
  }

  /** The fleet API's bound port (undefined: no api section, or not started). */
  apiPort(): number | undefined {
    const a = this.apiServer?.address();
    return typeof a === "object" && a !== null ? a.port : undefined;
  }

  /** Bytes of desired state published over NATS (benchmarks). */
  natsBytesPublished(): number {
    return this.publisher.publishedBytes;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.accountRetry);
    // Leases first: fenced and released, so the replica each agent reconnects to acts at once.
    await this.replicas?.stop();
    await this.grpc.stop();
    this.queue.shutDown();
    // Cloud calls in flight end now instead of holding the workers until their timeout.
    this.cloudShutdown.abort();
    this.applyFailures.stop();
    await this.workers?.stop();
    await this.publisher.stop();
    await new Promise<void>((resolve) => (this.http ? this.http.close(() => resolve()) : resolve()));
    this.http?.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.apiServer ? this.apiServer.close(() => resolve()) : resolve(),
    );
    this.apiServer?.closeAllConnections();
    this.metrics.stop();
  }
}

function ingestEvent(
  kind: ObjectKindName,
  namespace: string,
  name: string,
  uid: string,
  reason: string,
  message: string,
): ClusterEvent {
  return {
    kind: {
      node: ObjectKind.OBJECT_KIND_NODE,
      service: ObjectKind.OBJECT_KIND_SERVICE,
      persistentVolume: ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME,
    }[kind],
    namespace,
    name,
    uid,
    type: "Warning",
    reason,
    message,
    sourceComponent: INGEST_EVENT_SOURCE,
  };
}
