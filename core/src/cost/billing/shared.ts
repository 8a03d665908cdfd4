/**
 * What the billing adapters share (./anthropic.ts, ./openai.ts, ./jsonl.ts; ./index.ts merges
 * their rows into the cost report): the error kinds, the request with its bounded retry, the
 * windows a period is split into, the page walk and its invariants, and exact money.
 *
 * Guarantees (test/e2e/cost/billing.test.ts, billing-failures.test.ts):
 * - every failure is a BillingError of one kind: `invalid_query` (provider 400, 404, 422: the
 *   query or its scope), `authentication_error` (401), `permission_error` (403),
 *   `provider_unavailable` (5xx, timeout, refused or reset connection), `rate_limited` (429),
 *   `malformed_response` (not the documented shape, a bad JSONL row), `pagination_invariant`
 *   (a missing or repeated cursor, a summary or bucket that changes between pages),
 *   `incomplete_rate_card` (the ledger fallback has usage the price card has no rate for);
 * - only `provider_unavailable` and `rate_limited` are retried: at most `maxRetries` times, the
 *   delay doubling from `retryBaseMs`, a longer `retry-after` (seconds or an HTTP date) waited
 *   instead; a provider asking for more than `retryMaxWaitMs` fails at once;
 * - no message carries a credential: every message passes `redact`, which cuts each secret the
 *   adapter holds (and an `x-api-key`/`Bearer` value) out of provider text before it is kept;
 * - a period is split into consecutive windows of at most the provider's span, aligned to
 *   whole UTC days when the provider buckets by day; the windows cover the period exactly;
 * - a page walk follows `next_page` while `has_more`: has_more without a cursor, a cursor seen
 *   before, a bucket start seen on an earlier page or a page `summary` differing from the
 *   first's is a pagination_invariant failure.
 */

export const BILLING_ERROR_TYPES = [
  'invalid_query',
  'authentication_error',
  'permission_error',
  'provider_unavailable',
  'rate_limited',
  'malformed_response',
  'pagination_invariant',
  'incomplete_rate_card',
] as const;
export type BillingErrorType = (typeof BILLING_ERROR_TYPES)[number];

const RETRYABLE: ReadonlySet<BillingErrorType> = new Set(['provider_unavailable', 'rate_limited']);

export class BillingError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly type: BillingErrorType,
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.retryable = RETRYABLE.has(type);
  }

  /** The error as the report shows it. */
  toJSON() {
    return {
      type: this.type,
      message: this.message,
      retryable: this.retryable,
      provider_status: this.status,
    };
  }
}

export interface RetryPolicy {
  requestTimeoutMs: number;
  maxRetries: number;
  retryBaseMs: number;
  retryMaxWaitMs: number;
}

/** Cuts the secrets (and any x-api-key or Bearer value) out of text meant for a message or log. */
export function redactor(secrets: Array<string | null | undefined>) {
  const list = secrets.filter((s): s is string => !!s && s.length >= 4);
  return (text: string): string => {
    let out = text;
    for (const s of list) out = out.split(s).join('[redacted]');
    return out
      .replace(/(bearer\s+)[^\s"',;]+/gi, '$1[redacted]')
      .replace(/(x-api-key["']?\s*[:=]\s*["']?)[^\s"',;]+/gi, '$1[redacted]')
      .replace(/sk-[A-Za-z0-9_-]{8,}/g, '[redacted]');
  };
}

const statusKind = (status: number): BillingErrorType => {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'provider_unavailable';
  return 'invalid_query';
};

/** Milliseconds a `retry-after` header asks for (seconds or an HTTP date), or null. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Math.ceil(Number(header) * 1000);
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

/** The provider's own error text (its `error.message` or `message`), short and redacted. */
async function providerText(res: Response, redact: (s: string) => string): Promise<string> {
  let text = '';
  try {
    text = (await res.text()).slice(0, 4000);
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const m =
      typeof body.error === 'object' && body.error
        ? body.error.message
        : (body.message ?? body.error);
    if (typeof m === 'string') text = m;
  } catch {
    // not JSON: the text as it came
  }
  return redact(text.replace(/\s+/g, ' ').trim()).slice(0, 300);
}

export interface Requester {
  /** A GET of `url` with `headers`, retried per the policy; the 2xx response (body unread). */
  get(url: URL, headers: Record<string, string>, what: string): Promise<Response>;
  redact(text: string): string;
  /** Requests sent (attempts included). */
  readonly sent: number;
}

export function requester(
  policy: RetryPolicy,
  secrets: Array<string | null>,
  sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
): Requester {
  const redact = redactor(secrets);
  let sent = 0;
  const once = async (url: URL, headers: Record<string, string>, what: string) => {
    sent++;
    let res: Response;
    try {
      res = await fetch(url, {
        headers,
        signal: AbortSignal.timeout(policy.requestTimeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string } };
      const why =
        e.name === 'TimeoutError'
          ? `no answer within ${policy.requestTimeoutMs} ms`
          : `connection failed (${e.cause?.code ?? e.name ?? 'error'})`;
      throw new BillingError('provider_unavailable', `${what}: ${why}`);
    }
    if (res.ok) return res;
    const text = await providerText(res, redact);
    throw new BillingError(
      statusKind(res.status),
      `${what}: the provider answered ${res.status}${text ? `: ${text}` : ''}`,
      res.status,
      retryAfterMs(res.headers.get('retry-after')),
    );
  };
  return {
    redact,
    get sent() {
      return sent;
    },
    async get(url, headers, what) {
      for (let attempt = 0; ; attempt++) {
        try {
          return await once(url, headers, what);
        } catch (err) {
          if (!(err instanceof BillingError) || !err.retryable || attempt >= policy.maxRetries)
            throw err;
          const wait = Math.max(policy.retryBaseMs * 2 ** attempt, err.retryAfterMs ?? 0);
          if (wait > policy.retryMaxWaitMs)
            throw new BillingError(
              err.type,
              `${err.message} (asked to wait ${wait} ms, more than ${policy.retryMaxWaitMs})`,
              err.status,
            );
          await sleep(wait);
        }
      }
    },
  };
}

/** The body as JSON, or a malformed_response failure. */
export async function jsonOf(res: Response, what: string): Promise<unknown> {
  const text = await res.text().catch(() => {
    throw new BillingError('provider_unavailable', `${what}: the answer was cut off`);
  });
  try {
    return JSON.parse(text);
  } catch {
    throw new BillingError('malformed_response', `${what}: the answer is not JSON`);
  }
}

const DAY = 86_400_000;

export interface Window {
  start: number;
  end: number;
}

/**
 * [start, end) as consecutive windows of at most `maxDays` days; with `byDay` the bounds are
 * first widened to whole UTC days (the provider's buckets).
 */
export function windowsOf(start: number, end: number, maxDays: number, byDay: boolean): Window[] {
  const s = byDay ? Math.floor(start / DAY) * DAY : start;
  const e = byDay ? Math.ceil(end / DAY) * DAY : end;
  const out: Window[] = [];
  for (let at = s; at < e; at += maxDays * DAY)
    out.push({ start: at, end: Math.min(e, at + maxDays * DAY) });
  return out;
}

export interface Page {
  data: unknown[];
  has_more: boolean;
  next_page: string | null;
  summary?: unknown;
}

/**
 * Reads one window's pages: `fetchPage(cursor)` returns a page (cursor null first); `bucketKey`
 * names a bucket (its start) so one reported on two pages is caught. Returns every bucket.
 */
export async function walkPages(
  fetchPage: (cursor: string | null) => Promise<Page>,
  bucketKey: (bucket: unknown) => string,
  what: string,
  maxPages = 1000,
): Promise<unknown[]> {
  const cursors = new Set<string>();
  const buckets = new Map<string, number>();
  const out: unknown[] = [];
  let cursor: string | null = null;
  let summary: string | undefined;
  for (let n = 0; ; n++) {
    if (n >= maxPages)
      throw new BillingError('pagination_invariant', `${what}: over ${maxPages} pages`);
    const page = await fetchPage(cursor);
    const s = JSON.stringify(page.summary ?? null);
    if (n === 0) summary = s;
    else if (s !== summary)
      throw new BillingError(
        'pagination_invariant',
        `${what}: the summary changed on page ${n + 1}`,
      );
    for (const b of page.data) {
      const key = bucketKey(b);
      const seen = buckets.get(key);
      if (seen !== undefined && seen !== n)
        throw new BillingError(
          'pagination_invariant',
          `${what}: bucket ${key} came again on page ${n + 1} (the data moved under the cursor)`,
        );
      buckets.set(key, n);
      out.push(b);
    }
    if (!page.has_more) return out;
    if (!page.next_page)
      throw new BillingError(
        'pagination_invariant',
        `${what}: has_more without a next_page cursor`,
      );
    if (cursors.has(page.next_page))
      throw new BillingError('pagination_invariant', `${what}: the next_page cursor repeated`);
    cursors.add(page.next_page);
    cursor = page.next_page;
  }
}

/** Checks the documented page envelope `{data: [], has_more, next_page}`. */
export function pageOf(body: unknown, what: string): Page {
  const b = body as Record<string, unknown> | null;
  if (
    !b ||
    typeof b !== 'object' ||
    !Array.isArray(b.data) ||
    typeof b.has_more !== 'boolean' ||
    (b.next_page !== undefined && b.next_page !== null && typeof b.next_page !== 'string')
  )
    throw new BillingError('malformed_response', `${what}: not a page {data, has_more, next_page}`);
  return {
    data: b.data,
    has_more: b.has_more,
    next_page: (b.next_page as string | null | undefined) ?? null,
    ...(b.summary !== undefined ? { summary: b.summary } : {}),
  };
}

export const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A decimal (string, or a finite number) as integer nanos of its unit; `unitsPerMajor` 100 for
 * an amount in cents. Null when it is not a decimal.
 */
export function nanosOf(v: unknown, unitsPerMajor = 1): number | null {
  let text: string;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null;
    text = v.toFixed(12);
  } else if (typeof v === 'string') text = v.trim();
  else return null;
  const m = /^(-?)(\d{1,15})(?:\.(\d+))?$/.exec(text);
  if (!m) return null;
  const frac = (m[3] ?? '').padEnd(12, '0').slice(0, 12);
  // value × 10^12 exactly, then one rounding to nanos of the major unit.
  const picos = BigInt(m[2]!) * 1_000_000_000_000n + BigInt(frac);
  const denom = 1000n * BigInt(unitsPerMajor);
  const n = Number(picos / denom + (2n * (picos % denom) >= denom ? 1n : 0n));
  return m[1] ? -n : n;
}

export const DAY_MS = DAY;

/** One provider record, normalized: a cost line or a usage line of one bucket. */
export interface BilledItem {
  provider: string;
  kind: 'cost' | 'usage';
  /** Bucket start, ms. */
  start: number;
  /** The provider's line: a model, or the cost type / invoice line it names. */
  line: string | null;
  /** The provider's project (Anthropic workspace, OpenAI project). */
  project: string | null;
  /** ISO 4217, upper case (null on usage lines). */
  currency: string | null;
  /** Billed cost in nanos of `currency`; null when the provider gave no billed cost field. */
  nanos: number | null;
  usage: Record<
    'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens',
    number
  > | null;
}

/** One dataset a source read (or failed to). */
export interface Dataset {
  name: string;
  provider: string;
  is_invoice_grade: boolean;
  status: 'complete' | 'unavailable';
  /** When the provider data was read (the last answer), null when it was not. */
  reconciled_at: string | null;
  windows: number;
  requests: number;
  error: BillingError | null;
}

export interface SourceRead {
  datasets: Dataset[];
  items: BilledItem[];
}

/** A billing source: reads [start, end) of one provider. */
export interface BillingSource {
  provider: string;
  read(start: number, end: number): Promise<SourceRead>;
}

/**
 * Runs one dataset's read: its windows in order, each window's items kept; any failure makes
 * the whole dataset unavailable (none of its items are used).
 */
export async function readDataset(
  d: { name: string; provider: string; is_invoice_grade: boolean },
  windows: Window[],
  req: Requester,
  readWindow: (w: Window) => Promise<BilledItem[]>,
): Promise<{ dataset: Dataset; items: BilledItem[] }> {
  const before = req.sent;
  const items: BilledItem[] = [];
  try {
    for (const w of windows) items.push(...(await readWindow(w)));
    return {
      dataset: {
        ...d,
        status: 'complete',
        reconciled_at: new Date().toISOString(),
        windows: windows.length,
        requests: req.sent - before,
        error: null,
      },
      items,
    };
  } catch (err) {
    const e =
      err instanceof BillingError
        ? err
        : new BillingError('malformed_response', `${d.name}: ${req.redact(String(err))}`);
    return {
      dataset: {
        ...d,
        status: 'unavailable',
        reconciled_at: null,
        windows: windows.length,
        requests: req.sent - before,
        error: e,
      },
      items: [],
    };
  }
}
