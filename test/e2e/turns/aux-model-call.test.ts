/**
 * The `aux.model_call` extension event (schemas/src/auxModelCall.ts, workers/src/turn/ledger.ts
 * auxModelCall), observed through HTTP and the SDK against the scripted model on a priced card:
 * - a harness `pi` compaction summary call appends exactly one `aux.model_call` (kind
 *   `compaction`, the card id, `<provider>/<wire model>`, the scripted usage, its
 *   span.compaction_summarize_start id), right after its span end, in the same append;
 * - each outcome grader call appends exactly one (kind `grader`, its outcome_id, iteration and
 *   span.outcome_evaluation_start id), right after its span.outcome_evaluation_end;
 * - `list_cost` is what the session's list cost gained from that call: the session's
 *   `usage.list_cost` is the main requests' cost plus the aux calls' `amount_nanos`, and its
 *   token counts are the main requests' spans plus the aux calls' usage;
 * - the agent's own model requests append none;
 * - the event is listed, matches its schema, is left out of the default SSE stream and is
 *   streamed with `?include=chunks`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateStreamFrame } from '@agentfleet/schemas';
import { readSse, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import {
  events,
  expectValidEvents,
  piSession,
  RED_DOT_PNG,
  requestsOf,
  turn,
} from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', OUTCOME_HEARTBEAT_MS: '60000' } });
  envId = (await t.client.beta.environments.create({ name: 'aux-model-call' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

// USD per million tokens: an input token is 0.1 cent, an output token 0.2 cent, a cache read
// 0.01 cent, a cache write 0.125 cent.
const COST = { input: 1000, output: 2000, cacheRead: 100, cacheWrite: 1250 };
const NANOS_PER_CENT = 10_000_000;
type Usage = NonNullable<ScriptedResponse['usage']>;
const KEYS = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
] as const;
const full = (u: Usage) => Object.fromEntries(KEYS.map((k) => [k, u[k] ?? 0]));
/** A usage's list cost at COST, in nano-dollars. */
const nanosOf = (u: Record<string, number>) =>
  ((u.input_tokens ?? 0) * COST.input +
    (u.output_tokens ?? 0) * COST.output +
    (u.cache_read_input_tokens ?? 0) * COST.cacheRead +
    (u.cache_creation_input_tokens ?? 0) * COST.cacheWrite) *
  1000;
const reply = (text: string, usage: Usage): ScriptedResponse => ({ steps: [{ text }], usage });
const sum = (xs: Array<Record<string, number>>) =>
  Object.fromEntries(KEYS.map((k) => [k, xs.reduce((n, x) => n + (x[k] ?? 0), 0)]));
const tokensOf = (usage: any) => Object.fromEntries(KEYS.map((k) => [k, usage[k]]));

/** Opens the default and the `include=chunks` live streams of a session. */
async function openStreams(sid: string) {
  const plain = await t.http(`/v1/sessions/${sid}/events/stream`);
  const chunks = await t.http(`/v1/sessions/${sid}/events/stream?include=chunks`);
  const idle = (f: { event: string }) => f.event === 'session.status_idle';
  return async () => ({ plain: await readSse(plain, idle), chunks: await readSse(chunks, idle) });
}

/** The session's usage and list cost must be its main requests' plus its aux calls'. */
async function expectSessionGained(sid: string, log: any[]) {
  const main = log.filter((e) => e.type === 'span.model_request_end').map((e) => e.model_usage);
  const aux = log.filter((e) => e.type === 'aux.model_call');
  const got = await t.client.beta.sessions.retrieve(sid);
  expect(tokensOf(got.usage)).toEqual(sum([...main, ...aux.map((a) => a.usage)]));
  const nanos =
    main.reduce((n, u) => n + nanosOf(u), 0) +
    aux.reduce((n, a) => n + a.list_cost.amount_nanos, 0);
  expect(got.usage.list_cost).toEqual({
    amount: String(Math.ceil(nanos / NANOS_PER_CENT)),
    currency: 'USD',
  });
}

describe('aux.model_call', () => {
  it('a compaction summary call: one event with its kind, usage and list cost; none for the agent’s requests; chunks stream only', async () => {
    const U1: Usage = { input_tokens: 1000, output_tokens: 500 };
    const U2: Usage = { input_tokens: 200, output_tokens: 50 };
    // 30 + 20 + 10 + 10 = 70 cents.
    const SUMMARY_USAGE: Usage = {
      input_tokens: 300,
      output_tokens: 100,
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 80,
    };
    const s = await piSession(t, envId, 'anthropic', {
      pi: { contextWindow: 6000, cost: COST },
      metadata: { compaction_trigger_fraction: '0.4' },
    });
    t.model.script(
      s.wire,
      reply(`a1 ${'ipsum '.repeat(400)}`, U1),
      reply('SUMMARY: alpha, then beta.', SUMMARY_USAGE),
      reply('a2', U2),
    );
    const first = await turn(t, s.sid, `first question: alpha ${'lorem '.repeat(40)}`, RED_DOT_PNG);
    expect(first.filter((e) => e.type === 'aux.model_call')).toEqual([]);
    const streams = await openStreams(s.sid);
    await turn(t, s.sid, 'second question: beta');
    const { plain, chunks } = await streams();
    expect(requestsOf(t, s.wire)).toHaveLength(3);

    const log = await events(t, s.sid);
    expectValidEvents(log);
    const aux = log.filter((e) => e.type === 'aux.model_call');
    expect(aux).toHaveLength(1);
    const start = log.find((e) => e.type === 'span.compaction_summarize_start');
    expect(aux[0]).toMatchObject({
      kind: 'compaction',
      model: s.wire,
      provider_model: `anthropic/${s.wire}`,
      usage: full(SUMMARY_USAGE),
      list_cost: { amount: '70', currency: 'USD', amount_nanos: 70 * NANOS_PER_CENT },
      compaction_summarize_start_id: start.id,
    });
    expect(Number.isInteger(aux[0].duration_ms)).toBe(true);
    expect(aux[0].data).toEqual(
      Object.fromEntries(Object.entries(aux[0]).filter(([k]) => !ENVELOPE.has(k))),
    );
    // Written with its span end: the next seq, one append.
    const end = log.find((e) => e.type === 'span.compaction_summarize_end');
    expect(aux[0].seq).toBe(end.seq + 1);
    expect(aux[0].created_at).toBe(end.created_at);
    await expectSessionGained(s.sid, log);

    expect(plain.map((f) => f.event)).toContain('agent.thread_context_compacted');
    expect(plain.filter((f) => f.event === 'aux.model_call')).toEqual([]);
    const streamed = chunks.filter((f) => f.event === 'aux.model_call');
    expect(streamed.map((f) => f.data.id)).toEqual([aux[0].id]);
    for (const f of chunks) validateStreamFrame(f.data);
  });

  it('outcome graders: one event per grader call with its cycle; none for the agent’s requests; chunks stream only', async () => {
    const MODEL = 'aux-grader-model';
    await addModelCard(t, MODEL, { piConfig: { cost: COST } });
    const agent = await t.client.beta.agents.create({
      name: 'aux-grader',
      model: MODEL,
      system: 'You are the agent under test.',
    });
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId }))
      .id;
    const UA: Usage = { input_tokens: 100, output_tokens: 20 }; // 14 cents
    const G1: Usage = { input_tokens: 400, output_tokens: 50, cache_read_input_tokens: 30 }; // 50.3 cents
    const G2: Usage = { input_tokens: 500, output_tokens: 60, cache_creation_input_tokens: 8 }; // 63 cents
    const verdict = (result: string, explanation: string, usage: Usage) =>
      reply(JSON.stringify({ result, explanation }), usage);
    t.model.script(
      MODEL,
      reply('The sea is wide.', UA),
      verdict('needs_revision', 'There is no title line.', G1),
      reply('Title: Sea\nThe sea is wide.', UA),
      verdict('satisfied', 'It has a title line.', G2),
    );
    const streams = await openStreams(sid);
    await t.client.beta.sessions.events.send(sid, {
      events: [
        {
          type: 'user.define_outcome',
          description: 'Write a two-line poem about the sea.',
          rubric: { type: 'text', content: 'The poem has a title line.' },
        } as any,
      ],
    });
    const { plain, chunks } = await streams();

    const log = await events(t, sid);
    expectValidEvents(log);
    const aux = log.filter((e) => e.type === 'aux.model_call');
    const starts = log.filter((e) => e.type === 'span.outcome_evaluation_start');
    const ends = log.filter((e) => e.type === 'span.outcome_evaluation_end');
    expect(ends.map((e) => e.result)).toEqual(['needs_revision', 'satisfied']);
    // Four model calls, two of them the agent's: two aux events, one per grader call.
    expect(log.filter((e) => e.type === 'span.model_request_end')).toHaveLength(2);
    expect(aux).toHaveLength(2);
    const outcomeId = log.find((e) => e.type === 'user.define_outcome').outcome_id;
    [G1, G2].forEach((g, i) => {
      expect(aux[i]).toMatchObject({
        kind: 'grader',
        model: MODEL,
        provider_model: `anthropic/${MODEL}`,
        usage: full(g),
        list_cost: {
          amount: String(Math.ceil(nanosOf(full(g)) / NANOS_PER_CENT)),
          currency: 'USD',
          amount_nanos: nanosOf(full(g)),
        },
        outcome_id: outcomeId,
        outcome_evaluation_start_id: starts[i].id,
        iteration: i,
      });
      expect(aux[i].usage).toEqual(ends[i].usage);
      expect(Number.isInteger(aux[i].duration_ms)).toBe(true);
      expect(aux[i].seq).toBe(ends[i].seq + 1);
    });
    await expectSessionGained(sid, log);

    expect(plain.filter((f) => f.event === 'aux.model_call')).toEqual([]);
    expect(plain.filter((f) => f.event === 'span.outcome_evaluation_end')).toHaveLength(2);
    expect(chunks.filter((f) => f.event === 'aux.model_call').map((f) => f.data.id)).toEqual(
      aux.map((a) => a.id),
    );
    for (const f of chunks) validateStreamFrame(f.data);
  });
});

/** The envelope fields of a served event; the rest is its payload, also served as `data`. */
const ENVELOPE = new Set(['id', 'type', 'seq', 'session_id', 'created_at', 'processed_at', 'data']);
