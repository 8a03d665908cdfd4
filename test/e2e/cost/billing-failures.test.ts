/**
 * How the cost report's billing sources fail (core/src/cost/billing), through HTTP, against
 * the billing fixture servers (test/kit/fixtures/{anthropicBilling,openaiBilling,jsonlBilling}.ts):
 * - each failure is its own error type in the report's `datasets`: invalid query (400),
 *   authentication (401), permission (403), rate limit (429), availability (5xx, timeout,
 *   refused connection), malformed response; only rate limits and availability are retried
 *   (bounded: 1 + BILLING_MAX_RETRIES requests), `retry-after` honoured, a longer one than
 *   BILLING_RETRY_MAX_WAIT_MS not waited;
 * - a failed dataset adds no row, makes the report partial and total_cost null while the
 *   other datasets and the price-card estimate still answer; a result without a billed cost
 *   field falls back the same way;
 * - pagination: has_more without a cursor, a repeated cursor, a bucket repeated on a later
 *   page, a summary that changes between pages: each a pagination_invariant failure;
 * - JSONL: a malformed row fails the stream (none of its rows used), an empty stream is a
 *   complete zero, mixed currencies are partial with total_cost null, a wrong content type is
 *   malformed;
 * - no credential is in any report or log line, though each fixture echoes the credential it
 *   was given in its 401 (the positive control proves the echo reaches the platform).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { apiJson } from '../../kit/integrations.js';
import {
  startAnthropicBilling,
  type AnthropicBillingFixture,
  type BillingFault,
} from '../../kit/fixtures/anthropicBilling.js';
import { startOpenaiBilling, type OpenaiBillingFixture } from '../../kit/fixtures/openaiBilling.js';
import { startJsonlBilling, type JsonlBillingFixture } from '../../kit/fixtures/jsonlBilling.js';

const RANGE = { starting_at: '2025-03-10T00:00:00.000Z', ending_at: '2025-03-12T00:00:00.000Z' };

let t: TestPlatform;
let anthropic: AnthropicBillingFixture;
let openai: OpenaiBillingFixture;
let jsonl: JsonlBillingFixture;
let keys: { anthropic: string; openai: string; jsonl: string };
const logLines: string[] = [];
const realWrite = process.stderr.write.bind(process.stderr);

const billed = async () => {
  const r = await apiJson(
    t,
    `/v1/svc/cost_report?${new URLSearchParams({ ...RANGE, source: 'billed' })}`,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const dataset = (body: any, name: string) => body.datasets.find((d: any) => d.name === name);
const rowsOf = (body: any, provider: string) =>
  body.rows.filter((r: any) => r.provider === provider);

function seed() {
  anthropic.costs = {
    '2025-03-10': [
      { amount: '200', currency: 'USD', model: 'claude-sonnet-4-5', workspace_id: null },
    ],
  };
  anthropic.usage = {
    '2025-03-10': [{ uncached_input_tokens: 10, output_tokens: 5, model: 'claude-sonnet-4-5' }],
  };
  openai.costs = {
    '2025-03-11': [
      {
        object: 'organization.costs.result',
        amount: { value: 1.5, currency: 'usd' },
        line_item: 'gpt-4o, output',
        project_id: null,
      },
    ],
  };
  jsonl.lines = [JSON.stringify({ starting_at: '2025-03-10T00:00:00Z', cost: 1, currency: 'USD' })];
  jsonl.contentType = 'application/x-ndjson';
  for (const f of [anthropic, openai, jsonl]) f.requests.length = 0;
  anthropic.faults = { cost: [], usage: [] };
  openai.faults = [];
  jsonl.faults = [];
  anthropic.pageSize = 31;
  openai.pageSize = 180;
  Object.assign(anthropic, { adminKey: keys.anthropic });
  Object.assign(openai, { adminKey: keys.openai });
  Object.assign(jsonl, { token: keys.jsonl });
}

beforeAll(async () => {
  [anthropic, openai, jsonl] = await Promise.all([
    startAnthropicBilling(),
    startOpenaiBilling(),
    startJsonlBilling(),
  ]);
  keys = { anthropic: anthropic.adminKey, openai: openai.adminKey, jsonl: jsonl.token };
  // Every log line of the platform (in this process) is kept for the credential check.
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    const text = String(chunk);
    if (text.startsWith('{')) logLines.push(text);
    else return (realWrite as (...a: unknown[]) => boolean)(chunk, ...rest);
    return true;
  }) as typeof process.stderr.write;
  t = await startPlatform({
    env: {
      LOG_LEVEL: 'debug',
      BILLING_ANTHROPIC_ADMIN_KEY: anthropic.adminKey,
      BILLING_ANTHROPIC_BASE_URL: anthropic.url,
      BILLING_OPENAI_ADMIN_KEY: openai.adminKey,
      BILLING_OPENAI_BASE_URL: openai.url,
      BILLING_JSONL_URL: jsonl.url,
      BILLING_JSONL_TOKEN: jsonl.token,
      BILLING_MAX_RETRIES: '2',
      BILLING_RETRY_BASE_MS: '10',
      BILLING_RETRY_MAX_WAIT_MS: '2000',
      BILLING_REQUEST_TIMEOUT_MS: '400',
    },
  });
}, 60_000);
beforeEach(() => seed());
afterEach(async () => {
  // A stopped fixture is listening again for the next test.
  await anthropic.start();
});
afterAll(async () => {
  await t?.close();
  process.stderr.write = realWrite;
  await Promise.all([anthropic?.close(), openai?.close(), jsonl?.close()]);
});

describe('billing failures', () => {
  it('all healthy: the hand-computed total (the baseline the failures depart from)', async () => {
    const r = await billed();
    expect(r).toMatchObject({ data_completeness: 'complete', total_cost: 4.5 });
  });

  it('each provider answer is its own error type; only 429 and availability are retried', async () => {
    const cases: Array<[BillingFault, number, string, boolean]> = [
      [{ kind: 'status', status: 400 }, 1, 'invalid_query', false],
      [{ kind: 'status', status: 401 }, 1, 'authentication_error', false],
      [{ kind: 'status', status: 403 }, 1, 'permission_error', false],
      [{ kind: 'status', status: 429, headers: { 'retry-after': '0' } }, 3, 'rate_limited', true],
      [{ kind: 'status', status: 503 }, 3, 'provider_unavailable', true],
      [{ kind: 'status', status: 500 }, 3, 'provider_unavailable', true],
      [{ kind: 'not-json' }, 1, 'malformed_response', false],
      [
        { kind: 'status', status: 200, body: { object: 'page', data: 'x' } },
        1,
        'malformed_response',
        false,
      ],
    ];
    for (const [fault, requests, type, retryable] of cases) {
      seed();
      openai.faults = [fault, fault, fault];
      const r = await billed();
      const d = dataset(r, 'openai.costs');
      expect(d, JSON.stringify(fault)).toMatchObject({
        status: 'unavailable',
        requests,
        error: { type, retryable },
      });
      expect(openai.requests, JSON.stringify(fault)).toHaveLength(requests);
      // The failed dataset adds nothing; the others and the estimate still answer.
      expect(rowsOf(r, 'openai')).toEqual([]);
      expect(rowsOf(r, 'anthropic')[0]).toMatchObject({ cost: 2, data_completeness: 'complete' });
      expect(r).toMatchObject({
        data_completeness: 'partial',
        total_cost: null,
        is_invoice_grade: false,
        total_estimated_cost: 0,
      });
    }
    // One availability failure, then an answer: retried into a complete dataset.
    seed();
    openai.faults = [{ kind: 'status', status: 502 }];
    const ok = await billed();
    expect(dataset(ok, 'openai.costs')).toMatchObject({ status: 'complete', requests: 2 });
    expect(ok.total_cost).toBe(4.5);
  });

  it('retry-after is waited; one longer than BILLING_RETRY_MAX_WAIT_MS is not', async () => {
    openai.faults = [{ kind: 'status', status: 429, headers: { 'retry-after': '1' } }];
    const r = await billed();
    expect(dataset(r, 'openai.costs')).toMatchObject({ status: 'complete', requests: 2 });
    expect(openai.requests[1]!.at - openai.requests[0]!.at).toBeGreaterThanOrEqual(950);

    seed();
    openai.faults = [{ kind: 'status', status: 429, headers: { 'retry-after': '5' } }];
    const started = Date.now();
    const slow = await billed();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(dataset(slow, 'openai.costs')).toMatchObject({
      status: 'unavailable',
      requests: 1,
      error: { type: 'rate_limited', retryable: true, provider_status: 429 },
    });
    expect(dataset(slow, 'openai.costs').error.message).toContain('asked to wait 5000 ms');
  });

  it('a timeout and a refused connection are provider availability failures', async () => {
    jsonl.faults = [{ kind: 'hang' }, { kind: 'hang' }, { kind: 'hang' }];
    const hung = await billed();
    expect(dataset(hung, 'jsonl')).toMatchObject({
      status: 'unavailable',
      requests: 3,
      error: { type: 'provider_unavailable', message: expect.stringContaining('400 ms') },
    });
    expect(jsonl.requests).toHaveLength(3);

    await anthropic.stop();
    const refused = await billed();
    for (const name of ['anthropic.cost_report', 'anthropic.usage_report'])
      expect(dataset(refused, name)).toMatchObject({
        status: 'unavailable',
        requests: 3,
        error: { type: 'provider_unavailable', message: expect.stringContaining('ECONNREFUSED') },
      });
    expect(rowsOf(refused, 'anthropic')).toEqual([]);
    expect(refused).toMatchObject({ data_completeness: 'partial', total_cost: null });
  });

  it('a failed usage dataset leaves the cost rows partial and the total null', async () => {
    anthropic.faults.usage = [1, 2, 3].map(() => ({ kind: 'status', status: 500 }) as const);
    const r = await billed();
    expect(dataset(r, 'anthropic.cost_report')).toMatchObject({ status: 'complete' });
    expect(dataset(r, 'anthropic.usage_report')).toMatchObject({ status: 'unavailable' });
    expect(rowsOf(r, 'anthropic')).toEqual([
      expect.objectContaining({ cost: 2, usage: null, data_completeness: 'partial' }),
    ]);
    expect(r).toMatchObject({ data_completeness: 'partial', total_cost: null });
  });

  it('a result without a billed cost field falls back: row cost null, the estimate stays', async () => {
    openai.costs = {
      '2025-03-11': [
        { object: 'organization.costs.result', line_item: 'gpt-4o, output', project_id: null },
      ],
    };
    const r = await billed();
    expect(rowsOf(r, 'openai')).toEqual([
      expect.objectContaining({ cost: null, data_completeness: 'partial' }),
    ]);
    expect(r).toMatchObject({
      data_completeness: 'partial',
      total_cost: null,
      total_estimated_cost: 0,
    });
  });

  it('pagination: a missing or repeated cursor, a repeated bucket, a changing summary fail', async () => {
    for (const kind of ['no-cursor', 'repeat-cursor', 'repeat-bucket'] as const) {
      seed();
      anthropic.pageSize = 1;
      anthropic.faults.cost = [{ kind }];
      const r = await billed();
      expect(dataset(r, 'anthropic.cost_report'), kind).toMatchObject({
        status: 'unavailable',
        error: { type: 'pagination_invariant', retryable: false },
      });
      expect(dataset(r, 'anthropic.usage_report'), kind).toMatchObject({ status: 'complete' });
      expect(r.total_cost, kind).toBeNull();
    }
    seed();
    openai.pageSize = 1;
    openai.faults = [{ kind: 'changing-summary' }];
    const r = await billed();
    expect(dataset(r, 'openai.costs').error).toMatchObject({
      type: 'pagination_invariant',
      message: expect.stringContaining('summary changed'),
    });
    // The same two pages without the fault: the walk is fine.
    seed();
    anthropic.pageSize = openai.pageSize = 1;
    expect((await billed()).total_cost).toBe(4.5);
  });

  describe('JSONL', () => {
    it('a malformed row fails the whole stream', async () => {
      for (const bad of [
        '{"starting_at": "2025-03-10T00:00:00Z", "cost": 1',
        '{"starting_at": "2025-03-10T00:00:00Z", "cost": "a lot", "currency": "USD"}',
        '[1]',
        '{"starting_at": "soon", "cost": 1, "currency": "USD"}',
        '{"starting_at": "2025-03-10T00:00:00Z", "cost": 1, "currency": "usd"}',
      ]) {
        seed();
        jsonl.lines = [jsonl.lines[0]!, bad, jsonl.lines[0]!];
        const r = await billed();
        expect(dataset(r, 'jsonl'), bad).toMatchObject({
          status: 'unavailable',
          error: { type: 'malformed_response', message: expect.stringContaining('row 2') },
        });
        expect(rowsOf(r, 'jsonl'), bad).toEqual([]);
        expect(r.total_cost).toBeNull();
      }
      jsonl.contentType = 'text/html';
      jsonl.lines = ['<html></html>'];
      expect(dataset(await billed(), 'jsonl').error.type).toBe('malformed_response');
    });

    it('an empty stream is a complete zero; rows split across reads are whole', async () => {
      anthropic.costs = {};
      anthropic.usage = {};
      openai.costs = {};
      jsonl.lines = [];
      const empty = await billed();
      expect(empty).toMatchObject({ data_completeness: 'complete', total_cost: 0, rows: [] });
      expect(dataset(empty, 'jsonl')).toMatchObject({ status: 'complete' });

      jsonl.chunkBytes = 3;
      jsonl.lines = [
        JSON.stringify({
          starting_at: '2025-03-10T05:00:00Z',
          cost: '0.125',
          currency: 'USD',
          model: 'x',
        }),
        JSON.stringify({
          starting_at: '2025-03-11T05:00:00Z',
          cost: '0.375',
          currency: 'USD',
          model: 'x',
        }),
      ];
      try {
        expect(await billed()).toMatchObject({
          total_cost: 0.5,
          rows: [expect.objectContaining({ cost: 0.5 })],
        });
      } finally {
        jsonl.chunkBytes = 16;
      }
    });

    it('mixed currencies: one row per currency, partial, total_cost null', async () => {
      jsonl.lines.push(
        JSON.stringify({ starting_at: '2025-03-10T00:00:00Z', cost: '2', currency: 'EUR' }),
      );
      const r = await billed();
      expect(rowsOf(r, 'jsonl').map((x: any) => [x.currency, x.cost])).toEqual([
        ['EUR', 2],
        ['USD', 1],
      ]);
      expect(dataset(r, 'jsonl')).toMatchObject({ status: 'complete' });
      expect(r).toMatchObject({ data_completeness: 'partial', total_cost: null });
    });
  });

  it('no credential is in a report or a log line, though every provider echoes it', async () => {
    const secrets = [keys.anthropic, keys.openai, keys.jsonl];
    // Positive control: each fixture's 401 repeats the credential it was given.
    const echoes = await Promise.all([
      fetch(`${anthropic.url}/v1/organizations/cost_report`, {
        headers: { 'x-api-key': keys.anthropic + 'x' },
      }),
      fetch(`${openai.url}/v1/organization/costs`, {
        headers: { authorization: `Bearer ${keys.openai}x` },
      }),
      fetch(jsonl.url, { headers: { authorization: `Bearer ${keys.jsonl}x` } }),
    ]);
    const echoed = await Promise.all(echoes.map((e) => e.text()));
    secrets.forEach((s, i) => expect(echoed[i]).toContain(s));

    // The providers now refuse the platform's credentials, echoing them.
    Object.assign(anthropic, { adminKey: 'rotated-1' });
    Object.assign(openai, { adminKey: 'rotated-2' });
    Object.assign(jsonl, { token: 'rotated-3' });
    logLines.length = 0;
    const res = await t.http(
      `/v1/svc/cost_report?${new URLSearchParams({ ...RANGE, source: 'all' })}`,
      {
        headers: BETA,
      },
    );
    const text = await res.text();
    const body = JSON.parse(text);
    // The platform did present each credential, and each was refused.
    expect(anthropic.requests.some((q) => q.headers['x-api-key'] === keys.anthropic)).toBe(true);
    expect(openai.requests.some((q) => q.headers.authorization === `Bearer ${keys.openai}`)).toBe(
      true,
    );
    expect(jsonl.requests.some((q) => q.headers.authorization === `Bearer ${keys.jsonl}`)).toBe(
      true,
    );
    for (const name of ['anthropic.cost_report', 'openai.costs', 'jsonl'])
      expect(dataset(body, name).error, name).toMatchObject({
        type: 'authentication_error',
        message: expect.stringContaining('[redacted]'),
      });
    const warned = logLines.filter((l) => l.includes('billing dataset unavailable'));
    expect(warned.length).toBeGreaterThanOrEqual(3);
    expect(warned.join('')).toContain('[redacted]');
    for (const s of secrets) {
      expect(text.includes(s), 'a credential in the report').toBe(false);
      expect(
        logLines.some((l) => l.includes(s)),
        'a credential in a log line',
      ).toBe(false);
    }
  });
});
