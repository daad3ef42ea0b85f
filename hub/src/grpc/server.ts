import type { AgentMessage, ApplyResult, HubMessage } from "@fleet-ccm/proto";
import {
  AnnotationFilter,
  desiredSubject,
  keepaliveOptions,
  type SecretReference,
  UNIFIED_ANNOTATION_PREFIXES,
} from "@fleet-ccm/proto";
import { Metadata, Server, type ServerDuplexStream, status } from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { FleetState, Refusal, ReplaceOutcome } from "../fleet/state.js";
import type { Clock } from "../util/clock.js";
import { TokenBucket } from "../util/rate-limiter.js";
import type { TokenAuthenticator } from "./auth.js";
import { LogThrottle } from "./log-throttle.js";
import { AgentSession, type SessionLimits, type StreamRefusalReason, type VolumeSources } from "./session.js";
import { type HubTransport, serverCredentials, type TlsOptions } from "./tls.js";
import { guardedHubService, type Malformed, TRANSPORT_SIZE_FACTOR } from "./wire.js";

/** Trailer naming why the hub ended a stream (machine-readable; the status details say it in words). */
export const REFUSAL_TRAILER = "fleet-ccm-refusal";

export interface GrpcServerOptions {
  readonly listen: string;
  readonly insecure: boolean;
  readonly tls?: TlsOptions | undefined;
  readonly maxMessageBytes: number;
  readonly maxStreamsPerCluster: number;
  /** New streams a cluster may open per minute, sustained (a burst of 10 is allowed). 0: unlimited. */
  readonly maxStreamOpensPerMinute?: number;
  readonly limits: SessionLimits;
  readonly heartbeatIntervalMs: number;
  /** How often the hub pings every agent connection (HTTP/2 PING); undefined: it does not. */
  readonly pingIntervalMs?: number;
  /** How often the hub speaks on every stream (SessionDeps.hubHeartbeatIntervalMs). */
  readonly hubHeartbeatIntervalMs?: number;
  /** snapshotHold.confirmAfterMs: when to ask for a snapshot that can confirm a held drop. */
  readonly confirmAfterMs?: number;
}

export interface GrpcServerDeps {
  readonly fleet: FleetState;
  readonly auth: TokenAuthenticator;
  readonly clock: Clock;
  readonly logger: Logger;
  onApplyResult(cluster: string, result: ApplyResult): void;
  /**
   * A cluster's agent has received desired state up to this generation, and had read the Ack the
   * hub sent at ackedHubTimeMs (0: not said).
   */
  onReceived?(cluster: string, generation: number, ackedHubTimeMs: number): void;
  /** Objects an agent reported that the hub newly refused. */
  onRefused?(cluster: string, refusals: readonly Refusal[]): void;
  /** A snapshot became a cluster's view. */
  onSnapshotApplied?(cluster: string, outcome: ReplaceOutcome): void;
  /** The annotation prefixes the cluster's provider reads (besides the unified ones). */
  providerAnnotationPrefixes?(cluster: string): readonly string[];
  /** The Secrets the cluster's provider has agents read (Welcome.secret_references). */
  providerSecretReferences?(cluster: string): readonly SecretReference[];
  /** The PersistentVolumes the cluster's agent follows (Welcome); undefined: none. */
  volumeSources?(cluster: string): VolumeSources | undefined;
  /** Streams connected changed (for the metric). */
  onStreamsChanged?(total: number): void;
  /** Why a new stream for this cluster is refused with UNAVAILABLE (hub replicas), or null. */
  admit?(cluster: string): string | null;
  /** The hub ended or refused a stream ("" for a stream no credential named). */
  onStreamRefused?(cluster: string, code: status, reason: StreamRefusalReason): void;
  /** Whether a cluster of this name is configured (a client certificate alone names one). */
  isCluster?(name: string): boolean;
  /** This hub's release (semver), which agents' Hello versions are checked against. */
  readonly hubVersion?: string;
}

/** The hub's gRPC endpoint: authenticates each stream and hands it to an AgentSession. */
export class HubGrpcServer {
  private readonly server: Server;
  private readonly sessions = new Map<string, Set<AgentSession>>();
  private readonly primary = new Map<string, AgentSession>();
  private readonly opens = new Map<string, TokenBucket>();
  private readonly logThrottle: LogThrottle;
  private nextId = 1;
  private boundPort = 0;
  private tls: HubTransport | undefined;

  constructor(
    private readonly opts: GrpcServerOptions,
    private readonly deps: GrpcServerDeps,
  ) {
    this.logThrottle = new LogThrottle(deps.clock);
    this.server = new Server({
      "grpc.max_receive_message_length": opts.maxMessageBytes * TRANSPORT_SIZE_FACTOR,
      "grpc.max_send_message_length": opts.maxMessageBytes,
      // Agents ping every 60 s (AGENT_PING_INTERVAL_MS), with or without calls in flight.
      "grpc.keepalive_permit_without_calls": 1,
      // Finds a dead or frozen agent, or a broken path, without a message through the stream.
      ...(opts.pingIntervalMs !== undefined && keepaliveOptions(opts.pingIntervalMs)),
      // Nothing reads channelz; it stamps the time on every message of every stream.
      "grpc.enable_channelz": 0,
    });
    this.server.addService(guardedHubService(opts.maxMessageBytes), {
      sync: (call: ServerDuplexStream<AgentMessage | Malformed, HubMessage>) => this.onSync(call),
    });
  }

  get port(): number {
    return this.boundPort;
  }

  streamCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) n += s.size;
    return n;
  }

  isConnected(cluster: string): boolean {
    return this.primary.has(cluster);
  }

  /** The cluster's agent is asked to echo an Ack now (Ack.echo): the hub waits on a publication. */
  requestEcho(cluster: string): void {
    this.primary.get(cluster)?.requestEcho();
  }

  /** What the cluster's connected agent said in its Hello. */
  agentOf(cluster: string): { agentVersion: string; kubernetesVersion: string } | undefined {
    const s = this.primary.get(cluster);
    return s === undefined
      ? undefined
      : { agentVersion: s.agentVersion, kubernetesVersion: s.kubernetesVersion };
  }

  async start(): Promise<number> {
    this.tls = serverCredentials(this.opts.insecure, this.opts.tls, (r) =>
      this.deps.logger.info(r, `TLS ${r.file} reloaded from its file`),
    );
    await this.tls.ready();
    const creds = this.tls.credentials;
    this.boundPort = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(this.opts.listen, creds, (err, port) => (err ? reject(err) : resolve(port))),
    );
    return this.boundPort;
  }

  async stop(): Promise<void> {
    this.tls?.close();
    for (const set of this.sessions.values())
      for (const s of set) s.refuse(status.UNAVAILABLE, "hub shutting down");
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 2000);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Closes every agent connection (HTTP/2 GOAWAY, then a hard close after `graceMs`). Behind an
   * L4 load balancer a refused stream's retry reuses its connection, so an agent reaches another
   * hub replica only on a new one.
   */
  drainConnections(graceMs = 1000): void {
    if (this.boundPort === 0) return;
    const host = this.opts.listen.slice(0, this.opts.listen.lastIndexOf(":"));
    this.server.drain(`${host}:${this.boundPort}`, graceMs);
  }

  /** Drops every stream of a cluster (token revoked, cluster removed; UNAVAILABLE: lease moved). */
  disconnectCluster(cluster: string, reason: string, code: status = status.UNAUTHENTICATED): void {
    for (const s of [...(this.sessions.get(cluster) ?? [])]) s.refuse(code, reason);
  }

  /** The cluster a stream's credentials name: its bearer token and, with mutual TLS, its certificate. */
  private identify(
    call: ServerDuplexStream<AgentMessage | Malformed, HubMessage>,
  ): { cluster: string } | { code: status; reason: StreamRefusalReason; details: string } {
    const header = call.metadata.get("authorization")[0];
    const bearer = typeof header === "string" ? header : undefined;
    const byToken = this.deps.auth.clusterFor(bearer);
    const identity = this.tls?.identity;
    const cert = identity?.clusterOf(call.getAuthContext().sslPeerCertificate);
    if (bearer !== undefined && byToken === undefined)
      return { code: status.UNAUTHENTICATED, reason: "token", details: "unknown bearer token" };
    if (identity !== undefined) {
      if (cert === undefined || (byToken === undefined && !(this.deps.isCluster?.(cert) ?? false)))
        return {
          code: status.UNAUTHENTICATED,
          reason: "identity",
          details: `the client certificate names no configured cluster (expected ${identity.describe()})`,
        };
      if (byToken !== undefined && byToken !== cert)
        return {
          code: status.PERMISSION_DENIED,
          reason: "identity",
          details: `the client certificate names cluster "${cert}", the bearer token another one`,
        };
      return { cluster: cert };
    }
    if (byToken === undefined)
      return { code: status.UNAUTHENTICATED, reason: "token", details: "missing bearer token" };
    return { cluster: byToken };
  }

  private onSync(call: ServerDuplexStream<AgentMessage | Malformed, HubMessage>): void {
    const fail = (cluster: string, code: status, details: string, reason: StreamRefusalReason) => {
      const metadata = new Metadata();
      metadata.set(REFUSAL_TRAILER, reason);
      this.deps.onStreamRefused?.(cluster, code, reason);
      call.emit("error", { code, details, metadata });
    };
    const who = this.identify(call);
    if (!("cluster" in who)) {
      this.warn(
        "",
        who.reason,
        { peer: call.getPeer(), details: who.details },
        "stream without valid credentials refused",
      );
      fail("", who.code, who.details, who.reason);
      return;
    }
    const { cluster } = who;
    const refusal = this.deps.admit?.(cluster) ?? null;
    if (refusal !== null) {
      this.deps.logger.info({ cluster }, `stream refused: ${refusal}`);
      fail(cluster, status.UNAVAILABLE, refusal, "replica");
      return;
    }
    const set = this.sessions.get(cluster) ?? new Set<AgentSession>();
    if (set.size >= this.opts.maxStreamsPerCluster) {
      this.warn(
        cluster,
        "stream-limit",
        { cluster, streams: set.size, limit: this.opts.maxStreamsPerCluster },
        "stream refused: the cluster already has its limit of streams",
      );
      fail(
        cluster,
        status.RESOURCE_EXHAUSTED,
        `cluster "${cluster}" already has ${set.size} streams; the limit is ${this.opts.maxStreamsPerCluster}`,
        "stream-limit",
      );
      return;
    }
    if (!this.openBudget(cluster).tryTake()) {
      this.warn(cluster, "stream-rate", { cluster }, "stream refused: the cluster opens streams too often");
      fail(
        cluster,
        status.RESOURCE_EXHAUSTED,
        `cluster "${cluster}" opened more than ${this.opts.maxStreamOpensPerMinute} streams a minute (limits.maxStreamOpensPerMinute); retry with backoff`,
        "stream-rate",
      );
      return;
    }
    this.sessions.set(cluster, set);
    const logger = this.deps.logger.child({ cluster, stream: this.nextId });
    let ended = false;
    const session = new AgentSession(
      cluster,
      this.nextId++,
      {
        write: (msg) => {
          if (!ended) call.write(msg);
        },
        fail: (code, details, reason) => {
          if (ended) return;
          ended = true;
          fail(cluster, code, details, reason);
        },
      },
      {
        fleet: this.deps.fleet,
        limits: this.opts.limits,
        clock: this.deps.clock,
        logger,
        heartbeatIntervalMs: this.opts.heartbeatIntervalMs,
        ...(this.opts.hubHeartbeatIntervalMs !== undefined && {
          hubHeartbeatIntervalMs: this.opts.hubHeartbeatIntervalMs,
        }),
        desiredSubject: desiredSubject(cluster),
        maxMessageBytes: this.opts.maxMessageBytes,
        annotations: new AnnotationFilter([
          ...UNIFIED_ANNOTATION_PREFIXES,
          ...(this.deps.providerAnnotationPrefixes?.(cluster) ?? []),
        ]),
        secretReferences: this.deps.providerSecretReferences?.(cluster) ?? [],
        ...volumeSourcesOf(this.deps.volumeSources?.(cluster)),
        confirmAfterMs: this.opts.confirmAfterMs,
        hubVersion: this.deps.hubVersion,
        logThrottle: this.logThrottle,
        onRefused: (c, r) => this.deps.onRefused?.(c, r),
        onSnapshotApplied: (c, o) => this.deps.onSnapshotApplied?.(c, o),
        onPrimary: (s) => {
          this.primary.set(cluster, s);
          this.deps.fleet.setConnected(cluster, true);
        },
        isPrimary: (s) => this.primary.get(cluster) === s,
        onApplyResult: (c, r) => this.deps.onApplyResult(c, r),
        onReceived: (c, g, acked) => this.deps.onReceived?.(c, g, acked),
        onClosed: (s) => this.onSessionClosed(s),
      },
    );
    set.add(session);
    this.deps.onStreamsChanged?.(this.streamCount());
    call.on("data", (msg: AgentMessage | Malformed) => session.handle(msg));
    const finish = () => {
      if (!ended) {
        ended = true;
        call.end();
      }
      session.close();
    };
    call.on("end", finish);
    call.on("cancelled", finish);
    call.on("error", () => session.close());
  }

  /** A refusal's log line, at most one a second per cluster and reason. */
  private warn(
    cluster: string,
    reason: StreamRefusalReason,
    fields: Record<string, unknown>,
    msg: string,
  ): void {
    const notLogged = this.logThrottle.take(`${cluster}/${reason}`);
    if (notLogged !== undefined)
      this.deps.logger.warn({ ...fields, ...(notLogged > 0 ? { notLogged } : {}) }, msg);
  }

  private openBudget(cluster: string): TokenBucket {
    let b = this.opens.get(cluster);
    if (b === undefined) {
      const perMinute = this.opts.maxStreamOpensPerMinute ?? 0;
      b = new TokenBucket({ ratePerSecond: perMinute / 60, burst: 10, clock: this.deps.clock });
      this.opens.set(cluster, b);
    }
    return b;
  }

  private onSessionClosed(session: AgentSession): void {
    const set = this.sessions.get(session.cluster);
    set?.delete(session);
    if (this.primary.get(session.cluster) === session) {
      this.primary.delete(session.cluster);
      this.deps.fleet.setConnected(session.cluster, false);
      this.deps.logger.info({ cluster: session.cluster }, "agent disconnected");
    }
    this.deps.onStreamsChanged?.(this.streamCount());
  }
}

function volumeSourcesOf(v: VolumeSources | undefined): { volumeSources?: VolumeSources } {
  return v === undefined ? {} : { volumeSources: v };
}
