/**
 * A turn's final model answer and its idle are one write (workers/src/turn/finish.ts) on a store
 * that appends in one transaction (embedded): the answer's events, its span end and the
 * session.status_idle are appended together, and the answer's usage moves with the idle's
 * session update (harness `pi` too). On the two-write path (MongoDB, FerretDB: the idle event is
 * visible before its head update) the answer keeps its own append, and its usage is in the
 * session before the idle is written. An answer that calls a tool is written before the tool
 * runs; a turn with an active sandbox writes its final answer before the outputs are synced, and
 * the idle after them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { sessionHelpers } from '../../kit/sessionHelpers.js';
import { piSession, turn } from './compactionHelpers.js';

let t: TestPlatform;
let envId: string;
let atomic: boolean;
/** Each append's event types, in order, per session. */
const writes = new Map<string, string[][]>();
/** Per session: its input tokens as read right after each append with a span end completed. */
const usageAfterAnswer = new Map<string, number[]>();
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  envId = (await t.client.beta.environments.create({ name: 'final-write' })).id;
  const { events, collections } = t.server.platform;
  atomic = await events.appendsAtomically('tnt_default');
  events.onAppended(async (tenant, sid, written) => {
    const types = written.map((e) => e.type);
    writes.set(sid, [...(writes.get(sid) ?? []), types]);
    // Hooks run before the append returns, so before the turn writes its idle.
    if (types.includes('span.model_request_end') && !types.includes('session.status_idle')) {
      const doc: any = await collections.sessions.get(tenant, sid);
      usageAfterAnswer.set(sid, [...(usageAfterAnswer.get(sid) ?? []), doc.usage.input_tokens]);
    }
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

/** A one-request turn's writes: the answer in the idle's write only where appends are atomic. */
const finalWrites = () => [
  ['session.status_running'],
  ['span.model_request_start'],
  ...(atomic
    ? [['agent.message', 'span.model_request_end', 'session.status_idle']]
    : [['agent.message', 'span.model_request_end'], ['session.status_idle']]),
];

describe('the final answer and the idle', () => {
  it('are one write where appends are atomic, with the answer usage in the idle update; else the usage lands before the idle', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, { steps: [{ text: 'done' }] });
    await say(s.id, 'hi');
    await untilIdle(s.id);
    await waitFor(async () => turnWrites(s.id).at(-1)?.includes('session.status_idle'), 5000);
    expect(turnWrites(s.id)).toEqual(finalWrites());
    // Two writes: the answer's usage was in the session before the idle was written.
    expect(usageAfterAnswer.get(s.id)).toEqual(atomic ? undefined : [10]);
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

  it('harness pi (its requests go through compaction): the same writes', async () => {
    const s = await piSession(t, envId, 'anthropic', { pi: { contextWindow: 100_000 } });
    t.model.script(s.wire, { steps: [{ text: 'pi done' }] });
    await turn(t, s.sid, 'hi');
    await waitFor(async () => turnWrites(s.sid).at(-1)?.includes('session.status_idle'), 5000);
    expect(turnWrites(s.sid)).toEqual(finalWrites());
    expect(usageAfterAnswer.get(s.sid)).toEqual(atomic ? undefined : [10]);
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
    // Each answer written apart from the idle carried its usage: in the session after its write.
    expect(usageAfterAnswer.get(s.id)).toEqual([10, 20]);
  });
});
