import { type Clock, systemClock } from "./backoff.js";

/** A stream on which the hub said nothing for this many of its heartbeat intervals is dead. */
export const MISSED_HUB_HEARTBEATS = 3;
/** Before any Welcome said how often the hub speaks: a stream silent this long is dead. */
export const DEFAULT_SILENCE_MS = 30_000;

/**
 * The agent's deadline on one stream: the hub must say something (a Welcome, an Ack, a
 * HubHeartbeat…) within MISSED_HUB_HEARTBEATS of the intervals its last Welcome announced. A
 * frozen or wedged hub keeps its TCP connection open and its kernel answers keepalives, so its
 * silence is the only sign. A hub that announces no interval (older than the field) gets no
 * deadline once it has welcomed the stream; the Welcome itself is always waited for at most
 * the last known deadline (DEFAULT_SILENCE_MS before any).
 */
export class HubSilence {
  private intervalMs = 0;
  private known = false;
  /** 0: no deadline on this stream. */
  private deadlineMs = 0;
  private lastHeardAt = 0;
  private timer: unknown;

  constructor(
    private readonly onSilent: (silentMs: number) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  /** A new stream is opened: its Welcome is due within the deadline. */
  start(): void {
    this.stop();
    this.deadlineMs =
      this.known && this.intervalMs > 0 ? this.intervalMs * MISSED_HUB_HEARTBEATS : DEFAULT_SILENCE_MS;
    this.heard();
  }

  /** The hub's Welcome: how often it speaks from now on (0: it does not say). */
  welcomed(intervalMs: number): void {
    this.intervalMs = intervalMs;
    this.known = true;
    this.stop();
    this.deadlineMs = intervalMs > 0 ? intervalMs * MISSED_HUB_HEARTBEATS : 0;
    this.heard();
  }

  /** Any message from the hub on the stream. */
  heard(): void {
    this.lastHeardAt = this.clock.now();
    if (this.timer === undefined && this.deadlineMs > 0) this.arm(this.deadlineMs);
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One timer per deadline at most, not one per message: it checks the time when it fires. */
  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.deadlineMs <= 0) return;
      const silent = this.clock.now() - this.lastHeardAt;
      if (silent >= this.deadlineMs) this.onSilent(silent);
      else this.arm(Math.max(1, this.deadlineMs - silent));
    }, ms);
  }
}
