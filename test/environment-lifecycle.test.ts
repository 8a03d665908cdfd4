/**
 * Environment delete is refused (409, the existing error shape, naming the sessions) while a
 * session that is neither terminated nor deleted runs on it; once the session is deleted the
 * environment can be deleted (core/src/domain/environments.ts remove). Through the official
 * TypeScript SDK and plain HTTP.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from './harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('environment delete while sessions use it', () => {
  it('is refused while a live session uses it, allowed after the session is deleted', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'busy' });
    // The agent does not reference the environment: only the session does.
    const a = await c.beta.agents.create({ name: 'busy', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });

    const err = await c.beta.environments.delete(env.id).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Anthropic.ConflictError);
    const r = await t.http(`/v1/environments/${env.id}`, { method: 'DELETE' });
    expect(r.status).toBe(409);
    const body = (await r.json()) as any;
    expect(body.error.message).toContain(s.id);
    expect(body.error.details.session_ids).toEqual([s.id]);
    // Still there and still usable by the session.
    expect((await c.beta.environments.retrieve(env.id)).id).toBe(env.id);

    await c.beta.sessions.delete(s.id);
    const gone = await c.beta.environments.delete(env.id);
    expect(gone).toMatchObject({ id: env.id, type: 'environment_deleted' });
    expect((await t.http(`/v1/environments/${env.id}`)).status).toBe(404);
  });

  it('an archived (not terminated) session still blocks the delete', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'archived-user' });
    const a = await c.beta.agents.create({ name: 'archived-user', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    await c.beta.sessions.archive(s.id);
    const r = await t.http(`/v1/environments/${env.id}`, { method: 'DELETE' });
    expect(r.status).toBe(409);
  });
});
