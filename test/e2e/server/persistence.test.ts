import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('embedded store persists under the data dir', () => {
  it('keeps agents, versions, sessions and events across a restart', async () => {
    const env = await t.client.beta.environments.create({ name: 'persist' });
    const agent = await t.client.beta.agents.create({ name: 'p', model: 'claude-sonnet-4-5' });
    await t.client.beta.agents.update(agent.id, { system: 'v2' });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await t.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'remember me' }] }],
    });
    const before = await waitFor(async () => {
      const page = await t.client.beta.sessions.events.list(s.id);
      return page.data.some((e) => e.type === 'session.status_idle') ? page.data : null;
    });
    await t.restart();
    const a2 = await t.client.beta.agents.retrieve(agent.id);
    expect(a2.version).toBe(2);
    expect((await t.client.beta.agents.retrieve(agent.id, { version: 1 })).system).toBeNull();
    expect((await t.client.beta.sessions.retrieve(s.id)).agent.version).toBe(2);
    const after = await t.client.beta.sessions.events.list(s.id);
    expect(after.data.map((e: any) => [e.seq, e.id, e.type])).toEqual(
      before.map((e: any) => [e.seq, e.id, e.type]),
    );
    // The log continues gap-free after the restart.
    await t.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'again' }] }],
    });
    const all = await waitFor(async () => {
      const page = await t.client.beta.sessions.events.list(s.id, { limit: 100 });
      return page.data.filter((e) => e.type === 'session.status_idle').length === 2
        ? page.data
        : null;
    });
    expect(all.map((e: any) => e.seq)).toEqual(all.map((_, i) => i + 1));
  });
});
