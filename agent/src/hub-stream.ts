import {
  AgentMessage,
  type ApplyResult,
  HubClient,
  type HubMessage,
  type Welcome,
  Node as WireNode,
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
import { Outbox, type PendingChange, pendingResult } from "./outbox.js";

export interface HubStreamOptions {
  readonly address: string;
  readonly cluster: string;
  readonly token: string;
  readonly insecure: boolean;
  readonly caPem?: Buffer | undefined;
  readonly agentVersion: string;
  readonly kubernetesVersion: () => string;
  readonly logger: Logger;
  /** The current full view, taken synchronously when a snapshot is due. */
  readonly snapshot: () => { nodes: WireNode[]; services: WireService[] };
  readonly onWelcome?: (welcome: Welcome) => void;
  readonly reconnectMinMs?: number;
  readonly reconnectMaxMs?: number;
  /** Count bytes written (encodes each message twice: benchmarks only). */
  readonly countBytes?: boolean;
}

type Phase = "idle" | "connecting" | "streaming" | "stopped";

const RECEIPT_DELAY_MS = 250;

/** Full jitter: a fleet of agents reconnecting after a hub restart spreads out. */
function reconnectDelayMs(attempt: number, minMs: number, maxMs: number): number {
  const cap = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
  return minMs / 2 + Math.random() * (cap - minMs / 2);
}

/**
 * The agent's side of Hub.Sync: Hello, a full snapshot on every (re)connect
 * and on every ResyncRequest, then one delta per change with a sequence
 * number, heartbeats, and apply results. Reconnects forever with backoff.
 * Deltas and results respect the stream's flow control: while the hub reads
 * slower than the cluster changes, they wait in an Outbox (latest per object).
 */
export class HubStream {
  private readonly client: HubClient;
  private call: ClientDuplexStream<AgentMessage, HubMessage> | undefined;
  private phase: Phase = "idle";
  private seq = 0;
  private snapshotId = 0;
  private attempt = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Highest desired generation received over NATS on this stream's watch. */
  private receivedGeneration = 0;
  /** Set while a heartbeat telling the hub of a new receivedGeneration is due. */
  private receiptTimer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private welcome: Welcome | undefined;
  private readonly outbox = new Outbox();
  /** The stream's buffer is full: wait for "drain" before writing more deltas or results. */
  private blocked = false;
  /** Bytes written on the stream, when countBytes is set. */
  bytesSent = 0;
  connects = 0;

  constructor(private readonly opts: HubStreamOptions) {
    const creds: ChannelCredentials = opts.insecure
      ? credentials.createInsecure()
      : credentials.createSsl(opts.caPem ?? null);
    this.client = new HubClient(opts.address, creds, {
      // grpc-js holds up to 1 MiB of unsent messages per call for transparent retries (some
      // 10,000 small deltas, each with its own buffer and objects) before a write blocks; with
      // 64 KiB the stream blocks early and the Outbox, latest per object, holds the rest.
      "grpc.per_rpc_retry_buffer_size": 64 * 1024,
      "grpc.keepalive_time_ms": 30_000,
      "grpc.keepalive_timeout_ms": 10_000,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.max_receive_message_length": 16 * 1024 * 1024,
    });
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
    md.set("authorization", `Bearer ${this.opts.token}`);
    const call = this.client.sync(md);
    this.call = call;
    call.on("data", (msg: HubMessage) => this.onMessage(call, msg));
    call.on("error", (err: Error & { code?: number; details?: string }) => {
      if (this.call !== call) return;
      const code = err.code === undefined ? "unknown" : (status[err.code] ?? String(err.code));
      this.opts.logger.warn({ code, details: err.details ?? err.message }, "hub stream failed");
      this.reconnect();
    });
    call.on("end", () => {
      if (this.call === call) this.reconnect();
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
    if (this.call !== call || msg.body === undefined) return;
    switch (msg.body.$case) {
      case "welcome":
        this.welcome = msg.body.value;
        this.attempt = 0;
        this.connects++;
        this.opts.logger.info({ subject: this.welcome.desiredSubject }, "connected to hub");
        this.opts.onWelcome?.(this.welcome);
        this.sendSnapshot();
        this.startHeartbeat(this.welcome.heartbeatIntervalMs || 10_000);
        return;
      case "resync":
        this.opts.logger.warn({ reason: msg.body.value.reason }, "hub asked for a resync");
        this.sendSnapshot();
        return;
      case "ack":
        return;
    }
  }

  /** Snapshot taken and written in one tick, so every later change is a delta after it. */
  private sendSnapshot(): void {
    const { nodes, services } = this.opts.snapshot();
    const id = ++this.snapshotId;
    const maxObjects = Math.max(1, this.welcome?.limits?.maxObjectsPerChunk ?? 500);
    // Leave room for framing: a chunk stays under 3/4 of the hub's message limit.
    const maxBytes = Math.floor((this.welcome?.limits?.maxMessageBytes ?? 4 * 1024 * 1024) * 0.75);
    let chunkNodes: WireNode[] = [];
    let chunkServices: WireService[] = [];
    let bytes = 0;
    const flush = (last: boolean) => {
      this.write({
        body: {
          $case: "snapshot",
          value: { snapshotId: id, nodes: chunkNodes, services: chunkServices, last, seq: this.seq },
        },
      });
      chunkNodes = [];
      chunkServices = [];
      bytes = 0;
    };
    const room = (size: number) => {
      if (chunkNodes.length + chunkServices.length >= maxObjects || bytes + size > maxBytes) flush(false);
      bytes += size;
    };
    for (const n of nodes) {
      room(WireNode.encode(n).finish().length);
      chunkNodes.push(n);
    }
    for (const s of services) {
      room(WireService.encode(s).finish().length);
      chunkServices.push(s);
    }
    flush(true);
    this.phase = "streaming";
    this.flushOutbox();
  }

  private startHeartbeat(intervalMs: number): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => this.sendHeartbeat(), intervalMs);
    this.heartbeat.unref();
  }

  private sendHeartbeat(): void {
    if (this.phase !== "streaming") return;
    this.write({
      body: {
        $case: "heartbeat",
        value: { seq: this.seq, sentAt: new Date(), receivedGeneration: this.receivedGeneration },
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
    if (this.receiptTimer !== undefined) return;
    this.receiptTimer = setTimeout(() => {
      this.receiptTimer = undefined;
      this.sendHeartbeat();
    }, RECEIPT_DELAY_MS);
  }

  /** A change seen after the snapshot. Dropped while not streaming: the next snapshot includes it. */
  sendChange(change: PendingChange): void {
    if (this.phase !== "streaming") return;
    this.outbox.put(change);
    this.flushOutbox();
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
        this.seq++;
        this.write({ body: { $case: "delta", value: { seq: this.seq, change: item.wire() } } });
      }
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

  private reconnect(): void {
    if (this.phase === "stopped") return;
    this.teardown();
    this.phase = "connecting";
    const delay = reconnectDelayMs(
      this.attempt++,
      this.opts.reconnectMinMs ?? 500,
      this.opts.reconnectMaxMs ?? 30_000,
    );
    this.opts.logger.info({ retryInMs: Math.round(delay) }, "reconnecting to hub");
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.phase !== "stopped") this.connect();
    }, delay);
  }

  private teardown(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    if (this.receiptTimer) clearTimeout(this.receiptTimer);
    this.receiptTimer = undefined;
    // What arrives from now on is counted for the next stream (the hub republishes on sync).
    this.receivedGeneration = 0;
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
    if (this.retry) clearTimeout(this.retry);
    this.teardown();
    this.client.close();
  }
}
