/**
 * The SDK's preview frames on a stream opened with `event_deltas` (BetaManagedAgentsStartEvent,
 * BetaManagedAgentsDeltaEvent), through the official TypeScript SDK:
 * - an agent.message preview opens once and its `content_delta` fragments carry `index`, the
 *   position of their block in the buffered agent.message's content: a client that inserts a new
 *   index and appends to a known one rebuilds that content exactly;
 * - an agent.thinking preview is start-only: an `event_start` with the thinking event's id, never
 *   an `event_delta`;
 * - only the requested previews are sent;
 * - the extension chunk frames (`include=chunks`) carry the same `index` and match their schema.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateStreamFrame } from '@agentfleet/schemas';
import { readSse, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform();
  envId = (await t.client.beta.environments.create({ name: 'deltas' })).id;
});
afterAll(async () => {
  await t?.close();
});

let n = 0;
async function scriptedSession() {
  const model = `deltas-${++n}`;
  await addModelCard(t, model, { apiKey: 'sk-c' });
  const agent = await t.client.beta.agents.create({ name: `a-${n}`, model });
  const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  return { model, sid: s.id };
}

/** Thinking, then two text blocks: one agent.thinking and one agent.message with two blocks. */
const multiBlock = {
  steps: [
    { thinking: 'pondering the question', signature: 'sig' },
    { text: 'first block', chunks: 3 },
    { text: 'second block', chunks: 2 },
  ],
};

async function runTurn(deltas: Array<'agent.message' | 'agent.thinking'>) {
  const { model, sid } = await scriptedSession();
  const stream = await t.client.beta.sessions.events.stream(sid, { event_deltas: deltas });
  t.model.script(model, multiBlock);
  await t.client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
  });
  const got: any[] = [];
  for await (const ev of stream) {
    got.push(ev);
    if (ev.type === 'session.status_idle') break;
  }
  return got;
}

describe('event_deltas previews', () => {
  it('content_delta index is the block position in the agent.message content', async () => {
    const got = await runTurn(['agent.message', 'agent.thinking']);
    const msg = got.find((e) => e.type === 'agent.message');
    expect(msg.content).toEqual([
      { type: 'text', text: 'first block' },
      { type: 'text', text: 'second block' },
    ]);
    const starts = got.filter((e) => e.type === 'event_start' && e.event.type === 'agent.message');
    expect(starts).toEqual([{ type: 'event_start', event: { id: msg.id, type: 'agent.message' } }]);
    const deltas = got.filter((e) => e.type === 'event_delta');
    expect(deltas.length).toBe(5);
    expect(deltas.every((d) => d.event_id === msg.id)).toBe(true);
    expect(new Set(deltas.map((d) => d.delta.index))).toEqual(new Set([0, 1]));
    // The SDK's rule: insert content at a new index, append to an existing entry otherwise.
    const rebuilt: Array<{ type: string; text: string }> = [];
    for (const d of deltas) {
      const entry = rebuilt[d.delta.index];
      if (entry) entry.text += d.delta.content.text;
      else rebuilt[d.delta.index] = { ...d.delta.content };
    }
    expect(rebuilt).toEqual(msg.content);
    // Previews come before the buffered event they preview.
    expect(got.indexOf(starts[0])).toBeLessThan(got.indexOf(deltas[0]));
    expect(got.indexOf(deltas.at(-1))).toBeLessThan(got.indexOf(msg));
  });

  it('agent.thinking is start-only: event_start with its id, no event_delta', async () => {
    const got = await runTurn(['agent.message', 'agent.thinking']);
    const thinking = got.find((e) => e.type === 'agent.thinking');
    expect(thinking.thinking).toBe('pondering the question');
    const starts = got.filter((e) => e.type === 'event_start' && e.event.type === 'agent.thinking');
    expect(starts).toEqual([
      { type: 'event_start', event: { id: thinking.id, type: 'agent.thinking' } },
    ]);
    expect(got.indexOf(starts[0])).toBeLessThan(got.indexOf(thinking));
    expect(got.filter((e) => e.type === 'event_delta' && e.event_id === thinking.id)).toEqual([]);
  });

  it('only the requested previews are sent', async () => {
    const messageOnly = await runTurn(['agent.message']);
    expect(messageOnly.filter((e) => e.type === 'event_start').map((e) => e.event.type)).toEqual([
      'agent.message',
    ]);
    const thinkingOnly = await runTurn(['agent.thinking']);
    expect(thinkingOnly.filter((e) => e.type === 'event_start').map((e) => e.event.type)).toEqual([
      'agent.thinking',
    ]);
    expect(thinkingOnly.some((e) => e.type === 'event_delta')).toBe(false);
  });

  it('include=chunks: message chunk frames carry the block index and match their schema', async () => {
    const { model, sid } = await scriptedSession();
    const res = await t.http(
      `/v1/sessions/${sid}/events/stream?include=chunks&event_deltas[]=agent.message&event_deltas[]=agent.thinking`,
    );
    t.model.script(model, multiBlock);
    await t.client.beta.sessions.events.send(sid, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
    });
    const frames = await readSse(res, (f) => f.event === 'session.status_idle');
    for (const f of frames) validateStreamFrame(f.data);
    const chunks = frames.filter((f) => f.event === 'agent.message_chunk').map((f) => f.data);
    const byIndex = (i: number) =>
      chunks
        .filter((c) => c.index === i)
        .map((c) => c.delta)
        .join('');
    expect([byIndex(0), byIndex(1)]).toEqual(['first block', 'second block']);
    expect(
      frames.filter((f) => f.event === 'agent.message_stream_start').map((f) => f.data.index),
    ).toEqual([0, 1]);
  });
});
