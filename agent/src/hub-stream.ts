import {
  AGENT_PING_INTERVAL_MS,
  AgentMessage,
  type ApplyResult,
  HubClient,
  type HubMessage,
  keepaliveOptions,
  type Welcome,
  Node as WireNode,
  PersistentVolume as WirePersistentVolume,
  Service as WireService,
} from "@fleet-ccm/proto";
import {
  type ChannelCredentials,
  type ClientDuplexStream,
  credentials,
  Metadata,
  status,
} from "@grpc/grpc-js";
import type { Logger } from "pino";
import { type Clock, Retry } from "./backoff.js";
import { type ClientTlsFiles, HubTlsCredentials } from "./hub-credentials.js";
import { HubSilence } from "./hub-silence.js";
import { type ApplyHold, type Change, Outbox, type PendingChange, pendingResult } from "./outbox.js";

function channelCredentials(opts: HubStreamOptions): ChannelCredentials {
  if (opts.insecure) return credentials.createInsecure();
  return new HubTlsCredentials(
    opts.tlsFiles === undefined ? { caPem: opts.caPem } : { files: opts.tlsFiles },
  );
}

export interface HubStreamOptions {
  readonly address: string;
  readonly cluster: string;
  /** The bearer token, or how to read it at each connection (token rotation). */
  readonly token: string | (() => string);
  readonly insecure: boolean;
  readonly caPem?: Buffer | undefined;
  /** Mutual TLS: files read again every reloadIntervalMs, so renewed certificates need no restart. */
  readonly tlsFiles?: ClientTlsFiles | undefined;
  readonly agentVersion: string;
  readonly kubernetesVersion: () => string;
  readonly logger: Logger;
  /** The current full view, taken synchronously when a snapshot is due. */
  readonly snapshot: () => {
    nodes: WireNode[];
    services: WireService[];
    persistentVolumes: WirePersistentVolume[];
  };
  readonly onWelcome?: (welcome: Welcome) => void;
  /**
   * Called on every Welcome: resolves true once `snapshot` reflects what this Welcome asks for
   * (e.g. the annotation prefixes to forward), false if it never will (stopping). The snapshot
   * waits for it; heartbeats keep the stream alive meanwhile. Absent: the snapshot follows at once.
   */
  readonly prepare?: (welcome: Welcome) => Promise<boolean>;
  /**
   * An object too large for one message within the hub's limit: it is left out (the hub keeps
   * what it last had of it) and reported here, once per resourceVersion.
   */
  readonly onTooLarge?: (object: TooLarge) => void;
  readonly clock?: Clock;
  /** How often the hub is pinged (HTTP/2 PING); default AGENT_PING_INTERVAL_MS. */
  readonly pingIntervalMs?: number;
  /** Count bytes written (encodes each message twice: benchmarks only). */
  readonly countBytes?: boolean;
}

type Kind = "node" | "service" | "persistentVolume";
type Wire = WireNode | WireService | WirePersistentVolume;

export interface TooLarge {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly bytes: number;
  readonly limitBytes: number;
}

type Phase = "idle" | "connecting" | "streaming" | "stopped";

/** Connection trouble (hub restarting, network): 500 ms doubling to 30 s, jittered. */
const TRANSIENT_BACKOFF = { initialMs: 500, maxMs: 30_000 };
/** The hub refused the stream for its own reasons (identity, limits): 2 s doubling to 2 min. */
const REFUSED_BACKOFF = { initialMs: 2_000, maxMs: 120_000 };
/** Codes by which the hub refuses a stream for what it is, not for a passing trouble. */
const REFUSED: ReadonlySet<number> = new Set([
  status.INVALID_ARGUMENT,
  status.PERMISSION_DENIED,
  status.UNAUTHENTICATED,
  status.RESOURCE_EXHAUSTED,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.UNIMPLEMENTED,
]);
/** Room for the message around one object (AgentMessage, SnapshotChunk or Delta framing). */
const FRAMING_BYTES = 1024;
const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * An upper bound of an object's protobuf size, without encoding it: every string at 3 bytes per
 * UTF-16 unit plus a field header and length, every number or flag 11 bytes, every message and
 * map entry 6 bytes of framing. Only objects whose bound is near the limit are encoded.
 */
export function sizeBound(v: unknown): number {
  if (typeof v === "string") return 3 * v.length + 6;
  if (typeof v === "number" || typeof v === "boolean") return 11;
  if (v === null || v === undefined) return 0;
  if (v instanceof Date) return 24;
  let n = 6;
  if (Array.isArray(v)) for (const x of v) n += sizeBound(x);
  else for (const [k, x] of Object.entries(v)) n += 3 * k.length + 6 + sizeBound(x);
  return n;
}

const RECEIPT_DELAY_MS = 250;

/**
 * The agent's side of Hub.Sync: Hello, a full snapshot on every (re)connect
 * and on every ResyncRequest, then one delta per change with a sequence
 * number, heartbeats, and apply results. Reconnects forever with jittered backoff; the backoff
 * starts over only once a stream has proved healthy (the hub acknowledged it after the
 * snapshot), so a hub that accepts the Hello and then refuses the stream is not hammered with
 * snapshots. A stream the hub refuses for its own reasons backs off longer than a lost one.
 * No message is larger than the hub's maxMessageBytes: an object that alone would be is left
 * out and reported (onTooLarge).
 * Deltas and results respect the stream's flow control: while the hub reads
 * slower than the cluster changes, they wait in an Outbox (latest per object).
 * A hub silent past its deadline (HubSilence) is dialled again on a new connection, so the
 * Service in front of several hub replicas can send it to another one.
 */
export class HubStream {
  private client: HubClient;
  private readonly silence: HubSilence;
  private call: ClientDuplexStream<AgentMessage, HubMessage> | undefined;
  private phase: Phase = "idle";
  private seq = 0;
  private snapshotId = 0;
  private readonly transientRetry: Retry;
  private readonly refusedRetry: Retry;
  /** A stream is healthy once the hub acknowledged something on it after the snapshot. */
  private healthy = false;
  /** uid → resourceVersion of objects reported too large (reported again when they change). */
  private readonly tooLarge = new Map<string, string>();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Highest desired generation received over NATS on this stream's watch. */
  private receivedGeneration = 0;
  /** hub_time_ms of the latest Ack read on this stream, echoed in heartbeats (0: none yet). */
  private ackedHubTimeMs = 0;
  /** Set while a heartbeat telling the hub of a new receivedGeneration is due. */
  private receiptTimer: NodeJS.Timeout | undefined;
  private welcome: Welcome | undefined;
  private readonly outbox: Outbox;
  /** The stream's buffer is full: wait for "drain" before writing more deltas or results. */
  private blocked = false;
  /** Bytes written on the stream, when countBytes is set. */
  bytesSent = 0;
  /** Deltas written on the stream (benchmarks). */
  deltasSent = 0;
  connects = 0;

  constructor(private readonly opts: HubStreamOptions) {
    const retry = (what: string, backoff: typeof TRANSIENT_BACKOFF) =>
      new Retry({ what, logger: opts.logger, clock: opts.clock, backoff, fields: { hub: opts.address } });
    this.transientRetry = retry("hub stream", TRANSIENT_BACKOFF);
    this.refusedRetry = retry("hub stream (refused by the hub)", REFUSED_BACKOFF);
    this.silence = new HubSilence((ms) => this.onSilent(ms), opts.clock);
    this.outbox = new Outbox(() => this.flushOutbox(), opts.clock);
    this.client = this.newClient();
  }

  /** A channel of its own: its own TCP connection, to whichever replica the Service picks. */
  private newClient(): HubClient {
    const opts = this.opts;
    const creds = channelCredentials(opts);
    return new HubClient(opts.address, creds, {
      // grpc-js shares one connection between the clients of a process that have the same target
      // and options (its global subchannel pool): agents in one process (LocalFleet, the bench's
      // fleet) would multiplex every stream, snapshots and heartbeats, over one HTTP/2 connection
      // and its one flow-control window, and a stream's heartbeat waits behind other clusters'
      // snapshots. With a pool per client, each stream has its connection, as in production.
      "grpc.use_local_subchannel_pool": 1,
      // grpc-js holds up to 1 MiB of unsent messages per call for transparent retries (some
      // 10,000 small deltas, each with its own buffer and objects) before a write blocks; with
      // 64 KiB the stream blocks early and the Outbox, latest per object, holds the rest.
      "grpc.per_rpc_retry_buffer_size": 64 * 1024,
      // What finds a dead or frozen hub, or a broken path: a ping the hub's HTTP/2 layer answers
      // without running its stream code (a fraction of what a heartbeat costs it). HubSilence,
      // at Welcome's interval, is the backstop for a hub that answers pings but says nothing.
      ...keepaliveOptions(opts.pingIntervalMs ?? AGENT_PING_INTERVAL_MS),
      "grpc.max_receive_message_length": 16 * 1024 * 1024,
      // Nothing reads channelz; it stamps the time on every message.
      "grpc.enable_channelz": 0,
    });
  }

  /** The hub said nothing in time: a new stream on a new connection (this one may be to a frozen hub). */
  private onSilent(silentMs: number): void {
    if (this.phase === "stopped" || this.phase === "idle") return;
    this.teardown();
    this.client.close();
    this.client = this.newClient();
    this.reconnect(
      new Error(`no message from the hub for ${silentMs} ms (frozen or unreachable): dialling again`),
    );
  }

  get streaming(): boolean {
    return this.phase === "streaming";
  }

  start(): void {
    if (this.phase !== "idle") return;
    this.connect();
  }

  private connect(): void {
    this.phase = "connecting";
    this.welcome = undefined;
    const md = new Metadata();
    // With mutual TLS the certificate alone may name the cluster.
    const token = typeof this.opts.token === "function" ? this.opts.token() : this.opts.token;
    if (token !== "") md.set("authorization", `Bearer ${token}`);
    const call = this.client.sync(md);
    this.call = call;
    this.silence.start();
    call.on("data", (msg: HubMessage) => this.onMessage(call, msg));
    call.on("error", (err: Error & { code?: number; details?: string }) => {
      if (this.call === call) this.reconnect(err);
    });
    call.on("end", () => {
      if (this.call === call) this.reconnect(new Error("the hub ended the stream"));
    });
    this.write({
      body: {
        $case: "hello",
        value: {
          cluster: this.opts.cluster,
          agentVersion: this.opts.agentVersion,
          kubernetesVersion: this.opts.kubernetesVersion(),
        },
      },
    });
  }

  private onMessage(call: ClientDuplexStream<AgentMessage, HubMessage>, msg: HubMessage): void {
    if (this.call !== call) return;
    this.silence.heard();
    if (msg.body === undefined) return;
    switch (msg.body.$case) {
      case "heartbeat":
        return;
      case "welcome": {
        const welcome = msg.body.value;
        this.welcome = welcome;
        this.silence.welcomed(welcome.hubHeartbeatIntervalMs);
        this.connects++;
        this.opts.logger.debug({ subject: welcome.desiredSubject }, "hub welcomed the stream");
        this.opts.onWelcome?.(welcome);
        this.startHeartbeat(welcome.heartbeatIntervalMs || 10_000);
        const prepared = this.opts.prepare?.(welcome);
        if (prepared === undefined) return this.sendSnapshot();
        prepared.then(
          (ready) => {
            if (ready && this.call === call && this.phase === "connecting") this.sendSnapshot();
          },
          (err: unknown) => {
            if (this.call === call) this.reconnect(err instanceof Error ? err : new Error(String(err)));
          },
        );
        return;
      }
      case "resync":
        // Before the first snapshot of this stream, the coming snapshot answers it.
        if (this.phase !== "streaming") return;
        this.opts.logger.warn({ reason: msg.body.value.reason }, "hub asked for a resync");
        this.sendSnapshot();
        return;
      case "ack":
        this.ackedHubTimeMs = Math.max(this.ackedHubTimeMs, msg.body.value.hubTimeMs ?? 0);
        if (!this.healthy && this.phase === "streaming") {
          this.healthy = true;
          // Logged once the hub has taken the snapshot, not per try of a stream it refuses.
          this.opts.logger.info({ subject: this.welcome?.desiredSubject }, "connected to hub");
          this.transientRetry.succeeded();
          this.refusedRetry.succeeded();
          // Echoes this Ack at once: from now on the hub can tell a publication still on its way
          // from a lost one (acked_hub_time_ms), without waiting for the next interval.
          this.sendHeartbeat();
        } else if (msg.body.value.echo) {
          // The hub waits on a publication not reported received. Answered within RECEIPT_DELAY_MS,
          // not at once: NATS data read in the same moment (an agent that was stalled) is counted
          // first, so a publication that did arrive is not reported lost.
          this.heartbeatSoon();
        }
        return;
    }
  }

  /** The largest message the hub takes (its Welcome says). */
  private maxMessageBytes(): number {
    return this.welcome?.limits?.maxMessageBytes || DEFAULT_MAX_MESSAGE_BYTES;
  }

  /**
   * The object's encoded size, or undefined if it is too large for a message of its own (then
   * reported, once per resourceVersion). Small objects are not encoded.
   */
  private fits(kind: Kind, obj: Wire, encode: () => number): number | undefined {
    const limit = this.maxMessageBytes() - FRAMING_BYTES;
    const bound = sizeBound(obj);
    const size = bound <= limit / 4 ? 0 : encode();
    if (size <= limit) {
      if (bound > limit / 4) this.tooLarge.delete(obj.uid);
      return size === 0 ? bound : size;
    }
    if (this.tooLarge.get(obj.uid) !== obj.resourceVersion) {
      if (this.tooLarge.size >= 10_000) this.tooLarge.clear();
      this.tooLarge.set(obj.uid, obj.resourceVersion);
      this.opts.onTooLarge?.({
        kind,
        namespace: "namespace" in obj ? obj.namespace : "",
        name: obj.name,
        uid: obj.uid,
        bytes: size,
        limitBytes: this.maxMessageBytes(),
      });
    }
    return undefined;
  }

  /** Snapshot taken and written in one tick, so every later change is a delta after it. */
  private sendSnapshot(): void {
    const { nodes, services, persistentVolumes } = this.opts.snapshot();
    const id = ++this.snapshotId;
    const maxObjects = Math.max(1, this.welcome?.limits?.maxObjectsPerChunk ?? 500);
    // Leave room for framing: a chunk stays under 3/4 of the hub's message limit.
    const maxBytes = Math.floor(this.maxMessageBytes() * 0.75);
    let chunkNodes: WireNode[] = [];
    let chunkServices: WireService[] = [];
    let chunkVolumes: WirePersistentVolume[] = [];
    let bytes = 0;
    const flush = (last: boolean) => {
      this.write({
        body: {
          $case: "snapshot",
          value: {
            snapshotId: id,
            nodes: chunkNodes,
            services: chunkServices,
            persistentVolumes: chunkVolumes,
            last,
            seq: this.seq,
          },
        },
      });
      chunkNodes = [];
      chunkServices = [];
      chunkVolumes = [];
      bytes = 0;
    };
    const room = (size: number) => {
      const count = chunkNodes.length + chunkServices.length + chunkVolumes.length;
      if (count >= maxObjects || bytes + size > maxBytes) flush(false);
      bytes += size;
    };
    for (const n of nodes) {
      const size = this.fits("node", n, () => WireNode.encode(n).finish().length);
      if (size === undefined) continue;
      room(size);
      chunkNodes.push(n);
    }
    for (const s of services) {
      const size = this.fits("service", s, () => WireService.encode(s).finish().length);
      if (size === undefined) continue;
      room(size);
      chunkServices.push(s);
    }
    for (const v of persistentVolumes) {
      const size = this.fits("persistentVolume", v, () => WirePersistentVolume.encode(v).finish().length);
      if (size === undefined) continue;
      room(size);
      chunkVolumes.push(v);
    }
    flush(true);
    this.phase = "streaming";
    this.flushOutbox();
    // The hub's ack of it says at once that the stream is healthy (the backoff starts over).
    this.sendHeartbeat();
  }

  private startHeartbeat(intervalMs: number): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => this.sendHeartbeat(), intervalMs);
    this.heartbeat.unref();
  }

  private sendHeartbeat(): void {
    // Also while a welcomed stream prepares its snapshot: the hub ends a silent stream.
    if (this.phase !== "streaming" && (this.phase !== "connecting" || this.welcome === undefined)) return;
    this.write({
      body: {
        $case: "heartbeat",
        value: {
          seq: this.seq,
          // sent_at is left out: no hub reads it, and it costs a Date each way per heartbeat.
          receivedGeneration: this.receivedGeneration,
          ...(this.ackedHubTimeMs > 0 && { ackedHubTimeMs: this.ackedHubTimeMs }),
        },
      },
    });
  }

  /**
   * Desired state up to `generation` arrived over NATS. The hub hears of it within
   * RECEIPT_DELAY_MS (one heartbeat for many batches), so it waits for a queued patch instead of
   * publishing it again.
   */
  noteReceived(generation: number): void {
    if (generation <= this.receivedGeneration) return;
    this.receivedGeneration = generation;
    this.heartbeatSoon();
  }

  /** One heartbeat within RECEIPT_DELAY_MS, however many receipts and echo requests come meanwhile. */
  private heartbeatSoon(): void {
    if (this.receiptTimer !== undefined) return;
    this.receiptTimer = setTimeout(() => {
      this.receiptTimer = undefined;
      this.sendHeartbeat();
    }, RECEIPT_DELAY_MS);
  }

  /** A change seen after the snapshot. Dropped while not streaming: the next snapshot includes it. */
  sendChange(change: PendingChange | undefined): void {
    if (change === undefined || this.phase !== "streaming") return;
    this.outbox.put(change);
    this.flushOutbox();
  }

  /** The object's changes wait while a patch is applied to it (Outbox.hold): one delta for all its writes. */
  holdChanges(key: string): ApplyHold {
    return this.outbox.hold(key);
  }

  /** Kept across a reconnect (one per object); the hub republishes anyway if one is lost. */
  sendApplyResult(result: ApplyResult): void {
    this.outbox.put(pendingResult(result));
    this.flushOutbox();
  }

  /** Writes what waits, while the stream takes it. A delta's seq is given when it is written. */
  private flushOutbox(): void {
    while (this.phase === "streaming" && !this.blocked && this.call !== undefined) {
      const item = this.outbox.take();
      if (item === undefined) return;
      if (item.type === "result") this.write({ body: { $case: "applyResult", value: item.result } });
      else {
        const change = item.wire();
        if (!this.changeFits(change)) continue;
        this.seq++;
        this.deltasSent++;
        this.write({ body: { $case: "delta", value: { seq: this.seq, change } } });
      }
    }
  }

  /** Whether the changed object fits in a message (fits reports one that does not); deletions always do. */
  private changeFits(change: Change): boolean {
    switch (change.$case) {
      case "node":
        return (
          this.fits("node", change.value, () => WireNode.encode(change.value).finish().length) !== undefined
        );
      case "service":
        return (
          this.fits("service", change.value, () => WireService.encode(change.value).finish().length) !==
          undefined
        );
      case "persistentVolume":
        return (
          this.fits(
            "persistentVolume",
            change.value,
            () => WirePersistentVolume.encode(change.value).finish().length,
          ) !== undefined
        );
      default:
        return true;
    }
  }

  private write(msg: AgentMessage): void {
    const call = this.call;
    if (call === undefined) return;
    if (this.opts.countBytes) this.bytesSent += AgentMessage.encode(msg).finish().length;
    if (call.write(msg) || this.blocked) return;
    this.blocked = true;
    call.once("drain", () => {
      if (this.call !== call) return;
      this.blocked = false;
      this.flushOutbox();
    });
  }

  /**
   * A new stream now: the hub then republishes whatever it had in flight for this cluster. Used
   * when NATS reconnected, since what the hub published during the gap never arrived.
   */
  restart(): void {
    if (this.phase === "idle" || this.phase === "stopped") return;
    this.teardown();
    this.connect();
  }

  private reconnect(err: Error & { code?: number; details?: string }): void {
    if (this.phase === "stopped") return;
    this.teardown();
    this.phase = "connecting";
    const refused = err.code !== undefined && REFUSED.has(err.code);
    const fields = {
      code: err.code === undefined ? "unknown" : (status[err.code] ?? String(err.code)),
      details: err.details ?? err.message,
    };
    (refused ? this.refusedRetry : this.transientRetry).failed(
      err.details ?? err.message,
      () => {
        if (this.phase !== "stopped") this.connect();
      },
      fields,
    );
  }

  private teardown(): void {
    this.silence.stop();
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    if (this.receiptTimer) clearTimeout(this.receiptTimer);
    this.receiptTimer = undefined;
    // What arrives from now on is counted for the next stream (the hub republishes on sync).
    this.receivedGeneration = 0;
    this.ackedHubTimeMs = 0;
    this.healthy = false;
    this.blocked = false;
    // Changes are covered by the next snapshot; apply results are kept for the next stream.
    for (const item of this.outbox.drain()) if (item.type === "result") this.outbox.put(item);
    const call = this.call;
    this.call = undefined;
    if (call !== undefined) {
      call.removeAllListeners("data");
      call.on("error", () => undefined);
      call.cancel();
    }
  }

  stop(): void {
    this.phase = "stopped";
    this.transientRetry.cancel();
    this.refusedRetry.cancel();
    this.teardown();
    this.outbox.endHolds();
    this.client.close();
  }
}
