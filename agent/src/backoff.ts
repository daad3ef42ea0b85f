import { type BackoffOptions, backoffDelayMs, checkBackoff } from "@fleet-ccm/proto";
import type { Logger } from "pino";

/** Time as the retry loops see it; tests pass a fake one. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Timers keep the process alive: a pending retry may be all the agent has to do. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The shared formula (proto/src/backoff.ts); the agent's loops default to jitter 0.5: a delay lies in [d/2, d]. */
export type { BackoffOptions };

const AGENT_JITTER = 0.5;

/**
 * Exponential backoff with jitter to a cap. `next()` counts one failure and returns the delay
 * before the next try; `reset()` after a success starts over.
 */
export class Backoff {
  private count = 0;
  private readonly opts: BackoffOptions;

  constructor(opts: BackoffOptions) {
    if (!(opts.initialMs > 0))
      throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${opts.initialMs}, ${opts.maxMs}`);
    this.opts = checkBackoff({ ...opts, jitter: opts.jitter ?? AGENT_JITTER });
  }

  /** Failures since the last reset. */
  get failures(): number {
    return this.count;
  }

  next(): number {
    return backoffDelayMs(this.count++, this.opts);
  }

  reset(): void {
    this.count = 0;
  }
}

export interface RetryOptions {
  /** What is retried, for the log: "initial list of nodes", "hub stream", … */
  readonly what: string;
  readonly logger: Logger;
  readonly backoff: BackoffOptions;
  readonly clock?: Clock;
  /** After the first failure is logged, at most one summary line per this period (default 30 s). */
  readonly summaryEveryMs?: number;
  /** Fields added to every line (flags to check, servers, …). */
  readonly fields?: Record<string, unknown>;
}

/**
 * One retry loop: its backoff, its timer and its log. The first failure is logged at once;
 * later ones are counted and summarized at most once per summary period; the first success
 * after failures logs one recovery line. One timer at a time: a new schedule replaces it.
 */
export class Retry {
  private readonly backoff: Backoff;
  private readonly clock: Clock;
  private readonly summaryEveryMs: number;
  private timer: unknown;
  private firstFailureAt = 0;
  private lastLogAt = 0;

  constructor(private readonly opts: RetryOptions) {
    this.backoff = new Backoff(opts.backoff);
    this.clock = opts.clock ?? systemClock;
    this.summaryEveryMs = opts.summaryEveryMs ?? 30_000;
  }

  get failures(): number {
    return this.backoff.failures;
  }

  /** Whether a retry is scheduled and not yet run. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  /**
   * Counts a failure, logs it (or counts it for the next summary) and runs `retry` after the
   * backoff delay. Returns the delay. `what` names this failure in the log (default the loop's).
   */
  failed(
    err: unknown,
    retry: () => void,
    fields: Record<string, unknown> = {},
    what: string = this.opts.what,
  ): number {
    const now = this.clock.now();
    const delay = this.backoff.next();
    const base = { what, ...this.opts.fields, ...fields, err: errorText(err) };
    if (this.backoff.failures === 1) {
      this.firstFailureAt = now;
      this.lastLogAt = now;
      this.opts.logger.warn({ ...base, retryInMs: delay }, `${what} failed; retrying with backoff`);
    } else if (now - this.lastLogAt >= this.summaryEveryMs) {
      this.opts.logger.warn(
        {
          ...base,
          failures: this.backoff.failures,
          failingForS: Math.round((now - this.firstFailureAt) / 1000),
          retryInMs: delay,
        },
        `${what} still failing; retrying with backoff`,
      );
      this.lastLogAt = now;
    }
    this.schedule(retry, delay);
    return delay;
  }

  /** A success: the backoff starts over, and a recovery after failures is logged once. */
  succeeded(): void {
    if (this.backoff.failures > 0)
      this.opts.logger.info(
        {
          what: this.opts.what,
          ...this.opts.fields,
          failures: this.backoff.failures,
          failingForS: Math.round((this.clock.now() - this.firstFailureAt) / 1000),
        },
        `${this.opts.what} recovered`,
      );
    this.backoff.reset();
  }

  private schedule(fn: () => void, delay: number): void {
    this.cancel();
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      fn();
    }, delay);
  }

  cancel(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** A promise that resolves after `ms` on `clock`. */
export function sleep(ms: number, clock: Clock = systemClock): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
