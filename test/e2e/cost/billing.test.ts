/**
 * The cost report's billed data, through HTTP and GraphQL (core/src/cost/billing), against
 * fixture servers speaking Anthropic's Usage & Cost Admin API, OpenAI's organization costs
 * and a JSONL export (test/kit/fixtures/{anthropicBilling,openaiBilling,jsonlBilling}.ts):
 * - a year is split into each provider's windows (Anthropic 31 days, OpenAI 180, the JSONL
 *   stream one request), contiguous and covering the period, with the documented headers and
 *   query; billed rows carry the evidence fields and the hand-computed billed cost (Anthropic's
 *   cents, OpenAI's units, the export's decimals) and total_cost;
 * - is_invoice_grade per provider: false for Anthropic (beta, Priority Tier excluded) and the
 *   export, true for OpenAI; the report's only when all its datasets are;
 * - grouping by day and project (granularity `project`); ledger-only groupings and filters
 *   with billed data, an unknown `source`, `project` with the ledger: 400s naming the field;
 * - `source=all` keeps the ledger rows and total_estimated_cost beside the billed rows; the
 *   ledger's missing rates are the `incomplete_rate_card` of its dataset;
 * - without any billing source configured, `billed`/`all` fall back to the price card
 *   (svc_metered, total_cost null, total_estimated_cost), and the default report is unchanged;
 * - GraphQL `costReport(source:)` serves the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';
import { apiJson } from '../../kit/integrations.js';
import {
  startAnthropicBilling,
  type AnthropicBillingFixture,
} from '../../kit/fixtures/anthropicBilling.js';
import { startOpenaiBilling, type OpenaiBillingFixture } from '../../kit/fixtures/openaiBilling.js';
import { startJsonlBilling, type JsonlBillingFixture } from '../../kit/fixtures/jsonlBilling.js';

const YEAR = { starting_at: '2025-01-01T00:00:00.000Z', ending_at: '2026-01-02T00:00:00.000Z' };
const DAY = 86_400_000;

let t: TestPlatform;
let plain: TestPlatform;
let anthropic: AnthropicBillingFixture;
let openai: OpenaiBillingFixture;
let jsonl: JsonlBillingFixture;

const report = (p: TestPlatform, q: Record<string, string>) =>
  apiJson(p, `/v1/svc/cost_report?${new URLSearchParams(q)}`);

function seed() {
  anthropic.costs = {
    '2025-03-10': [
      {
        amount: '123.45',
        currency: 'USD',
        cost_type: 'tokens',
        description: 'Claude Sonnet 4.5 Usage - Input Tokens',
        model: 'claude-sonnet-4-5',
        token_type: 'uncached_input_tokens',
        service_tier: 'standard',
        context_window: '0-200k',
        workspace_id: 'wrkspc_1',
      },
      {
        amount: '76.55',
        currency: 'USD',
        cost_type: 'tokens',
        description: 'Claude Sonnet 4.5 Usage - Output Tokens',
        model: 'claude-sonnet-4-5',
        token_type: 'output_tokens',
        service_tier: 'standard',
        context_window: '0-200k',
        workspace_id: 'wrkspc_1',
      },
    ],
    '2025-11-20': [
      {
        amount: '1000',
        currency: 'USD',
        cost_type: 'web_search',
        description: 'Web Search',
        model: null,
        token_type: null,
        service_tier: null,
        context_window: null,
        workspace_id: null,
      },
    ],
  };
  anthropic.usage = {
    '2025-03-10': [
      {
        uncached_input_tokens: 1000,
        cache_creation: { ephemeral_1h_input_tokens: 10, ephemeral_5m_input_tokens: 5 },
        cache_read_input_tokens: 50,
        output_tokens: 200,
        server_tool_use: { web_search_requests: 0 },
        model: 'claude-sonnet-4-5',
        workspace_id: 'wrkspc_1',
        api_key_id: null,
        service_tier: null,
        context_window: null,
      },
    ],
  };
  openai.costs = {
    '2025-06-01': [
      {
        object: 'organization.costs.result',
        amount: { value: 0.06, currency: 'usd' },
        line_item: 'gpt-4o-mini, input',
        project_id: 'proj_a',
      },
    ],
    '2025-12-31': [
      {
        object: 'organization.costs.result',
        amount: { value: 1.5, currency: 'usd' },
        line_item: 'gpt-4o-mini, output',
        project_id: null,
      },
    ],
  };
  jsonl.lines = [
    JSON.stringify({
      starting_at: '2025-05-05T00:00:00Z',
      cost: '3.25',
      currency: 'USD',
      model: 'm1',
      project_id: 'p9',
    }),
    '',
    // Outside the period: dropped.
    JSON.stringify({ starting_at: '2024-12-31T00:00:00Z', cost: '99', currency: 'USD' }),
  ];
}

beforeAll(async () => {
  [anthropic, openai, jsonl] = await Promise.all([
    startAnthropicBilling(),
    startOpenaiBilling(),
    startJsonlBilling(),
  ]);
  t = await startPlatform({
    env: {
      BILLING_ANTHROPIC_ADMIN_KEY: anthropic.adminKey,
      BILLING_ANTHROPIC_BASE_URL: anthropic.url,
      BILLING_OPENAI_ADMIN_KEY: openai.adminKey,
      BILLING_OPENAI_BASE_URL: openai.url,
      BILLING_JSONL_URL: jsonl.url,
      BILLING_JSONL_TOKEN: jsonl.token,
    },
  });
  plain = await startPlatform();
  for (const p of [t, plain]) {
    await addModelCard(p, 'bill-a', { model: 'claude-sonnet-4-5' });
    const env = await p.client.beta.environments.create({ name: 'bill' });
    const agent = await p.client.beta.agents.create({ name: 'bill', model: 'bill-a' });
    const s = await p.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    p.model.script('claude-sonnet-4-5', {
      steps: [{ text: 'ok' }],
      usage: { input_tokens: 1000, output_tokens: 100 },
    });
    await runTurn(p.client, s.id, 'hi');
  }
  seed();
}, 90_000);
afterAll(async () => {
  await Promise.all([t?.close(), plain?.close()]);
  await Promise.all([anthropic?.close(), openai?.close(), jsonl?.close()]);
});

describe('billed cost in the cost report', () => {
  it('a year is split into each provider’s windows, with the documented headers and query', async () => {
    anthropic.requests.length = openai.requests.length = jsonl.requests.length = 0;
    const before = Date.now();
    const r = await report(t, { ...YEAR, source: 'billed' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);

    const windowsOf = (reqs: typeof anthropic.requests, from: string, to: string) =>
      reqs.map((q) => [Date.parse(q.query.get(from)!), Date.parse(q.query.get(to)!)]);
    for (const path of [
      '/v1/organizations/cost_report',
      '/v1/organizations/usage_report/messages',
    ]) {
      const reqs = anthropic.requests.filter((q) => q.path === path);
      // 366 days in windows of at most 31: 11 × 31 + 25.
      expect(reqs).toHaveLength(12);
      const w = windowsOf(reqs, 'starting_at', 'ending_at');
      expect(w[0]![0]).toBe(Date.parse(YEAR.starting_at));
      expect(w.at(-1)![1]).toBe(Date.parse(YEAR.ending_at));
      for (let i = 0; i < w.length; i++) {
        expect(w[i]![1] - w[i]![0]).toBeLessThanOrEqual(31 * DAY);
        if (i) expect(w[i]![0]).toBe(w[i - 1]![1]);
      }
      for (const q of reqs) {
        expect(q.headers['x-api-key']).toBe(anthropic.adminKey);
        expect(q.headers['anthropic-version']).toBe('2023-06-01');
        expect(q.query.get('bucket_width')).toBe('1d');
        expect(Number(q.query.get('limit'))).toBeLessThanOrEqual(31);
      }
      expect(reqs[0]!.query.getAll('group_by[]')).toEqual(
        path.endsWith('cost_report') ? ['description', 'workspace_id'] : ['model', 'workspace_id'],
      );
    }
    // 366 days in windows of at most 180: 180 + 180 + 6, in Unix seconds.
    const ow = openai.requests.map((q) => [
      Number(q.query.get('start_time')) * 1000,
      Number(q.query.get('end_time')) * 1000,
    ]);
    expect(ow).toEqual([
      [Date.parse('2025-01-01T00:00:00Z'), Date.parse('2025-06-30T00:00:00Z')],
      [Date.parse('2025-06-30T00:00:00Z'), Date.parse('2025-12-27T00:00:00Z')],
      [Date.parse('2025-12-27T00:00:00Z'), Date.parse('2026-01-02T00:00:00Z')],
    ]);
    for (const q of openai.requests) {
      expect(q.headers.authorization).toBe(`Bearer ${openai.adminKey}`);
      expect(q.query.getAll('group_by')).toEqual(['line_item', 'project_id']);
      expect(Number(q.query.get('limit'))).toBeLessThanOrEqual(180);
    }
    expect(jsonl.requests).toHaveLength(1);
    expect(jsonl.requests[0]!.headers.authorization).toBe(`Bearer ${jsonl.token}`);
    expect(jsonl.requests[0]!.query.get('starting_at')).toBe(YEAR.starting_at);

    // 200 + 1000 cents, 0.06 + 1.5 USD, 3.25 USD.
    expect(r.body).toMatchObject({
      source: 'provider_billed',
      granularity: 'account',
      group_by: ['model'],
      is_invoice_grade: false,
      data_completeness: 'complete',
      currency: 'USD',
      estimated_currency: 'USD',
      total_cost: 16.81,
      total_estimated_cost: 0,
    });
    const at = Date.parse(r.body.reconciled_at);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(Date.now());
    const row = (m: string) => r.body.rows.find((x: any) => x.model === m);
    expect(r.body.rows).toHaveLength(5);
    expect(row('anthropic/claude-sonnet-4-5')).toEqual({
      model: 'anthropic/claude-sonnet-4-5',
      provider: 'anthropic',
      source: 'provider_billed',
      granularity: 'account',
      is_invoice_grade: false,
      data_completeness: 'complete',
      reconciled_at: expect.any(String),
      currency: 'USD',
      calls: null,
      usage: {
        input_tokens: 1000,
        output_tokens: 200,
        cache_read_input_tokens: 50,
        cache_creation_input_tokens: 15,
      },
      cost: 2,
      estimated_cost: null,
    });
    expect(row('anthropic/web_search')).toMatchObject({ cost: 10, usage: null });
    expect(row('openai/gpt-4o-mini, input')).toMatchObject({ cost: 0.06, is_invoice_grade: true });
    expect(row('openai/gpt-4o-mini, output')).toMatchObject({ cost: 1.5, is_invoice_grade: true });
    expect(row('jsonl/m1')).toMatchObject({ cost: 3.25, is_invoice_grade: false, currency: 'USD' });
    expect(r.body.datasets.map((d: any) => [d.name, d.status, d.windows, d.error])).toEqual([
      ['ledger', 'complete', null, null],
      ['anthropic.cost_report', 'complete', 12, null],
      ['anthropic.usage_report', 'complete', 12, null],
      ['openai.costs', 'complete', 3, null],
      ['jsonl', 'complete', 1, null],
    ]);
  });

  it('pages within a window are followed', async () => {
    anthropic.pageSize = 10;
    openai.pageSize = 50;
    try {
      anthropic.requests.length = openai.requests.length = 0;
      const r = await report(t, { ...YEAR, source: 'billed' });
      expect(r.body.total_cost).toBe(16.81);
      // 31-day windows in pages of 10: 4 pages each (the last window, 25 days: 3).
      expect(anthropic.requests.filter((q) => q.path.endsWith('cost_report'))).toHaveLength(
        11 * 4 + 3,
      );
      expect(anthropic.requests.filter((q) => q.query.get('page')).length).toBeGreaterThan(0);
      expect(openai.requests).toHaveLength(4 + 4 + 1);
    } finally {
      anthropic.pageSize = 31;
      openai.pageSize = 180;
    }
  });

  it('grouped by day and project: project granularity where the provider names one', async () => {
    const r = await report(t, { ...YEAR, source: 'billed', group_by: 'day,project' });
    expect(r.status).toBe(200);
    const rows = r.body.rows.map((x: any) => [x.provider, x.day, x.project, x.granularity, x.cost]);
    expect(rows).toEqual(
      expect.arrayContaining([
        ['anthropic', '2025-03-10', 'wrkspc_1', 'project', 2],
        ['anthropic', '2025-11-20', 'default', 'project', 10],
        ['openai', '2025-06-01', 'proj_a', 'project', 0.06],
        ['openai', '2025-12-31', null, 'account', 1.5],
        ['jsonl', '2025-05-05', 'p9', 'project', 3.25],
      ]),
    );
    expect(rows).toHaveLength(5);
    expect(r.body).toMatchObject({ granularity: 'account', total_cost: 16.81 });
  });

  it('what billed rows cannot be grouped or filtered by is a 400 naming the field', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ source: 'billed', group_by: 'tenant' }, 'group_by'],
      [{ source: 'all', group_by: 'model,session' }, 'group_by'],
      [{ source: 'billed', tenant_id: 'x' }, 'tenant_id'],
      [{ source: 'all', kind: 'turn' }, 'kind'],
      [{ source: 'invoice' }, 'source'],
      [{ group_by: 'project' }, 'group_by'],
    ];
    for (const [q, field] of cases) {
      const res = await report(t, { ...YEAR, ...q });
      expect(res.status, JSON.stringify(q)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
  });

  it('source=all keeps the ledger rows and estimate; missing rates are an incomplete rate card', async () => {
    const today = {
      starting_at: new Date(Date.now() - 3_600_000).toISOString(),
      ending_at: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const ledger = await report(t, { ...today, group_by: 'model' });
    const all = await report(t, { ...today, source: 'all' });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.rows.filter((x: any) => x.source === 'svc_metered')).toEqual(ledger.body.rows);
    expect(ledger.body.total_estimated_cost).toBeGreaterThan(0);
    // The fixtures bill nothing today (the export's rows are all of 2024–2025): a complete zero.
    expect(all.body).toMatchObject({
      source: 'provider_billed',
      data_completeness: 'complete',
      total_cost: 0,
      total_estimated_cost: ledger.body.total_estimated_cost,
      calls: ledger.body.calls,
    });
    expect(all.body.rows.filter((x: any) => x.source === 'provider_billed')).toEqual([]);
    expect(all.body.datasets[0]).toMatchObject({ name: 'ledger', error: null });

    const put = await apiJson(t, '/v1/svc/cost_report/pricing', {
      method: 'PUT',
      json: { currency: 'USD', services: { 'anthropic/claude-sonnet-4-5': { input_tokens: 3 } } },
    });
    expect(put.status).toBe(200);
    try {
      const thin = await report(t, { ...today, source: 'all' });
      expect(thin.body).toMatchObject({
        data_completeness: 'partial',
        total_estimated_cost: null,
        total_cost: 0,
      });
      expect(thin.body.datasets[0].error).toMatchObject({
        type: 'incomplete_rate_card',
        retryable: false,
      });
      expect(thin.body.datasets[0].error.message).toContain(
        'anthropic/claude-sonnet-4-5.output_tokens',
      );
    } finally {
      const card = await apiJson(plain, '/v1/svc/cost_report/pricing');
      await apiJson(t, '/v1/svc/cost_report/pricing', {
        method: 'PUT',
        json: { currency: card.body.currency, services: card.body.services },
      });
    }
  });

  it('GraphQL costReport(source:) serves the same billed report', async () => {
    const query = `query($s: String!, $e: String, $src: String) {
      costReport(startingAt: $s, endingAt: $e, source: $src) {
        source totalCost totalEstimatedCost isInvoiceGrade dataCompleteness reconciledAt rows datasets } }`;
    const res = await t.http('/graphql', {
      method: 'POST',
      json: { query, variables: { s: YEAR.starting_at, e: YEAR.ending_at, src: 'billed' } },
    });
    const body = (await res.json()) as any;
    expect(body.errors).toBeUndefined();
    const rest = (await report(t, { ...YEAR, source: 'billed' })).body;
    expect(body.data.costReport).toMatchObject({
      source: 'provider_billed',
      totalCost: 16.81,
      isInvoiceGrade: false,
      dataCompleteness: 'complete',
    });
    const strip = (rows: any[]) => rows.map(({ reconciled_at: _, ...r }) => r);
    expect(strip(body.data.costReport.rows)).toEqual(strip(rest.rows));
    expect(body.data.costReport.datasets.map((d: any) => d.name)).toEqual(
      rest.datasets.map((d: any) => d.name),
    );
  });
});

describe('no billing source configured', () => {
  it('billed and all fall back to the price card; the default report is unchanged', async () => {
    const today = {
      starting_at: new Date(Date.now() - 3_600_000).toISOString(),
      ending_at: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const def = await report(plain, today);
    expect(def.body).toMatchObject({ source: 'svc_metered', total_cost: null });
    expect(def.body).not.toHaveProperty('datasets');
    expect(def.body.group_by).toEqual(['tenant', 'model']);
    const ledgerByModel = await report(plain, { ...today, group_by: 'model' });
    for (const source of ['billed', 'all']) {
      const r = await report(plain, { ...today, source });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        source: 'svc_metered',
        is_invoice_grade: false,
        reconciled_at: null,
        total_cost: null,
        total_estimated_cost: ledgerByModel.body.total_estimated_cost,
      });
      expect(r.body.total_estimated_cost).toBeGreaterThan(0);
      expect(r.body.rows).toEqual(ledgerByModel.body.rows);
      expect(r.body.datasets.map((d: any) => d.name)).toEqual(['ledger']);
    }
  });
});
