/**
 * A turn's final model answer and its idle are one write (workers/src/turnFinish.ts): the
 * answer's events, its span end and the session.status_idle are appended together, and the
 * answer's usage moves with the idle's session update (harness `pi` too). An answer that calls a tool is written
 * before the tool runs; a turn with an active sandbox writes its final answer before the
 * outputs are synced, and the idle after them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from './harness.js';
import { sessionHelpers } from './sessionHelpers.js';
import { piSession, turn } from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
/** Each append's event types, in order, per session. */
const writes = new Map<string, string[][]>();
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  envId = (await t.client.beta.environments.create({ name: 'final-write' })).id;
  t.server.platform.events.onAppended(async (_tenant, sid, written) => {
    writes.set(sid, [...(writes.get(sid) ?? []), written.map((e) => e.type)]);
  });
});
afterAll(async () => {
  await t?.close();
});

const { agentWithModel, say, untilIdle } = sessionHelpers(() => t);

/** The writes of the session's n-th turn: from its status_running through its idle. */
function turnWrites(sid: string, n = 1): string[][] {
  const all = writes.get(sid) ?? [];
  const starts = all.flatMap((w, i) => (w.includes('session.status_running') ? [i] : []));
  const from = starts[n - 1]!;
  const to = all.findIndex((w, i) => i >= from && w.includes('session.status_idle'));
  return all.slice(from, to + 1);
}

describe('the final answer and the idle', () => {
  it('are appended in one write, with the answer usage in the idle update', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, { steps: [{ text: 'done' }] });
    await say(s.id, 'hi');
    await untilIdle(s.id);
    await waitFor(async () => turnWrites(s.id).at(-1)?.includes('session.status_idle'), 5000);
    expect(turnWrites(s.id)).toEqual([
      ['session.status_running'],
      ['span.model_request_start'],
      ['agent.message', 'span.model_request_end', 'session.status_idle'],
    ]);
    const after = await t.client.beta.sessions.retrieve(s.id);
    expect(after.status).toBe('idle');
    // The scripted model reports 10 input tokens and one output token per 4 characters.
    expect(after.usage).toMatchObject({ input_tokens: 10, output_tokens: 1 });
    // The card has no list price: the unpriced flag was set by the same update.
    expect((after.usage as any).list_cost).toBeNull();

    // A second turn adds its usage to the first's.
    t.model.script(model, { steps: [{ text: 'done again' }] });
    await say(s.id, 'again');
    await untilIdle(s.id, 2);
    expect((await t.client.beta.sessions.retrieve(s.id)).usage).toMatchObject({
      input_tokens: 20,
      output_tokens: 4,
    });
  });

  it('harness pi (its requests go through compaction): the same one write', async () => {
    const s = await piSession(t, envId, 'anthropic', { pi: { contextWindow: 100_000 } });
    t.model.script(s.wire, { steps: [{ text: 'pi done' }] });
    await turn(t, s.sid, 'hi');
    await waitFor(async () => turnWrites(s.sid).at(-1)?.includes('session.status_idle'), 5000);
    expect(turnWrites(s.sid)).toEqual([
      ['session.status_running'],
      ['span.model_request_start'],
      ['agent.message', 'span.model_request_end', 'session.status_idle'],
    ]);
    expect((await t.client.beta.sessions.retrieve(s.sid)).usage).toMatchObject({
      input_tokens: 10,
      output_tokens: 2,
    });
  });

  it('an answer that calls a tool is written before the tool runs; with the sandbox active the final answer is written before the idle', async () => {
    const { model } = await agentWithModel();
    const agent = await t.client.beta.agents.create({
      name: 'final-write-tools',
      model,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(
      model,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo hi' } } }] },
      { steps: [{ text: 'ran it' }] },
    );
    await say(s.id, 'run it');
    const events = await untilIdle(s.id);
    const result = events.find((e: any) => e.type === 'agent.tool_result');
    expect(JSON.stringify(result.content)).toContain('hi');
    await waitFor(async () => turnWrites(s.id).at(-1)?.includes('session.status_idle'), 5000);
    const w = turnWrites(s.id);
    const withCall = w.findIndex((x) => x.includes('agent.tool_use'));
    const withResult = w.findIndex((x) => x.includes('agent.tool_result'));
    expect(withCall).toBeGreaterThan(-1);
    expect(w[withCall]).toContain('span.model_request_end');
    expect(withResult).toBeGreaterThan(withCall);
    // The bash call started the sandbox: its outputs are synced between the answer and the idle.
    expect(w.at(-2)).toEqual(['agent.message', 'span.model_request_end']);
    expect(w.at(-1)).toEqual(['session.status_idle']);
    expect((await t.client.beta.sessions.retrieve(s.id)).usage).toMatchObject({
      input_tokens: 20,
    });
  });
});
