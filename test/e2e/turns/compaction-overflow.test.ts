/**
 * The platform's one overflow retry for harness `pi` sessions (workers/src/turn/compaction), at the
 * scripted model, on both protocols:
 * - a provider context-overflow answer (OpenAI `maximum context length`, Anthropic `prompt is
 *   too long`) compacts the conversation and retries the request once; the turn completes and
 *   no session.error is left; with `summarize`, the summary call replays the exact request
 *   that overflowed plus the private instruction, without tool_choice;
 * - the history after the boundary is rebuilt from the event log, also after a restart;
 * - the retry carries the summary first and then the turn's own input, so the model answers the
 *   user: a model that refuses prompts over a size and echoes the last user text answers the
 *   turn's question after the retry, on all three strategies, and the summary is never an
 *   agent.message;
 * - when the retry overflows again, the turn ends with the terminal session.error
 *   compaction_limit_reached_error and the session takes the next message normally;
 * - a request estimated over the window even after compaction is not sent: same error (on a
 *   first turn without a summary call: a compaction keeps the turn's own input, so it could not
 *   shrink the request).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { say } from '../../kit/turnHelpers.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import {
  conversationOf,
  events,
  expectValidEvents,
  piSession,
  requestsOf,
  sessionIdOf,
  systemOf,
  toolsOf,
  turn,
} from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  envId = (await t.client.beta.environments.create({ name: 'compaction-overflow' })).id;
});
afterAll(async () => {
  await t?.close();
});

const overflow = (protocol: 'anthropic' | 'openai'): ScriptedResponse => ({
  steps: [
    {
      http_error:
        protocol === 'anthropic'
          ? {
              status: 400,
              type: 'invalid_request_error',
              message: 'prompt is too long: 210000 tokens > 200000 maximum',
            }
          : {
              status: 400,
              type: 'invalid_request_error',
              message:
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.",
            },
    },
  ],
});

describe('overflow retry (harness pi)', () => {
  it('openai, summarize: overflow → compaction replaying the failed request → retry; survives a restart', async () => {
    const s = await piSession(t, envId, 'openai', {
      metadata: { compaction_strategy: 'summarize' },
    });
    t.model.script(s.wire, say('a1'), overflow('openai'), say('SUMMARY-O'), say('a2'));
    await turn(t, s.sid, 'first question: alpha');
    const log = await turn(t, s.sid, 'second question: beta');
    const reqs = requestsOf(t, s.wire);
    expect(reqs).toHaveLength(4);
    const [, failed, summary, retry] = reqs as [any, any, any, any];
    // The summary call is the failed request replayed, plus the private instruction.
    expect(summary.body.messages.slice(0, -1)).toEqual(failed.body.messages);
    expect(summary.body.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(summary.body.messages.at(-1).content).toMatch(/^Private compaction instruction/);
    expect(systemOf(summary)).toBe('You are the compaction test agent.');
    expect(toolsOf(summary)).toEqual(toolsOf(failed));
    expect(sessionIdOf(summary)).toBe(s.sid);
    expect(summary.body.tool_choice).toBeUndefined();
    // the summary first, then the turn's own question
    expect(conversationOf(retry)).toEqual([
      { role: 'user', text: expect.stringMatching(/SUMMARY-O[\s\S]*second question: beta$/) },
    ]);
    expectValidEvents(log);
    const boundary = log.find((e) => e.type === 'agent.thread_context_compacted');
    expect(boundary).toMatchObject({
      summary: 'SUMMARY-O',
      strategy: 'summarize',
      trigger: 'overflow',
    });
    expect(log.filter((e) => e.type === 'session.error')).toEqual([]);
    expect(log.filter((e) => e.type === 'session.status_idle').at(-1).stop_reason).toEqual({
      type: 'end_turn',
    });

    // The boundary lives in the event log: a restarted platform sends the same history.
    await t.restart();
    t.model.script(s.wire, say('a3'));
    await turn(t, s.sid, 'third question: gamma');
    const after = requestsOf(t, s.wire).at(-1)!;
    const conv = conversationOf(after);
    expect(conv.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(conv[0]!.text).toContain('SUMMARY-O');
    expect(conv.slice(1).map((m) => m.text)).toEqual(['a2', 'third question: gamma']);
  });

  it.each(['cc-style', 'opencode-style', 'summarize'] as const)(
    '%s: the retry answers the user (a model that refuses large prompts and echoes the last user text)',
    async (strategy) => {
      const s = await piSession(t, envId, 'anthropic', {
        metadata: { compaction_strategy: strategy },
      });
      const FILLER = 'filler '.repeat(6000); // 42 KB: one copy fits, two do not
      const LIMIT = 60_000;
      const lastUserText = (body: any): string => {
        const last = [...(body.messages as any[])].reverse().find((m) => m.role === 'user');
        const blocks =
          typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
        return blocks.filter((b: any) => b.type === 'text').at(-1).text;
      };
      const model: ScriptedResponse = {
        steps: [],
        decide: (body) => {
          const text = lastUserText(body);
          if (
            text.startsWith('Private compaction instruction') ||
            /summar/i.test(JSON.stringify(body.system ?? ''))
          )
            return say(`SUMMARY-${strategy}`);
          if (JSON.stringify(body).length > LIMIT) return overflow('anthropic');
          return say(text);
        },
      };
      t.model.script(s.wire, model, model, model, model);
      await turn(t, s.sid, `first: ${FILLER}`);
      const log = await turn(t, s.sid, 'what is the second question?');
      const reqs = requestsOf(t, s.wire);
      // turn 1, the refused request, the summary call, the retry
      expect(reqs).toHaveLength(4);
      const retry = reqs[3]!;
      expect(conversationOf(retry).at(-1)!.text).toMatch(/what is the second question\?$/);
      const boundary = log.find((e) => e.type === 'agent.thread_context_compacted');
      expect(boundary).toMatchObject({
        summary: `SUMMARY-${strategy}`,
        strategy,
        trigger: 'overflow',
      });
      const answers = log
        .filter((e) => e.type === 'agent.message')
        .map((e) => e.content.map((b: any) => b.text).join(''));
      expect(answers.at(-1)).toBe('what is the second question?');
      for (const a of answers) expect(a).not.toContain('SUMMARY');
      expect(log.filter((e) => e.type === 'session.error')).toEqual([]);
    },
  );

  it('anthropic: a retry that overflows again → compaction_limit_reached_error; the session goes on', async () => {
    const s = await piSession(t, envId, 'anthropic');
    t.model.script(
      s.wire,
      say('a1'),
      overflow('anthropic'),
      say('SUMMARY-A'),
      overflow('anthropic'),
    );
    await turn(t, s.sid, 'first question: alpha');
    const log = await turn(t, s.sid, 'second question: beta');
    expect(requestsOf(t, s.wire)).toHaveLength(4);
    expectValidEvents(log);
    const errors = log.filter((e) => e.type === 'session.error');
    expect(errors).toHaveLength(1);
    expect(errors[0].error).toMatchObject({
      type: 'compaction_limit_reached_error',
      retry_status: { type: 'terminal' },
    });
    expect(log.find((e) => e.type === 'agent.thread_context_compacted')).toMatchObject({
      strategy: 'cc-style',
      trigger: 'overflow',
    });
    // Not a dead session: the next message runs a normal turn from the boundary.
    t.model.script(s.wire, say('a3'));
    const next = await turn(t, s.sid, 'third question: gamma');
    expect(next.filter((e) => e.type === 'agent.message').at(-1).content).toEqual([
      { type: 'text', text: 'a3' },
    ]);
    const conv = conversationOf(requestsOf(t, s.wire).at(-1)!);
    expect(conv[0]!.text).toContain('SUMMARY-A');
    expect(conv.at(-1)!.text).toMatch(/third question: gamma$/);
    for (const m of conv) expect(m.text).not.toContain('first question');
  });

  it('a request still over the window after compaction is not sent: compaction_limit_reached_error', async () => {
    // The system prompt alone (about 1000 tokens) exceeds the 600-token window.
    const s = await piSession(t, envId, 'anthropic', {
      pi: { contextWindow: 600 },
      system: 'x'.repeat(3000),
    });
    t.model.script(s.wire, say('SUMMARY-W'));
    const log = await turn(t, s.sid, 'hello');
    // Nothing reached the model: on a first turn there is nothing a compaction could summarise
    // (the turn's own input is kept), so no summary call either.
    expect(requestsOf(t, s.wire)).toHaveLength(0);
    expect(log.filter((e) => e.type === 'agent.thread_context_compacted')).toEqual([]);
    expectValidEvents(log);
    const errors = log.filter((e) => e.type === 'session.error');
    expect(errors.map((e) => e.error.type)).toEqual(['compaction_limit_reached_error']);
    expect(errors[0].error.retry_status).toEqual({ type: 'terminal' });
    expect(log.at(-1).type).toBe('session.status_idle');
  });
});
