/**
 * `system.message` input events (SDK BetaManagedAgentsSystemMessageEventParams): accepted when
 * they are the last event of the request and immediately follow the user.message (or
 * user.custom_tool_result) they accompany; appended to the event log and served in the SDK's
 * shape; sent to the model for that turn and every later one: on the OpenAI protocol as a
 * `system` message right after the user input, on the Anthropic protocol (no mid-conversation
 * system role) appended to the top-level `system` after the agent's prompt. Misplaced ones
 * (first, not last, two in one request) are a 400 naming `events[i].type`, non-text content a
 * 400, and nothing is appended (core/src/sessions/inputEvents.ts, workers/src/turn/history.ts,
 * core/src/models/{anthropic,openai}/requestBody.ts).
 * Through the official TypeScript SDK against an in-process platform and the scripted model.
 */
import Anthropic from '@anthropic-ai/sdk';
import { validateSessionEvent } from '@agentfleet/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
const OAI_CARD = 'system-message-oai';
const OAI_WIRE = 'system-message-oai-wire';

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  await addModelCard(t, OAI_CARD, { provider: 'openai', model: OAI_WIRE, apiKey: 'sk-openai' });
  envId = (await t.client.beta.environments.create({ name: 'system-message' })).id;
});
afterAll(async () => {
  await t?.close();
});

async function sessionOn(model: string) {
  const agent = await t.client.beta.agents.create({
    name: `sm-${model}`,
    model,
    system: 'You are the agent.',
  });
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
}

const userMessage = (text: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text }],
});
const systemMessage = (text: string) => ({
  type: 'system.message' as const,
  content: [{ type: 'text' as const, text }],
});

/** Sends events, waits for the turn they start to end; answers the last model request's body. */
async function turn(model: string, sessionId: string, events: any[]) {
  const before = t.model.requests.length;
  const sent = (await t.client.beta.sessions.events.send(sessionId, { events })) as any;
  const seq = sent.data.at(-1).seq as number;
  await waitFor(async () => {
    const evs = (await t.client.beta.sessions.events.list(sessionId, { limit: 1000 })).data;
    return evs.some((e: any) => e.type === 'session.status_idle' && e.seq > seq);
  }, 15_000);
  const reqs = t.model.requests.slice(before).filter((r) => r.model === model);
  expect(reqs.length).toBeGreaterThan(0);
  return { sent: sent.data as any[], body: reqs.at(-1)!.body };
}

describe('system.message input events', () => {
  it('accepted after a user.message, appended to the log in the SDK shape', async () => {
    const sid = await sessionOn('claude-sonnet-4-5');
    const { sent } = await turn('claude-sonnet-4-5', sid, [
      userMessage('hi'),
      systemMessage('Answer in French.'),
    ]);
    expect(sent.map((e) => e.type)).toEqual(['user.message', 'system.message']);
    const logged = (await t.client.beta.sessions.events.list(sid)).data.find(
      (e) => e.type === 'system.message',
    ) as Anthropic.Beta.Sessions.BetaManagedAgentsSystemMessageEvent;
    expect(logged).toMatchObject({
      id: sent[1].id,
      type: 'system.message',
      content: [{ type: 'text', text: 'Answer in French.' }],
    });
    expect(typeof logged.processed_at).toBe('string');
    // The served event matches its schema (and so the SDK's type: test/kit/sdk-types.ts).
    expect(() => validateSessionEvent(logged)).not.toThrow();
  });

  it('Anthropic protocol: appended to the top-level system, for this turn and the next', async () => {
    const sid = await sessionOn('claude-sonnet-4-5');
    const first = await turn('claude-sonnet-4-5', sid, [
      userMessage('hi'),
      systemMessage('Answer in French.'),
    ]);
    expect(first.body.system).toEqual([
      { type: 'text', text: 'You are the agent.' },
      { type: 'text', text: 'Answer in French.' },
    ]);
    expect(first.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    ]);
    const second = await turn('claude-sonnet-4-5', sid, [userMessage('and now?')]);
    expect(second.body.system).toEqual(first.body.system);
    expect(second.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('OpenAI protocol: a system message right after the user input it accompanied', async () => {
    const sid = await sessionOn(OAI_CARD);
    const first = await turn(OAI_WIRE, sid, [userMessage('hi'), systemMessage('Be brief.')]);
    expect(first.body.messages).toEqual([
      { role: 'system', content: 'You are the agent.' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'Be brief.' },
    ]);
    const second = await turn(OAI_WIRE, sid, [userMessage('more')]);
    expect(second.body.messages.map((m: any) => m.role)).toEqual([
      'system',
      'user',
      'system',
      'assistant',
      'user',
    ]);
    expect(second.body.messages[2]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('misplaced or non-text: 400 naming the field, nothing appended', async () => {
    const sid = await sessionOn('claude-sonnet-4-5');
    const refused = async (events: any[], field: string) => {
      const r = await t.http(`/v1/sessions/${sid}/events`, { method: 'POST', json: { events } });
      expect(r.status).toBe(400);
      const body = (await r.json()) as any;
      expect(body.type).toBe('error');
      expect(body.error.message).toContain(field);
    };
    await refused([systemMessage('alone')], 'events[0].type');
    await refused([systemMessage('first'), userMessage('hi')], 'events[0].type');
    await refused([userMessage('hi'), systemMessage('a'), userMessage('again')], 'events[1].type');
    await refused([userMessage('hi'), systemMessage('a'), systemMessage('b')], 'events[1].type');
    await refused(
      [userMessage('hi'), { type: 'user.interrupt' }, systemMessage('a')],
      'events[2].type',
    );
    await refused(
      [
        userMessage('hi'),
        {
          type: 'system.message',
          content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }],
        },
      ],
      'events[1]',
    );
    await refused([userMessage('hi'), { type: 'system.message', content: [] }], 'events[1]');
    expect((await t.client.beta.sessions.events.list(sid)).data).toEqual([]);
  });
});
