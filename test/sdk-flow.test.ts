import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from './harness.js';

let t: TestPlatform;
beforeAll(async () => { t = await startPlatform(); });
afterAll(async () => { await t?.close(); });

describe('official SDK drives a full session turn', () => {
  it('creates environment and agent, updates to v2, pins a session to v1, streams a turn to idle', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'env-a', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    expect(env.id).toMatch(/^env_/);
    expect(env.config.type).toBe('cloud');
    const agent = await c.beta.agents.create({ name: 'a1', model: 'claude-sonnet-4-5', system: 'You are v1' });
    expect(agent.version).toBe(1);
    const v2 = await c.beta.agents.update(agent.id, { version: 1, system: 'You are v2' });
    expect(v2.version).toBe(2);
    expect(v2.system).toBe('You are v2');
    await expect(c.beta.agents.update(agent.id, { version: 1, system: 'stale' })).rejects.toMatchObject({ status: 409 });

    const session = await c.beta.sessions.create({ agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id });
    expect(session.agent.version).toBe(1);
    expect(session.agent.system).toBe('You are v1');
    expect(session.status).toBe('idle');

    t.model.script('claude-sonnet-4-5', { steps: [{ thinking: 'let me think', signature: 'sig1' }, { text: 'Hello from the model', chunks: 4 }] });
    const stream = await c.beta.sessions.events.stream(session.id);
    await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const types = seen.map((e) => e.type);
    expect(types).toEqual(['user.message', 'session.status_running', 'span.model_request_start', 'agent.thinking', 'agent.message', 'span.model_request_end', 'session.status_idle']);
    const msg = seen.find((e) => e.type === 'agent.message');
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello from the model' }]);
    const idle = seen.at(-1);
    expect(idle.stop_reason).toEqual({ type: 'end_turn' });
    const end = seen.find((e) => e.type === 'span.model_request_end');
    expect(end.model_request_start_id).toBe(seen.find((e) => e.type === 'span.model_request_start').id);
    // The pinned version's system prompt reached the model.
    const req = t.model.requests.at(-1)!;
    expect(req.body.system).toBe('You are v1');
    expect(req.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    const after = await c.beta.sessions.retrieve(session.id);
    expect(after.status).toBe('idle');
  });
});
