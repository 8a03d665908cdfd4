/**
 * The runtime ledger and the cost report (`GET /v1/svc/cost_report`, operator key only).
 *
 * Guarantees (test/e2e/cost/cost-report.test.ts):
 * - `record` adds one model call's usage to its hourly bucket (tenant, session, agent version,
 *   model card, `<provider>/<model>`, kind) with one upsert of `$inc`s, right after the call's
 *   usage is appended to its session; the report reads only buckets (no event log scan);
 * - the report sums the buckets whose hour starts in [starting_at, ending_at) (times cut to
 *   whole UTC hours: starting_at down, ending_at up), filtered by tenant, agent, session or
 *   kind, grouped by any of tenant, agent, session, model, day, kind;
 * - every row is `source: 'svc_metered'`, `granularity: 'session'` (the ledger proves usage per
 *   session), `is_invoice_grade: false`, `reconciled_at: null`, `cost: null` (no provider bill
 *   is read), and `estimated_cost` priced by the price card; a row with usage the card has no
 *   rate for is `data_completeness: 'partial'` with `estimated_cost: null` and names the
 *   missing rates — never priced as zero;
 * - with `source=ledger`, `total_cost` is null (no billed rows); `total_estimated_cost` is the sum of the rows only
 *   when every row is priced, else null and the report is partial; an empty range is a
 *   complete zero;
 * - a bad query is a 400 naming the parameter;
 * - `source` (ledger, billed, all; default ledger, the report above whatever is configured)
 *   adds the configured billing sources' rows and totals (./billing/merge.ts; with none, the
 *   price-card fallback); ledger-only groupings and filters with billed data are 400s
 *   (test/e2e/cost/billing.test.ts).
 */
import { createHash } from 'node:crypto';
import { invalid } from '../errors.js';
import type { Logger } from '../log.js';
import {
  BILLED_GROUP_KEYS,
  billedPart,
  readBilling,
  type BilledGroupKey,
  type BillingSource,
} from './billing/index.js';
import { ledgerDataset, mergeBilled } from './billing/merge.js';
import type { ModelUsage } from '../models/port.js';
import { DuplicateKeyError, type Collection } from '../store/port.js';
import { checkPriceCard, defaultPriceCard, renderPriceCard } from './pricing.js';
import {
  CALL_KINDS,
  USAGE_FIELDS,
  type CallKind,
  type LedgerBucketDoc,
  type PriceCardDoc,
} from './records.js';

const HOUR = 3_600_000;
/** Longest report range. */
export const MAX_RANGE_DAYS = 366;
/** Most rows one report returns; more is a 400 asking for a coarser grouping or a filter. */
export const MAX_ROWS = 10_000;
export const GROUP_KEYS = [
  'tenant',
  'agent',
  'session',
  'model',
  'day',
  'kind',
  'project',
] as const;
type GroupKey = (typeof GROUP_KEYS)[number];
/** Where a report's rows come from: the ledger (the default), the providers' bills, or both. */
export const REPORT_SOURCES = ['ledger', 'billed', 'all'] as const;
type ReportSource = (typeof REPORT_SOURCES)[number];
const QUERY_KEYS = new Set([
  'source',
  'starting_at',
  'ending_at',
  'group_by',
  'tenant_id',
  'agent_id',
  'session_id',
  'kind',
]);

export interface LedgerCall {
  tenantId: string;
  sessionId: string | null;
  agentId: string | null;
  agentVersion: number | null;
  /** The model card's model_id. */
  modelCard: string;
  provider: string;
  /** The wire model the provider was asked for. */
  model: string;
  kind: CallKind;
  usage: ModelUsage;
  /** When the call ended (ms; default now). */
  at?: number;
}

export interface CostDeps {
  ledger: Collection<LedgerBucketDoc>;
  priceCards: Collection<PriceCardDoc>;
  /** The configured billing sources (./billing; none: `source=billed|all` is the ledger's). */
  billing?: BillingSource[];
  log?: Logger;
  now?: () => number;
}

/** Each grouping: the row field it sets and the bucket's value for it. */
const GROUPS: Record<GroupKey, { field: string; value: (b: LedgerBucketDoc) => unknown }> = {
  tenant: { field: 'tenant_id', value: (b) => b.tenant_id },
  agent: { field: 'agent_id', value: (b) => b.agent_id },
  session: { field: 'session_id', value: (b) => b.session_id },
  model: { field: 'model', value: (b) => b.service },
  day: { field: 'day', value: (b) => new Date(b.hour_ms).toISOString().slice(0, 10) },
  kind: { field: 'kind', value: (b) => b.kind },
  // The ledger knows no provider project: its rows are `project: null` (only source=all).
  project: { field: 'project', value: () => null },
};

const keyOf = (parts: unknown[]) =>
  createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 32);
const nanos = (tokens: number, ratePerMillion: number) =>
  Math.round(tokens * ratePerMillion * 1000);
const money = (n: number) => Math.round(n) / 1e9;

const LEDGER_KEYS = GROUP_KEYS.filter((k) => k !== 'project');

function reportSource(v: unknown): ReportSource {
  if (v === undefined || v === '') return 'ledger';
  if (!REPORT_SOURCES.includes(v as ReportSource))
    throw invalid('source', `must be one of ${REPORT_SOURCES.join(', ')}`);
  return v as ReportSource;
}

function time(v: unknown, field: string): number | undefined {
  if (v === undefined) return undefined;
  const ms = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw invalid(field, 'must be an RFC 3339 time');
  return ms;
}

export class CostService {
  private readonly now: () => number;
  constructor(private readonly d: CostDeps) {
    this.now = d.now ?? Date.now;
  }

  /** Adds one model call to the ledger (see the file comment). */
  async record(c: LedgerCall): Promise<void> {
    const u = c.usage;
    if (!USAGE_FIELDS.some((f) => (u[f] ?? 0) > 0)) return;
    const hourMs = Math.floor((c.at ?? this.now()) / HOUR) * HOUR;
    const service = `${c.provider}/${c.model}`;
    const parts = [
      hourMs,
      c.tenantId,
      c.sessionId,
      c.agentId,
      c.agentVersion,
      c.modelCard,
      service,
      c.kind,
    ];
    const inc: Record<string, number> = { calls: 1 };
    for (const f of USAGE_FIELDS) inc[f] = Math.max(0, Math.floor(u[f] ?? 0));
    const upsert = () =>
      this.d.ledger.updateOne(
        { _id: keyOf(parts) },
        {
          $inc: inc,
          $setOnInsert: {
            tenant_id: c.tenantId,
            session_id: c.sessionId,
            agent_id: c.agentId,
            agent_version: c.agentVersion,
            model_card: c.modelCard,
            provider: c.provider,
            service,
            kind: c.kind,
            hour_ms: hourMs,
          },
        },
        { upsert: true },
      );
    try {
      await upsert();
    } catch (err) {
      // Two first calls of one bucket at once: the loser's insert collides; its $inc applies now.
      if (!(err instanceof DuplicateKeyError)) throw err;
      await upsert();
    }
  }

  async priceCard(): Promise<PriceCardDoc> {
    return (await this.d.priceCards.findOne({ _id: 'current' })) ?? defaultPriceCard();
  }

  async getPricing() {
    return renderPriceCard(await this.priceCard());
  }

  async putPricing(body: unknown) {
    const card = await checkPriceCard(
      body,
      async (provider) => !!(await this.d.ledger.findOne({ provider })),
    );
    await this.d.priceCards.updateOne(
      { _id: 'current' },
      { $set: { currency: card.currency, services: card.services, updated_at: card.updated_at } },
      { upsert: true },
    );
    return renderPriceCard(card);
  }

  /** The cost report for a query string's parameters (see the file comment). */
  async report(query: Record<string, unknown>) {
    const extra = Object.keys(query).find((k) => !QUERY_KEYS.has(k));
    if (extra)
      throw invalid(extra, `is not a cost report parameter (${[...QUERY_KEYS].join(', ')})`);
    const start = time(query.starting_at, 'starting_at');
    if (start === undefined) throw invalid('starting_at', 'is required (an RFC 3339 time)');
    const end = time(query.ending_at, 'ending_at') ?? this.now();
    if (end <= start) throw invalid('ending_at', 'must be after starting_at');
    if (end - start > MAX_RANGE_DAYS * 86_400_000)
      throw invalid('ending_at', `the range is at most ${MAX_RANGE_DAYS} days`);
    const source = reportSource(query.source);
    const groupBy = this.groupBy(query.group_by, source);
    if (source !== 'ledger')
      for (const f of ['tenant_id', 'agent_id', 'session_id', 'kind'])
        if (query[f] !== undefined)
          throw invalid(
            f,
            `filters only the ledger (source=ledger): a provider's bill knows no ${f.replace('_id', '')}`,
          );
    const filter: Record<string, unknown> = {
      hour_ms: { $gte: Math.floor(start / HOUR) * HOUR, $lt: Math.ceil(end / HOUR) * HOUR },
    };
    for (const [param, field] of [
      ['tenant_id', 'tenant_id'],
      ['agent_id', 'agent_id'],
      ['session_id', 'session_id'],
    ] as const) {
      const v = query[param];
      if (v === undefined) continue;
      if (typeof v !== 'string' || !v || v.length > 200) throw invalid(param, 'must be an id');
      filter[field] = v;
    }
    if (query.kind !== undefined) {
      if (!CALL_KINDS.includes(query.kind as CallKind))
        throw invalid('kind', `must be one of ${CALL_KINDS.join(', ')}`);
      filter.kind = query.kind;
    }
    const sources = source === 'ledger' ? [] : (this.d.billing ?? []);
    const [buckets, card, billed] = await Promise.all([
      this.d.ledger.find(filter),
      this.priceCard(),
      sources.length ? readBilling(sources, start, end) : null,
    ]);
    const ledger = this.build(buckets, card, groupBy, start, end);
    if (source === 'ledger') return ledger;
    if (!billed) return { ...ledger, datasets: [ledgerDataset(ledger)] };
    for (const d of billed.datasets)
      if (d.error)
        this.d.log?.warn('cost report: billing dataset unavailable', {
          dataset: d.name,
          error: d.error.type,
          message: d.error.message,
        });
    return mergeBilled(ledger, billedPart(billed, groupBy as BilledGroupKey[]), source);
  }

  private groupBy(v: unknown, source: ReportSource): GroupKey[] {
    const allowed: readonly string[] = source === 'ledger' ? LEDGER_KEYS : BILLED_GROUP_KEYS;
    if (v === undefined || v === '') return source === 'ledger' ? ['tenant', 'model'] : ['model'];
    if (typeof v !== 'string') throw invalid('group_by', 'must be a comma-separated list');
    const keys = v.split(',').map((s) => s.trim());
    for (const k of keys) {
      if (allowed.includes(k)) continue;
      if ((GROUP_KEYS as readonly string[]).includes(k))
        throw invalid(
          'group_by',
          source === 'ledger'
            ? `${k} groups billed rows only (source=billed or all)`
            : `billed rows cannot be grouped by ${k}: the provider does not know it (with source=${source}: ${BILLED_GROUP_KEYS.join(', ')}; or source=ledger)`,
        );
      throw invalid(
        'group_by',
        `${JSON.stringify(k.slice(0, 40))} is not one of ${allowed.join(', ')}`,
      );
    }
    return [...new Set(keys)] as GroupKey[];
  }

  private build(
    buckets: LedgerBucketDoc[],
    card: PriceCardDoc,
    groupBy: GroupKey[],
    start: number,
    end: number,
  ) {
    type Row = {
      keys: Record<string, unknown>;
      calls: number;
      usage: Record<string, number>;
      nanos: number;
      missing: Set<string>;
    };
    const rows = new Map<string, Row>();
    for (const b of buckets) {
      const keys = Object.fromEntries(groupBy.map((k) => [GROUPS[k].field, GROUPS[k].value(b)]));
      const id = JSON.stringify(Object.values(keys));
      let r = rows.get(id);
      if (!r) {
        if (rows.size >= MAX_ROWS)
          throw invalid('group_by', `more than ${MAX_ROWS} rows: group coarser or filter`);
        r = {
          keys,
          calls: 0,
          usage: Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0])),
          nanos: 0,
          missing: new Set(),
        };
        rows.set(id, r);
      }
      r.calls += b.calls;
      const rates = Object.hasOwn(card.services, b.service) ? card.services[b.service]! : undefined;
      for (const f of USAGE_FIELDS) {
        const tokens = b[f] ?? 0;
        r.usage[f]! += tokens;
        if (!tokens) continue;
        const rate = rates?.[f];
        if (rate === undefined) r.missing.add(`${b.service}.${f}`);
        else r.nanos += nanos(tokens, rate);
      }
    }
    const out = [...rows.values()]
      .sort((a, b) =>
        JSON.stringify(Object.values(a.keys)).localeCompare(JSON.stringify(Object.values(b.keys))),
      )
      .map((r) => ({
        ...r.keys,
        source: 'svc_metered' as const,
        granularity: 'session' as const,
        is_invoice_grade: false,
        data_completeness: r.missing.size ? ('partial' as const) : ('complete' as const),
        reconciled_at: null,
        currency: card.currency,
        calls: r.calls,
        usage: r.usage,
        cost: null,
        estimated_cost: r.missing.size ? null : money(r.nanos),
        ...(r.missing.size ? { missing_rates: [...r.missing].sort() } : {}),
      }));
    const partial = out.some((r) => r.data_completeness === 'partial');
    const totals = Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0]));
    for (const r of rows.values()) for (const f of USAGE_FIELDS) totals[f]! += r.usage[f]!;
    const totalNanos = [...rows.values()].reduce((s, r) => s + r.nanos, 0);
    return {
      type: 'cost_report' as const,
      starting_at: new Date(Math.floor(start / HOUR) * HOUR).toISOString(),
      ending_at: new Date(Math.ceil(end / HOUR) * HOUR).toISOString(),
      group_by: groupBy,
      source: 'svc_metered' as const,
      granularity: 'session' as const,
      is_invoice_grade: false,
      data_completeness: partial ? ('partial' as const) : ('complete' as const),
      reconciled_at: null,
      currency: card.currency,
      calls: [...rows.values()].reduce((s, r) => s + r.calls, 0),
      usage: totals,
      total_cost: null,
      total_estimated_cost: partial ? null : money(totalNanos),
      rows: out,
    };
  }
}
