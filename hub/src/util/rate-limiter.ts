/**
 * Token bucket for one cloud account: every cloud API call of every cluster in the account
 * takes a token first, so the account never exceeds its configured rate. Waiters are served
 * strictly FIFO from a single timer, so thousands of them cost one array slot each.
 */
import { type Clock, systemClock, type TimerHandle } from "./clock.js";

export interface TokenBucketOptions {
  /** Sustained rate. <= 0 (or Infinity) means unlimited. */
  ratePerSecond: number;
  /** Tokens available at once; the bucket starts full. At least 1. */
  burst: number;
  clock?: Clock;
}

/** Rejection of take() when its signal aborts; `cause` is the signal's reason. Same name and code as Node's. */
export class AbortError extends Error {
  override name = "AbortError";
  readonly code = "ABORT_ERR";
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  settled: boolean;
}

// Float refill can land a hair under a whole token at the exact due time.
const TOKEN_EPSILON = 1e-9;
// A vendor header asking for a longer wait is broken or hostile; Retry-After caps alike.
const MAX_VENDOR_WAIT_MS = 60 * 60 * 1000;
// Node fires a timer longer than 2^31-1 ms immediately; wait in steps instead.
const MAX_TIMER_MS = 2_147_483_647;

export class TokenBucket {
  private ratePerMs: number;
  private burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private lastRefillMs: number;
  /** No refill before this (the vendor said none is left until then): observe(). */
  private heldUntilMs = 0;
  private waiters: Waiter[] = [];
  private head = 0;
  private liveWaiters = 0;
  private timer: TimerHandle | undefined;

  constructor(options: TokenBucketOptions) {
    const rate = options.ratePerSecond;
    this.ratePerMs = rate > 0 && Number.isFinite(rate) ? rate / 1000 : 0;
    this.burst = Math.max(1, Math.floor(options.burst));
    this.clock = options.clock ?? systemClock;
    this.tokens = this.burst;
    this.lastRefillMs = this.clock.now();
  }

  /**
   * Changes the rate and burst from now on (hub replicas re-share an account's rate as clusters
   * move). Tokens above the new burst are dropped; waiters are re-timed.
   */
  setRate(ratePerSecond: number, burst: number): void {
    this.refill();
    this.ratePerMs = ratePerSecond > 0 && Number.isFinite(ratePerSecond) ? ratePerSecond / 1000 : 0;
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = Math.min(this.tokens, this.burst);
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.unlimited) {
      this.armTimer();
      return;
    }
    for (let w = this.shiftLiveWaiter(); w !== undefined; w = this.shiftLiveWaiter()) {
      this.settle(w);
      w.resolve();
    }
  }

  /**
   * The vendor says only `remaining` calls are left now, and none after them before
   * `nextFreeAtMs`: the bucket never holds more tokens than that, and with none left it takes
   * no call before then (its own refill waits). A vendor answer never adds tokens.
   */
  observe(remaining: number, nextFreeAtMs: number): void {
    if (this.unlimited || !Number.isFinite(remaining)) return;
    this.refill();
    const left = Math.max(0, Math.floor(remaining));
    if (this.tokens <= left) return;
    this.tokens = left;
    if (left === 0) this.heldUntilMs = Math.min(nextFreeAtMs, this.clock.now() + MAX_VENDOR_WAIT_MS);
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armTimer();
  }

  get unlimited(): boolean {
    return this.ratePerMs === 0;
  }

  /** Callers blocked in take(). */
  get waitingCount(): number {
    return this.liveWaiters;
  }

  /** Takes a token if one is free now. Never jumps ahead of waiters. */
  tryTake(): boolean {
    if (this.unlimited) return true;
    if (this.liveWaiters > 0) return false;
    this.refill();
    if (this.tokens < 1 - TOKEN_EPSILON) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Resolves when the caller holds a token; waiters are served in call order. Aborting
   * `signal` rejects with AbortError. One signal shared by many waiters needs
   * events.setMaxListeners to keep Node from warning.
   */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.tryTake()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined, settled: false };
      if (signal) {
        waiter.onAbort = () => this.cancel(waiter);
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
      this.liveWaiters++;
      this.armTimer();
    });
  }

  private refill(): void {
    const nowMs = this.clock.now();
    const fromMs = Math.max(this.lastRefillMs, this.heldUntilMs);
    // A clock stepping backwards adds nothing rather than going negative.
    if (nowMs > fromMs) {
      this.tokens = Math.min(this.burst, this.tokens + (nowMs - fromMs) * this.ratePerMs);
    }
    this.lastRefillMs = nowMs;
  }

  private armTimer(): void {
    if (this.timer !== undefined || this.liveWaiters === 0) return;
    this.refill();
    const heldMs = Math.max(0, this.heldUntilMs - this.clock.now());
    const waitMs = heldMs + Math.ceil(Math.max(0, 1 - this.tokens) / this.ratePerMs);
    this.timer = this.clock.setTimeout(() => this.onTimer(), Math.min(waitMs, MAX_TIMER_MS));
  }

  private onTimer(): void {
    this.timer = undefined;
    this.refill();
    while (this.liveWaiters > 0 && this.tokens >= 1 - TOKEN_EPSILON) {
      const waiter = this.shiftLiveWaiter();
      if (!waiter) break;
      this.tokens -= 1;
      this.settle(waiter);
      waiter.resolve();
    }
    this.armTimer();
  }

  private shiftLiveWaiter(): Waiter | undefined {
    while (this.head < this.waiters.length) {
      const waiter = this.waiters[this.head];
      this.head++;
      if (waiter && !waiter.settled) {
        this.compact();
        return waiter;
      }
    }
    this.compact();
    return undefined;
  }

  // Keeps shift O(1) amortized: drop the consumed prefix once it is half the array.
  private compact(): void {
    if (this.head === this.waiters.length) {
      this.waiters = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
  }

  private cancel(waiter: Waiter): void {
    if (waiter.settled) return;
    this.settle(waiter);
    // Aborted waiters stay in the array, skipped when reached; with none alive, drop them all.
    if (this.liveWaiters === 0) {
      this.waiters = [];
      this.head = 0;
      if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    waiter.reject(abortError(waiter.signal));
  }

  private settle(waiter: Waiter): void {
    waiter.settled = true;
    this.liveWaiters--;
    if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
  }
}

function abortError(signal: AbortSignal | undefined): AbortError {
  return new AbortError("rate limiter wait aborted", { cause: signal?.reason });
}
