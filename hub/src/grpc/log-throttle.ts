import type { Clock } from "../util/clock.js";

/**
 * At most one log line per key and interval: a flood of refused streams (a hostile or broken
 * agent, a scan) costs the log one line a second per cluster and reason, and the next line
 * says how many were left out.
 */
export class LogThrottle {
  private readonly last = new Map<string, { atMs: number; suppressed: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly everyMs = 1000,
    /** Keys remembered at most (clusters × reasons is small; this bounds a surprise). */
    private readonly maxKeys = 10_000,
  ) {}

  /** undefined: do not log; a number: log, mentioning that many lines left out before it. */
  take(key: string): number | undefined {
    const now = this.clock.now();
    const e = this.last.get(key);
    if (e !== undefined && now - e.atMs < this.everyMs) {
      e.suppressed++;
      return undefined;
    }
    if (e === undefined && this.last.size >= this.maxKeys) this.last.clear();
    this.last.set(key, { atMs: now, suppressed: 0 });
    return e?.suppressed ?? 0;
  }
}
