/**
 * Eval runs (core/src/evals, workers/src/jobs/evalRunner.ts) through the HTTP API against the
 * scripted model (agent and grader, evalKit.ts) and real sandboxes:
 * - a run over cases with every judge (expected text, rubric through the outcome grader, check
 *   command in the case's sandbox, two judges at once): pass/fail, score, reason, checks, one
 *   session per case with the eval's metadata, usage, cost priced by the price card, duration;
 *   never more than `concurrency` cases active while it runs;
 * - two runs of two agent versions compared case by case (a fixed case), and under /v1/evals;
 * - a JSONL cases file; cancel of a live run (queued cases cancelled, the running session
 *   interrupted);
 * - bad starts are 400s naming the field; another tenant's run is a 404 and its agent unknown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toFile } from '@anthropic-ai/sdk';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { apiJson } from '../../kit/integrations.js';
import { addModelCard } from '../../kit/turnHelpers.js';
import { readEval, scriptEvals, startEval, untilEnded } from './evalKit.js';

const MODEL = 'eval-model';
const RATES = { input_tokens: 3, output_tokens: 15 };
let t: TestPlatform;
let agentId: string;
let envId: string;

const ACTIVE = new Set(['starting', 'running', 'judging']);
const costOf = (u: any) =>
  (u.input_tokens * RATES.input_tokens + u.output_tokens * RATES.output_tokens) / 1e6;

beforeAll(async () => {
  t = await startPlatform({ env: { EVAL_SCAN_MS: '500' } });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'evals' })).id;
  agentId = (
    await t.client.beta.agents.create({
      name: 'evals',
      model: MODEL,
      system: 'You are the agent under test, v1.',
      tools: [{ type: 'agent_toolset_20260401' }],
    } as any)
  ).id;
  const card = await apiJson(t, '/v1/svc/cost_report/pricing', {
    method: 'PUT',
    json: {
      currency: 'USD',
      services: {
        [`anthropic/${MODEL}`]: {
          ...RATES,
          cache_read_input_tokens: 0.3,
          cache_creation_input_tokens: 3.75,
        },
      },
    },
  });
  expect(card.status, JSON.stringify(card.body)).toBe(200);
  scriptEvals(t, MODEL, 600);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const CASES = [
  { id: 'banana', prompt: 'Say banana.', expected_text: 'banana' },
  { id: 'apple', prompt: 'Say apple.', expected_text: 'apple' },
  { id: 'poem', prompt: 'Write a titled poem.', rubric: 'The poem has a title line.' },
  { id: 'haiku', prompt: 'Write a haiku.', rubric: 'The poem has a title line.' },
  { id: 'file', prompt: 'make-file please', check_command: 'test -s /workspace/made.txt' },
  { id: 'nofile', prompt: 'Say ok.', check_command: 'test -f /workspace/missing.txt' },
  {
    id: 'both',
    prompt: 'make-file and say done',
    check_command: 'grep -q made /workspace/made.txt',
    expected_text: 'banana',
  },
];

describe('eval runs', () => {
  let first: any;

  it('runs every case once as its own session and judges it with each of its judges', async () => {
    const started = await startEval(t, {
      name: 'v1 run',
      agent: agentId,
      environment_id: envId,
      cases: CASES,
      concurrency: 2,
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({
      type: 'eval_run',
      name: 'v1 run',
      agent: { type: 'agent', id: agentId, version: 1 },
      environment_id: envId,
      concurrency: 2,
      currency: 'USD',
      summary: { total: 7 },
    });
    expect(started.body.id).toMatch(/^eval_/);
    const seen: any[] = [];
    first = await untilEnded(() => readEval(t, started.body.id), seen);
    // Progress was visible while it ran, and never more than 2 cases active at once.
    expect(seen.some((r) => r.status === 'running')).toBe(true);
    for (const r of seen)
      expect(r.cases.filter((c: any) => ACTIVE.has(c.status)).length).toBeLessThanOrEqual(2);
    // The run's cost is not known while a case is pending: null, never a partial sum.
    for (const r of seen.filter((x) => x.summary.pending > 0)) expect(r.summary.cost).toBeNull();
    expect(first.status).toBe('completed');
    const by = Object.fromEntries(first.cases.map((c: any) => [c.id, c]));
    expect(first.cases.map((c: any) => c.id)).toEqual(CASES.map((c) => c.id));
    const verdicts = Object.fromEntries(
      first.cases.map((c: any) => [c.id, [c.status, c.passed, c.score]]),
    );
    expect(verdicts).toEqual({
      banana: ['completed', true, 1],
      apple: ['completed', false, 0],
      poem: ['completed', true, 1],
      haiku: ['completed', false, 0],
      file: ['completed', true, 1],
      nofile: ['completed', false, 0],
      both: ['completed', false, 0.5],
    });
    expect(by.apple.reason).toBe('expected_text: the expected text is not in the answer');
    expect(by.poem.reason).toBe('It has a title line.');
    expect(by.haiku.reason).toBe('rubric: There is no title line.');
    expect(by.nofile.reason).toBe('check_command: exit 1');
    expect(by.both.checks).toEqual([
      { type: 'check_command', passed: true, reason: 'exit 0' },
      { type: 'expected_text', passed: false, reason: 'the expected text is not in the answer' },
    ]);
    expect(first.summary).toMatchObject({ passed: 3, failed: 4, errored: 0, pending: 0, total: 7 });

    // One distinct session per case, made for it, with the agent's pinned version.
    const sids = first.cases.map((c: any) => c.session_id);
    expect(new Set(sids).size).toBe(7);
    for (const c of first.cases) {
      const s = (await t.client.beta.sessions.retrieve(c.session_id)) as any;
      expect(s.metadata).toEqual({ eval_id: first.id, eval_case: c.id });
      expect(s.agent.version).toBe(1);
      const { list_cost: _list, ...tokens } = s.usage;
      expect(c.usage).toEqual(tokens);
      expect(c.usage.input_tokens).toBeGreaterThan(0);
      expect(c.cost).toBeCloseTo(costOf(s.usage), 9);
      expect(c.duration_ms).toBeGreaterThan(0);
    }
    // The rubric case was judged by the outcome grader: its outcome is on the session.
    const poem = (await t.client.beta.sessions.retrieve(by.poem.session_id)) as any;
    expect(poem.outcome_evaluations).toMatchObject([
      { description: 'Write a titled poem.', result: 'satisfied' },
    ]);
    expect(first.summary.cost).toBeCloseTo(
      first.cases.reduce((a: number, c: any) => a + c.cost, 0),
      6,
    );
  }, 120_000);

  it('compares two runs of two agent versions case by case', async () => {
    await t.client.beta.agents.update(agentId, {
      version: 1,
      system: 'You are the agent under test, v2.',
    } as any);
    const second = await apiJson(t, '/v1/evals', {
      method: 'POST',
      json: {
        agent: { id: agentId, version: 2 },
        environment_id: envId,
        cases: CASES.filter((c) => ['banana', 'apple', 'haiku'].includes(c.id)),
        concurrency: 3,
      },
    });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const done = await untilEnded(() => apiJson(t, `/v1/evals/${second.body.id}`));
    expect(done.agent.version).toBe(2);
    const cmp = await apiJson(t, `/v1/svc/evals/${first.id}/compare?with=${done.id}`);
    expect(cmp.status, JSON.stringify(cmp.body)).toBe(200);
    expect(cmp.body.type).toBe('eval_comparison');
    expect(Object.fromEntries(cmp.body.cases.map((c: any) => [c.id, c.change]))).toEqual({
      banana: 'same',
      apple: 'fixed',
      poem: 'only_base',
      haiku: 'same',
      file: 'only_base',
      nofile: 'only_base',
      both: 'only_base',
    });
    expect(cmp.body.summary).toEqual({ fixed: 1, regressed: 0, same: 2, unmatched: 4 });
    const list = await apiJson(t, '/v1/svc/evals?limit=1');
    expect(list.body.data.map((r: any) => r.id)).toEqual([done.id]);
    expect(list.body.has_more).toBe(true);
    const back = await apiJson(t, `/v1/svc/evals?agent_id=${agentId}&limit=10`);
    expect(back.body.data.map((r: any) => r.id)).toEqual([done.id, first.id]);
  }, 120_000);

  it('reads cases from a JSONL file', async () => {
    const file = await t.client.beta.files.upload({
      file: await toFile(
        Buffer.from(
          `${JSON.stringify({ prompt: 'Say banana.', expected_text: 'banana' })}\n\n${JSON.stringify({ id: 'p', prompt: 'Say apple.', expected_text: 'kiwi' })}\n`,
        ),
        'cases.jsonl',
        { type: 'application/jsonl' },
      ),
    } as any);
    const r = await startEval(t, { agent: agentId, environment_id: envId, cases_file_id: file.id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const done = await untilEnded(() => readEval(t, r.body.id));
    expect(done.cases.map((c: any) => [c.id, c.passed])).toEqual([
      ['case_1', true],
      ['p', false],
    ]);
    const bad = await t.client.beta.files.upload({
      file: await toFile(
        Buffer.from(`{"prompt":"x","expected_text":"y"}\n{"prompt":5}\n`),
        'bad.jsonl',
      ),
    } as any);
    const refused = await startEval(t, {
      agent: agentId,
      environment_id: envId,
      cases_file_id: bad.id,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^cases_file_id: line 2: .*prompt/);
  }, 60_000);

  it('cancel stops what runs: queued cases cancelled, the running session interrupted', async () => {
    const r = await startEval(t, {
      agent: agentId,
      environment_id: envId,
      concurrency: 1,
      cases: [
        { id: 'slow', prompt: 'delay please', expected_text: 'late' },
        { id: 'next', prompt: 'Say banana.', expected_text: 'banana' },
      ],
    });
    expect(r.status).toBe(200);
    let sid: string | null = null;
    for (let i = 0; i < 100 && !sid; i++) {
      const now = (await readEval(t, r.body.id)).body;
      if (now.cases[0].status === 'running') sid = now.cases[0].session_id;
      else await new Promise((res) => setTimeout(res, 100));
    }
    expect(sid).toBeTruthy();
    const c = await apiJson(t, `/v1/svc/evals/${r.body.id}/cancel`, { method: 'POST' });
    expect(c.status).toBe(200);
    expect(c.body.status).toBe('cancelled');
    expect(c.body.ended_at).toEqual(expect.any(String));
    expect(c.body.cases.map((x: any) => [x.id, x.status])).toEqual([
      ['slow', 'cancelled'],
      ['next', 'cancelled'],
    ]);
    expect(c.body.cases[1].session_id).toBeNull();
    const events: string[] = [];
    for await (const e of t.client.beta.sessions.events.list(sid!, { limit: 100 }))
      events.push(e.type);
    expect(events).toContain('user.interrupt');
    // Cancelling again changes nothing; nothing is judged later.
    await new Promise((res) => setTimeout(res, 1_500));
    const later = (await readEval(t, r.body.id)).body;
    expect(later.status).toBe('cancelled');
    expect(later.cases.map((x: any) => x.status)).toEqual(['cancelled', 'cancelled']);
    expect(
      (await apiJson(t, `/v1/svc/evals/${r.body.id}/cancel`, { method: 'POST' })).body.status,
    ).toBe('cancelled');
  }, 60_000);

  it('refuses bad starts with a 400 naming the field, and keeps tenants apart', async () => {
    const base = { agent: agentId, environment_id: envId };
    const refusals: Array<[unknown, RegExp]> = [
      [{ ...base }, /^cases: give either cases or cases_file_id/],
      [{ ...base, cases: [] }, /cases/],
      [
        { ...base, cases: [{ prompt: 'x' }] },
        /^cases\[0\]: a case needs rubric, check_command or expected_text/,
      ],
      [
        {
          ...base,
          cases: [
            { id: 'a', prompt: 'x', expected_text: 'y' },
            { id: 'a', prompt: 'x', expected_text: 'y' },
          ],
        },
        /^cases\[1\]\.id: case id a is used twice/,
      ],
      [{ ...base, cases: [{ prompt: 'x', expected_text: 'y', extra: 1 }] }, /extra/],
      [{ ...base, concurrency: 0, cases: [{ prompt: 'x', expected_text: 'y' }] }, /concurrency/],
      [
        { ...base, agent: 'agent_nope', cases: [{ prompt: 'x', expected_text: 'y' }] },
        /^agent: agent agent_nope not found/,
      ],
      [
        {
          ...base,
          agent: { id: agentId, version: 9 },
          cases: [{ prompt: 'x', expected_text: 'y' }],
        },
        /^agent\.version/,
      ],
      [
        { ...base, environment_id: 'env_nope', cases: [{ prompt: 'x', expected_text: 'y' }] },
        /^environment_id/,
      ],
      [{ ...base, cases_file_id: 'file_nope' }, /file/],
    ];
    for (const [body, message] of refusals) {
      const r = await startEval(t, body);
      expect([r.status, r.body.error?.type], JSON.stringify(body)).toEqual([
        r.status === 404 ? 404 : 400,
        r.status === 404 ? 'not_found' : 'invalid_request',
      ]);
      expect(r.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    const other = await t.newTenant('eval-other');
    expect((await readEval(t, first.id, other.apiKey)).status).toBe(404);
    expect(
      (await apiJson(t, `/v1/svc/evals/${first.id}/cancel`, { method: 'POST', key: other.apiKey }))
        .status,
    ).toBe(404);
    const theirs = await startEval(
      t,
      { ...base, cases: [{ prompt: 'x', expected_text: 'y' }] },
      other.apiKey,
    );
    expect(theirs.status).toBe(400);
    expect(theirs.body.error.message).toMatch(/^agent: agent .* not found/);
    expect((await apiJson(t, '/v1/svc/evals', { key: other.apiKey })).body.data).toEqual([]);
    const cmp = await apiJson(t, `/v1/svc/evals/${first.id}/compare`);
    expect(cmp.status).toBe(400);
    expect(cmp.body.error.message).toMatch(/^with: is required/);
  }, 60_000);
});
