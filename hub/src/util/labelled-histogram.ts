import type { Metric, MetricValueWithName, Registry } from "prom-client";

type Line = MetricValueWithName<string>;

/** One label set's observations. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface SeriesState extends HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  /** Per bucket, not cumulative; the last slot is above every bound (+Inf). */
  readonly counts: number[];
  sum: number;
  count: number;
}

export interface LabelledHistogramOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Upper bounds, ascending. */
  readonly buckets: readonly number[];
  readonly registers: readonly Registry[];
}

/**
 * A Prometheus histogram for the hub's hot paths (every reconcile, every cloud call). prom-client's
 * observe() copies, validates and hashes its labels object into a string on every call; here a
 * label set is looked up by its values in nested maps (the values are the callers' own constant
 * strings, whose hashes V8 keeps), and an observation is a bucket search and three additions.
 * It registers in a prom-client registry and exposes exactly the lines prom-client's Histogram
 * would for the same observations.
 */
export class LabelledHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram" as const;
  readonly aggregator = "sum" as const;
  private readonly labelNames: readonly L[];
  private readonly bounds: readonly number[];
  private readonly root = new Map<string, unknown>();
  private readonly all: SeriesState[] = [];

  constructor(opts: LabelledHistogramOptions<L>) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
    for (const r of opts.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in labelNames' order), made on first use. */
  series(...values: string[]): HistogramSeries {
    if (values.length !== this.labelNames.length)
      throw new RangeError(
        `${this.name}: ${values.length} label values for ${this.labelNames.length} labels`,
      );
    let level = this.root;
    for (let i = 0; i < values.length - 1; i++) {
      const v = values[i] as string;
      let next = level.get(v) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(v, next);
      }
      level = next;
    }
    const last = values[values.length - 1] as string;
    const found = level.get(last) as SeriesState | undefined;
    if (found !== undefined) return found;
    const made = this.make(values);
    level.set(last, made);
    return made;
  }

  /** observe() by a labels object, for cold paths. */
  observe(labels: Readonly<Record<L, string>>, value: number): void {
    this.series(...this.labelNames.map((n) => labels[n])).observe(value);
  }

  private make(values: readonly string[]): SeriesState {
    const labels: Record<string, string> = {};
    this.labelNames.forEach((n, i) => {
      labels[n] = values[i] as string;
    });
    const bounds = this.bounds;
    const name = this.name;
    const s: SeriesState = {
      labels,
      counts: new Array<number>(bounds.length + 1).fill(0),
      sum: 0,
      count: 0,
      observe(value: number) {
        if (!Number.isFinite(value)) throw new TypeError(`${name}: value is not a finite number: ${value}`);
        let i = 0;
        while (i < bounds.length && value > (bounds[i] as number)) i++;
        (s.counts[i] as number)++;
        s.sum += value;
        s.count++;
      },
    };
    this.all.push(s);
    return s;
  }

  /**
   * What prom-client's registry renders, in the shape its Histogram's get() answers: per series
   * its buckets (cumulative), +Inf, sum and count, each line's labels `le` first.
   */
  async get(): Promise<{ name: string; help: string; type: "histogram"; aggregator: "sum"; values: Line[] }> {
    const values: Line[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i] as number;
        values.push({ labels: { le, ...s.labels }, value: acc, metricName: bucket });
      });
      values.push(
        { labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: bucket },
        { labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` },
        { labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Drops every series, as prom-client's reset does (a series held from before counts nowhere). */
  reset(): void {
    this.root.clear();
    this.all.length = 0;
  }
}
