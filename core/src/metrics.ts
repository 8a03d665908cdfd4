/**
 * Prometheus metrics in the text exposition format (version 0.0.4): counters, gauges and
 * histograms with labels, plus collectors sampled at scrape time. One registry per process.
 */
type Labels = Record<string, string | number>;

/** A label set's map key, independent of key order (on every request's path: no JSON, no locale compare). */
const key = (l: Labels) => {
  const names = Object.keys(l);
  if (names.length > 1) names.sort();
  let k = '';
  for (const n of names) {
    const v = l[n]!;
    k += `${n}=${typeof v === 'number' ? v : JSON.stringify(v)},`;
  }
  return k;
};
const fmtLabels = (l: Labels, extra: Labels = {}) => {
  const all = { ...l, ...extra };
  const parts = Object.entries(all).map(
    ([k, v]) =>
      `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  );
  return parts.length ? `{${parts.join(',')}}` : '';
};

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}
  abstract lines(): string[];
  header(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
  }
}

export class Counter extends Metric {
  private readonly values = new Map<string, { labels: Labels; v: number }>();
  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    const cur = this.values.get(k);
    if (cur) cur.v += by;
    else this.values.set(k, { labels, v: by });
  }
  get(labels: Labels = {}): number {
    return this.values.get(key(labels))?.v ?? 0;
  }
  /**
   * One series, for a hot path that bumps it repeatedly: no label key per call. The series is
   * created at its first inc, as with inc(labels).
   */
  series(labels: Labels = {}): { inc(by?: number): void } {
    const k = key(labels);
    let cur = this.values.get(k);
    return {
      inc: (by = 1) => {
        if (!cur && !(cur = this.values.get(k))) this.values.set(k, (cur = { labels, v: 0 }));
        cur.v += by;
      },
    };
  }
  lines(): string[] {
    return [...this.values.values()].map((x) => `${this.name}${fmtLabels(x.labels)} ${x.v}`);
  }
}

export class Gauge extends Metric {
  private readonly values = new Map<string, { labels: Labels; v: number }>();
  constructor(
    name: string,
    help: string,
    private readonly sample?: () => number | Array<[Labels, number]>,
  ) {
    super(name, help, 'gauge');
  }
  set(v: number, labels: Labels = {}): void {
    this.values.set(key(labels), { labels, v });
  }
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    const cur = this.values.get(k);
    if (cur) cur.v += by;
    else this.values.set(k, { labels, v: by });
  }
  dec(labels: Labels = {}, by = 1): void {
    this.inc(labels, -by);
  }
  lines(): string[] {
    if (this.sample) {
      const s = this.sample();
      return typeof s === 'number'
        ? [`${this.name} ${s}`]
        : s.map(([l, v]) => `${this.name}${fmtLabels(l)} ${v}`);
    }
    return [...this.values.values()].map((x) => `${this.name}${fmtLabels(x.labels)} ${x.v}`);
  }
}

export class Histogram extends Metric {
  private readonly values = new Map<
    string,
    { labels: Labels; counts: number[]; sum: number; n: number }
  >();
  constructor(
    name: string,
    help: string,
    private readonly buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  ) {
    super(name, help, 'histogram');
  }
  observe(value: number, labels: Labels = {}): void {
    this.record(this.entry(key(labels), labels), value);
  }
  /** One series, for a hot path that observes it repeatedly: no label key per call. */
  series(labels: Labels = {}): { observe(value: number): void } {
    const k = key(labels);
    return { observe: (value) => this.record(this.entry(k, labels), value) };
  }
  private entry(k: string, labels: Labels) {
    let cur = this.values.get(k);
    if (!cur)
      this.values.set(k, (cur = { labels, counts: this.buckets.map(() => 0), sum: 0, n: 0 }));
    return cur;
  }
  private record(cur: { counts: number[]; sum: number; n: number }, value: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) if (value <= b[i]!) cur.counts[i]!++;
    cur.sum += value;
    cur.n++;
  }
  lines(): string[] {
    const out: string[] = [];
    for (const x of this.values.values()) {
      this.buckets.forEach((b, i) =>
        out.push(`${this.name}_bucket${fmtLabels(x.labels, { le: b })} ${x.counts[i]}`),
      );
      out.push(`${this.name}_bucket${fmtLabels(x.labels, { le: '+Inf' })} ${x.n}`);
      out.push(`${this.name}_sum${fmtLabels(x.labels)} ${x.sum}`);
      out.push(`${this.name}_count${fmtLabels(x.labels)} ${x.n}`);
    }
    return out;
  }
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();
  register<M extends Metric>(m: M): M {
    const existing = this.metrics.get(m.name);
    if (existing) return existing as M;
    this.metrics.set(m.name, m);
    return m;
  }
  counter(name: string, help: string) {
    return this.register(new Counter(name, help));
  }
  gauge(name: string, help: string, sample?: () => number | Array<[Labels, number]>) {
    return this.register(new Gauge(name, help, sample));
  }
  histogram(name: string, help: string, buckets?: number[]) {
    return this.register(new Histogram(name, help, buckets));
  }
  render(): string {
    const out: string[] = [];
    for (const m of this.metrics.values()) out.push(...m.header(), ...m.lines());
    return `${out.join('\n')}\n`;
  }
}

/** The platform's metrics, shared by gateway and worker code in one process. */
export function platformMetrics(registry = new Registry()) {
  const started = Date.now();
  registry.gauge(
    'agentfleet_process_uptime_seconds',
    'Seconds since the process started',
    () => (Date.now() - started) / 1000,
  );
  registry.gauge(
    'agentfleet_process_resident_memory_bytes',
    'Resident set size',
    () => process.memoryUsage().rss,
  );
  return {
    registry,
    httpRequests: registry.counter(
      'agentfleet_http_requests_total',
      'HTTP requests by method, route and status',
    ),
    httpDuration: registry.histogram(
      'agentfleet_http_request_duration_seconds',
      'HTTP request duration',
    ),
    sseStreams: registry.gauge('agentfleet_sse_streams', 'Open SSE streams'),
    turnsStarted: registry.counter('agentfleet_turns_started_total', 'Turns started'),
    turnsFinished: registry.counter(
      'agentfleet_turns_finished_total',
      'Turns finished, by stop reason',
    ),
    turnRecoveries: registry.counter(
      'agentfleet_turn_recoveries_total',
      'Orphaned turns resumed after a worker died',
    ),
    modelRequests: registry.counter(
      'agentfleet_model_requests_total',
      'Model requests by protocol and outcome',
    ),
    modelDuration: registry.histogram(
      'agentfleet_model_request_duration_seconds',
      'Model request duration',
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    ),
    eventsAppended: registry.counter('agentfleet_events_appended_total', 'Session events appended'),
  };
}
export type PlatformMetrics = ReturnType<typeof platformMetrics>;
