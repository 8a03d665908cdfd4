/**
 * Environment service keys (spec Authentication): accepted only as `Authorization: Bearer`,
 * only under `/v1/environments/{that environment}/work/**`; refused through x-api-key, for
 * another environment, and for session, agent or other APIs; revoking one blocks poll at once
 * (the key is never cached). Proves core/src/auth/auth.ts and gateway/src/claimedSession.ts
 * (checkEnvironmentKey).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { newSession, withBearer, workEnv } from '../../kit/workHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const errorType = async (res: Response) =>
  ((await res.json()) as { error: { type: string } }).error.type;

describe('environment service keys', () => {
  it('work on its own environment as Bearer; nothing else', async () => {
    const w = await workEnv(t, 'keys-a');
    const other = await workEnv(t, 'keys-b');
    const session = await newSession(t, w);
    const poll = `/v1/environments/${w.envId}/work/poll`;

    // As Bearer on its environment's work routes: fine.
    const ok = await withBearer(t, w.envKey, poll);
    expect(ok.status).toBe(200);
    const item = (await ok.json()) as { id: string };
    expect((await withBearer(t, w.envKey, `/v1/environments/${w.envId}/work/stats`)).status).toBe(
      200,
    );
    expect(
      (await withBearer(t, w.envKey, `/v1/environments/${w.envId}/work/${item.id}`)).status,
    ).toBe(200);

    // Through x-api-key: refused.
    const viaHeader = await t.http(poll, { key: w.envKey, headers: BETA });
    expect(viaHeader.status).toBe(403);
    expect(await errorType(viaHeader)).toBe('forbidden');

    // Another environment's work: refused.
    const cross = await withBearer(t, w.envKey, `/v1/environments/${other.envId}/work/poll`);
    expect(cross.status).toBe(403);

    // Sessions, agents, environments, files, keys: refused.
    for (const path of [
      `/v1/sessions/${session.id}`,
      `/v1/sessions/${session.id}/events`,
      '/v1/sessions',
      '/v1/agents',
      `/v1/environments/${w.envId}`,
      '/v1/files',
      '/v1/svc/api_keys',
    ]) {
      const res = await withBearer(t, w.envKey, path);
      expect(res.status, path).toBe(403);
    }
    const send = await withBearer(t, w.envKey, `/v1/sessions/${session.id}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ type: 'user.interrupt' }] }),
    });
    expect(send.status).toBe(403);
  });

  it('revoking the key blocks poll immediately', async () => {
    const w = await workEnv(t, 'keys-revoke');
    const poll = `/v1/environments/${w.envId}/work/poll`;
    expect((await withBearer(t, w.envKey, poll)).status).toBe(200);
    const del = await t.http(`/v1/svc/api_keys/${w.envKeyId}`, { method: 'DELETE', headers: BETA });
    expect(del.status).toBe(200);
    const after = await withBearer(t, w.envKey, poll);
    expect(after.status).toBe(401);
    expect(await errorType(after)).toBe('unauthorized');
  });

  it("a tenant's environment key cannot reach another tenant's environment", async () => {
    const other = await t.newTenant('keys-other');
    const theirs = await workEnv(t, 'keys-theirs', other.client);
    const mine = await workEnv(t, 'keys-mine');
    const res = await withBearer(t, mine.envKey, `/v1/environments/${theirs.envId}/work/poll`);
    expect(res.status).toBe(403);
    // And their own key, on their environment, sees only their queue.
    const own = await withBearer(t, theirs.envKey, `/v1/environments/${theirs.envId}/work/stats`);
    expect(own.status).toBe(200);
    expect(
      (await withBearer(t, theirs.envKey, `/v1/environments/${mine.envId}/work/stats`)).status,
    ).toBe(403);
  });
});
