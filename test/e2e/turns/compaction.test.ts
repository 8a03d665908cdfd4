/**
 * Harness-owned context compaction (agent `harness: 'pi'`; workers/src/turn/compaction), observed
 * at the scripted model with a small `pi_config.contextWindow`, on both protocols:
 * - once a request would exceed compaction_trigger_fraction × the window, the conversation is
 *   compacted first: span.compaction_summarize_start/_end and the boundary
 *   agent.thread_context_compacted (with the summary) are appended, and every later request
 *   sends the summary plus the messages after the boundary only;
 * - cc-style and opencode-style send an isolated payload (summary-only system prompt, no tools,
 *   image placeholders, a compaction session id of their own, no reasoning); opencode-style asks
 *   for Goal, Instructions, Discoveries, Accomplished, Files; summarize replays the main
 *   request's system prompt, tools, history and session id plus a private instruction, without
 *   tool_choice; an unknown strategy is cc-style; compaction_summary_prompt replaces the prompt
 *   and compaction_max_summary_tokens caps the summary's output;
 * - a tool call in the summary rejects the boundary: the platform's truncation fallback is
 *   written instead and the turn completes;
 * - the default SSE stream carries the boundary event; the span.compaction_summarize_*
 *   extensions are stored and listed but left out of the default stream;
 * - bad compaction metadata is a 400 naming the key; a `default` harness session is unchanged.
 * The overflow retry and the compaction limit: test/e2e/turns/compaction-overflow.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { say, untilIdle } from '../../kit/turnHelpers.js';
import {
  conversationOf,
  events,
  expectValidEvents,
  piSession,
  reasoningOf,
  RED_DOT_PNG,
  requestsOf,
  sessionIdOf,
  systemOf,
  toolsOf,
  turn,
  type Protocol,
} from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  envId = (await t.client.beta.environments.create({ name: 'compaction' })).id;
});
afterAll(async () => {
  await t?.close();
});

const SUMMARY = 'SUMMARY: the user asked about alpha, then beta with a picture.';
const SMALL_WINDOW = { contextWindow: 6000, reasoning: true };
const LONG_REPLY = `a1 ${'ipsum '.repeat(400)}`;

/**
 * Three turns on a pi session whose threshold is 2400 tokens: the first turn carries an image
 * (counted at 1600 tokens) and stays under it; the second turn, after a long reply, crosses it,
 * so it compacts before its request and sends the summary and its own input. Requests: [0] turn
 * 1, [1] the summary, [2] turn 2, [3] turn 3.
 */
async function threeTurns(
  protocol: Protocol,
  metadata: Record<string, string>,
  summaryResponse = say(SUMMARY),
  effort?: 'high',
) {
  const s = await piSession(t, envId, protocol, {
    pi: SMALL_WINDOW,
    metadata: { compaction_trigger_fraction: '0.4', ...metadata },
    effort,
  });
  t.model.script(s.wire, say(LONG_REPLY), summaryResponse, say('a2'), say('a3'));
  await turn(t, s.sid, `first question: alpha ${'lorem '.repeat(40)}`, RED_DOT_PNG);
  await turn(t, s.sid, 'second question: beta');
  const log = await turn(t, s.sid, 'third question: gamma');
  const reqs = requestsOf(t, s.wire);
  expect(reqs).toHaveLength(4);
  expectValidEvents(log);
  const boundary = log.filter((e) => e.type === 'agent.thread_context_compacted');
  expect(boundary).toHaveLength(1);
  return { ...s, reqs, log, boundary: boundary[0] };
}

/**
 * The turn that compacted sends the summary, then its own input (the model answers the user);
 * the next one the summary, then only what came after it.
 */
function expectRebuiltHistory(reqs: any[], summary: string) {
  const second = conversationOf(reqs[2]);
  expect(second).toHaveLength(1);
  expect(second[0]!.role).toBe('user');
  expect(second[0]!.text).toContain(summary);
  expect(second[0]!.text).toMatch(/second question: beta$/);
  const third = conversationOf(reqs[3]);
  expect(third.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  expect(third[0]!.text).toContain(summary);
  expect(third[1]!.text).toBe('a2');
  expect(third[2]!.text).toBe('third question: gamma');
  for (const m of third) expect(m.text).not.toContain('first question');
}

/** Isolated strategies: summary-only system, no tools, own session id, placeholders, no reasoning. */
function expectIsolated(reqs: any[], sid: string) {
  const summary = reqs[1];
  expect(systemOf(summary)).toMatch(/^You summarise conversations/);
  expect(systemOf(summary)).not.toContain('compaction test agent');
  expect(toolsOf(summary)).toBeUndefined();
  expect(reasoningOf(summary)).toBeUndefined();
  expect(sessionIdOf(summary)).toMatch(new RegExp(`^${sid}:compaction:sevt_`));
  for (const main of [reqs[0], reqs[2], reqs[3]]) expect(sessionIdOf(main)).toBe(sid);
  const body = JSON.stringify(summary.body);
  expect(body).not.toContain(RED_DOT_PNG);
  const conv = conversationOf(summary);
  expect(conv).toHaveLength(1);
  expect(conv[0]!.text).toContain('[image]');
  expect(conv[0]!.text).toContain('first question: alpha');
  expect(conv[0]!.text).toContain('second question: beta');
  return conv[0]!.text;
}

describe('compaction strategies (harness pi)', () => {
  it('cc-style (openai): isolated summary payload, boundary event, rebuilt history', async () => {
    const r = await threeTurns('openai', {}, say(SUMMARY), 'high');
    const prompt = expectIsolated(r.reqs, r.sid);
    expect(prompt).toContain('Write a concise but complete summary');
    // The main requests ask for reasoning; the summary call does not.
    expect(reasoningOf(r.reqs[0]!)).toBe('high');
    expect(r.boundary).toMatchObject({
      summary: SUMMARY,
      strategy: 'cc-style',
      trigger: 'threshold',
      fallback_reason: null,
    });
    expect(r.boundary.estimated_tokens_before).toBeGreaterThan(2400);
    const types = r.log.map((e) => e.type);
    const start = types.indexOf('span.compaction_summarize_start');
    expect(start).toBeGreaterThan(-1);
    expect(types.slice(start, start + 4)).toEqual([
      'span.compaction_summarize_start',
      'span.compaction_summarize_end',
      'aux.model_call',
      'agent.thread_context_compacted',
    ]);
    const end = r.log.find((e) => e.type === 'span.compaction_summarize_end');
    expect(end).toMatchObject({ is_error: false, compaction_summarize_start_id: r.log[start].id });
    expectRebuiltHistory(r.reqs, SUMMARY);
    expect(r.log.filter((e) => e.type === 'session.error')).toEqual([]);
  });

  it('opencode-style (anthropic): isolated payload with the structured template', async () => {
    const r = await threeTurns('anthropic', { compaction_strategy: 'opencode-style' });
    const prompt = expectIsolated(r.reqs, r.sid);
    for (const section of ['Goal', 'Instructions', 'Discoveries', 'Accomplished', 'Files'])
      expect(prompt).toContain(`## ${section}`);
    expect(r.boundary).toMatchObject({ summary: SUMMARY, strategy: 'opencode-style' });
    expectRebuiltHistory(r.reqs, SUMMARY);
  });

  it('summarize (anthropic): replays system, tools, history and session id plus an instruction', async () => {
    const r = await threeTurns('anthropic', { compaction_strategy: 'summarize' });
    const [first, summary] = [r.reqs[0]!, r.reqs[1]!];
    expect(systemOf(summary)).toBe('You are the compaction test agent.');
    expect(toolsOf(summary)).toEqual(toolsOf(first));
    expect(toolsOf(summary)).toHaveLength(1);
    expect(sessionIdOf(summary)).toBe(r.sid);
    expect(summary.body.tool_choice).toBeUndefined();
    expect(reasoningOf(summary)).toBeUndefined();
    // The exact history (image bytes included), then the private instruction.
    const msgs = summary.body.messages as any[];
    expect(msgs[0]).toEqual(first.body.messages[0]);
    expect(msgs[0].content).toContainEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: RED_DOT_PNG },
    });
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(msgs[1].content).toEqual([{ type: 'text', text: LONG_REPLY }]);
    const last = msgs[2].content as any[];
    expect(last[0]).toEqual({ type: 'text', text: 'second question: beta' });
    expect(last.at(-1).text).toMatch(/^Private compaction instruction/);
    expect(r.boundary).toMatchObject({ summary: SUMMARY, strategy: 'summarize' });
    expectRebuiltHistory(r.reqs, SUMMARY);
  });

  it('an unknown strategy is cc-style; summary_prompt and max_summary_tokens apply', async () => {
    const r = await threeTurns('anthropic', {
      compaction_strategy: 'no-such-strategy',
      compaction_summary_prompt: 'Summarise in pirate speech.',
      compaction_max_summary_tokens: '300',
    });
    const prompt = expectIsolated(r.reqs, r.sid);
    expect(prompt).toMatch(/Summarise in pirate speech\.$/);
    expect(prompt).not.toContain('Write a concise but complete summary');
    expect(r.reqs[1]!.body.max_tokens).toBe(300);
    expect(r.boundary).toMatchObject({ strategy: 'cc-style' });
  });

  it('a tool call in the summary rejects the boundary: truncation fallback, turn completes', async () => {
    const r = await threeTurns(
      'openai',
      { compaction_strategy: 'summarize', compaction_max_summary_tokens: '40' },
      { steps: [{ tool_use: { name: 'lookup', input: { word: 'x' } } }], stop_reason: 'tool_use' },
    );
    expect(r.boundary).toMatchObject({ strategy: 'truncate', trigger: 'threshold' });
    expect(r.boundary.fallback_reason).toContain('tool call');
    // The newest messages are kept verbatim (the image's turn is among those omitted); no tool
    // call was recorded.
    expect(r.boundary.summary).toContain('second question: beta');
    expect(r.boundary.summary).toContain('[2 earlier messages omitted]');
    expect(r.boundary.summary).not.toContain('first question');
    expect(r.log.filter((e) => e.type === 'agent.custom_tool_use')).toEqual([]);
    const end = r.log.find((e) => e.type === 'span.compaction_summarize_end');
    expect(end.is_error).toBe(true);
    expectRebuiltHistory(r.reqs, 'Summarising the earlier conversation failed');
    const idles = r.log.filter((e) => e.type === 'session.status_idle');
    expect(idles.map((e) => e.stop_reason.type)).toEqual(['end_turn', 'end_turn', 'end_turn']);
  });
});

describe('compaction events on the SSE stream', () => {
  it('the default stream carries the boundary event, not the summarize spans (extensions; in the log)', async () => {
    const s = await piSession(t, envId, 'anthropic', {
      pi: SMALL_WINDOW,
      metadata: { compaction_trigger_fraction: '0.25' },
    });
    t.model.script(s.wire, say('a1'), say(SUMMARY), say('a2'));
    await turn(t, s.sid, 'first question: alpha');
    const seen = await untilIdle(t.client, s.sid, [
      {
        type: 'user.message',
        content: [
          { type: 'text', text: 'second question: beta' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_DOT_PNG } },
        ],
      },
    ]);
    const types = seen.map((e) => e.type);
    expect(types).toContain('agent.thread_context_compacted');
    expect(types.filter((x) => x.startsWith('span.compaction'))).toEqual([]);
    const all = (await events(t, s.sid)).map((e) => e.type);
    expect(all).toContain('span.compaction_summarize_start');
    expect(all).toContain('span.compaction_summarize_end');
  });
});

describe('harness and compaction metadata', () => {
  const post = (path: string, json: unknown) => t.http(path, { method: 'POST', json });
  async function expect400(res: Response, field: string) {
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request');
    expect(body.error.message).toContain(field);
  }

  it('bad values are a 400 naming the key, on create, update and session overrides', async () => {
    const base = { name: 'm', model: 'claude-sonnet-4-5', harness: 'pi' };
    const bad: Array<[string, string]> = [
      ['compaction_trigger_fraction', '1'],
      ['compaction_trigger_fraction', '0'],
      ['compaction_trigger_fraction', 'abc'],
      ['compaction_max_summary_tokens', '0'],
      ['compaction_max_summary_tokens', '1.5'],
      ['compaction_summary_prompt', '  '],
    ];
    for (const [key, value] of bad)
      await expect400(await post('/v1/agents', { ...base, metadata: { [key]: value } }), key);
    await expect400(await post('/v1/agents', { ...base, harness: 'other' }), 'harness');
    const ok = await post('/v1/agents', {
      ...base,
      metadata: { compaction_trigger_fraction: '0.7', compaction_strategy: 'whatever' },
    });
    expect(ok.status).toBe(200);
    const agent = (await ok.json()) as { id: string; version: number; harness: string };
    expect(agent.harness).toBe('pi');
    await expect400(
      await post(`/v1/agents/${agent.id}`, {
        version: agent.version,
        metadata: { compaction_max_summary_tokens: '-3' },
      }),
      'compaction_max_summary_tokens',
    );
    // A default-harness agent's metadata is free-form.
    const plain = await post('/v1/agents', {
      ...base,
      harness: 'default',
      metadata: { compaction_trigger_fraction: 'abc' },
    });
    expect(plain.status).toBe(200);
  });

  it('a default-harness session is unchanged: no compaction, no session id', async () => {
    const s = await piSession(t, envId, 'anthropic', {
      // A pi session would compact here (threshold 1200 tokens); this one sends it all.
      pi: { contextWindow: 4000 },
      harness: 'default',
      metadata: { compaction_trigger_fraction: '0.3' },
    });
    t.model.script(s.wire, say('a1'), say('a2'));
    await turn(t, s.sid, `first question: alpha ${'lorem '.repeat(40)}`);
    const log = await turn(t, s.sid, 'second question: beta', RED_DOT_PNG);
    const reqs = requestsOf(t, s.wire);
    expect(reqs).toHaveLength(2);
    expect(log.map((e) => e.type).filter((x) => x.includes('compact'))).toEqual([]);
    for (const r of reqs) expect(sessionIdOf(r)).toBeUndefined();
    expect(conversationOf(reqs[1]!).map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });
});
