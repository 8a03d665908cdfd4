/**
 * Billing sources of the cost report: the provider's billed cost beside the runtime ledger.
 * Sources side by side (./anthropic.ts, ./openai.ts, ./jsonl.ts), what they share in
 * ./shared.ts; `billingSources` builds the configured ones (core/src/config/billing.ts), the
 * report (../ledger.ts) reads them for `source=billed|all` and merges with `billedPart`.
 *
 * Guarantees (test/e2e/cost/billing.test.ts, billing-failures.test.ts):
 * - billed rows are `source: 'provider_billed'`, one per provider, currency and group (`model`
 *   as `<provider>/<line>`: Anthropic's model or cost type, OpenAI's invoice line item, the
 *   export's model; `day`; `project`: Anthropic workspace, OpenAI project, the export's
 *   project_id), with `granularity` `project` when grouped by a known project, else
 *   `account`; `cost` is the billed cost (null when the provider gave none: the row is
 *   partial); `calls` null (no provider counts calls) and `usage` the provider's token counts
 *   (Anthropic's usage report) or null;
 * - `total_cost` is set only when every billing dataset is complete and every billed row has a
 *   billed cost in one currency (an empty complete read is a total of zero); otherwise null
 *   and the report partial; `is_invoice_grade` only with a total_cost from invoice-grade
 *   datasets; `reconciled_at` the earliest time a dataset was read;
 * - a failed dataset contributes no row (unavailable is never zero), names its error, and
 *   makes the report partial with total_cost null.
 */
import type { UsageField } from '../records.js';
import { anthropicBilling } from './anthropic.js';
import { jsonlBilling } from './jsonl.js';
import { openaiBilling } from './openai.js';
import {
  DAY_MS,
  type BilledItem,
  type BillingSource,
  type Dataset,
  type RetryPolicy,
  type SourceRead,
} from './shared.js';

export { BillingError, BILLING_ERROR_TYPES, type BillingSource, type Dataset } from './shared.js';

export interface BillingConfig extends RetryPolicy {
  anthropicAdminKey: string | null;
  anthropicBaseUrl: string;
  openaiAdminKey: string | null;
  openaiBaseUrl: string;
  jsonlUrl: string | null;
  jsonlToken: string | null;
}

/** The configured sources (none: the report is the ledger's alone). */
export function billingSources(c: BillingConfig | null | undefined): BillingSource[] {
  if (!c) return [];
  const out: BillingSource[] = [];
  if (c.anthropicAdminKey)
    out.push(
      anthropicBilling({ ...c, adminKey: c.anthropicAdminKey, baseUrl: c.anthropicBaseUrl }),
    );
  if (c.openaiAdminKey)
    out.push(openaiBilling({ ...c, adminKey: c.openaiAdminKey, baseUrl: c.openaiBaseUrl }));
  if (c.jsonlUrl) out.push(jsonlBilling({ ...c, url: c.jsonlUrl, token: c.jsonlToken }));
  return out;
}

/** Every source read at once; each source's datasets and items. */
export async function readBilling(
  sources: BillingSource[],
  start: number,
  end: number,
): Promise<SourceRead> {
  const reads = await Promise.all(sources.map((s) => s.read(start, end)));
  return { datasets: reads.flatMap((r) => r.datasets), items: reads.flatMap((r) => r.items) };
}

/** The keys billed rows can be grouped by. */
export const BILLED_GROUP_KEYS = ['model', 'day', 'project'] as const;
export type BilledGroupKey = (typeof BILLED_GROUP_KEYS)[number];

const USAGE: UsageField[] = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
];
const money = (n: number) => Math.round(n) / 1e9;

const keyOf = (i: BilledItem, groupBy: BilledGroupKey[]) =>
  Object.fromEntries(
    groupBy.map((k) =>
      k === 'model'
        ? ['model', `${i.provider}/${i.line ?? 'other'}`]
        : k === 'day'
          ? ['day', new Date(Math.floor(i.start / DAY_MS) * DAY_MS).toISOString().slice(0, 10)]
          : ['project', i.project],
    ),
  );

export const datasetView = (d: Dataset) => ({
  name: d.name,
  provider: d.provider,
  status: d.status,
  is_invoice_grade: d.is_invoice_grade,
  reconciled_at: d.reconciled_at,
  windows: d.windows,
  requests: d.requests,
  error: d.error ? d.error.toJSON() : null,
});

/** The billed rows and the report fields they decide (see the file comment). */
export function billedPart(read: SourceRead, groupBy: BilledGroupKey[]) {
  const failed = new Set(
    read.datasets.filter((d) => d.status !== 'complete').map((d) => d.provider),
  );
  const byProvider = new Map(read.datasets.map((d) => [d.provider, d]));
  const costSet = (p: string) =>
    read.datasets.find((d) => d.provider === p && !d.name.endsWith('usage_report'));
  type Group = {
    keys: Record<string, unknown>;
    provider: string;
    costs: BilledItem[];
    usage: BilledItem[];
  };
  const groups = new Map<string, Group>();
  for (const i of read.items) {
    const keys = keyOf(i, groupBy);
    const id = JSON.stringify([i.provider, ...Object.values(keys)]);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys, provider: i.provider, costs: [], usage: [] }));
    (i.kind === 'cost' ? g.costs : g.usage).push(i);
  }
  const rows = [];
  for (const g of [...groups.values()].sort((a, b) =>
    JSON.stringify([a.provider, ...Object.values(a.keys)]).localeCompare(
      JSON.stringify([b.provider, ...Object.values(b.keys)]),
    ),
  )) {
    const currencies = [...new Set(g.costs.map((c) => c.currency!))].sort();
    const dataset = costSet(g.provider) ?? byProvider.get(g.provider)!;
    const usage = g.usage.length && currencies.length <= 1 ? sumUsage(g.usage) : null;
    for (const currency of currencies.length ? currencies : [null]) {
      const costs = g.costs.filter((c) => c.currency === currency);
      const billed = costs.length > 0 && costs.every((c) => c.nanos !== null);
      rows.push({
        ...g.keys,
        provider: g.provider,
        source: 'provider_billed' as const,
        granularity:
          groupBy.includes('project') && g.keys.project != null
            ? ('project' as const)
            : ('account' as const),
        is_invoice_grade: dataset.is_invoice_grade,
        data_completeness:
          billed && !failed.has(g.provider) ? ('complete' as const) : ('partial' as const),
        reconciled_at: dataset.reconciled_at,
        currency: currency ?? 'USD',
        calls: null,
        usage,
        cost: billed ? money(costs.reduce((s, c) => s + c.nanos!, 0)) : null,
        nanos: billed ? costs.reduce((s, c) => s + c.nanos!, 0) : null,
        estimated_cost: null,
      });
    }
  }
  const currencies = new Set(rows.map((r) => r.currency));
  const complete =
    read.datasets.every((d) => d.status === 'complete') &&
    rows.every((r) => r.data_completeness === 'complete') &&
    currencies.size <= 1;
  const read_at = read.datasets
    .map((d) => d.reconciled_at)
    .filter((t): t is string => !!t)
    .sort();
  const totalCost = complete ? money(rows.reduce((s, r) => s + r.nanos!, 0)) : null;
  return {
    rows: rows.map(({ nanos: _, ...r }) => r),
    complete,
    total_cost: totalCost,
    currency: currencies.size === 1 ? [...currencies][0]! : null,
    is_invoice_grade: totalCost !== null && read.datasets.every((d) => d.is_invoice_grade),
    granularity:
      rows.length && rows.every((r) => r.granularity === 'project')
        ? ('project' as const)
        : ('account' as const),
    reconciled_at: read_at[0] ?? null,
    datasets: read.datasets.map(datasetView),
  };
}

function sumUsage(items: BilledItem[]) {
  const out = Object.fromEntries(USAGE.map((f) => [f, 0])) as Record<UsageField, number>;
  for (const i of items) for (const f of USAGE) out[f] += i.usage?.[f] ?? 0;
  return out;
}
