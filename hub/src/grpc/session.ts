import {
  type AgentMessage,
  type AnnotationFilter,
  type ApplyResult,
  agentVersionProblem,
  type Delta,
  type HubMessage,
  type Node,
  type PersistentVolume,
  type SecretReference,
  type Service,
  type SnapshotChunk,
} from "@fleet-ccm/proto";
import { status } from "@grpc/grpc-js";
import type { Logger } from "pino";
import {
  type FleetState,
  type ObjectKindName,
  type Refusal,
  type ReplaceOutcome,
  refusalKey,
} from "../fleet/state.js";
import {
  type Invalid,
  invalidNode,
  invalidPersistentVolume,
  invalidService,
  namedSecretsOnly,
} from "../fleet/validate.js";
import type { Clock, TimerHandle } from "../util/clock.js";
import { TokenBucket } from "../util/rate-limiter.js";
import type { LogThrottle } from "./log-throttle.js";
import { isMalformed, type Malformed } from "./wire.js";

/** The two things a session needs from its gRPC call, so the protocol is testable without a socket. */
export interface StreamPort {
  write(msg: HubMessage): void;
  /** Ends the stream with a non-OK status; `details` tells the agent why. */
  fail(code: status, details: string, reason: StreamRefusalReason): void;
}

export interface SessionLimits {
  readonly maxObjectsPerChunk: number;
  readonly maxObjectsPerCluster: number;
  /** Ports of a LoadBalancer Service (each is a listener and a health check in the cloud). */
  readonly maxServicePorts?: number;
  /**
   * Deltas and apply results one stream may send per second, sustained; a burst of ten seconds'
   * worth is allowed. Over it the stream ends with RESOURCE_EXHAUSTED (the agent's reconnect
   * sends one snapshot instead).
   */
  readonly maxDeltasPerSecond?: number;
}

/**
 * Why a stream was ended: the `reason` label of fleet_ccm_hub_streams_refused_total and the
 * `fleet-ccm-refusal` trailer the agent sees.
 */
export type StreamRefusalReason =
  | "token"
  | "identity"
  | "version"
  | "stream-limit"
  | "stream-rate"
  | "protocol"
  | "malformed"
  | "message-size"
  | "sequence"
  | "chunk-size"
  | "delta-rate"
  | "idle"
  | "revoked"
  | "replica"
  | "shutdown";

function defaultReason(code: status): StreamRefusalReason {
  switch (code) {
    case status.UNAVAILABLE:
      return "shutdown";
    case status.UNAUTHENTICATED:
      return "revoked";
    case status.DEADLINE_EXCEEDED:
      return "idle";
    default:
      return "protocol";
  }
}

export interface SessionDeps {
  readonly fleet: FleetState;
  readonly limits: SessionLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly heartbeatIntervalMs: number;
  /**
   * The hub writes something at least this often on the stream (a HubHeartbeat when idle), told
   * to the agent in Welcome: the agent drops a stream silent for three of these. 0: none.
   */
  readonly hubHeartbeatIntervalMs?: number;
  readonly desiredSubject: string;
  readonly maxMessageBytes: number;
  /**
   * The annotations this cluster's agent forwards (Welcome): the hub's unified prefixes and its
   * provider's. Anything else an agent sends is dropped before it reaches fleet state.
   */
  readonly annotations: AnnotationFilter;
  /**
   * The Secrets the cluster's provider needs (Welcome): a Service carries only those its own
   * annotations name under these, with only the keys asked for; anything else is dropped.
   */
  readonly secretReferences?: readonly SecretReference[];
  /**
   * The PersistentVolumes the cluster's provider looks up (Welcome): in-tree sources and CSI
   * drivers of its disks. Absent or empty: the agent follows none, and any it sends is dropped.
   */
  readonly volumeSources?: VolumeSources;
  /** Bounds the log lines of refused streams (shared by every session of the hub). */
  readonly logThrottle?: LogThrottle | undefined;
  /** This hub's release: an agent too old or too new for it is refused (agentVersionProblem). */
  readonly hubVersion?: string | undefined;
  /** How long a snapshot's large drop is held before a fresh snapshot may confirm it (0: no hold). */
  readonly confirmAfterMs?: number;
  /** Objects newly refused (each gets an Event on it, a metric and a log line). */
  onRefused?(cluster: string, refusals: readonly Refusal[]): void;
  /** A snapshot became the view; `outcome` says what it did with the objects it no longer lists. */
  onSnapshotApplied?(cluster: string, outcome: ReplaceOutcome): void;
  /** This stream's snapshot became the cluster's view: it is now the primary stream. */
  onPrimary(session: AgentSession): void;
  isPrimary(session: AgentSession): boolean;
  onApplyResult(cluster: string, result: ApplyResult): void;
  /**
   * The agent has received desired state up to this generation over NATS, and had read the Ack
   * the hub sent at ackedHubTimeMs (0: not said).
   */
  onReceived?(cluster: string, generation: number, ackedHubTimeMs: number): void;
  onClosed(session: AgentSession): void;
}

export interface VolumeSources {
  readonly inTree: readonly string[];
  readonly csiDrivers: readonly string[];
}

type Phase =
  | { kind: "await-hello" }
  | {
      kind: "await-snapshot";
      snapshotId?: number;
      nodes: Node[];
      services: Service[];
      persistentVolumes: PersistentVolume[];
      refused: Refusal[];
      /** Refused beyond what is kept in `refused` (bounded memory). */
      refusedUncounted: number;
    }
  | { kind: "streaming"; seq: number }
  | { kind: "closed" };

/** Bounds of an apply result's fields: Kubernetes' own for names, generous for the answer. */
const MAX_NAME = 253;
const MAX_NAMESPACE = 63;
const MAX_UID = 128;
const MAX_REASON = 128;
const MAX_RESULT_MESSAGE = 1024;

/** Deltas before an ack is sent without waiting for a heartbeat. */
const ACK_EVERY = 256;
/** Echo requests on one stream at most this often (the echo answers for every publication before it). */
const ECHO_EVERY_MS = 1000;
/** A stream that sends nothing for this many heartbeat intervals is dead. */
const MISSED_HEARTBEATS = 3;
/**
 * The idle and heartbeat timers of every session fire on points of one grid (epoch multiples of
 * this, or of a tenth of their interval when shorter), so the timers of hundreds of quiet streams
 * wake the hub together, not one by one.
 */
const TIMER_GRID_MS = 1000;

function timerGrid(intervalMs: number): number {
  return Math.max(1, Math.min(TIMER_GRID_MS, Math.floor(intervalMs / 10)));
}

/**
 * One agent stream: Hello → Welcome → snapshot chunks → deltas with seq.
 * The cluster comes from the caller's token; everything the agent says is
 * checked before it reaches fleet state.
 */
export class AgentSession {
  private phase: Phase = { kind: "await-hello" };
  private idleTimer: TimerHandle | undefined;
  /** When the agent's last message was read: the idle timer checks it when it fires. */
  private lastReadAt: number;
  private holdTimer: TimerHandle | undefined;
  private beatTimer: TimerHandle | undefined;
  private lastWriteAt = 0;
  private echoRequestedAt = Number.NEGATIVE_INFINITY;
  private unacked = 0;
  private readonly deltaBudget: TokenBucket | undefined;
  agentVersion = "";
  kubernetesVersion = "";

  constructor(
    readonly cluster: string,
    readonly id: number,
    private readonly port: StreamPort,
    private readonly deps: SessionDeps,
  ) {
    const rate = deps.limits.maxDeltasPerSecond ?? 0;
    this.deltaBudget =
      rate > 0 ? new TokenBucket({ ratePerSecond: rate, burst: rate * 10, clock: deps.clock }) : undefined;
    this.lastReadAt = deps.clock.now();
    this.armIdleTimer();
  }

  private get idleMs(): number {
    return this.deps.heartbeatIntervalMs * MISSED_HEARTBEATS;
  }

  get closed(): boolean {
    return this.phase.kind === "closed";
  }

  handle(msg: AgentMessage | Malformed): void {
    if (this.phase.kind === "closed") return;
    if (isMalformed(msg))
      return msg.malformed === "size"
        ? this.refuse(status.RESOURCE_EXHAUSTED, msg.error, "message-size")
        : this.refuse(status.INVALID_ARGUMENT, `malformed AgentMessage: ${msg.error}`, "malformed");
    this.lastReadAt = this.deps.clock.now();
    const body = msg.body;
    if (body === undefined) return this.refuse(status.INVALID_ARGUMENT, "empty AgentMessage");
    if (this.phase.kind === "await-hello" && body.$case !== "hello")
      return this.refuse(status.FAILED_PRECONDITION, "the first message of a stream must be Hello");
    if ((body.$case === "delta" || body.$case === "applyResult") && this.deltaBudget?.tryTake() === false)
      return this.refuse(
        status.RESOURCE_EXHAUSTED,
        `more than ${this.deps.limits.maxDeltasPerSecond} deltas and apply results per second (limits.maxDeltasPerSecond)`,
        "delta-rate",
      );
    switch (body.$case) {
      case "hello":
        return this.onHello(body.value.cluster, body.value.agentVersion, body.value.kubernetesVersion);
      case "snapshot":
        return this.onSnapshot(body.value);
      case "delta":
        return this.onDelta(body.value);
      case "heartbeat":
        return this.onHeartbeat(
          body.value.seq,
          body.value.receivedGeneration,
          body.value.ackedHubTimeMs ?? 0,
        );
      case "applyResult":
        return this.onApplyResult(body.value);
    }
  }

  /**
   * Apply results are logged and kept per object: names no API server holds end the stream, and
   * the API server's answer is clipped, so a result costs the hub a bounded amount.
   */
  private onApplyResult(r: ApplyResult): void {
    if (r.name.length > MAX_NAME || r.namespace.length > MAX_NAMESPACE || r.uid.length > MAX_UID)
      return this.refuse(
        status.INVALID_ARGUMENT,
        `apply result for an object no API server holds (name of ${r.name.length}, namespace of ${r.namespace.length}, uid of ${r.uid.length} characters)`,
        "protocol",
      );
    this.deps.onApplyResult(this.cluster, {
      ...r,
      reason: r.reason.slice(0, MAX_REASON),
      message:
        r.message.length > MAX_RESULT_MESSAGE ? `${r.message.slice(0, MAX_RESULT_MESSAGE)}…` : r.message,
    });
  }

  private onHello(claimed: string, agentVersion: string, kubernetesVersion: string): void {
    if (this.phase.kind !== "await-hello") return this.refuse(status.INVALID_ARGUMENT, "Hello sent twice");
    if (claimed !== this.cluster)
      return this.refuse(
        status.PERMISSION_DENIED,
        `this credential belongs to cluster "${this.cluster}", not "${printable(claimed)}"`,
        "identity",
      );
    const incompatible =
      this.deps.hubVersion === undefined
        ? undefined
        : agentVersionProblem(this.deps.hubVersion, agentVersion);
    if (incompatible !== undefined) return this.refuse(status.FAILED_PRECONDITION, incompatible, "version");
    this.agentVersion = agentVersion.slice(0, 64);
    this.kubernetesVersion = kubernetesVersion.slice(0, 64);
    this.deps.logger.info(
      { agentVersion: this.agentVersion, kubernetesVersion: this.kubernetesVersion },
      "agent connected",
    );
    this.phase = emptySnapshot();
    this.send({
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
          forwardAnnotationPrefixes: [...this.deps.annotations.prefixes],
          secretReferences: [...(this.deps.secretReferences ?? [])],
          hubHeartbeatIntervalMs: this.deps.hubHeartbeatIntervalMs ?? 0,
          volumeInTreeSources: [...(this.deps.volumeSources?.inTree ?? [])],
          volumeCsiDrivers: [...(this.deps.volumeSources?.csiDrivers ?? [])],
        },
      },
    });
    this.armBeat();
  }

  private onSnapshot(chunk: SnapshotChunk): void {
    // A snapshot may also start while streaming: the agent resyncs on its own after a relist.
    if (this.phase.kind === "streaming") this.phase = emptySnapshot();
    if (this.phase.kind !== "await-snapshot") return;
    const phase = this.phase;
    if (phase.snapshotId !== undefined && phase.snapshotId !== chunk.snapshotId) {
      // A new snapshot supersedes an unfinished one.
      Object.assign(phase, emptySnapshot());
    }
    phase.snapshotId = chunk.snapshotId;
    const count = chunk.nodes.length + chunk.services.length + chunk.persistentVolumes.length;
    // The agent was told this limit in Welcome: a bigger chunk is a protocol violation.
    if (count > this.deps.limits.maxObjectsPerChunk)
      return this.refuse(
        status.RESOURCE_EXHAUSTED,
        `snapshot chunk has ${count} objects; the limit is ${this.deps.limits.maxObjectsPerChunk}`,
        "chunk-size",
      );
    const max = this.deps.limits.maxObjectsPerCluster;
    const refuse = (r: Refusal) => {
      if (phase.refused.length < max) phase.refused.push(r);
      else phase.refusedUncounted++;
    };
    const full = () => phase.nodes.length + phase.services.length + phase.persistentVolumes.length >= max;
    for (const n of chunk.nodes) {
      this.dropUnasked(n);
      const bad = invalidNode(n) ?? (full() ? overCount(max) : null);
      if (bad !== null) refuse(refusal("node", "", n.name, n.uid, bad));
      else phase.nodes.push(n);
    }
    for (const s of chunk.services) {
      this.dropUnasked(s);
      const bad = invalidService(s, this.deps.limits) ?? (full() ? overCount(max) : null);
      if (bad !== null) refuse(refusal("service", s.namespace, s.name, s.uid, bad));
      else phase.services.push(s);
    }
    for (const v of chunk.persistentVolumes) {
      if (!this.asked(v)) continue;
      const bad = invalidPersistentVolume(v) ?? (full() ? overCount(max) : null);
      if (bad !== null) refuse(refusal("persistentVolume", "", v.name, v.uid, bad));
      else phase.persistentVolumes.push(v);
    }
    if (!chunk.last) return;
    const { nodes, services, persistentVolumes, refused, refusedUncounted } = phase;
    this.phase = { kind: "streaming", seq: chunk.seq };
    this.deps.onPrimary(this);
    const before = this.deps.fleet.view(this.cluster)?.refused;
    const outcome = this.deps.fleet.replace(this.cluster, nodes, services, refused, persistentVolumes);
    const fresh = refused.filter((r) => {
      const b = before?.get(`${r.kind}/${refusalKey(r)}`);
      return b === undefined || b.uid !== r.uid || b.message !== r.message;
    });
    this.deps.logger.info(
      {
        nodes: nodes.length,
        services: services.length,
        persistentVolumes: persistentVolumes.length,
        refused: refused.length + refusedUncounted,
        held: outcome.held.length,
        seq: chunk.seq,
      },
      "snapshot applied",
    );
    if (fresh.length > 0) this.deps.onRefused?.(this.cluster, fresh);
    this.deps.onSnapshotApplied?.(this.cluster, outcome);
    this.armHoldTimer();
    this.ack();
  }

  /** While a snapshot's drop is held, ask for a fresh snapshot once it can confirm the drop. */
  private armHoldTimer(): void {
    const clock = this.deps.clock;
    if (this.holdTimer !== undefined) clock.clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    const since = this.deps.fleet.oldestHoldMs(this.cluster);
    if (since === undefined) return;
    const wait = Math.max(0, since + (this.deps.confirmAfterMs ?? 0) - clock.now());
    this.holdTimer = clock.setTimeout(() => {
      this.holdTimer = undefined;
      if (this.phase.kind !== "streaming" || !this.deps.isPrimary(this)) return;
      const held = this.deps.fleet.view(this.cluster)?.held.size ?? 0;
      if (held > 0) this.resync(`confirming whether ${held} objects a snapshot dropped are gone`);
    }, wait);
  }

  private refuseObject(r: Refusal): void {
    if (this.deps.fleet.refuse(this.cluster, r, this.deps.limits.maxObjectsPerCluster))
      this.deps.onRefused?.(this.cluster, [r]);
  }

  private onDelta(delta: Delta): void {
    // Deltas that race a resync request are dropped: the coming snapshot covers them.
    if (this.phase.kind !== "streaming") return;
    // seq only grows on a stream: an old one is a replay, never a lost message.
    if (delta.seq <= this.phase.seq)
      return this.refuse(
        status.INVALID_ARGUMENT,
        `delta seq ${delta.seq} replays or reorders: the last seq is ${this.phase.seq}`,
        "sequence",
      );
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
        if (!primary) break;
        const n = change.value;
        this.dropUnasked(n);
        const bad = invalidNode(n) ?? this.overCountFor(fleet.view(this.cluster)?.nodes.has(n.name) ?? false);
        if (bad !== null) this.refuseObject(refusal("node", "", n.name, n.uid, bad));
        else fleet.upsertNode(this.cluster, n);
        break;
      }
      case "service": {
        if (!primary) break;
        const v = change.value;
        this.dropUnasked(v);
        const known = fleet.view(this.cluster)?.services.has(`${v.namespace}/${v.name}`) ?? false;
        const bad = invalidService(v, this.deps.limits) ?? this.overCountFor(known);
        if (bad !== null) this.refuseObject(refusal("service", v.namespace, v.name, v.uid, bad));
        else fleet.upsertService(this.cluster, v);
        break;
      }
      case "persistentVolume": {
        const v = change.value;
        if (!primary || !this.asked(v)) break;
        const known = fleet.view(this.cluster)?.persistentVolumes.has(v.name) ?? false;
        const bad = invalidPersistentVolume(v) ?? this.overCountFor(known);
        if (bad !== null) this.refuseObject(refusal("persistentVolume", "", v.name, v.uid, bad));
        else fleet.upsertPersistentVolume(this.cluster, v);
        break;
      }
      case "persistentVolumeDeleted":
        if (primary) fleet.deletePersistentVolume(this.cluster, change.value.name);
        break;
      case "nodeDeleted":
        if (primary) fleet.deleteNode(this.cluster, change.value.name);
        break;
      case "serviceDeleted":
        if (primary) fleet.deleteService(this.cluster, change.value.namespace, change.value.name);
        break;
    }
    if (++this.unacked >= ACK_EVERY) this.ack();
  }

  /** Annotations the agent was not asked for (an older or misbehaving agent) never reach fleet state. */
  private dropUnasked(obj: Node | Service): void {
    const filter = this.deps.annotations;
    for (const k in obj.annotations) if (!filter.forwards(k)) delete obj.annotations[k];
    if ("secrets" in obj) obj.secrets = namedSecretsOnly(obj, this.deps.secretReferences ?? []);
  }

  /** A PersistentVolume of a disk type the Welcome did not ask for never reaches fleet state. */
  private asked(v: PersistentVolume): boolean {
    const asked = this.deps.volumeSources;
    if (asked === undefined) return false;
    return v.source === "csi" ? asked.csiDrivers.includes(v.csiDriver) : asked.inTree.includes(v.source);
  }

  /** A new object beyond limits.maxObjectsPerCluster is refused (an update of a known one is not). */
  private overCountFor(known: boolean): Invalid | null {
    if (known) return null;
    const view = this.deps.fleet.view(this.cluster);
    const count = view === undefined ? 0 : view.nodes.size + view.services.size + view.persistentVolumes.size;
    return count >= this.deps.limits.maxObjectsPerCluster
      ? overCount(this.deps.limits.maxObjectsPerCluster)
      : null;
  }

  private onHeartbeat(seq: number, receivedGeneration: number, ackedHubTimeMs: number): void {
    if (this.phase.kind !== "streaming") return;
    if (seq > this.phase.seq)
      return this.resync(`heartbeat reports seq ${seq}, last delta seen is ${this.phase.seq}`);
    if ((receivedGeneration > 0 || ackedHubTimeMs > 0) && this.deps.isPrimary(this))
      this.deps.onReceived?.(this.cluster, receivedGeneration, ackedHubTimeMs);
    this.ack();
  }

  private ack(echo = false): void {
    if (this.phase.kind !== "streaming") return;
    this.unacked = 0;
    // The hub's time, echoed in the agent's heartbeats: how far the agent has read its streams.
    this.send({
      body: { $case: "ack", value: { seq: this.phase.seq, hubTimeMs: this.deps.clock.now(), echo } },
    });
  }

  /**
   * The hub waits on a publication the agent has not said it received: an Ack the agent echoes at
   * once (Ack.echo), instead of at its next heartbeat. At most one per ECHO_EVERY_MS, however
   * many publications wait: one echo answers for all of them.
   */
  requestEcho(): void {
    if (this.phase.kind !== "streaming") return;
    const now = this.deps.clock.now();
    if (now - this.echoRequestedAt < ECHO_EVERY_MS) return;
    this.echoRequestedAt = now;
    this.ack(true);
  }

  private resync(reason: string): void {
    this.deps.logger.warn({ reason }, "asking the agent for a snapshot");
    this.phase = emptySnapshot();
    this.send({ body: { $case: "resync", value: { reason } } });
  }

  private send(msg: HubMessage): void {
    this.lastWriteAt = this.deps.clock.now();
    this.port.write(msg);
  }

  /**
   * A HubHeartbeat whenever the stream has been quiet for an interval: a frozen hub keeps its
   * connections open, so the agent knows it only by this silence. One timer per interval at most,
   * due at the grid point at or before the interval's end (never later than promised).
   */
  private armBeat(): void {
    const every = this.deps.hubHeartbeatIntervalMs ?? 0;
    if (every <= 0 || this.phase.kind === "closed") return;
    const clock = this.deps.clock;
    const grid = timerGrid(every);
    const due = () => Math.floor((this.lastWriteAt + every) / grid) * grid;
    this.beatTimer = clock.setTimeout(
      () => {
        this.beatTimer = undefined;
        if (this.phase.kind === "closed") return;
        if (due() <= clock.now()) this.send({ body: { $case: "heartbeat", value: {} } });
        this.armBeat();
      },
      Math.max(1, due() - clock.now()),
    );
  }

  /**
   * One timer per deadline, not one per message: it looks at lastReadAt when it fires. Due at the
   * grid point at or after the deadline (a dead stream is ended at most a grid step late).
   */
  private armIdleTimer(): void {
    const clock = this.deps.clock;
    const idleMs = this.idleMs;
    const grid = timerGrid(idleMs);
    const due = Math.ceil((this.lastReadAt + idleMs) / grid) * grid;
    this.idleTimer = clock.setTimeout(
      () => {
        this.idleTimer = undefined;
        if (this.phase.kind === "closed") return;
        if (clock.now() - this.lastReadAt >= idleMs)
          this.refuse(status.DEADLINE_EXCEEDED, `no message for ${idleMs} ms: the stream is considered dead`);
        else this.armIdleTimer();
      },
      Math.max(1, due - clock.now()),
    );
  }

  /** Ends the stream with a status that says why; the hub keeps serving every other stream. */
  refuse(code: status, details: string, reason: StreamRefusalReason = defaultReason(code)): void {
    if (this.phase.kind === "closed") return;
    // The hub's own shutdown is routine; every other refusal is the agent's problem to see.
    const level = code === status.UNAVAILABLE ? "info" : "warn";
    const throttle = this.deps.logThrottle;
    const notLogged = throttle === undefined ? 0 : throttle.take(`${this.cluster}/${reason}`);
    if (notLogged !== undefined)
      this.deps.logger[level](
        { code: status[code], reason, details, ...(notLogged > 0 ? { notLogged } : {}) },
        "ending agent stream",
      );
    this.port.fail(code, details, reason);
    this.close();
  }

  /** The call ended (agent went away or the hub refused it). */
  close(): void {
    if (this.phase.kind === "closed") return;
    this.phase = { kind: "closed" };
    if (this.idleTimer !== undefined) this.deps.clock.clearTimeout(this.idleTimer);
    if (this.holdTimer !== undefined) this.deps.clock.clearTimeout(this.holdTimer);
    if (this.beatTimer !== undefined) this.deps.clock.clearTimeout(this.beatTimer);
    this.deps.onClosed(this);
  }
}

/** An untrusted string for a message: clipped, control characters escaped. */
function printable(v: string): string {
  const clipped = v.length > 64 ? `${v.slice(0, 64)}…` : v;
  return JSON.stringify(clipped).slice(1, -1);
}

function emptySnapshot(): Extract<Phase, { kind: "await-snapshot" }> {
  return {
    kind: "await-snapshot",
    nodes: [],
    services: [],
    persistentVolumes: [],
    refused: [],
    refusedUncounted: 0,
  };
}

function overCount(max: number): Invalid {
  return {
    limit: "max-objects-per-cluster",
    message: `the cluster reports more than ${max} objects (limits.maxObjectsPerCluster)`,
  };
}

function refusal(kind: ObjectKindName, namespace: string, name: string, uid: string, why: Invalid): Refusal {
  // Clipped: the names of an invalid object are untrusted and may be huge.
  return {
    kind,
    namespace: namespace.slice(0, 253),
    name: name.slice(0, 253),
    uid: uid.slice(0, 128),
    limit: why.limit,
    message: why.message,
  };
}
