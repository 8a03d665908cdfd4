/** One latency figure of a core bench: nearest-rank p50/p99 and the mean of samples in ms. */
export interface LatencyRow {
  measurement: string;
  n: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const round = (x: number) => Math.round(x * 100) / 100;

export function latencyRow(measurement: string, samples: number[]): LatencyRow {
  const s = [...samples].sort((a, b) => a - b);
  return {
    measurement,
    n: s.length,
    p50_ms: round(pct(s, 50)),
    p99_ms: round(pct(s, 99)),
    mean_ms: round(s.reduce((a, b) => a + b, 0) / s.length),
  };
}
