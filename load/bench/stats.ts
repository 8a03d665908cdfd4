/** Shared figures and formatting for the bench sections. Figures only: no thresholds. */

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  return {
    n: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

/** Milliseconds since an arbitrary origin, sub-ms resolution. */
export const nowMs = (): number => performance.now();

/** Formats a number for a table cell: fixed decimals, thousands kept readable. */
export function fmt(v: number | undefined | null, decimals = 2): string {
  if (v === undefined || v === null || Number.isNaN(v)) return '-';
  if (!Number.isFinite(v)) return String(v);
  return v.toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  });
}

export const fmtInt = (v: number | undefined | null): string => fmt(v, 0);

export type Cell = string | number;

/** Prints a labelled, aligned table: numbers right-aligned, text left-aligned. */
export function printTable(
  title: string,
  headers: string[],
  rows: Cell[][],
  notes: string[] = [],
): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)),
  );
  const numeric = headers.map(
    (_, i) =>
      rows.length > 0 &&
      rows.every(
        (r) => typeof r[i] === 'number' || /^[-\d.,]+( ?[a-z/%x]+)?$/i.test(String(r[i] ?? '')),
      ),
  );
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] && i > 0 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  console.log(`\n${title}`);
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells) console.log(line(r));
  for (const n of notes) console.log(`  ${n}`);
}

/** A section heading for the run's output. */
export function printSection(label: string): void {
  console.log(`\n${'='.repeat(78)}\n${label}\n${'='.repeat(78)}`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
