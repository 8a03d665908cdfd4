/**
 * Anthropic's Usage & Cost Admin API as a billing source, following Anthropic's API reference
 * "Get Cost Report" (`GET /v1/organizations/cost_report`) and "Get Messages Usage Report"
 * (`GET /v1/organizations/usage_report/messages`), platform.claude.com/docs/en/api/admin:
 * - headers `x-api-key: <admin key>` and `anthropic-version: 2023-06-01`;
 * - query `starting_at`, `ending_at` (RFC 3339), `bucket_width=1d`, `group_by[]`, `limit`,
 *   `page` (the previous answer's `next_page`);
 * - answer `{data: [{starting_at, ending_at, results: [...]}], has_more, next_page}`;
 * - cost results: `amount`, a decimal string in the currency's lowest units ("123.45" in USD
 *   is $1.23), `currency` (documented default "USD"), and with `group_by[]=description` the
 *   `model` (null for non-token costs), `cost_type`, `token_type`, `description`; with
 *   `group_by[]=workspace_id` the `workspace_id` (null: the default workspace);
 * - usage results: `uncached_input_tokens`, `cache_read_input_tokens`, `cache_creation:
 *   {ephemeral_1h_input_tokens, ephemeral_5m_input_tokens}`, `output_tokens`, with `model`
 *   and `workspace_id` when grouped by them;
 * - `limit` at `1d` is at most 31 buckets: each request covers a window of at most 31 whole
 *   UTC days (a longer period is split; pages within a window are followed too).
 *
 * is_invoice_grade is false: the reference lists the cost report among the beta organization
 * endpoints (`api/beta/organization/cost_report`), and Anthropic's usage-cost guide says it
 * excludes Priority Tier costs — it is not the invoice.
 *
 * Proved by test/e2e/cost/billing.test.ts (windows, headers, cents, workspaces, usage) and
 * billing-failures.test.ts (statuses, pages, the key never shown).
 */
import {
  DAY_MS,
  BillingError,
  isObj,
  jsonOf,
  nanosOf,
  pageOf,
  readDataset,
  requester,
  walkPages,
  windowsOf,
  type BilledItem,
  type BillingSource,
  type Requester,
  type RetryPolicy,
  type Window,
} from './shared.js';

/** Most `1d` buckets per request (the documented `limit` maximum). */
export const ANTHROPIC_MAX_DAYS = 31;

export interface AnthropicBillingOptions extends RetryPolicy {
  adminKey: string;
  baseUrl: string;
}

const int = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

function bucketsOf(body: unknown, what: string) {
  const page = pageOf(body, what);
  for (const b of page.data)
    if (
      !isObj(b) ||
      typeof b.starting_at !== 'string' ||
      !Number.isFinite(Date.parse(b.starting_at)) ||
      !Array.isArray(b.results) ||
      !b.results.every(isObj)
    )
      throw new BillingError(
        'malformed_response',
        `${what}: a bucket is not {starting_at, results}`,
      );
  return page;
}

export function anthropicBilling(o: AnthropicBillingOptions): BillingSource {
  const headers = { 'x-api-key': o.adminKey, 'anthropic-version': '2023-06-01' };
  const base = o.baseUrl.replace(/\/+$/, '');

  const walk = (req: Requester, path: string, groupBy: string[], w: Window, what: string) =>
    walkPages(
      async (cursor) => {
        const url = new URL(`${base}${path}`);
        url.searchParams.set('starting_at', new Date(w.start).toISOString());
        url.searchParams.set('ending_at', new Date(w.end).toISOString());
        url.searchParams.set('bucket_width', '1d');
        for (const g of groupBy) url.searchParams.append('group_by[]', g);
        url.searchParams.set('limit', String(Math.round((w.end - w.start) / DAY_MS)));
        if (cursor) url.searchParams.set('page', cursor);
        return bucketsOf(await jsonOf(await req.get(url, headers, what), what), what);
      },
      (b) => (b as { starting_at: string }).starting_at,
      what,
    ) as Promise<Array<{ starting_at: string; results: Record<string, unknown>[] }>>;

  const costWindow =
    (req: Requester) =>
    async (w: Window): Promise<BilledItem[]> => {
      const what = 'anthropic cost_report';
      const out: BilledItem[] = [];
      for (const b of await walk(
        req,
        '/v1/organizations/cost_report',
        ['description', 'workspace_id'],
        w,
        what,
      ))
        for (const r of b.results) {
          if (
            r.currency !== undefined &&
            (typeof r.currency !== 'string' || !/^[A-Za-z]{3}$/.test(r.currency))
          )
            throw new BillingError(
              'malformed_response',
              `${what}: a result's currency is not ISO 4217`,
            );
          const nanos = r.amount === undefined || r.amount === null ? null : nanosOf(r.amount, 100);
          if (r.amount !== undefined && r.amount !== null && nanos === null)
            throw new BillingError(
              'malformed_response',
              `${what}: a result's amount is not a decimal string`,
            );
          const line = [r.model, r.cost_type, r.description].find((v) => typeof v === 'string') as
            string | undefined;
          out.push({
            provider: 'anthropic',
            kind: 'cost',
            start: Date.parse(b.starting_at),
            line: line ?? null,
            project: typeof r.workspace_id === 'string' ? r.workspace_id : 'default',
            currency: ((r.currency as string | undefined) ?? 'USD').toUpperCase(),
            nanos,
            usage: null,
          });
        }
      return out;
    };

  const usageWindow =
    (req: Requester) =>
    async (w: Window): Promise<BilledItem[]> => {
      const what = 'anthropic usage_report/messages';
      const out: BilledItem[] = [];
      for (const b of await walk(
        req,
        '/v1/organizations/usage_report/messages',
        ['model', 'workspace_id'],
        w,
        what,
      ))
        for (const r of b.results) {
          const cc = isObj(r.cache_creation) ? r.cache_creation : {};
          const fields = [
            int(r.uncached_input_tokens),
            int(r.output_tokens),
            int(r.cache_read_input_tokens ?? 0),
            int(cc.ephemeral_1h_input_tokens ?? 0),
            int(cc.ephemeral_5m_input_tokens ?? 0),
          ];
          if (fields.some((f) => f === null))
            throw new BillingError(
              'malformed_response',
              `${what}: a result's token counts are not counts`,
            );
          const [input, output, read, c1h, c5m] = fields as number[];
          out.push({
            provider: 'anthropic',
            kind: 'usage',
            start: Date.parse(b.starting_at),
            line: typeof r.model === 'string' ? r.model : null,
            project: typeof r.workspace_id === 'string' ? r.workspace_id : 'default',
            currency: null,
            nanos: null,
            usage: {
              input_tokens: input!,
              output_tokens: output!,
              cache_read_input_tokens: read!,
              cache_creation_input_tokens: c1h! + c5m!,
            },
          });
        }
      return out;
    };

  return {
    provider: 'anthropic',
    async read(start, end) {
      const windows = windowsOf(start, end, ANTHROPIC_MAX_DAYS, true);
      const grade = { provider: 'anthropic', is_invoice_grade: false };
      const [costReq, usageReq] = [requester(o, [o.adminKey]), requester(o, [o.adminKey])];
      const [cost, usage] = await Promise.all([
        readDataset(
          { name: 'anthropic.cost_report', ...grade },
          windows,
          costReq,
          costWindow(costReq),
        ),
        readDataset(
          { name: 'anthropic.usage_report', ...grade },
          windows,
          usageReq,
          usageWindow(usageReq),
        ),
      ]);
      return { datasets: [cost.dataset, usage.dataset], items: [...cost.items, ...usage.items] };
    },
  };
}
