/**
 * Locust's CSV stats (`--csv <prefix>`: <prefix>_stats.csv, <prefix>_failures.csv) read into
 * rows keyed by column name, and the stats printed as a fixed-width table. Used by run.ts and
 * test/e2e/fleet/load-locust.test.ts.
 */

/** Rows of a CSV file with a header line; fields may be double-quoted ("" inside is a quote). */
export function parseCsv(text: string): Array<Record<string, string>> {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      field = '';
      record = [];
    } else field += c;
  }
  if (field !== '' || record.length > 0) records.push([...record, field]);
  const [head, ...rows] = records.filter((r) => r.length > 1 || r[0] !== '');
  if (!head) return [];
  return rows.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i] ?? ''])));
}

const COLUMNS: Array<[string, string]> = [
  ['Type', 'type'],
  ['Name', 'name'],
  ['Request Count', 'requests'],
  ['Failure Count', 'failures'],
  ['50%', 'p50 ms'],
  ['95%', 'p95 ms'],
  ['99%', 'p99 ms'],
  ['Max Response Time', 'max ms'],
  ['Requests/s', 'req/s'],
];

/** The stats rows (the Aggregated row last, as Locust writes it) as an aligned text table. */
export function formatStatsTable(rows: Array<Record<string, string>>): string {
  const cell = (row: Record<string, string>, col: string) => {
    const v = row[col] ?? '';
    const n = Number(v);
    if (col === 'Requests/s' && v !== '' && Number.isFinite(n)) return n.toFixed(1);
    if (col === 'Max Response Time' && v !== '' && Number.isFinite(n)) return n.toFixed(0);
    return v;
  };
  const table = [
    COLUMNS.map(([, label]) => label),
    ...rows.map((r) => COLUMNS.map(([c]) => cell(r, c))),
  ];
  const widths = COLUMNS.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  return table
    .map((r) => r.map((v, i) => (i < 2 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  '))
    .join('\n');
}
