import type { HubMetrics } from "../metrics.js";

interface Sample {
  readonly atMs: number;
  readonly calls: number;
  readonly throttled: number;
}

export interface AccountRate {
  readonly callsPerSecond: number;
  /** Throttled answers within the throttle window. */
  readonly throttledRecent: number;
  readonly throttledTotal: number;
  readonly lastThrottledMs: number | undefined;
}

/** Calls per second are averaged over this window. */
const RATE_WINDOW_MS = 10_000;
/** An account throttled within this long counts as throttled. */
export const THROTTLE_WINDOW_MS = 60_000;

/**
 * Cloud call rates per account, from the hub's fleet_ccm_cloud_calls_total counter: sampled
 * every second (a timer that keeps no process alive), kept for the throttle window.
 */
export class AccountRates {
  private readonly samples = new Map<string, Sample[]>();
  private readonly lastThrottled = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly metrics: HubMetrics,
    private readonly now: () => number,
  ) {}

  start(periodMs = 1000): void {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async sample(): Promise<void> {
    const totals = new Map<string, { calls: number; throttled: number }>();
    for (const v of (await this.metrics.cloudCalls.get()).values) {
      const account = String(v.labels["account"] ?? "");
      const t = totals.get(account) ?? { calls: 0, throttled: 0 };
      t.calls += v.value;
      if (v.labels["outcome"] === "throttled") t.throttled += v.value;
      totals.set(account, t);
    }
    const now = this.now();
    for (const [account, t] of totals) {
      const list = this.samples.get(account) ?? [];
      const prev = list[list.length - 1];
      if (prev !== undefined && t.throttled > prev.throttled) this.lastThrottled.set(account, now);
      list.push({ atMs: now, ...t });
      while (list.length > 2 && (list[1]?.atMs ?? now) <= now - THROTTLE_WINDOW_MS) list.shift();
      this.samples.set(account, list);
    }
  }

  of(account: string): AccountRate {
    const list = this.samples.get(account) ?? [];
    const last = list[list.length - 1];
    if (last === undefined)
      return { callsPerSecond: 0, throttledRecent: 0, throttledTotal: 0, lastThrottledMs: undefined };
    const from = list.find((s) => s.atMs >= last.atMs - RATE_WINDOW_MS) ?? last;
    const first = list[0] ?? last;
    const dt = (last.atMs - from.atMs) / 1000;
    return {
      callsPerSecond: dt > 0 ? (last.calls - from.calls) / dt : 0,
      throttledRecent: last.throttled - first.throttled,
      throttledTotal: last.throttled,
      lastThrottledMs: this.lastThrottled.get(account),
    };
  }
}
