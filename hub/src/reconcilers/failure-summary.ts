import type { Logger } from "pino";
import type { Clock } from "../util/clock.js";

/** How many failing keys a summary line names. */
const SAMPLE = 5;

/**
 * Retried failures logged as a summary, not a line per try: the first failure logs at once,
 * then at most one line per interval says how many keys are failing and how many tries failed
 * since the last line. Keys leave when they succeed or go away.
 */
export class FailureSummary {
  private readonly failing = new Map<string, string>();
  private lastLogMs = Number.NEGATIVE_INFINITY;
  private failuresSinceLog = 0;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly message: string,
    private readonly intervalMs = 60_000,
  ) {}

  failed(key: string, error: string): void {
    this.failing.delete(key); // newest last, so the sample shows recent ones
    this.failing.set(key, error);
    this.failuresSinceLog++;
    const now = this.clock.now();
    if (now - this.lastLogMs < this.intervalMs) return;
    const sample = [...this.failing].slice(-SAMPLE).map(([k, err]) => ({ key: k, err }));
    this.logger.warn({ failing: this.failing.size, failures: this.failuresSinceLog, sample }, this.message);
    this.lastLogMs = now;
    this.failuresSinceLog = 0;
  }

  ok(key: string): void {
    this.failing.delete(key);
  }

  /** Every failing key with this prefix is no longer failing here (a released cluster's). */
  forgetPrefix(prefix: string): void {
    for (const k of this.failing.keys()) if (k.startsWith(prefix)) this.failing.delete(k);
  }

  size(): number {
    return this.failing.size;
  }
}
