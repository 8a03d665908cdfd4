/**
 * A session's environment defaults to its agent's (the spec's agent `environment_id`), through
 * HTTP (the SDK's session create params require environment_id) and the SDK:
 * - a session created without `environment_id` gets the pinned agent version's environment;
 * - an explicit `environment_id` wins over the agent's;
 * - neither is a 400 naming `environment_id`; the pinned version decides, not the latest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(async () => {
  await t?.close();
});

const create = async (json: unknown) => {
  const res = await t.http('/v1/sessions', { method: 'POST', json });
  return { status: res.status, body: (await res.json()) as any };
};

describe("a session's environment", () => {
  it("defaults to the agent's environment_id; an explicit one wins; neither is a 400", async () => {
    const c = t.client.beta;
    const envA = await c.environments.create({ name: 'agent-env' });
    const envB = await c.environments.create({ name: 'other-env' });
    const agent = await c.agents.create({
      name: 'with-env',
      model: 'claude-sonnet-4-5',
      environment_id: envA.id,
    } as any);

    const dflt = await create({ agent: agent.id });
    expect(dflt.status, JSON.stringify(dflt.body)).toBe(200);
    expect(dflt.body.environment_id).toBe(envA.id);
    expect((await c.sessions.retrieve(dflt.body.id)).environment_id).toBe(envA.id);

    const explicit = await c.sessions.create({ agent: agent.id, environment_id: envB.id });
    expect(explicit.environment_id).toBe(envB.id);

    // Version 2 drops the environment: version 1 still has one, version 2 needs it in the body.
    await c.agents.update(agent.id, { version: agent.version, environment_id: null } as any);
    const v1 = await create({ agent: { type: 'agent', id: agent.id, version: 1 } });
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body.environment_id).toBe(envA.id);
    const none = await create({ agent: agent.id });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toMatch(/^environment_id: is required/);
  });
});
