/**
 * OpenAI's organization costs as a billing source, following OpenAI's API reference "Costs"
 * (`GET /v1/organization/costs`, developers.openai.com/api/reference, Administration → Usage):
 * - header `Authorization: Bearer <admin key>`;
 * - query `start_time` (Unix seconds, inclusive), `end_time` (exclusive), `bucket_width=1d`
 *   (the only width), `group_by` (`line_item`, `project_id`), `limit` (1–180 buckets), `page`
 *   (the previous answer's `next_page`);
 * - answer `{object: 'page', data: [{object: 'bucket', start_time, end_time, results:
 *   [{object: 'organization.costs.result', amount: {value, currency}, line_item, project_id}]}],
 *   has_more, next_page}`; `amount.value` is in the currency's major unit, `currency` is lower
 *   case ISO 4217 ("usd");
 * - a period is split into windows of at most 180 whole UTC days (the `limit` maximum; pages
 *   within a window are followed too).
 *
 * is_invoice_grade is true: the endpoint is generally available (no beta marker), and OpenAI's
 * Usage API reference recommends the Costs endpoint for financial purposes as the one that
 * "will reconcile back to your billing invoice". A result without `amount` has no billed cost
 * (its row falls back: cost null, partial).
 *
 * Proved by test/e2e/cost/billing.test.ts and billing-failures.test.ts.
 */
import {
  BillingError,
  DAY_MS,
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
  type RetryPolicy,
  type Window,
} from './shared.js';

/** Most `1d` buckets per request (the documented `limit` maximum). */
export const OPENAI_MAX_DAYS = 180;

export interface OpenaiBillingOptions extends RetryPolicy {
  adminKey: string;
  baseUrl: string;
}

interface Bucket {
  start_time: number;
  results: Record<string, unknown>[];
}

function bucketsOf(body: unknown, what: string) {
  if (!isObj(body) || body.object !== 'page')
    throw new BillingError('malformed_response', `${what}: not an object 'page'`);
  const page = pageOf(body, what);
  for (const b of page.data)
    if (
      !isObj(b) ||
      b.object !== 'bucket' ||
      typeof b.start_time !== 'number' ||
      !Array.isArray(b.results) ||
      !b.results.every((r) => isObj(r) && r.object === 'organization.costs.result')
    )
      throw new BillingError(
        'malformed_response',
        `${what}: a bucket is not {object: 'bucket', start_time, results: [organization.costs.result]}`,
      );
  return page;
}

export function openaiBilling(o: OpenaiBillingOptions): BillingSource {
  const headers = { authorization: `Bearer ${o.adminKey}` };
  const base = o.baseUrl.replace(/\/+$/, '');
  const what = 'openai organization/costs';

  const costWindow =
    (req: ReturnType<typeof requester>) =>
    async (w: Window): Promise<BilledItem[]> => {
      const buckets = (await walkPages(
        async (cursor) => {
          const url = new URL(`${base}/v1/organization/costs`);
          url.searchParams.set('start_time', String(Math.floor(w.start / 1000)));
          url.searchParams.set('end_time', String(Math.floor(w.end / 1000)));
          url.searchParams.set('bucket_width', '1d');
          url.searchParams.append('group_by', 'line_item');
          url.searchParams.append('group_by', 'project_id');
          url.searchParams.set('limit', String(Math.round((w.end - w.start) / DAY_MS)));
          if (cursor) url.searchParams.set('page', cursor);
          return bucketsOf(await jsonOf(await req.get(url, headers, what), what), what);
        },
        (b) => String((b as Bucket).start_time),
        what,
      )) as Bucket[];
      const out: BilledItem[] = [];
      for (const b of buckets)
        for (const r of b.results) {
          let nanos: number | null = null;
          let currency = 'USD';
          if (r.amount !== undefined && r.amount !== null) {
            const a = r.amount;
            if (!isObj(a) || typeof a.currency !== 'string' || !/^[A-Za-z]{3}$/.test(a.currency))
              throw new BillingError(
                'malformed_response',
                `${what}: a result's amount is not {value, currency}`,
              );
            nanos = a.value === null || a.value === undefined ? null : nanosOf(a.value);
            if (a.value !== null && a.value !== undefined && nanos === null)
              throw new BillingError(
                'malformed_response',
                `${what}: a result's amount.value is not a number`,
              );
            currency = a.currency.toUpperCase();
          }
          out.push({
            provider: 'openai',
            kind: 'cost',
            start: b.start_time * 1000,
            line: typeof r.line_item === 'string' ? r.line_item : null,
            project: typeof r.project_id === 'string' ? r.project_id : null,
            currency,
            nanos,
            usage: null,
          });
        }
      return out;
    };

  return {
    provider: 'openai',
    async read(start, end) {
      const req = requester(o, [o.adminKey]);
      const r = await readDataset(
        { name: 'openai.costs', provider: 'openai', is_invoice_grade: true },
        windowsOf(start, end, OPENAI_MAX_DAYS, true),
        req,
        costWindow(req),
      );
      return { datasets: [r.dataset], items: r.items };
    },
  };
}
