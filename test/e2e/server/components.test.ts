/**
 * Component selection with overrides (server/src/components.ts): a component given to
 * `startServer(role, env, overrides)` replaces the config's default for its port, the platform
 * runs on it, and it stays the caller's to close (the platform's close leaves it open).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedBus } from '@agentfleet/core/adapters';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

describe('component overrides', () => {
  const bus = new EmbeddedBus();
  let t: TestPlatform;
  let closed = false;
  beforeAll(async () => {
    t = await startPlatform({ overrides: { bus }, env: { SANDBOX_DRIVER: 'none' } });
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await bus.close();
  });

  it('a turn runs through the overridden bus, which the platform does not close', async () => {
    expect(t.server.platform.bus).toBe(bus);
    const env = await t.client.beta.environments.create({ name: 'override' });
    const agent = await t.client.beta.agents.create({ name: 'o', model: 'claude-sonnet-4-5' });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
    });
    t.model.script('claude-sonnet-4-5', { steps: [{ text: 'through the given bus' }] });
    const stream = await t.client.beta.sessions.events.stream(session.id);
    await t.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    expect(seen.find((e) => e.type === 'agent.message')?.content).toEqual([
      { type: 'text', text: 'through the given bus' },
    ]);
    const stats = bus.stats();
    expect(stats.published).toBeGreaterThanOrEqual(1);
    expect(stats.handled).toBeGreaterThanOrEqual(1);
    await t.close();
    closed = true;
    expect(await bus.healthy()).toBe(true);
  }, 30_000);
});
