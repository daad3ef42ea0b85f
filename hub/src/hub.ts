import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ApplyOutcome, type ApplyResult } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import { CloudAccounts } from "./cloud/accounts.js";
import type { ProviderFactory } from "./cloud/provider.js";
import { ProviderRegistry } from "./cloud/registry.js";
import { VerifiedInstances } from "./cloud/verified-instances.js";
import type { HubConfig } from "./config/schema.js";
import { resolveSecret } from "./config/secret.js";
import { type ControllerName, isControllerEnabled } from "./controllers.js";
import { type FleetListener, FleetState } from "./fleet/state.js";
import { TokenAuthenticator } from "./grpc/auth.js";
import { HubGrpcServer } from "./grpc/server.js";
import { startHttpServer } from "./http.js";
import { HubMetrics } from "./metrics.js";
import { DesiredPublisher } from "./nats/publisher.js";
import { clusterKeyPrefix, keyOf, type Requeue, runWorkers, type WorkKey, WorkQueue } from "./queue/index.js";
import { ApplyFailureLog } from "./reconcilers/apply-failures.js";
import type { Controller, ControllerContext } from "./reconcilers/controller.js";
import { ConvergenceTracker } from "./reconcilers/convergence.js";
import { REASON_SYNCED } from "./reconcilers/node-init/events.js";
import { cloudNodeController } from "./reconcilers/node-init/index.js";
import { nodeLifecycleController } from "./reconcilers/node-lifecycle/index.js";
import { routeController } from "./reconcilers/route/index.js";
import { serviceController } from "./reconcilers/service/index.js";
import { type Clock, systemClock } from "./util/clock.js";

export interface HubOptions {
  readonly config: HubConfig;
  readonly providers: readonly ProviderFactory[];
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly env?: NodeJS.ProcessEnv;
  /** Replaces config.controllers (the --controllers flag). */
  readonly controllers?: readonly string[];
}

/** Backoff of failed reconciles, per key: 250 ms doubling to 5 min (upstream's service controller caps at 300 s too). */
const RECONCILE_BACKOFF = { initialMs: 250, maxMs: 300_000, factor: 2, jitter: 0.1 };

/** The hub process: gRPC ingest, fleet state, work queue, controllers, NATS publisher, health and metrics. */
export class Hub {
  readonly fleet = new FleetState();
  readonly metrics = new HubMetrics();
  readonly queue: WorkQueue;
  readonly tracker: ConvergenceTracker;
  private readonly applyFailures: ApplyFailureLog;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly accounts: CloudAccounts;
  private readonly grpc: HubGrpcServer;
  private readonly publisher: DesiredPublisher;
  private readonly controllerLists = new Map<string, readonly string[]>();
  private readonly routesWanted = new Set<string>();
  private readonly controllers: readonly Controller[];
  private readonly byKind = new Map<string, Controller>();
  private http: HttpServer | undefined;
  private workers: { stop(): Promise<void> } | undefined;
  private started = false;

  constructor(private readonly opts: HubOptions) {
    const cfg = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger;
    this.queue = new WorkQueue({ clock: this.clock, backoff: RECONCILE_BACKOFF });
    this.tracker = new ConvergenceTracker(this.clock, cfg.reconcile.convergeDeadlineMs);
    this.applyFailures = new ApplyFailureLog(this.log, this.clock);
    const globalControllers = opts.controllers ?? cfg.controllers;
    for (const c of cfg.clusters) {
      this.controllerLists.set(c.name, c.controllers ?? globalControllers);
      if (c.configureCloudRoutes) this.routesWanted.add(c.name);
    }

    this.accounts = new CloudAccounts(cfg.accounts, cfg.clusters, {
      registry: new ProviderRegistry(opts.providers),
      clock: this.clock,
      logger: this.log,
      metrics: this.metrics,
      env: opts.env,
      refresh: cfg.refresh,
      maxConcurrentRouteWrites: cfg.routes.maxConcurrentPerAccount,
    });
    const auth = new TokenAuthenticator(
      cfg.clusters.map((c, i) => [c.name, resolveSecret(c.token, `clusters[${i}].token`, opts.env)] as const),
    );
    this.publisher = new DesiredPublisher(
      {
        servers: cfg.nats.servers,
        user: cfg.nats.user,
        password:
          cfg.nats.password === undefined
            ? undefined
            : resolveSecret(cfg.nats.password, "nats.password", opts.env),
      },
      this.log.child({ component: "nats" }),
    );
    this.grpc = new HubGrpcServer(
      {
        listen: cfg.grpc.listen,
        insecure: cfg.grpc.insecure,
        tls: cfg.grpc.tls,
        maxMessageBytes: cfg.limits.maxMessageBytes,
        maxStreamsPerCluster: cfg.limits.maxStreamsPerCluster,
        limits: cfg.limits,
        heartbeatIntervalMs: cfg.reconcile.heartbeatIntervalMs,
      },
      {
        fleet: this.fleet,
        auth,
        clock: this.clock,
        logger: this.log.child({ component: "grpc" }),
        onApplyResult: (cluster, r) => this.onApplyResult(cluster, r),
        onReceived: (cluster, generation) => this.tracker.received(cluster, generation),
        onStreamsChanged: (n) => this.metrics.streamsConnected.set(n),
      },
    );

    const ctx: ControllerContext = {
      config: cfg,
      fleet: this.fleet,
      queue: this.queue,
      tracker: this.tracker,
      verified: new VerifiedInstances(this.clock),
      metrics: this.metrics,
      clock: this.clock,
      logger: this.log,
      cloudFor: (c) => this.accounts.cloudFor(c),
      cacheFor: (c) => this.accounts.cacheFor(c),
      lookupsFor: (c) => this.accounts.lookupsFor(c),
      routeWritesFor: (c) => this.accounts.routeWritesFor(c),
    };
    this.controllers = [
      cloudNodeController(ctx),
      nodeLifecycleController(ctx),
      serviceController(ctx),
      routeController(ctx),
    ];
    for (const c of this.controllers) for (const kind of c.kinds) this.byKind.set(kind, c);
    this.fleet.subscribe(this.dispatchFleetEvents());
  }

  /** Whether a controller runs for a cluster: its --controllers list, and routes only where configured. */
  private enabled(cluster: string, controller: ControllerName): boolean {
    const list = this.controllerLists.get(cluster);
    if (list === undefined || !isControllerEnabled(list, controller)) return false;
    return controller !== "node-route-controller" || this.routesWanted.has(cluster);
  }

  private dispatchFleetEvents(): FleetListener {
    const each = (cluster: string, fn: (l: FleetListener) => void) => {
      for (const c of this.controllers) if (this.enabled(cluster, c.name)) fn(c.triggers);
    };
    const synced = () =>
      this.metrics.clustersSynced.set(
        this.fleet.clusterNames().filter((c) => this.grpc.isConnected(c)).length,
      );
    return {
      onNode: (cluster, name, change) => each(cluster, (l) => l.onNode?.(cluster, name, change)),
      onService: (cluster, key, change) => each(cluster, (l) => l.onService?.(cluster, key, change)),
      onSynced: (cluster, view) => {
        // The agent (re)connected: whatever was in flight may have been lost with it. Publish again now.
        const prefix = clusterKeyPrefix(cluster);
        this.tracker.expireWhere((k) => k.startsWith(prefix));
        this.tracker.restartProgress(cluster);
        each(cluster, (l) => l.onSynced?.(cluster, view));
        synced();
      },
      onDisconnected: (cluster) => {
        this.tracker.forgetProgress(cluster);
        each(cluster, (l) => l.onDisconnected?.(cluster));
        synced();
      },
    };
  }

  /** Starts NATS, the workers, gRPC and HTTP. Resolves with the bound ports. */
  async start(): Promise<{ grpcPort: number; httpPort: number }> {
    await this.publisher.start();
    this.workers = runWorkers(this.queue, {
      concurrency: this.opts.config.reconcile.workers,
      handler: (key) => this.reconcile(key),
      onProcessed: (key, requeue, durationMs) => {
        this.metrics.reconcileDuration.observe(
          { controller: key.kind, outcome: requeue.kind },
          durationMs / 1000,
        );
        this.metrics.queueDepth.set(this.queue.len());
      },
    });
    const grpcPort = await this.grpc.start();
    this.http = await startHttpServer(this.opts.config.http.listen, {
      healthy: () => true,
      notReady: () =>
        !this.started ? "starting" : this.publisher.connected() ? null : "NATS is not connected",
      registry: this.metrics.registry,
    });
    this.started = true;
    const httpPort = (this.http.address() as AddressInfo).port;
    this.log.info({ grpcPort, httpPort, clusters: this.opts.config.clusters.length }, "hub started");
    return { grpcPort, httpPort };
  }

  private async reconcile(key: WorkKey): Promise<Requeue> {
    const controller = this.byKind.get(key.kind);
    if (controller === undefined) {
      this.log.error({ key: keyOf(key) }, "no controller for this key kind");
      return { kind: "done" };
    }
    if (!this.enabled(key.cluster, controller.name)) return { kind: "done" };
    const outcome = await controller.reconcile(key);
    const nodes = outcome.nodes?.length ?? 0;
    const services = outcome.services?.length ?? 0;
    const events = outcome.events?.length ?? 0;
    if (nodes + services + events > 0) {
      this.publisher.enqueue(key.cluster, outcome);
      if (nodes > 0) this.metrics.patchesPublished.inc({ kind: "node" }, nodes);
      if (services > 0) this.metrics.patchesPublished.inc({ kind: "service" }, services);
      if (events > 0) this.metrics.patchesPublished.inc({ kind: "event" }, events);
      for (const e of outcome.events ?? [])
        if (e.reason === REASON_SYNCED) this.metrics.nodesInitialized.inc();
    }
    if (outcome.requeue.kind === "backoff")
      this.log.debug({ key: keyOf(key), err: String(outcome.requeue.error) }, "reconcile backing off");
    return outcome.requeue;
  }

  private onApplyResult(cluster: string, result: ApplyResult): void {
    this.metrics.applyResults.inc({ outcome: ApplyOutcome[result.outcome] ?? "unknown" });
    if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED) this.applyFailures.failed(cluster, result);
    this.tracker.reported(cluster, result.generation);
    for (const c of this.controllers) c.onApplyResult?.(cluster, result);
  }

  grpcPort(): number {
    return this.grpc.port;
  }

  /** Bytes of desired state published over NATS (benchmarks). */
  natsBytesPublished(): number {
    return this.publisher.publishedBytes;
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.grpc.stop();
    this.queue.shutDown();
    this.applyFailures.stop();
    await this.workers?.stop();
    await this.publisher.stop();
    await new Promise<void>((resolve) => (this.http ? this.http.close(() => resolve()) : resolve()));
    this.http?.closeAllConnections();
  }
}
