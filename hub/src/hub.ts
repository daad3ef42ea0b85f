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
import { VerifiedInstances } from "./cloud/verified-instances.js";
import type { HubConfig } from "./config/schema.js";
import { resolveSecret } from "./config/secret.js";
import { type ControllerName, isControllerEnabled } from "./controllers.js";
import {
  type FleetListener,
  FleetState,
  type ObjectKindName,
  type Refusal,
  type ReplaceOutcome,
} from "./fleet/state.js";
import { FleetApi, fleetApiHandler, rotatingSecret } from "./fleet-api/index.js";
import { loadBalancerStats, nodesWaitingStats } from "./fleet-stats.js";
import { TokenAuthenticator } from "./grpc/auth.js";
import { HubGrpcServer } from "./grpc/server.js";
import { startApiServer, startHttpServer } from "./http.js";
import { HubMetrics } from "./metrics.js";
import { DesiredPublisher } from "./nats/publisher.js";
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
import { nodeLifecycleController } from "./reconcilers/node-lifecycle/index.js";
import { routeController } from "./reconcilers/route/index.js";
import { REASON as SERVICE_REASON } from "./reconcilers/service/events.js";
import { SERVICE, serviceController } from "./reconcilers/service/index.js";
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
  private readonly accounts: CloudAccounts;
  private readonly grpc: HubGrpcServer;
  private readonly publisher: DesiredPublisher;
  private readonly controllerLists = new Map<string, readonly string[]>();
  private readonly routesWanted = new Set<string>();
  /** When each cluster's agent stream last closed (metrics). */
  private readonly disconnectedAt = new Map<string, number>();
  /** Service work keys whose last sync failed (metrics). */
  private readonly failingServices = new Set<string>();
  private readonly controllers: readonly Controller[];
  private readonly byKind = new Map<string, Controller>();
  private http: HttpServer | undefined;
  /** The fleet API and page (api.*): undefined when not configured. */
  private readonly api: { readonly views: FleetApi; readonly token: () => string } | undefined;
  private apiServer: HttpServer | undefined;
  private workers: { stop(): Promise<void> } | undefined;
  private readonly cloudShutdown = new AbortController();

  constructor(private readonly opts: HubOptions) {
    const cfg = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger;
    this.queue = new WorkQueue({ clock: this.clock, backoff: RECONCILE_BACKOFF });
    this.fleet = new FleetState({ hold: cfg.snapshotHold, now: () => this.clock.now() });
    this.tracker = new ConvergenceTracker(this.clock, cfg.reconcile.convergeDeadlineMs);
    this.applyFailures = new ApplyFailureLog(this.log, this.clock);
    const globalControllers = opts.controllers ?? cfg.controllers;
    for (const c of cfg.clusters) {
      this.controllerLists.set(c.name, c.controllers ?? globalControllers);
      if (c.configureCloudRoutes) this.routesWanted.add(c.name);
    }

    const registry = new ProviderRegistry(opts.providers);
    this.accounts = new CloudAccounts(cfg.accounts, cfg.clusters, {
      registry,
      clock: this.clock,
      logger: this.log,
      metrics: this.metrics,
      env: opts.env,
      refresh: cfg.refresh,
      maxConcurrentRouteWrites: cfg.routes.maxConcurrentPerAccount,
      signal: this.cloudShutdown.signal,
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
    this.publisher.onConnected = () => this.onNatsConnected();
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
        confirmAfterMs: cfg.snapshotHold.confirmAfterMs,
      },
      {
        fleet: this.fleet,
        auth,
        clock: this.clock,
        logger: this.log.child({ component: "grpc" }),
        onApplyResult: (cluster, r) => this.onApplyResult(cluster, r),
        onReceived: (cluster, generation) => this.tracker.received(cluster, generation),
        onStreamsChanged: (n) => this.metrics.streamsConnected.set(n),
        onStreamRefused: (cluster, code, reason) =>
          this.metrics.streamsRefused.inc({ cluster, code: status[code], reason }),
        isCluster: (name) => this.accounts.cloudFor(name) !== undefined,
        hubVersion: RELEASE_VERSION,
        onRefused: (cluster, refusals) => this.onRefused(cluster, refusals),
        onSnapshotApplied: (cluster, outcome) => this.onSnapshotApplied(cluster, outcome),
        providerAnnotationPrefixes: (cluster) => {
          const provider = this.accounts.cloudFor(cluster)?.account.provider;
          return (provider === undefined ? undefined : registry.get(provider)?.annotationPrefixes) ?? [];
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
    };
    this.controllers = [
      cloudNodeController(ctx),
      nodeLifecycleController(ctx),
      serviceController(ctx),
      routeController(ctx),
    ];
    for (const c of this.controllers) for (const kind of c.kinds) this.byKind.set(kind, c);
    this.fleet.subscribe(this.dispatchFleetEvents());
    if (cfg.api !== undefined) {
      const views = new FleetApi({
        config: cfg,
        fleet: this.fleet,
        metrics: this.metrics,
        clock: this.clock,
        accounts: () => this.accounts.summaries(),
        agent: (c) => this.grpc.agentOf(c),
        patches: () => this.tracker.countsByPrefix(),
      });
      this.fleet.subscribe(views.observations.listener());
      const token = rotatingSecret(cfg.api.token, "api.token", opts.env, () => this.clock.now());
      this.api = { views, token };
    }
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
        this.disconnectedAt.set(cluster, this.clock.now());
        this.tracker.forgetProgress(cluster);
        each(cluster, (l) => l.onDisconnected?.(cluster));
        synced();
      },
    };
  }

  /**
   * Starts HTTP first (so /healthz answers from start-up), then the NATS connection in the
   * background, the workers and gRPC. Agents are served while NATS is down. Resolves with the
   * bound ports.
   */
  async start(): Promise<{ grpcPort: number; httpPort: number; apiPort?: number }> {
    let grpcUp = false;
    const httpListen = this.opts.config.http.listen;
    this.http = await startHttpServer(httpListen, {
      healthy: () => true,
      notReady: () => {
        const missing: string[] = [];
        if (!grpcUp) missing.push("gRPC: the agents' listener is not up yet");
        const nats = this.publisher.notConnectedReason();
        if (nats !== null) missing.push(`NATS: ${nats}`);
        return missing.length === 0 ? null : missing.join("; ");
      },
      registry: this.metrics.registry,
    }).catch((err: Error) => {
      throw new Error(`cannot serve HTTP on http.listen ${httpListen}: ${err.message}`);
    });
    const httpPort = (this.http.address() as AddressInfo).port;
    let apiPort: number | undefined;
    const apiCfg = this.opts.config.api;
    if (this.api !== undefined && apiCfg !== undefined) {
      this.api.views.start();
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
    let grpcPort: number;
    try {
      grpcPort = await this.grpc.start();
    } catch (err) {
      await this.stop();
      throw new Error(
        `cannot listen for agents on grpc.listen ${this.opts.config.grpc.listen}: ${(err as Error).message}`,
      );
    }
    grpcUp = true;
    this.log.info({ grpcPort, httpPort, apiPort, clusters: this.opts.config.clusters.length }, "hub started");
    return { grpcPort, httpPort, ...(apiPort === undefined ? {} : { apiPort }) };
  }

  /**
   * NATS is (back) up. What the publisher kept is flushed; publications made while the link was
   * silently dead may still be lost, so everything in flight is published again now.
   */
  private onNatsConnected(): void {
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

  /** The scrape-time gauges: agents connected, nodes waiting for initialization, load balancers by state. */
  private exportFleetState(): void {
    const cfg = this.opts.config;
    const startedAt = this.clock.now();
    const names = cfg.clusters.map((c) => c.name);
    this.metrics.clusterAgents = () => {
      const now = this.clock.now();
      return names.map((cluster) => {
        const connected = this.fleet.view(cluster)?.connected ?? false;
        const since = this.disconnectedAt.get(cluster) ?? startedAt;
        return { cluster, connected, disconnectedSeconds: connected ? 0 : (now - since) / 1000 };
      });
    };
    this.metrics.nodesWaiting = () =>
      nodesWaitingStats(
        this.fleet,
        names.filter((c) => this.enabled(c, "cloud-node-controller")),
        this.clock.now(),
      );
    this.metrics.loadBalancers = () =>
      loadBalancerStats(
        this.fleet,
        names.filter((c) => this.enabled(c, "service-lb-controller")),
        cfg.loadBalancerClass,
        (cluster, name) => this.failingServices.has(keyOf({ cluster, kind: SERVICE, name })),
      );
  }

  private onRefused(cluster: string, refusals: readonly Refusal[]): void {
    const events: ClusterEvent[] = [];
    refusals.forEach((r, i) => {
      this.metrics.objectsRefused.inc({ kind: r.kind, reason: r.limit });
      const object = r.kind === "node" ? r.name : `${r.namespace}/${r.name}`;
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
    for (const kind of ["node", "service"] as const) {
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
        const slash = h.key.indexOf("/");
        const [namespace, name] =
          h.kind === "node" ? ["", h.key] : [h.key.slice(0, slash), h.key.slice(slash + 1)];
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
    const released = outcome.released.node + outcome.released.service;
    if (released > 0) this.log.info({ cluster, released }, "held objects listed again: hold released");
  }

  private async reconcile(key: WorkKey): Promise<Requeue> {
    const controller = this.byKind.get(key.kind);
    if (controller === undefined) {
      this.log.error({ key: keyOf(key) }, "no controller for this key kind");
      return { kind: "done" };
    }
    if (!this.enabled(key.cluster, controller.name)) return { kind: "done" };
    const outcome = await controller.reconcile(key);
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
    await this.grpc.stop();
    this.queue.shutDown();
    // Cloud calls in flight end now instead of holding the workers until their timeout.
    this.cloudShutdown.abort();
    this.applyFailures.stop();
    await this.workers?.stop();
    await this.publisher.stop();
    await new Promise<void>((resolve) => (this.http ? this.http.close(() => resolve()) : resolve()));
    this.http?.closeAllConnections();
    this.api?.views.stop();
    await new Promise<void>((resolve) =>
      this.apiServer ? this.apiServer.close(() => resolve()) : resolve(),
    );
    this.apiServer?.closeAllConnections();
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
    kind: kind === "node" ? ObjectKind.OBJECT_KIND_NODE : ObjectKind.OBJECT_KIND_SERVICE,
    namespace,
    name,
    uid,
    type: "Warning",
    reason,
    message,
    sourceComponent: INGEST_EVENT_SOURCE,
  };
}
