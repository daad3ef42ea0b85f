import {
  createHistogram,
  type EventLoopUtilization,
  performance,
  type RecordableHistogram,
} from "node:perf_hooks";
import { collectDefaultMetrics, Gauge, type Registry } from "prom-client";

export interface BusyLoopDelayOptions {
  /** The histogram's sampling interval while it samples. */
  readonly resolutionMs: number;
  /** How often the loop's utilization is checked. */
  readonly checkMs: number;
  /** Sampling is turned on by a check interval in which the loop was busy at least this share. */
  readonly busyShare: number;
  /** …and off after this many checks in a row below it. */
  readonly quietChecks: number;
}

export const BUSY_LOOP_DELAY_DEFAULTS: BusyLoopDelayOptions = {
  resolutionMs: 100,
  checkMs: 1000,
  busyShare: 0.1,
  quietChecks: 10,
};

/**
 * An event-loop delay histogram that samples only while the loop works.
 *
 * The histogram samples on a timer, and every sample wakes the process: at 100 ms, ten times a
 * second, about half of an idle hub's wake-ups, and a wake-up is most of what an idle process
 * costs (bench/README.md, "Steady state"). An idle loop has no delay to show. So a check every
 * second turns sampling on when the loop was busy for at least a tenth of the last second (its
 * event-loop utilization: then ten samples a second are little beside the loop's own work), and
 * off after 10 checks in a row below that. An idle hub's periodic work (a scrape, a round of
 * heartbeats) stays below it. Each check is a sample too, of its own lateness, so a stall in an
 * idle second shows whenever it covers a check.
 *
 * Values are prom-client's: the time between samples (the resolution plus any delay); a check
 * counts as the resolution plus its lateness. The sampling is ours, on a JS timer, not Node's
 * monitorEventLoopDelay: that one, enabled again, records the whole time it was off as one delay.
 */
export class BusyLoopDelay {
  private readonly histogram: RecordableHistogram = createHistogram();
  private readonly checker: NodeJS.Timeout;
  private sampler: NodeJS.Timeout | undefined;
  /** When the sampler last ran (or started), in ms of performance.now(). */
  private sampled = 0;
  private checked: number;
  private utilization: EventLoopUtilization = performance.eventLoopUtilization();
  private quiet = 0;

  constructor(private readonly opts: BusyLoopDelayOptions = BUSY_LOOP_DELAY_DEFAULTS) {
    // Sampling from the start: a hub starting up is busy.
    this.startSampling();
    this.checked = performance.now();
    this.checker = setInterval(() => this.check(), opts.checkMs);
    this.checker.unref();
  }

  /** Whether the histogram samples now. */
  get sampling(): boolean {
    return this.sampler !== undefined;
  }

  private record(ms: number): void {
    // The histogram takes integers of at least 1; nanoseconds, as Node's own.
    this.histogram.record(Math.max(1, Math.round(ms * 1e6)));
  }

  private startSampling(): void {
    this.sampled = performance.now();
    this.sampler = setInterval(() => {
      const now = performance.now();
      this.record(now - this.sampled);
      this.sampled = now;
    }, this.opts.resolutionMs);
    this.sampler.unref();
  }

  private stopSampling(): void {
    clearInterval(this.sampler);
    this.sampler = undefined;
  }

  private check(): void {
    const now = performance.now();
    this.record(this.opts.resolutionMs + Math.max(0, now - this.checked - this.opts.checkMs));
    this.checked = now;
    const since = performance.eventLoopUtilization(this.utilization);
    this.utilization = performance.eventLoopUtilization();
    if (since.utilization >= this.opts.busyShare) {
      this.quiet = 0;
      if (!this.sampling) this.startSampling();
    } else if (this.sampling && ++this.quiet >= this.opts.quietChecks) this.stopSampling();
  }

  /** The delays since the last read, in seconds, as prom-client's histogram series; then starts over. */
  read(): {
    min: number;
    max: number;
    mean: number;
    stddev: number;
    p50: number;
    p90: number;
    p99: number;
  } {
    const h = this.histogram;
    const s = (ns: number) => ns / 1e9;
    const idle = s(this.opts.resolutionMs * 1e6);
    // Read before the first check: what an idle loop's samples would read.
    const values =
      h.count === 0
        ? { min: idle, max: idle, mean: idle, stddev: 0, p50: idle, p90: idle, p99: idle }
        : {
            min: s(h.min),
            max: s(h.max),
            mean: s(h.mean),
            stddev: s(h.stddev),
            p50: s(h.percentile(50)),
            p90: s(h.percentile(90)),
            p99: s(h.percentile(99)),
          };
    h.reset();
    return values;
  }

  stop(): void {
    clearInterval(this.checker);
    this.stopSampling();
  }
}

/** prom-client's names and help for the histogram's series (its defaultMetrics eventLoopLag). */
const SERIES = {
  min: ["nodejs_eventloop_lag_min_seconds", "The minimum recorded event loop delay.", "min"],
  max: ["nodejs_eventloop_lag_max_seconds", "The maximum recorded event loop delay.", "max"],
  mean: ["nodejs_eventloop_lag_mean_seconds", "The mean of the recorded event loop delays.", "average"],
  stddev: [
    "nodejs_eventloop_lag_stddev_seconds",
    "The standard deviation of the recorded event loop delays.",
    "average",
  ],
  p50: [
    "nodejs_eventloop_lag_p50_seconds",
    "The 50th percentile of the recorded event loop delays.",
    "average",
  ],
  p90: [
    "nodejs_eventloop_lag_p90_seconds",
    "The 90th percentile of the recorded event loop delays.",
    "average",
  ],
  p99: [
    "nodejs_eventloop_lag_p99_seconds",
    "The 99th percentile of the recorded event loop delays.",
    "average",
  ],
} as const;

/** An interval (~24.8 days, the largest a timer takes) that never comes in a process's life. */
const NEVER_MS = 2 ** 31 - 1;

/**
 * prom-client's default process metrics in `registry`, with the event-loop delay series served
 * by a BusyLoopDelay under the same names. prom-client's own histogram samples every 10 ms and
 * cannot be paused: it is given an interval that never comes. Returns the BusyLoopDelay, for
 * stop() when the process's owner stops.
 */
export function collectProcessMetrics(
  registry: Registry,
  opts: BusyLoopDelayOptions = BUSY_LOOP_DELAY_DEFAULTS,
): BusyLoopDelay {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: NEVER_MS });
  const delay = new BusyLoopDelay(opts);
  const gauges = new Map<keyof typeof SERIES, Gauge>();
  for (const [key, [name, help, aggregator]] of Object.entries(SERIES)) {
    registry.removeSingleMetric(name);
    const gauge = new Gauge({
      name,
      help,
      aggregator,
      registers: [registry],
      // As prom-client does: the first series' collect reads the histogram (and resets it) for all.
      ...(key === "min" && {
        collect() {
          const read = delay.read();
          for (const [k, g] of gauges) g.set(read[k]);
        },
      }),
    });
    gauges.set(key as keyof typeof SERIES, gauge);
  }
  return delay;
}
