/**
 * The cost report and its price card, through HTTP (core/src/cost, gateway/src/routes/cost.ts):
 * - operator key only: a tenant key is a 403 on the report and on the card (GET and PUT); the
 *   operator key works as x-api-key and as Authorization: Bearer;
 * - the price card defaults to the vendors' list prices in USD; a PUT is strict (each bad body a
 *   400 naming the field, nothing stored) and replaces the whole card;
 * - the runtime ledger against hand-computed totals: two tenants' scripted turns (an Anthropic
 *   card with cache tokens, an OpenAI card), summed and priced per tenant and model, filtered by
 *   tenant, grouped by session and kind, and by day; the evidence fields on every row;
 * - a card missing rates for observed usage makes those rows partial with `estimated_cost` and
 *   `total_estimated_cost` null and the missing rates named, never zero; a full card in EUR
 *   prices everything again;
 * - bad queries are 400s naming the parameter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { startPlatform, BETA, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';
import { apiJson } from '../../kit/integrations.js';

let t: TestPlatform;
let tenantB: { tenantId: string; apiKey: string; client: Anthropic };
let sessionA: string;
let sessionB: string;
const since = new Date(Date.now() - 3_600_000).toISOString();
const until = () => new Date(Date.now() + 3_600_000).toISOString();
const report = (q: Record<string, string>) =>
  apiJson(
    t,
    `/v1/svc/cost_report?${new URLSearchParams({ starting_at: since, ending_at: until(), ...q })}`,
  );
const A_USAGE = {
  input_tokens: 1000,
  output_tokens: 100,
  cache_read_input_tokens: 500,
  cache_creation_input_tokens: 200,
};
const B_USAGE = { input_tokens: 2000, output_tokens: 300 };

async function sessionOn(client: Anthropic, model: string) {
  const env = await client.beta.environments.create({ name: `cost-${model}` });
  const agent = await client.beta.agents.create({ name: `cost-${model}`, model });
  return (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}

beforeAll(async () => {
  t = await startPlatform();
  tenantB = await t.newTenant('cost-b');
  await addModelCard(t, 'cost-a', { model: 'claude-sonnet-4-5' });
  await addModelCard(t, 'cost-b', {
    provider: 'openai',
    model: 'gpt-4o-mini',
    key: tenantB.apiKey,
  });
  sessionA = await sessionOn(t.client, 'cost-a');
  sessionB = await sessionOn(tenantB.client, 'cost-b');
  for (const text of ['one', 'two']) {
    t.model.script('claude-sonnet-4-5', { steps: [{ text: `a ${text}` }], usage: A_USAGE });
    await runTurn(t.client, sessionA, text);
  }
  t.model.script('gpt-4o-mini', { steps: [{ text: 'b' }], usage: B_USAGE });
  await runTurn(tenantB.client, sessionB, 'hello');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('cost report', () => {
  it('operator key only; Bearer works too', async () => {
    for (const [method, path] of [
      ['GET', `/v1/svc/cost_report?starting_at=${since}`],
      ['GET', '/v1/svc/cost_report/pricing'],
      ['PUT', '/v1/svc/cost_report/pricing'],
    ] as const) {
      const res = await apiJson(t, path, {
        method,
        key: tenantB.apiKey,
        ...(method === 'PUT' ? { json: { currency: 'USD', services: {} } } : {}),
      });
      expect(res.status, path).toBe(403);
      expect(res.body.error.type).toBe('forbidden');
    }
    const bearer = await t.http(`/v1/svc/cost_report?starting_at=${since}`, {
      key: null,
      headers: { ...BETA, authorization: `Bearer ${t.operatorKey}` },
    });
    expect(bearer.status).toBe(200);
  });

  it('the ledger summed and priced per tenant and model, against hand-computed totals', async () => {
    const r = await report({});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const tenantA = (await t.client.beta.sessions.retrieve(sessionA)) as any;
    expect(r.body).toMatchObject({
      type: 'cost_report',
      group_by: ['tenant', 'model'],
      source: 'svc_metered',
      is_invoice_grade: false,
      data_completeness: 'complete',
      reconciled_at: null,
      currency: 'USD',
      calls: 3,
      total_cost: null,
      // 2 × (1000×3 + 100×15 + 500×0.3 + 200×3.75)/1e6 + (2000×0.15 + 300×0.6)/1e6
      total_estimated_cost: 0.01128,
    });
    const mine = r.body.rows.filter(
      (row: any) =>
        row.tenant_id === tenantB.tenantId || row.model === 'anthropic/claude-sonnet-4-5',
    );
    expect(mine).toHaveLength(2);
    const a = mine.find((row: any) => row.model === 'anthropic/claude-sonnet-4-5');
    const b = mine.find((row: any) => row.tenant_id === tenantB.tenantId);
    expect(a).toEqual({
      tenant_id: expect.any(String),
      model: 'anthropic/claude-sonnet-4-5',
      source: 'svc_metered',
      granularity: 'session',
      is_invoice_grade: false,
      data_completeness: 'complete',
      reconciled_at: null,
      currency: 'USD',
      calls: 2,
      usage: {
        input_tokens: 2000,
        output_tokens: 200,
        cache_read_input_tokens: 1000,
        cache_creation_input_tokens: 400,
      },
      cost: null,
      estimated_cost: 0.0108,
    });
    expect(a.tenant_id).not.toBe(tenantB.tenantId);
    expect(b).toMatchObject({
      model: 'openai/gpt-4o-mini',
      calls: 1,
      usage: { input_tokens: 2000, output_tokens: 300 },
      estimated_cost: 0.00048,
    });
    // The session's own usage agrees with the ledger.
    expect(tenantA.usage.input_tokens).toBe(2000);

    const onlyB = await report({ tenant_id: tenantB.tenantId, group_by: 'session,kind' });
    expect(onlyB.body.rows).toEqual([
      expect.objectContaining({
        session_id: sessionB,
        kind: 'turn',
        calls: 1,
        estimated_cost: 0.00048,
      }),
    ]);
    expect(onlyB.body.total_estimated_cost).toBe(0.00048);
    const byDay = await report({ group_by: 'day' });
    // The calls were made today (UTC), so one row: today's.
    expect(byDay.body.rows.map((row: any) => row.day)).toEqual([
      new Date().toISOString().slice(0, 10),
    ]);
    expect(byDay.body.total_estimated_cost).toBe(0.01128);
    const none = await apiJson(
      t,
      `/v1/svc/cost_report?starting_at=2020-01-01T00:00:00Z&ending_at=2020-01-02T00:00:00Z`,
    );
    expect(none.body).toMatchObject({
      rows: [],
      calls: 0,
      data_completeness: 'complete',
      total_estimated_cost: 0,
    });
  });

  it('GraphQL costReport: the same report for the operator; a tenant key is refused', async () => {
    const query = `query($s: String!, $g: [String!]) { costReport(startingAt: $s, groupBy: $g) {
      groupBy source dataCompleteness isInvoiceGrade currency calls totalCost totalEstimatedCost rows } }`;
    const gql = async (key: string) => {
      const res = await t.http('/graphql', {
        method: 'POST',
        key,
        json: { query, variables: { s: since, g: ['tenant', 'model'] } },
      });
      return (await res.json()) as any;
    };
    const mine = await gql(t.operatorKey);
    expect(mine.errors).toBeUndefined();
    const rest = (await report({})).body;
    expect(mine.data.costReport).toMatchObject({
      groupBy: ['tenant', 'model'],
      source: 'svc_metered',
      isInvoiceGrade: false,
      currency: rest.currency,
      calls: rest.calls,
      totalCost: null,
      totalEstimatedCost: rest.total_estimated_cost,
    });
    expect(mine.data.costReport.rows).toEqual(rest.rows);
    const theirs = await gql(tenantB.apiKey);
    expect(theirs.data).toBeNull();
    expect(theirs.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('the price card: the default, strict updates, missing rates are partial, never zero', async () => {
    const card = await apiJson(t, '/v1/svc/cost_report/pricing');
    expect(card.status).toBe(200);
    expect(card.body).toMatchObject({ type: 'price_card', currency: 'USD', updated_at: null });
    expect(card.body.services['anthropic/claude-sonnet-4-5']).toEqual({
      input_tokens: 3,
      output_tokens: 15,
      cache_read_input_tokens: 0.3,
      cache_creation_input_tokens: 3.75,
    });
    const put = (json: unknown) =>
      apiJson(t, '/v1/svc/cost_report/pricing', { method: 'PUT', json });
    const bad: Array<[unknown, string]> = [
      [[], 'body'],
      [{ currency: 'usd', services: {} }, 'currency'],
      [{ currency: 'USD' }, 'services'],
      [{ currency: 'USD', services: {}, tax: 1 }, 'tax'],
      [{ currency: 'USD', services: { nope: {} } }, 'services["nope"]'],
      [{ currency: 'USD', services: { 'mystery/x': { input_tokens: 1 } } }, 'unknown service'],
      [
        { currency: 'USD', services: { 'anthropic/x': { output: 1 } } },
        'services["anthropic/x"].output',
      ],
      [
        { currency: 'USD', services: { 'anthropic/x': { input_tokens: -1 } } },
        'must not be negative',
      ],
      [{ currency: 'USD', services: { 'anthropic/x': { input_tokens: '3' } } }, 'must be a number'],
    ];
    for (const [body, field] of bad) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    expect((await apiJson(t, '/v1/svc/cost_report/pricing')).body).toEqual(card.body);

    // Only input and output rates, for one of the two services: both rows partial.
    const thin = await put({
      currency: 'EUR',
      services: { 'anthropic/claude-sonnet-4-5': { input_tokens: 2, output_tokens: 10 } },
    });
    expect(thin.status, JSON.stringify(thin.body)).toBe(200);
    expect(thin.body.updated_at).toEqual(expect.any(String));
    const partial = await report({});
    expect(partial.body).toMatchObject({
      currency: 'EUR',
      data_completeness: 'partial',
      total_estimated_cost: null,
      total_cost: null,
    });
    const rowOf = (m: string) => partial.body.rows.find((row: any) => row.model === m);
    expect(rowOf('anthropic/claude-sonnet-4-5')).toMatchObject({
      data_completeness: 'partial',
      estimated_cost: null,
      missing_rates: [
        'anthropic/claude-sonnet-4-5.cache_creation_input_tokens',
        'anthropic/claude-sonnet-4-5.cache_read_input_tokens',
      ],
    });
    expect(rowOf('openai/gpt-4o-mini')).toMatchObject({
      data_completeness: 'partial',
      estimated_cost: null,
      missing_rates: ['openai/gpt-4o-mini.input_tokens', 'openai/gpt-4o-mini.output_tokens'],
    });

    const full = await put({
      currency: 'EUR',
      services: {
        'anthropic/claude-sonnet-4-5': {
          input_tokens: 2,
          output_tokens: 10,
          cache_read_input_tokens: 0.2,
          cache_creation_input_tokens: 2.5,
        },
        'openai/gpt-4o-mini': { input_tokens: 0.1, output_tokens: 0.4 },
      },
    });
    expect(full.status).toBe(200);
    const priced = await report({});
    // 2 × (2000 + 1000 + 100 + 500)/1e6 + (200 + 120)/1e6
    expect(priced.body).toMatchObject({
      currency: 'EUR',
      data_completeness: 'complete',
      total_estimated_cost: 0.00752,
    });
  });

  it('bad queries are 400s naming the parameter', async () => {
    const q = (s: string) => apiJson(t, `/v1/svc/cost_report?${s}`);
    const cases: Array<[string, string]> = [
      ['', 'starting_at'],
      ['starting_at=yesterday', 'starting_at'],
      [`starting_at=${since}&ending_at=2000-01-01T00:00:00Z`, 'ending_at'],
      ['starting_at=2020-01-01T00:00:00Z&ending_at=2022-01-01T00:00:00Z', 'ending_at'],
      [`starting_at=${since}&group_by=planet`, 'group_by'],
      [`starting_at=${since}&kind=lunch`, 'kind'],
      [`starting_at=${since}&foo=1`, 'foo'],
    ];
    for (const [query, field] of cases) {
      const res = await q(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
  });
});
