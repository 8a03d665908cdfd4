/**
 * A harness `pi` compaction summary call is a model request of the session
 * (workers/src/turn/compaction/turnCompaction.ts, workers/src/turn/budget.ts), observed through
 * the SDK, HTTP and a kill -9 of the all-in-one process:
 * - the session's usage is the sum of the usage on its span.model_request_end and
 *   span.compaction_summarize_end events (all four token fields, both protocols), and
 *   `usage.list_cost` prices the summary call at the card's `pi_config.cost`;
 * - a summary call that reaches the budget ends the turn with `budget_reached` before the main
 *   request (the boundary is kept; after a raise the next turn starts from it, no second
 *   summary); a budget already reached makes no summary call at all (no span, no boundary);
 * - the budget's crash repair counts compaction span ends: a summary span end whose session
 *   update was lost is added once, a counted one is never added again, and a turn recovered
 *   after kill -9 mid-request counts the summary call once.
 */
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import {
  realAdapterEnv,
  BETA,
  startPlatform,
  waitFor,
  type TestPlatform,
} from '../../kit/harness.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { apiCaller, crashEnv, useCrashFixture } from '../../kit/crashPlatform.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import {
  events,
  expectValidEvents,
  piSession,
  RED_DOT_PNG,
  requestsOf,
  turn,
  type Protocol,
} from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  envId = (await t.client.beta.environments.create({ name: 'compaction-usage' })).id;
});
afterAll(async () => {
  await t?.close();
});

// USD per million tokens: an input token is 0.1 cent, an output token 0.2 cent, a cache read
// 0.01 cent, a cache write 0.125 cent.
const COST = { input: 1000, output: 2000, cacheRead: 100, cacheWrite: 1250 };
const PI = { contextWindow: 6000, cost: COST };
const TRIGGER = { compaction_trigger_fraction: '0.4' };
type Usage = NonNullable<ScriptedResponse['usage']>;
const U1: Usage = { input_tokens: 1000, output_tokens: 500 }; // 200 cents
const U2: Usage = { input_tokens: 200, output_tokens: 50 }; // 30 cents
// 30 + 20 + 10 + 10 = 70 cents (Anthropic reports the cache fields as they are).
const SUMMARY_USAGE: Usage = {
  input_tokens: 300,
  output_tokens: 100,
  cache_read_input_tokens: 1000,
  cache_creation_input_tokens: 80,
};
// OpenAI: no cache write; 30 + 20 = 50 cents.
const SUMMARY_USAGE_OAI: Usage = { input_tokens: 300, output_tokens: 100 };
const SUMMARY = 'SUMMARY: alpha was asked, then beta with a picture.';
const KEYS = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
] as const;
const cents = (amount: string) => ({
  type: 'limit' as const,
  max_list_cost: { amount, currency: 'USD' as const },
});
const reply = (text: string, usage: Usage): ScriptedResponse => ({ steps: [{ text }], usage });

/** The token counts summed over the served events of `type` (their `model_usage`). */
function spanUsage(log: any[], type: string) {
  const ends = log.filter((e) => e.type === type);
  return Object.fromEntries(
    KEYS.map((k) => [k, ends.reduce((n, e) => n + (e.model_usage?.[k] ?? 0), 0)]),
  ) as Record<(typeof KEYS)[number], number>;
}
const tokensOf = (usage: any) => Object.fromEntries(KEYS.map((k) => [k, usage[k]]));
const plus = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(KEYS.map((k) => [k, (a[k] ?? 0) + (b[k] ?? 0)]));

const FIRST = `first question: alpha ${'lorem '.repeat(40)}`;
// The second turn's image counts 1600 tokens: over 0.5 × 3000, so it compacts first.
// The first turn (with an image, 1600 tokens) stays under the 2400-token threshold; its long
// reply takes the second over it, which compacts and then sends its own input after the summary.
const A1 = `a1 ${'ipsum '.repeat(400)}`;
const firstTurn = (sid: string) => turn(t, sid, FIRST, RED_DOT_PNG);
const compactingTurn = (sid: string) => turn(t, sid, 'second question: beta');

describe('compaction summary usage counts in the session', () => {
  for (const protocol of ['anthropic', 'openai'] as Protocol[]) {
    it(`${protocol}: session usage = main requests + summary call (from the spans); list_cost includes it`, async () => {
      const summaryUsage = protocol === 'anthropic' ? SUMMARY_USAGE : SUMMARY_USAGE_OAI;
      const s = await piSession(t, envId, protocol, {
        pi: PI,
        metadata: TRIGGER,
        budget: cents('100000'),
      });
      t.model.script(s.wire, reply(A1, U1), reply(SUMMARY, summaryUsage), reply('a2', U2));
      await firstTurn(s.sid);
      const log = await compactingTurn(s.sid);
      expectValidEvents(log);
      expect(requestsOf(t, s.wire)).toHaveLength(3);
      expect(log.filter((e) => e.type === 'agent.thread_context_compacted')).toHaveLength(1);
      const main = spanUsage(log, 'span.model_request_end');
      const summary = spanUsage(log, 'span.compaction_summarize_end');
      expect(summary).toEqual(plus(summaryUsage as any, {}));
      expect(main).toEqual(plus(U1 as any, U2 as any));
      const got = await t.client.beta.sessions.retrieve(s.sid);
      expect(tokensOf(got.usage)).toEqual(plus(main, summary));
      const summaryCents = protocol === 'anthropic' ? 70 : 50;
      expect(got.usage.list_cost).toEqual({ amount: String(230 + summaryCents), currency: 'USD' });
    });
  }

  it('a session without a budget counts the summary call too; a truncate fallback counts what it reported', async () => {
    const s = await piSession(t, envId, 'anthropic', {
      pi: PI,
      metadata: { ...TRIGGER, compaction_strategy: 'summarize' },
    });
    t.model.script(
      s.wire,
      reply(A1, U1),
      {
        steps: [{ tool_use: { name: 'lookup', input: { word: 'x' } } }],
        stop_reason: 'tool_use',
        usage: SUMMARY_USAGE,
      },
      reply('a2', U2),
    );
    await firstTurn(s.sid);
    const log = await compactingTurn(s.sid);
    const boundary = log.find((e) => e.type === 'agent.thread_context_compacted');
    expect(boundary.strategy).toBe('truncate');
    expect(spanUsage(log, 'span.compaction_summarize_end')).toEqual(plus(SUMMARY_USAGE as any, {}));
    const got = await t.client.beta.sessions.retrieve(s.sid);
    expect(tokensOf(got.usage)).toEqual(plus(plus(U1 as any, U2 as any), SUMMARY_USAGE as any));
    expect(got.usage.list_cost).toEqual({ amount: '300', currency: 'USD' });
    // The cost report's ledger has the summary call as kind `compaction`, the rest as `turn`.
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const ledger = (await (
      await t.http(`/v1/svc/cost_report?starting_at=${since}&session_id=${s.sid}&group_by=kind`, {
        headers: BETA,
      })
    ).json()) as any;
    const byKind = Object.fromEntries(ledger.rows.map((r: any) => [r.kind, tokensOf(r.usage)]));
    expect(byKind).toEqual({
      compaction: tokensOf(plus(SUMMARY_USAGE as any, {})),
      turn: tokensOf(plus(U1 as any, U2 as any)),
    });
  });
});

describe('compaction and the session budget', () => {
  it('a summary call that reaches the budget ends the turn with budget_reached before the main request', async () => {
    // 200 cents after the first turn (< 250); the summary brings it to 270 (≥ 250).
    const s = await piSession(t, envId, 'anthropic', {
      pi: PI,
      metadata: TRIGGER,
      budget: cents('250'),
    });
    t.model.script(s.wire, reply(A1, U1), reply(SUMMARY, SUMMARY_USAGE), reply('a3', U2));
    await firstTurn(s.sid);
    const log = await compactingTurn(s.sid);
    expect(requestsOf(t, s.wire)).toHaveLength(2);
    expect(log.filter((e) => e.type === 'session.status_idle').at(-1).stop_reason).toEqual({
      type: 'budget_reached',
    });
    const types = log.map((e) => e.type);
    const boundaryAt = types.indexOf('agent.thread_context_compacted');
    expect(boundaryAt).toBeGreaterThan(0);
    // Nothing but the idle after the boundary: no main request, no session.error.
    expect(types.slice(boundaryAt + 1)).toEqual(['session.status_idle']);
    const spent = await t.client.beta.sessions.retrieve(s.sid);
    expect(spent.usage.list_cost).toEqual({ amount: '270', currency: 'USD' });
    expect(spent.usage.input_tokens).toBe(1300);

    // Raised: the next turn starts from the boundary (no second summary call).
    await t.client.beta.sessions.update(s.sid, { budget: cents('1000') });
    const after = await turn(t, s.sid, 'third question: gamma');
    expect(after.filter((e) => e.type === 'session.status_idle').at(-1).stop_reason).toEqual({
      type: 'end_turn',
    });
    const reqs = requestsOf(t, s.wire);
    expect(reqs).toHaveLength(3);
    const sent = JSON.stringify(reqs[2]!.body.messages);
    expect(sent).toContain(SUMMARY);
    expect(sent).toContain('third question: gamma');
    expect(sent).not.toContain('first question');
    expect(after.filter((e) => e.type === 'agent.thread_context_compacted')).toHaveLength(1);
    expect((await t.client.beta.sessions.retrieve(s.sid)).usage.list_cost?.amount).toBe('300');
  });

  it('a budget already reached makes no summary call: no compaction span, no boundary', async () => {
    // The first turn costs 200 cents: exactly the budget.
    const s = await piSession(t, envId, 'openai', {
      pi: PI,
      metadata: TRIGGER,
      budget: cents('200'),
    });
    t.model.script(s.wire, reply(A1, U1), reply(SUMMARY, SUMMARY_USAGE_OAI), reply('a2', U2));
    await firstTurn(s.sid);
    const log = await compactingTurn(s.sid);
    expect(requestsOf(t, s.wire)).toHaveLength(1);
    expect(log.filter((e) => e.type === 'session.status_idle').at(-1).stop_reason).toEqual({
      type: 'budget_reached',
    });
    expect(log.map((e) => e.type).filter((x) => x.includes('compact'))).toEqual([]);
    expect((await t.client.beta.sessions.retrieve(s.sid)).usage.list_cost?.amount).toBe('200');

    // Raised: that turn's history compacts now, once, and is answered.
    await t.client.beta.sessions.update(s.sid, { budget: cents('1000') });
    const after = await turn(t, s.sid, 'third question: gamma');
    expect(requestsOf(t, s.wire)).toHaveLength(3);
    expect(after.filter((e) => e.type === 'agent.thread_context_compacted')).toHaveLength(1);
    expect((await t.client.beta.sessions.retrieve(s.sid)).usage.list_cost?.amount).toBe('280');
  });
});

describe('compaction usage and the budget crash repair', () => {
  it('a summary span end whose session update was lost is added once; counted ones never again', async () => {
    const s = await piSession(t, envId, 'anthropic', {
      pi: PI,
      metadata: TRIGGER,
      budget: cents('100000'),
    });
    t.model.script(
      s.wire,
      reply(A1, U1),
      reply(SUMMARY, SUMMARY_USAGE),
      reply('a2', U2),
      reply('a3', U2),
      reply('a4', U2),
      reply('a5', U2),
    );
    await firstTurn(s.sid);
    await compactingTurn(s.sid);
    // The budget check before the next request repairs from the spans: nothing is missing.
    await turn(t, s.sid, 'third question');
    const counted = await t.client.beta.sessions.retrieve(s.sid);
    const log = await events(t, s.sid);
    const fromSpans = plus(
      spanUsage(log, 'span.model_request_end'),
      spanUsage(log, 'span.compaction_summarize_end'),
    );
    expect(tokensOf(counted.usage)).toEqual(fromSpans);
    expect(counted.usage.list_cost?.amount).toBe('330');

    // Fault injection: a summary span end appended without its session update, as a worker
    // killed between the event insert and the usage update leaves it.
    const lost = { input_tokens: 500, output_tokens: 0 };
    await t.server.platform.events.append('tnt_default', s.sid, [
      {
        type: 'span.compaction_summarize_end',
        payload: {
          compaction_summarize_start_id: 'sevt_lost',
          is_error: false,
          model_usage: { ...lost, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
        },
      },
    ]);
    await turn(t, s.sid, 'fourth question');
    await turn(t, s.sid, 'fifth question');
    const repaired = await t.client.beta.sessions.retrieve(s.sid);
    // 330 + 50 (the lost summary) + 2 × 30 (the two turns).
    expect(repaired.usage.list_cost?.amount).toBe('440');
    expect(repaired.usage.input_tokens).toBe((counted.usage.input_tokens ?? 0) + 500 + 400);
  });
});

const crash = useCrashFixture('agentfleet-compaction-usage-crash-');

describe('compaction usage across a crash', () => {
  it('a turn recovered after kill -9 mid-request counts the summary call once', async () => {
    const port = await freePort();
    const key = 'op-compaction-usage-crash';
    const env = {
      ...crashEnv({
        port,
        dataDir: crash.dataDir,
        key,
        secret: 'compaction-usage-crash-secret-0123456789ab',
      }),
      SANDBOX_DRIVER: 'none',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(crash.model.url).host,
      ...realAdapterEnv(),
    };
    const MODEL = 'compaction-usage-crash-model';
    const call = apiCaller(port, key, { 'anthropic-beta': 'managed-agents-2026-04-01' });
    let proc = await startProcess('all', env);
    try {
      const card = await call('/v1/svc/model_cards', {
        model_id: MODEL,
        provider: 'anthropic',
        model: MODEL,
        base_url: crash.model.url,
        api_key: 'sk-crash',
        pi_config: PI,
      });
      expect(card.status, JSON.stringify(card.body)).toBe(200);
      const envIdC = (await call('/v1/environments', { name: 'e' })).body.id;
      const agent = await call('/v1/agents', {
        name: 'a',
        model: MODEL,
        harness: 'pi',
        metadata: TRIGGER,
      });
      expect(agent.status, JSON.stringify(agent.body)).toBe(200);
      const created = await call('/v1/sessions', {
        agent: agent.body.id,
        environment_id: envIdC,
        budget: cents('100000'),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const sid = created.body.id;
      const log = async () =>
        (await call(`/v1/sessions/${sid}/events?limit=1000`)).body.data as any[];
      const idles = async () => (await log()).filter((e) => e.type === 'session.status_idle');
      crash.model.script(
        MODEL,
        reply(A1, U1),
        reply(SUMMARY, SUMMARY_USAGE),
        { steps: [{ text: 'partial' }, { delay_ms: 60_000 }], usage: U2 },
        reply('finished after recovery', U2),
      );
      const send = (content: unknown[]) =>
        call(`/v1/sessions/${sid}/events`, { events: [{ type: 'user.message', content }] });
      const first = await send([
        { type: 'text', text: FIRST },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_DOT_PNG } },
      ]);
      expect(first.status).toBe(202);
      await waitFor(async () => (await idles()).length >= 1);
      const second = await send([{ type: 'text', text: 'second question: beta' }]);
      expect(second.status).toBe(202);
      // The summary is stored with its usage; the main request after it is mid-stream.
      const reqs = () => crash.model.requests.filter((r) => r.model === MODEL);
      await waitFor(async () => reqs().length >= 3);
      expect((await call(`/v1/sessions/${sid}`)).body.usage.list_cost).toEqual({
        amount: '270',
        currency: 'USD',
      });
      await kill9(proc.child);

      proc = await startProcess('all', env);
      const events = await waitFor(async () => {
        const ev = await log();
        return ev.filter((e) => e.type === 'session.status_idle').length >= 2 ? ev : null;
      }, 60_000);
      expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'finished after recovery',
      );
      // No second summary call: the recovered turn starts from the boundary.
      expect(reqs()).toHaveLength(4);
      expect(events.filter((e) => e.type === 'agent.thread_context_compacted')).toHaveLength(1);
      const after = (await call(`/v1/sessions/${sid}`)).body;
      const fromSpans = plus(
        spanUsage(events, 'span.model_request_end'),
        spanUsage(events, 'span.compaction_summarize_end'),
      );
      expect(tokensOf(after.usage)).toEqual(fromSpans);
      // The first request, the summary and the recovered request; the interrupted one added nothing.
      expect(after.usage.input_tokens).toBe(1000 + 300 + 200);
      expect(after.usage.list_cost).toEqual({ amount: '300', currency: 'USD' });
    } finally {
      await kill9(proc.child);
    }
  }, 90_000);
});
