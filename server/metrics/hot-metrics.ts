/**
 * Counters and histograms for the metrics every review updates. prom-client's own inc()/observe() validate
 * and hash the label object and turn the bucket bound into a property key on every call, about 0.4 µs each,
 * and a review of a three-step chain makes eight such calls. These find their series through one Map per
 * label instead (the label values are the same strings every time: phases, operations, step names from the
 * config) and add to numbers. They register in the same prom-client Registry and render exactly as
 * prom-client's own Counter and Histogram do (test/unit/metrics compares the text).
 */
import type { Metric, Registry } from 'prom-client';

type LabelValues<T extends string> = Readonly<Record<T, string>>;

/** One rendered value, as prom-client's metrics give them to the Registry. */
export interface SampleValue {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  /** For a histogram: `<name>_bucket`, `_sum` or `_count`. */
  readonly metricName?: string;
}

/** What get() returns: the shape the Registry renders (prom-client's typings call `type` an enum; it is a string). */
export interface MetricSnapshot {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly aggregator: 'sum';
  readonly values: readonly SampleValue[];
}

interface MetricConfig<T extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly T[];
  readonly registers: readonly Registry[];
}

/** The series of one metric by label values: one Map level per label name, a series at the leaves. */
class SeriesIndex<T extends string, S> {
  // Both set by clear(), which the constructor calls.
  private root!: Map<string, unknown>;
  /** Every series with its labels, in creation order (the order prom-client renders in). */
  entries!: Array<{ readonly labels: LabelValues<T>; readonly series: S }>;

  constructor(
    private readonly labelNames: readonly T[],
    private readonly create: () => S,
  ) {
    this.clear();
  }

  get(labels: LabelValues<T> | undefined): S {
    const names = this.labelNames;
    let node = this.root;
    for (let i = 0; i < names.length - 1; i++) {
      const value = labels![names[i]!];
      let next = node.get(value) as Map<string, unknown> | undefined;
      if (!next) node.set(value, (next = new Map()));
      node = next;
    }
    const key = names.length === 0 ? '' : labels![names[names.length - 1]!];
    let series = node.get(key) as S | undefined;
    if (series === undefined) {
      series = this.create();
      node.set(key, series);
      this.entries.push({ labels: this.copy(labels), series });
    }
    return series;
  }

  /** The labels as given, in the metric's label order, without undefined values (as prom-client does). */
  private copy(labels: LabelValues<T> | undefined): LabelValues<T> {
    const out = {} as Record<T, string>;
    for (const name of this.labelNames) {
      const value = labels?.[name];
      if (value !== undefined) out[name] = value;
    }
    return out;
  }

  /** Drops every series; a metric without labels keeps its one series, at zero (as prom-client's do). */
  clear(): void {
    this.root = new Map();
    this.entries = [];
    if (this.labelNames.length === 0) this.get(undefined);
  }
}

/** What the Registry needs of a metric: name, help, type, get() and reset(). */
abstract class RegisteredMetric {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  abstract readonly type: MetricSnapshot['type'];

  constructor(config: Omit<MetricConfig<string>, 'labelNames'>) {
    this.name = config.name;
    this.help = config.help;
    // The Registry renders any metric with name, help, type and get(); its type names only its own classes.
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** Called by Registry.resetMetrics(). */
  abstract reset(): void;
  abstract get(): Promise<MetricSnapshot>;

  protected snapshot(values: readonly SampleValue[]): Promise<MetricSnapshot> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }
}

abstract class HotMetric<T extends string, S> extends RegisteredMetric {
  protected readonly index: SeriesIndex<T, S>;

  constructor(config: MetricConfig<T>, create: () => S) {
    super(config);
    this.index = new SeriesIndex(config.labelNames, create);
  }

  reset(): void {
    this.index.clear();
  }
}

interface CounterSeries {
  value: number;
}

export class HotCounter<T extends string> extends HotMetric<T, CounterSeries> {
  readonly type = 'counter' as const;

  constructor(config: MetricConfig<T>) {
    super(config, () => ({ value: 0 }));
  }

  inc(labels: LabelValues<T>, value = 1): void {
    if (!(value >= 0) || !Number.isFinite(value)) throw new RangeError(`${this.name}: cannot add ${value}`);
    this.index.get(labels).value += value;
  }

  get(): Promise<MetricSnapshot> {
    return this.snapshot(this.index.entries.map(({ labels, series }) => ({ labels, value: series.value })));
  }
}

interface HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export class HotHistogram<T extends string> extends HotMetric<T, HistogramSeries> {
  readonly type = 'histogram' as const;
  private readonly bounds: Float64Array;

  constructor(config: MetricConfig<T> & { readonly buckets: readonly number[] }) {
    const bounds = Float64Array.from(config.buckets);
    super(config, () => ({ counts: new Float64Array(bounds.length + 1), sum: 0, count: 0 }));
    this.bounds = bounds;
  }

  observe(labels: LabelValues<T>, value: number): void {
    if (!Number.isFinite(value)) throw new RangeError(`${this.name}: cannot observe ${value}`);
    const series = this.index.get(labels);
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.counts[i]!++;
    series.sum += value;
    series.count++;
  }

  get(): Promise<MetricSnapshot> {
    const values: SampleValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, series } of this.index.entries) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: bucket });
      });
      values.push(
        { labels: { le: '+Inf', ...labels }, value: series.count, metricName: bucket },
        { labels: { ...labels }, value: series.sum, metricName: `${this.name}_sum` },
        { labels: { ...labels }, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return this.snapshot(values);
  }
}

/** A gauge without labels that is only ever moved by one (requests in flight): a number, no series lookup. */
export class HotGauge extends RegisteredMetric {
  readonly type = 'gauge' as const;
  private value = 0;

  inc(): void {
    this.value++;
  }

  dec(): void {
    this.value--;
  }

  add(delta: number): void {
    this.value += delta;
  }

  reset(): void {
    this.value = 0;
  }

  get(): Promise<MetricSnapshot> {
    return this.snapshot([{ labels: {}, value: this.value }]);
  }
}
