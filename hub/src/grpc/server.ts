import { readFileSync } from "node:fs";
import type { AgentMessage, ApplyResult, HubMessage, HubServer } from "@fleet-ccm/proto";
import { AnnotationFilter, desiredSubject, HubService, UNIFIED_ANNOTATION_PREFIXES } from "@fleet-ccm/proto";
import { Server, ServerCredentials, type ServerDuplexStream, status } from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { FleetState, Refusal, ReplaceOutcome } from "../fleet/state.js";
import type { Clock } from "../util/clock.js";
import type { TokenAuthenticator } from "./auth.js";
import { AgentSession, type SessionLimits } from "./session.js";

export interface GrpcServerOptions {
  readonly listen: string;
  readonly insecure: boolean;
  readonly tls?: {
    readonly certFile: string;
    readonly keyFile: string;
    readonly clientCaFile?: string | undefined;
  };
  readonly maxMessageBytes: number;
  readonly maxStreamsPerCluster: number;
  readonly limits: SessionLimits;
  readonly heartbeatIntervalMs: number;
  /** snapshotHold.confirmAfterMs: when to ask for a snapshot that can confirm a held drop. */
  readonly confirmAfterMs?: number;
}

export interface GrpcServerDeps {
  readonly fleet: FleetState;
  readonly auth: TokenAuthenticator;
  readonly clock: Clock;
  readonly logger: Logger;
  onApplyResult(cluster: string, result: ApplyResult): void;
  /** A cluster's agent has received desired state up to this generation. */
  onReceived?(cluster: string, generation: number): void;
  /** Objects an agent reported that the hub newly refused. */
  onRefused?(cluster: string, refusals: readonly Refusal[]): void;
  /** A snapshot became a cluster's view. */
  onSnapshotApplied?(cluster: string, outcome: ReplaceOutcome): void;
  /** The annotation prefixes the cluster's provider reads (besides the unified ones). */
  providerAnnotationPrefixes?(cluster: string): readonly string[];
  /** Streams connected changed (for the metric). */
  onStreamsChanged?(total: number): void;
  /** Why a new stream for this cluster is refused with UNAVAILABLE (hub replicas), or null. */
  admit?(cluster: string): string | null;
}

/** The hub's gRPC endpoint: authenticates each stream and hands it to an AgentSession. */
export class HubGrpcServer {
  private readonly server: Server;
  private readonly sessions = new Map<string, Set<AgentSession>>();
  private readonly primary = new Map<string, AgentSession>();
  private nextId = 1;
  private boundPort = 0;

  constructor(
    private readonly opts: GrpcServerOptions,
    private readonly deps: GrpcServerDeps,
  ) {
    this.server = new Server({
      "grpc.max_receive_message_length": opts.maxMessageBytes,
      "grpc.max_send_message_length": opts.maxMessageBytes,
      // Agents ping every 30 s; allow it without calls in flight.
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.http2.min_ping_interval_without_data_ms": 10_000,
    });
    const impl: HubServer = { sync: (call) => this.onSync(call) };
    this.server.addService(HubService, impl);
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

  /** What the cluster's connected agent said in its Hello. */
  agentOf(cluster: string): { agentVersion: string; kubernetesVersion: string } | undefined {
    const s = this.primary.get(cluster);
    return s === undefined
      ? undefined
      : { agentVersion: s.agentVersion, kubernetesVersion: s.kubernetesVersion };
  }

  async start(): Promise<number> {
    const creds = this.credentials();
    this.boundPort = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(this.opts.listen, creds, (err, port) => (err ? reject(err) : resolve(port))),
    );
    return this.boundPort;
  }

  private credentials(): ServerCredentials {
    if (this.opts.insecure) return ServerCredentials.createInsecure();
    const tls = this.opts.tls;
    if (tls === undefined) throw new Error("grpc.tls is required unless grpc.insecure is set");
    const ca = tls.clientCaFile === undefined ? null : readFileSync(tls.clientCaFile);
    return ServerCredentials.createSsl(
      ca,
      [{ cert_chain: readFileSync(tls.certFile), private_key: readFileSync(tls.keyFile) }],
      ca !== null,
    );
  }

  async stop(): Promise<void> {
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

  private onSync(call: ServerDuplexStream<AgentMessage, HubMessage>): void {
    const header = call.metadata.get("authorization")[0];
    const cluster = this.deps.auth.clusterFor(typeof header === "string" ? header : undefined);
    const fail = (code: status, details: string) => call.emit("error", { code, details });
    if (cluster === undefined) {
      this.deps.logger.warn({ peer: call.getPeer() }, "stream without a valid token refused");
      fail(status.UNAUTHENTICATED, "missing or unknown bearer token");
      return;
    }
    const refusal = this.deps.admit?.(cluster) ?? null;
    if (refusal !== null) {
      this.deps.logger.info({ cluster }, `stream refused: ${refusal}`);
      fail(status.UNAVAILABLE, refusal);
      return;
    }
    const set = this.sessions.get(cluster) ?? new Set<AgentSession>();
    if (set.size >= this.opts.maxStreamsPerCluster) {
      this.deps.logger.warn(
        { cluster, streams: set.size, limit: this.opts.maxStreamsPerCluster },
        "stream refused: the cluster already has its limit of streams",
      );
      fail(
        status.RESOURCE_EXHAUSTED,
        `cluster "${cluster}" already has ${set.size} streams; the limit is ${this.opts.maxStreamsPerCluster}`,
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
        fail: (code, details) => {
          if (ended) return;
          ended = true;
          fail(code, details);
        },
      },
      {
        fleet: this.deps.fleet,
        limits: this.opts.limits,
        clock: this.deps.clock,
        logger,
        heartbeatIntervalMs: this.opts.heartbeatIntervalMs,
        desiredSubject: desiredSubject(cluster),
        maxMessageBytes: this.opts.maxMessageBytes,
        annotations: new AnnotationFilter([
          ...UNIFIED_ANNOTATION_PREFIXES,
          ...(this.deps.providerAnnotationPrefixes?.(cluster) ?? []),
        ]),
        confirmAfterMs: this.opts.confirmAfterMs,
        onRefused: (c, r) => this.deps.onRefused?.(c, r),
        onSnapshotApplied: (c, o) => this.deps.onSnapshotApplied?.(c, o),
        onPrimary: (s) => {
          this.primary.set(cluster, s);
          this.deps.fleet.setConnected(cluster, true);
        },
        isPrimary: (s) => this.primary.get(cluster) === s,
        onApplyResult: (c, r) => this.deps.onApplyResult(c, r),
        onReceived: (c, g) => this.deps.onReceived?.(c, g),
        onClosed: (s) => this.onSessionClosed(s),
      },
    );
    set.add(session);
    this.deps.onStreamsChanged?.(this.streamCount());
    call.on("data", (msg: AgentMessage) => session.handle(msg));
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
