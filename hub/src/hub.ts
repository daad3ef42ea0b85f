import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ApplyResult } from "@fleet-ccm/proto";
import { ApplyOutcome } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import { CloudAccounts } from "./cloud/accounts.js";
import type { ProviderFactory } from "./cloud/provider.js";
import { ProviderRegistry } from "./cloud/registry.js";
import { VerifiedInstances } from "./cloud/verified-instances.js";
import type { HubConfig } from "./config/schema.js";
import { resolveSecret } from "./config/secret.js";
import { type ControllerName, isControllerEnabled } from "./controllers.js";
import { FleetState } from "./fleet/state.js";
import { TokenAuthenticator } from "./grpc/auth.js";
import { HubGrpcServer } from "./grpc/server.js";
import { startHttpServer } from "./http.js";
import { HubMetrics } from "./metrics.js";
import { DesiredPublisher } from "./nats/publisher.js";
import { clusterKeyPrefix, keyOf, type Requeue, runWorkers, type WorkKey, WorkQueue } from "./queue/index.js";
import { ConvergenceTracker } from "./reconcilers/convergence.js";
import {
  NODE_INIT,
  nodeInitTriggers,
  onNodeApplyResult,
  reconcileNodeInit,
} from "./reconcilers/node-init/index.js";
import type { Outcome } from "./reconcilers/outcome.js";
import {
  type EnsuredRecord,
  onServiceApplyResult,
  reconcileService,
  SERVICE,
  SERVICE_NODES,
  serviceTriggers,
} from "./reconcilers/service/index.js";
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

/** Backoff of failed reconciles: upstream's service controller range (5 s … 300 s) starts too slow for init; 250 ms doubling. */
const RECONCILE_BACKOFF = { initialMs: 250, maxMs: 300_000, factor: 2, jitter: 0.1 };

/** The hub process: gRPC ingest, fleet state, work queue, reconcilers, NATS publisher, health and metrics. */
export class Hub {
  readonly fleet = new FleetState();
  readonly metrics = new HubMetrics();
  readonly queue: WorkQueue;
  readonly tracker: ConvergenceTracker;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly accounts: CloudAccounts;
  private readonly grpc: HubGrpcServer;
  private readonly publisher: DesiredPublisher;
  private readonly controllersByCluster = new Map<string, readonly string[]>();
  private readonly verified: VerifiedInstances;
  private readonly ensured = new Map<string, EnsuredRecord>();
  private http: HttpServer | undefined;
  private workers: { stop(): Promise<void> } | undefined;
  private started = false;

  constructor(private readonly opts: HubOptions) {
    const cfg = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger;
    this.queue = new WorkQueue({ clock: this.clock, backoff: RECONCILE_BACKOFF });
    this.tracker = new ConvergenceTracker(this.clock, cfg.reconcile.convergeDeadlineMs);
    this.verified = new VerifiedInstances(this.clock);
    const globalControllers = opts.controllers ?? cfg.controllers;
    for (const c of cfg.clusters) this.controllersByCluster.set(c.name, c.controllers ?? globalControllers);

    this.accounts = new CloudAccounts(cfg.accounts, cfg.clusters, {
      registry: new ProviderRegistry(opts.providers),
      clock: this.clock,
      logger: this.log,
      metrics: this.metrics,
      env: opts.env,
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
        onStreamsChanged: (n) => this.metrics.streamsConnected.set(n),
      },
    );

    const initTriggers = nodeInitTriggers(this.queue, this.tracker);
    const svcTriggers = serviceTriggers(this.queue, this.tracker, cfg.loadBalancerClass);
    this.fleet.subscribe({
      onNode: (cluster, name, change) => {
        if (this.enabled(cluster, "cloud-node-controller")) initTriggers.onNode?.(cluster, name, change);
        if (this.enabled(cluster, "service-lb-controller")) svcTriggers.onNode?.(cluster, name, change);
      },
      onService: (cluster, key, change) => {
        if (this.enabled(cluster, "service-lb-controller")) svcTriggers.onService?.(cluster, key, change);
      },
      onSynced: (cluster) => {
        // The agent (re)connected: whatever was in flight may have been lost with it. Publish again now.
        const prefix = clusterKeyPrefix(cluster);
        this.tracker.expireWhere((k) => k.startsWith(prefix));
        this.metrics.clustersSynced.set(
          this.fleet.clusterNames().filter((c) => this.grpc.isConnected(c)).length,
        );
      },
      onDisconnected: () =>
        this.metrics.clustersSynced.set(
          this.fleet.clusterNames().filter((c) => this.grpc.isConnected(c)).length,
        ),
    });
  }

  private enabled(cluster: string, controller: ControllerName): boolean {
    const list = this.controllersByCluster.get(cluster);
    return list !== undefined && isControllerEnabled(list, controller);
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
    let outcome: Outcome;
    switch (key.kind) {
      case NODE_INIT:
        if (!this.enabled(key.cluster, "cloud-node-controller")) return { kind: "done" };
        outcome = await reconcileNodeInit(key, {
          fleet: this.fleet,
          cloudFor: (c) => this.accounts.cloudFor(c),
          tracker: this.tracker,
          verified: this.verified,
          logger: this.log.child({ component: NODE_INIT, cluster: key.cluster }),
          clock: this.clock,
        });
        break;
      case SERVICE:
        if (!this.enabled(key.cluster, "service-lb-controller")) return { kind: "done" };
        outcome = await reconcileService(key, {
          fleet: this.fleet,
          cloudFor: (c) => this.accounts.cloudFor(c),
          tracker: this.tracker,
          verified: this.verified,
          ensured: this.ensured,
          logger: this.log.child({ component: SERVICE, cluster: key.cluster }),
          clock: this.clock,
          loadBalancerClass: this.opts.config.loadBalancerClass,
        });
        break;
      case SERVICE_NODES: {
        // Batched: one key per cluster fans out to every load-balanced Service of it.
        const view = this.fleet.view(key.cluster);
        for (const name of view?.services.keys() ?? [])
          this.queue.add({ cluster: key.cluster, kind: SERVICE, name });
        return { kind: "done" };
      }
      default:
        this.log.error({ key: keyOf(key) }, "no reconciler for this key kind");
        return { kind: "done" };
    }
    if (outcome.nodes?.length || outcome.services?.length || outcome.events?.length) {
      this.publisher.enqueue(key.cluster, outcome);
      if (outcome.nodes?.length) this.metrics.patchesPublished.inc({ kind: "node" }, outcome.nodes.length);
      if (outcome.services?.length)
        this.metrics.patchesPublished.inc({ kind: "service" }, outcome.services.length);
      if (outcome.events?.length) this.metrics.patchesPublished.inc({ kind: "event" }, outcome.events.length);
      if (key.kind === NODE_INIT && outcome.events?.some((e) => e.reason === "Synced"))
        this.metrics.nodesInitialized.inc();
    }
    if (outcome.requeue.kind === "backoff")
      this.log.debug({ key: keyOf(key), err: String(outcome.requeue.error) }, "reconcile backing off");
    return outcome.requeue;
  }

  private onApplyResult(cluster: string, result: ApplyResult): void {
    this.metrics.applyResults.inc({ outcome: ApplyOutcome[result.outcome] ?? "unknown" });
    if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED)
      this.log.warn(
        {
          cluster,
          object: result.name,
          status: result.httpStatus,
          reason: result.reason,
          message: result.message,
        },
        "agent could not apply a patch",
      );
    onNodeApplyResult(cluster, result, this.queue, this.tracker);
    onServiceApplyResult(cluster, result, this.queue, this.tracker);
  }

  grpcPort(): number {
    return this.grpc.port;
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.grpc.stop();
    this.queue.shutDown();
    await this.workers?.stop();
    await this.publisher.stop();
    await new Promise<void>((resolve) => (this.http ? this.http.close(() => resolve()) : resolve()));
    this.http?.closeAllConnections();
  }
}
