/**
 * A generic billing export streamed as JSON lines (the "jsonl" source, BILLING_JSONL_URL): a
 * cost export, a FinOps tool or a proxy that already holds billed cost.
 *
 * The request: `GET <url>?starting_at=<RFC 3339>&ending_at=<RFC 3339>` with `Accept:
 * application/x-ndjson` and, when BILLING_JSONL_TOKEN is set, `Authorization: Bearer <token>`;
 * the whole period in one request (the stream has no window limit).
 *
 * The answer: 200 with `Content-Type: application/x-ndjson` (or `application/jsonl`), one JSON
 * object a line (blank lines skipped):
 *   {"starting_at": "2026-01-05T00:00:00Z", "cost": "12.50", "currency": "USD",
 *    "model": "claude-sonnet-4-5", "project_id": "proj_1"}
 * `starting_at` (required) is the start of the row's period; `cost` (required) a decimal string
 * or number in the currency's major unit, or null when the row has no billed cost yet;
 * `currency` (required) ISO 4217; `model` and `project_id` optional strings; other fields are
 * ignored. Rows whose `starting_at` is outside [starting_at, ending_at) are dropped.
 *
 * Guarantees (test/e2e/cost/billing-failures.test.ts "JSONL"):
 * - one malformed row (not JSON, not an object, a field of the wrong type, a bad time, cost or
 *   currency, a line over 64 KiB, more than 1,000,000 rows) or a wrong content type fails the
 *   whole stream: malformed_response, none of its rows are used;
 * - an empty successful stream is a complete dataset of no rows (a total of zero);
 * - rows in several currencies are kept apart (one row per currency): the report is then
 *   partial with total_cost null;
 * - is_invoice_grade is false: the platform cannot tell what produced the export.
 */
import {
  BillingError,
  isObj,
  nanosOf,
  readDataset,
  requester,
  type BilledItem,
  type BillingSource,
  type RetryPolicy,
  type Window,
} from './shared.js';

export const MAX_LINE_BYTES = 64 * 1024;
export const MAX_ROWS = 1_000_000;
const TYPES = new Set(['application/x-ndjson', 'application/jsonl', 'application/json-lines']);

export interface JsonlBillingOptions extends RetryPolicy {
  url: string;
  token: string | null;
}

function rowOf(line: string, n: number, w: Window): BilledItem | null {
  const what = `jsonl row ${n}`;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new BillingError('malformed_response', `${what}: not JSON`);
  }
  if (!isObj(v)) throw new BillingError('malformed_response', `${what}: not an object`);
  const start = typeof v.starting_at === 'string' ? Date.parse(v.starting_at) : NaN;
  if (!Number.isFinite(start))
    throw new BillingError('malformed_response', `${what}: starting_at is not an RFC 3339 time`);
  if (typeof v.currency !== 'string' || !/^[A-Z]{3}$/.test(v.currency))
    throw new BillingError('malformed_response', `${what}: currency is not ISO 4217 (e.g. USD)`);
  if (!('cost' in v)) throw new BillingError('malformed_response', `${what}: no cost`);
  const nanos = v.cost === null ? null : nanosOf(v.cost);
  if (v.cost !== null && nanos === null)
    throw new BillingError('malformed_response', `${what}: cost is not a decimal`);
  for (const f of ['model', 'project_id'])
    if (v[f] !== undefined && v[f] !== null && typeof v[f] !== 'string')
      throw new BillingError('malformed_response', `${what}: ${f} is not a string`);
  if (start < w.start || start >= w.end) return null;
  return {
    provider: 'jsonl',
    kind: 'cost',
    start,
    line: (v.model as string | undefined) ?? null,
    project: (v.project_id as string | undefined) ?? null,
    currency: v.currency,
    nanos,
    usage: null,
  };
}

export function jsonlBilling(o: JsonlBillingOptions): BillingSource {
  const headers: Record<string, string> = { accept: 'application/x-ndjson' };
  if (o.token) headers.authorization = `Bearer ${o.token}`;

  const streamWindow =
    (req: ReturnType<typeof requester>) =>
    async (w: Window): Promise<BilledItem[]> => {
      const url = new URL(o.url);
      url.searchParams.set('starting_at', new Date(w.start).toISOString());
      url.searchParams.set('ending_at', new Date(w.end).toISOString());
      const res = await req.get(url, headers, 'jsonl export');
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (!TYPES.has(type)) {
        await res.body?.cancel().catch(() => {});
        throw new BillingError(
          'malformed_response',
          `jsonl export: content type ${JSON.stringify(type.slice(0, 60))} is not application/x-ndjson`,
        );
      }
      const out: BilledItem[] = [];
      const decoder = new TextDecoder('utf-8', { fatal: true });
      let rest = '';
      let n = 0;
      const take = (line: string) => {
        n++;
        if (n > MAX_ROWS)
          throw new BillingError('malformed_response', `jsonl export: over ${MAX_ROWS} rows`);
        if (!line.trim()) return;
        const row = rowOf(line, n, w);
        if (row) out.push(row);
      };
      const reader = res.body?.getReader();
      try {
        for (;;) {
          let chunk: { done: true; value?: undefined } | { done: false; value: Uint8Array };
          try {
            chunk = reader
              ? ((await reader.read()) as typeof chunk)
              : { done: true, value: undefined };
          } catch {
            throw new BillingError('provider_unavailable', 'jsonl export: the stream broke off');
          }
          let text: string;
          try {
            text = chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
          } catch {
            throw new BillingError('malformed_response', 'jsonl export: not UTF-8');
          }
          rest += text;
          const lines = rest.split('\n');
          rest = lines.pop()!;
          for (const line of lines) take(line);
          if (rest.length > MAX_LINE_BYTES)
            throw new BillingError(
              'malformed_response',
              `jsonl export: a line is over ${MAX_LINE_BYTES} bytes`,
            );
          if (chunk.done) break;
        }
        if (rest) take(rest);
      } finally {
        await reader?.cancel().catch(() => {});
      }
      return out;
    };

  return {
    provider: 'jsonl',
    async read(start, end) {
      const req = requester(o, [o.token]);
      const r = await readDataset(
        { name: 'jsonl', provider: 'jsonl', is_invoice_grade: false },
        [{ start, end }],
        req,
        streamWindow(req),
      );
      return { datasets: [r.dataset], items: r.items };
    },
  };
}
