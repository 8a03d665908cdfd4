/**
 * The spec's agent fields beyond the SDK, on create and update, with nothing stored on refusal:
 * a `harness` other than `default` and `pi` is refused with a 400 naming the field and saying
 * "not supported yet" (core/src/sessions/compactionSettings.ts checkHarness; `pi` = harness-owned
 * compaction, test/e2e/turns/compaction.test.ts); `memory_store_id` must name the tenant's live memory
 * store, else a 400 naming it (core/src/memory/session/resources.ts checkAgentMemoryStore; the
 * mount: test/e2e/memory/memory-session.test.ts). `null`, `default` and `pi` are accepted. Plain HTTP: the
 * SDK has neither field.
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

async function expectRefused(res: Response, field: string, says = 'not supported yet') {
  expect(res.status).toBe(400);
  const body = (await res.json()) as { error: { type: string; message: string } };
  expect(body.error.type).toBe('invalid_request');
  expect(body.error.message).toContain(field);
  expect(body.error.message).toContain(says);
}

describe('unbuilt agent fields', () => {
  it('an unknown memory_store_id and an unknown harness are refused on create and update; null/default/pi accepted', async () => {
    const { apiKey } = await t.newTenant('unbuilt-agent');
    const post = (path: string, json: unknown) =>
      t.http(path, { method: 'POST', key: apiKey, json });
    const base = { name: 'a', model: 'claude-sonnet-4-5' };
    await expectRefused(
      await post('/v1/agents', { ...base, memory_store_id: 'memstore_1' }),
      'memory_store_id',
      'memstore_1 not found',
    );
    await expectRefused(await post('/v1/agents', { ...base, harness: 'codex' }), 'harness');
    const list = await t.http('/v1/agents', { key: apiKey });
    expect(((await list.json()) as { data: unknown[] }).data).toEqual([]);

    const ok = await post('/v1/agents', { ...base, memory_store_id: null, harness: 'default' });
    expect(ok.status).toBe(200);
    const agent = (await ok.json()) as { id: string; version: number };
    await expectRefused(
      await post(`/v1/agents/${agent.id}`, { version: agent.version, harness: 'codex' }),
      'harness',
    );
    await expectRefused(
      await post(`/v1/agents/${agent.id}`, { version: agent.version, memory_store_id: 'm' }),
      'memory_store_id',
      'm not found',
    );
    const after = await t.http(`/v1/agents/${agent.id}`, { key: apiKey });
    expect(((await after.json()) as { version: number }).version).toBe(agent.version);
    const pi = await post(`/v1/agents/${agent.id}`, { version: agent.version, harness: 'pi' });
    expect(pi.status).toBe(200);
    expect(((await pi.json()) as { harness: string }).harness).toBe('pi');
  });
});
