import type { AgentMessage, ApplyResult, HubMessage, Node, Service, SnapshotChunk } from "@fleet-ccm/proto";
import { status } from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { FleetState } from "../fleet/state.js";
import { invalidNode, invalidService } from "../fleet/validate.js";
import type { Clock, TimerHandle } from "../util/clock.js";

/** The two things a session needs from its gRPC call, so the protocol is testable without a socket. */
export interface StreamPort {
  write(msg: HubMessage): void;
  /** Ends the stream with a non-OK status; `details` tells the agent why. */
  fail(code: status, details: string): void;
}

export interface SessionLimits {
  readonly maxObjectsPerChunk: number;
  readonly maxObjectsPerCluster: number;
}

export interface SessionDeps {
  readonly fleet: FleetState;
  readonly limits: SessionLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly heartbeatIntervalMs: number;
  readonly desiredSubject: string;
  readonly maxMessageBytes: number;
  /** This stream's snapshot became the cluster's view: it is now the primary stream. */
  onPrimary(session: AgentSession): void;
  isPrimary(session: AgentSession): boolean;
  onApplyResult(cluster: string, result: ApplyResult): void;
  /** The agent has received desired state up to this generation over NATS. */
  onReceived?(cluster: string, generation: number): void;
  onClosed(session: AgentSession): void;
}

type Phase =
  | { kind: "await-hello" }
  | { kind: "await-snapshot"; snapshotId?: number; nodes: Node[]; services: Service[] }
  | { kind: "streaming"; seq: number }
  | { kind: "closed" };

/** Deltas before an ack is sent without waiting for a heartbeat. */
const ACK_EVERY = 256;
/** A stream that sends nothing for this many heartbeat intervals is dead. */
const MISSED_HEARTBEATS = 3;

/**
 * One agent stream: Hello → Welcome → snapshot chunks → deltas with seq.
 * The cluster comes from the caller's token; everything the agent says is
 * checked before it reaches fleet state.
 */
export class AgentSession {
  private phase: Phase = { kind: "await-hello" };
  private idleTimer: TimerHandle | undefined;
  private unacked = 0;
  agentVersion = "";

  constructor(
    readonly cluster: string,
    readonly id: number,
    private readonly port: StreamPort,
    private readonly deps: SessionDeps,
  ) {
    this.armIdleTimer();
  }

  get closed(): boolean {
    return this.phase.kind === "closed";
  }

  handle(msg: AgentMessage): void {
    if (this.phase.kind === "closed") return;
    this.armIdleTimer();
    const body = msg.body;
    if (body === undefined) return this.refuse(status.INVALID_ARGUMENT, "empty AgentMessage");
    if (this.phase.kind === "await-hello" && body.$case !== "hello")
      return this.refuse(status.FAILED_PRECONDITION, "the first message of a stream must be Hello");
    switch (body.$case) {
      case "hello":
        return this.onHello(body.value.cluster, body.value.agentVersion, body.value.kubernetesVersion);
      case "snapshot":
        return this.onSnapshot(body.value);
      case "delta":
        return this.onDelta(msg);
      case "heartbeat":
        return this.onHeartbeat(body.value.seq, body.value.receivedGeneration);
      case "applyResult":
        this.deps.onApplyResult(this.cluster, body.value);
        return;
    }
  }

  private onHello(claimed: string, agentVersion: string, kubernetesVersion: string): void {
    if (this.phase.kind !== "await-hello") return this.refuse(status.INVALID_ARGUMENT, "Hello sent twice");
    if (claimed !== this.cluster)
      return this.refuse(
        status.PERMISSION_DENIED,
        `this token belongs to cluster "${this.cluster}", not "${claimed.slice(0, 64)}"`,
      );
    this.agentVersion = agentVersion.slice(0, 64);
    this.deps.logger.info(
      { agentVersion: this.agentVersion, kubernetesVersion: kubernetesVersion.slice(0, 64) },
      "agent connected",
    );
    this.phase = { kind: "await-snapshot", nodes: [], services: [] };
    this.port.write({
      body: {
        $case: "welcome",
        value: {
          cluster: this.cluster,
          limits: {
            maxMessageBytes: this.deps.maxMessageBytes,
            maxObjectsPerChunk: this.deps.limits.maxObjectsPerChunk,
          },
          desiredSubject: this.deps.desiredSubject,
          heartbeatIntervalMs: this.deps.heartbeatIntervalMs,
        },
      },
    });
  }

  private onSnapshot(chunk: SnapshotChunk): void {
    // A snapshot may also start while streaming: the agent resyncs on its own after a relist.
    if (this.phase.kind === "streaming") this.phase = { kind: "await-snapshot", nodes: [], services: [] };
    if (this.phase.kind !== "await-snapshot") return;
    const phase = this.phase;
    if (phase.snapshotId !== undefined && phase.snapshotId !== chunk.snapshotId) {
      // A new snapshot supersedes an unfinished one.
      phase.nodes = [];
      phase.services = [];
    }
    phase.snapshotId = chunk.snapshotId;
    const count = chunk.nodes.length + chunk.services.length;
    if (count > this.deps.limits.maxObjectsPerChunk)
      return this.refuse(
        status.RESOURCE_EXHAUSTED,
        `snapshot chunk has ${count} objects; the limit is ${this.deps.limits.maxObjectsPerChunk}`,
      );
    if (phase.nodes.length + phase.services.length + count > this.deps.limits.maxObjectsPerCluster)
      return this.refuse(
        status.RESOURCE_EXHAUSTED,
        `snapshot exceeds ${this.deps.limits.maxObjectsPerCluster} objects for one cluster`,
      );
    for (const n of chunk.nodes) {
      const bad = invalidNode(n);
      if (bad !== null) return this.refuse(status.INVALID_ARGUMENT, bad);
      phase.nodes.push(n);
    }
    for (const s of chunk.services) {
      const bad = invalidService(s);
      if (bad !== null) return this.refuse(status.INVALID_ARGUMENT, bad);
      phase.services.push(s);
    }
    if (!chunk.last) return;
    const { nodes, services } = phase;
    this.phase = { kind: "streaming", seq: chunk.seq };
    this.deps.onPrimary(this);
    this.deps.fleet.replace(this.cluster, nodes, services);
    this.deps.logger.info(
      { nodes: nodes.length, services: services.length, seq: chunk.seq },
      "snapshot applied",
    );
    this.ack();
  }

  private onDelta(msg: AgentMessage): void {
    if (msg.body?.$case !== "delta") return;
    const delta = msg.body.value;
    // Deltas that race a resync request are dropped: the coming snapshot covers them.
    if (this.phase.kind !== "streaming") return;
    if (delta.seq !== this.phase.seq + 1)
      return this.resync(`expected seq ${this.phase.seq + 1}, got ${delta.seq}`);
    this.phase.seq = delta.seq;
    const change = delta.change;
    if (change === undefined)
      return this.refuse(status.INVALID_ARGUMENT, `delta ${delta.seq} carries no change`);
    const fleet = this.deps.fleet;
    const primary = this.deps.isPrimary(this);
    switch (change.$case) {
      case "node": {
        const bad = invalidNode(change.value);
        if (bad !== null) return this.refuse(status.INVALID_ARGUMENT, bad);
        if (primary) {
          const view = fleet.view(this.cluster);
          if (
            view !== undefined &&
            !view.nodes.has(change.value.name) &&
            this.objectCount() >= this.deps.limits.maxObjectsPerCluster
          )
            return this.refuse(
              status.RESOURCE_EXHAUSTED,
              `cluster exceeds ${this.deps.limits.maxObjectsPerCluster} objects`,
            );
          fleet.upsertNode(this.cluster, change.value);
        }
        break;
      }
      case "service": {
        const bad = invalidService(change.value);
        if (bad !== null) return this.refuse(status.INVALID_ARGUMENT, bad);
        if (primary) fleet.upsertService(this.cluster, change.value);
        break;
      }
      case "nodeDeleted":
        if (primary) fleet.deleteNode(this.cluster, change.value.name);
        break;
      case "serviceDeleted":
        if (primary) fleet.deleteService(this.cluster, change.value.namespace, change.value.name);
        break;
    }
    if (++this.unacked >= ACK_EVERY) this.ack();
  }

  private objectCount(): number {
    const view = this.deps.fleet.view(this.cluster);
    return view === undefined ? 0 : view.nodes.size + view.services.size;
  }

  private onHeartbeat(seq: number, receivedGeneration: number): void {
    if (this.phase.kind !== "streaming") return;
    if (seq > this.phase.seq)
      return this.resync(`heartbeat reports seq ${seq}, last delta seen is ${this.phase.seq}`);
    if (receivedGeneration > 0 && this.deps.isPrimary(this))
      this.deps.onReceived?.(this.cluster, receivedGeneration);
    this.ack();
  }

  private ack(): void {
    if (this.phase.kind !== "streaming") return;
    this.unacked = 0;
    this.port.write({ body: { $case: "ack", value: { seq: this.phase.seq } } });
  }

  private resync(reason: string): void {
    this.deps.logger.warn({ reason }, "sequence gap: asking the agent for a snapshot");
    this.phase = { kind: "await-snapshot", nodes: [], services: [] };
    this.port.write({ body: { $case: "resync", value: { reason } } });
  }

  private armIdleTimer(): void {
    const clock = this.deps.clock;
    if (this.idleTimer !== undefined) clock.clearTimeout(this.idleTimer);
    const idleMs = this.deps.heartbeatIntervalMs * MISSED_HEARTBEATS;
    this.idleTimer = clock.setTimeout(
      () =>
        this.refuse(status.DEADLINE_EXCEEDED, `no message for ${idleMs} ms: the stream is considered dead`),
      idleMs,
    );
  }

  /** Ends the stream with a status that says why; the hub keeps serving every other stream. */
  refuse(code: status, details: string): void {
    if (this.phase.kind === "closed") return;
    // The hub's own shutdown is routine; every other refusal is the agent's problem to see.
    const level = code === status.UNAVAILABLE ? "info" : "warn";
    this.deps.logger[level]({ code: status[code], details }, "ending agent stream");
    this.port.fail(code, details);
    this.close();
  }

  /** The call ended (agent went away or the hub refused it). */
  close(): void {
    if (this.phase.kind === "closed") return;
    this.phase = { kind: "closed" };
    if (this.idleTimer !== undefined) this.deps.clock.clearTimeout(this.idleTimer);
    this.deps.onClosed(this);
  }
}
