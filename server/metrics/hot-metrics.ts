/**
 * A counter for the series every review updates (docs/decisions.md, "Hot metrics"). prom-client's own
 * Counter.inc() validates and hashes the label object on every call; this one finds its series through one
 * Map per label instead (the label values are the same strings every time: phases, operations, step names
 * from the config) and adds to a number. A prom-client Counter renders the totals: its collect hook, which
 * the Registry runs before each scrape, copies them in through the Counter's public methods, so /metrics is
 * what prom-client's Counter gives for the same updates (test/unit/metrics compares the text).
 * There is no histogram here: prom-client has no public way to set a histogram's buckets other than one
 * observe() per observation, so the review path observes into prom-client's Histogram directly.
 */
import { Counter, type CounterConfiguration } from 'prom-client';

type LabelValues<T extends string> = Readonly<Record<T, string>>;

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

interface CounterSeries {
  value: number;
}

/**
 * The prom-client Counter that renders a HotCounter's totals. Registry.resetMetrics() resets it: the totals
 * go too, or the next scrape would bring them back.
 */
class TotalsCounter<T extends string> extends Counter<T> {
  // Unset while prom-client's constructor calls reset().
  private readonly totals: SeriesIndex<T, CounterSeries> | undefined;

  constructor(config: CounterConfiguration<T>, totals: SeriesIndex<T, CounterSeries>) {
    super({
      ...config,
      collect() {
        // Removed and added again, each series takes the total as it is, and in creation order.
        for (const { labels, series } of totals.entries) {
          this.remove(labels);
          this.inc(labels, series.value);
        }
      },
    });
    this.totals = totals;
  }

  override reset(): void {
    super.reset();
    this.totals?.clear();
  }
}

export class HotCounter<T extends string> {
  private readonly totals: SeriesIndex<T, CounterSeries>;
  private readonly counter: Counter<T>;
  private readonly name: string;

  constructor(config: CounterConfiguration<T> & { readonly labelNames: readonly T[] }) {
    this.name = config.name;
    this.totals = new SeriesIndex(config.labelNames, () => ({ value: 0 }));
    this.counter = new TotalsCounter(config, this.totals);
  }

  inc(labels: LabelValues<T>, value = 1): void {
    if (!(value >= 0) || !Number.isFinite(value)) throw new RangeError(`${this.name}: cannot add ${value}`);
    this.totals.get(labels).value += value;
  }

  /** What prom-client's Counter.get() gives: the values as the next scrape renders them. */
  get(): ReturnType<Counter<T>['get']> {
    return this.counter.get();
  }
}
