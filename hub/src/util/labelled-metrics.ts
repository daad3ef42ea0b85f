import type { Metric, MetricValueWithName, Registry } from "prom-client";

type Line = MetricValueWithName<string>;

export interface LabelledMetricOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly registers: readonly Registry[];
}

/**
 * Prometheus series for the hub's hot paths (every reconcile, every apply result, every cloud
 * call). prom-client's inc() and observe() copy, validate and hash their labels object into a
 * string on every call; here a series is found by its label values in nested maps (the values
 * are the callers' own strings, whose hashes V8 keeps), and recording is a few additions. These
 * register in a prom-client registry and render exactly the lines prom-client's Counter and
 * Histogram would for the same calls.
 */
abstract class LabelledMetric<L extends string, S extends { readonly labels: Record<string, string> }> {
  abstract readonly type: "counter" | "histogram";
  readonly aggregator = "sum" as const;
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly L[];
  private readonly root = new Map<string, unknown>();
  protected readonly all: S[] = [];

  constructor(opts: LabelledMetricOptions<L>) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    for (const r of opts.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in labelNames' order), made on first use. */
  protected find(values: readonly string[]): S {
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
    const last = values[values.length - 1] ?? "";
    const found = level.get(last) as S | undefined;
    if (found !== undefined) return found;
    const labels: Record<string, string> = {};
    this.labelNames.forEach((n, i) => {
      labels[n] = values[i] as string;
    });
    const made = this.make(labels);
    this.all.push(made);
    level.set(last, made);
    return made;
  }

  protected valuesOf(labels: Readonly<Record<L, string>>): string[] {
    return this.labelNames.map((n) => labels[n]);
  }

  protected abstract make(labels: Record<string, string>): S;
  protected abstract lines(s: S, into: Line[]): void;

  /** What prom-client's registry renders, in the shape prom-client's own get() answers. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: "sum"; values: Line[] }> {
    const values: Line[] = [];
    for (const s of this.all) this.lines(s, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Drops every series, as prom-client's reset does (a series held from before counts nowhere). */
  reset(): void {
    this.root.clear();
    this.all.length = 0;
  }
}

/** One label set's count. */
export interface CounterSeries {
  inc(by?: number): void;
}

interface CounterState extends CounterSeries {
  readonly labels: Record<string, string>;
  value: number;
}

export class LabelledCounter<L extends string> extends LabelledMetric<L, CounterState> {
  readonly type = "counter" as const;

  series(...values: string[]): CounterSeries {
    return this.find(values);
  }

  /** inc() by a labels object, for cold paths. */
  inc(labels: Readonly<Record<L, string>>, by = 1): void {
    this.find(this.valuesOf(labels)).inc(by);
  }

  protected make(labels: Record<string, string>): CounterState {
    const name = this.name;
    const s: CounterState = {
      labels,
      value: 0,
      inc(by = 1) {
        if (!(Number.isFinite(by) && by >= 0))
          throw new TypeError(`${name}: a counter goes up by a finite amount >= 0, not ${by}`);
        s.value += by;
      },
    };
    return s;
  }

  protected lines(s: CounterState, into: Line[]): void {
    into.push({ value: s.value, labels: { ...s.labels } });
  }
}

/** One label set's observations. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface HistogramState extends HistogramSeries {
  readonly labels: Record<string, string>;
  /** Per bucket, not cumulative; the last slot is above every bound (+Inf). */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class LabelledHistogram<L extends string> extends LabelledMetric<L, HistogramState> {
  readonly type = "histogram" as const;
  private readonly bounds: readonly number[];

  /** `buckets`: upper bounds. */
  constructor(opts: LabelledMetricOptions<L> & { readonly buckets: readonly number[] }) {
    super(opts);
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
  }

  series(...values: string[]): HistogramSeries {
    return this.find(values);
  }

  /** observe() by a labels object, for cold paths. */
  observe(labels: Readonly<Record<L, string>>, value: number): void {
    this.find(this.valuesOf(labels)).observe(value);
  }

  protected make(labels: Record<string, string>): HistogramState {
    const bounds = this.bounds;
    const name = this.name;
    const s: HistogramState = {
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
    return s;
  }

  /** Per series its buckets (cumulative), +Inf, sum and count, each line's labels `le` first. */
  protected lines(s: HistogramState, into: Line[]): void {
    const bucket = `${this.name}_bucket`;
    let acc = 0;
    this.bounds.forEach((le, i) => {
      acc += s.counts[i] as number;
      into.push({ labels: { le, ...s.labels }, value: acc, metricName: bucket });
    });
    into.push(
      { labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: bucket },
      { labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` },
      { labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` },
    );
  }
}
