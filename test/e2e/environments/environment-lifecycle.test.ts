/**
 * Environment delete is refused (409, the existing error shape, naming the sessions) while a
 * session that is neither terminated nor deleted runs on it; once the session is deleted the
 * environment can be deleted (core/src/environments/environments.ts remove). Through the official
 * TypeScript SDK and plain HTTP. A session keeps the environment snapshot it was created with
 * (network, env vars, packages); an unreadable snapshot is null so the egress proxy and the
 * sandbox spec fail closed (core/src/sessions/environmentSnapshot.ts, used by
 * core/src/sandbox/proxies.ts policyFor and core/src/sandbox/runtime.ts sessionSandboxSpec).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentSnapshot } from '@agentfleet/core';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

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

describe('a session keeps the environment snapshot it started with', () => {
  it('network and env vars come from the snapshot, not the live environment', async () => {
    const { tenantId, apiKey, client: c } = await t.newTenant('snap');
    const env = await c.beta.environments.create({
      name: 'snap',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['a.example'] } },
    });
    const patched = await t.http(`/v1/environments/${env.id}`, {
      method: 'PATCH',
      key: apiKey,
      json: { env: { A: '1' } },
    });
    expect(patched.status).toBe(200);
    const a = await c.beta.agents.create({ name: 'snap', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    // The environment changes after the session started: the session does not see it.
    await c.beta.environments.update(env.id, {
      config: { type: 'cloud', networking: { type: 'unrestricted' } },
    });
    const collections = t.server.platform.collections;
    const snap = await environmentSnapshot(collections, tenantId, s.id);
    expect(snap?.network).toMatchObject({ unrestricted: false, allowlist: ['a.example'] });
    expect(snap?.env).toEqual({ A: '1' });
    const live = await c.beta.environments.retrieve(env.id);
    expect(live.config).toMatchObject({ networking: { type: 'unrestricted' } });
  });

  it('unreadable snapshot is null (callers fail closed): deleted session, legacy session whose environment is gone', async () => {
    const { tenantId, client: c } = await t.newTenant('gone');
    const collections = t.server.platform.collections;
    const env = await c.beta.environments.create({ name: 'gone' });
    const a = await c.beta.agents.create({ name: 'gone', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    // A session stored before snapshots existed reads the live environment while it exists.
    await collections.sessions.updateOne(tenantId, { _id: s.id }, { $unset: { environment: '' } });
    expect((await environmentSnapshot(collections, tenantId, s.id))?.network.unrestricted).toBe(
      true,
    );
    // Its environment deleted underneath it (bypassing the API's refusal): no snapshot, never
    // the old "unrestricted" default.
    await collections.environments.deleteOne(tenantId, { _id: env.id });
    expect(await environmentSnapshot(collections, tenantId, s.id)).toBeNull();
    const s2 = await c.beta.sessions.create({
      agent: a.id,
      environment_id: (await c.beta.environments.create({ name: 'g2' })).id,
    });
    await c.beta.sessions.delete(s2.id);
    expect(await environmentSnapshot(collections, tenantId, s2.id)).toBeNull();
    // Another tenant never reads it.
    expect(await environmentSnapshot(collections, 'tenant_other', s.id)).toBeNull();
  });
});
