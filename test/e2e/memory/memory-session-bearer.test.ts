/**
 * The claimed-session bearer and memory stores (spec capability table: "access only an
 * attached store; mutations need read_write"), through the official SDK with the bearer as its
 * only credential: an attached read_write store can be read, searched and written; an attached
 * read_only store can be read but not written; an unattached store, the store list, store
 * creation and the store's own update/archive/delete are 403 forbidden.
 * Proves gateway/src/claimedMemory.ts (called from gateway/src/claimedSession.ts).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { bearerClient, sessionsToken, withBearer, workEnv } from '../../kit/workHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('claimed-session bearer and memory stores', () => {
  it('reads attached stores, writes only read_write ones, and is refused everything else', async () => {
    const w = await workEnv(t, 'memory-bearer');
    const ms = t.client.beta.memoryStores;
    const rw = await ms.create({ name: 'rw' });
    const ro = await ms.create({ name: 'ro' });
    const other = await ms.create({ name: 'unattached' });
    const roMemory = await ms.memories.create(ro.id, { path: '/ro.md', content: 'ro\n' });
    const otherMemory = await ms.memories.create(other.id, { path: '/o.md', content: 'o\n' });
    const session = await t.client.beta.sessions.create({
      agent: w.agentId,
      environment_id: w.envId,
      resources: [
        { type: 'memory_store', memory_store_id: rw.id },
        { type: 'memory_store', memory_store_id: ro.id, access: 'read_only' },
      ],
    });
    const item = (await w.worker.beta.environments.work.poll(w.envId))!;
    expect(item.data.id).toBe(session.id);
    const token = sessionsToken(item.secret);
    const c = bearerClient(t, token);

    // Attached read_write: read and write.
    expect((await c.beta.memoryStores.retrieve(rw.id)).id).toBe(rw.id);
    const made = await c.beta.memoryStores.memories.create(rw.id, {
      path: '/from-worker.md',
      content: 'hello\n',
    });
    const updated = await c.beta.memoryStores.memories.update(made.id, {
      memory_store_id: rw.id,
      content: 'hello again\n',
    });
    expect(updated.content_sha256).not.toBe(made.content_sha256);
    const listed = await c.beta.memoryStores.memories.list(rw.id);
    expect(listed.data.map((m: any) => m.path)).toEqual(['/from-worker.md']);
    const search = await withBearer(t, token, `/v1/memory_stores/${rw.id}/search`, {
      method: 'POST',
      body: JSON.stringify({ query: 'hello', limit: 5 }),
      headers: { 'content-type': 'application/json' },
    });
    expect(search.status, await search.clone().text()).not.toBe(403);
    await c.beta.memoryStores.memories.delete(made.id, { memory_store_id: rw.id });

    // Attached read_only: reads only.
    const read = await c.beta.memoryStores.memories.retrieve(roMemory.id, {
      memory_store_id: ro.id,
    });
    expect(read.content).toBe('ro\n');
    const versions = await c.beta.memoryStores.memoryVersions.list(ro.id);
    expect(versions.data.length).toBe(1);
    for (const attempt of [
      () => c.beta.memoryStores.memories.create(ro.id, { path: '/x.md', content: 'x' }),
      () =>
        c.beta.memoryStores.memories.update(roMemory.id, { memory_store_id: ro.id, content: 'x' }),
      () => c.beta.memoryStores.memories.delete(roMemory.id, { memory_store_id: ro.id }),
      () =>
        c.beta.memoryStores.memoryVersions.redact(versions.data[0]!.id, { memory_store_id: ro.id }),
    ])
      expect(await attempt().catch((e) => e)).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((await ms.memories.retrieve(roMemory.id, { memory_store_id: ro.id })).content).toBe(
      'ro\n',
    );

    // Everything else is refused.
    const refused: Array<[string, string, unknown?]> = [
      ['GET', '/v1/memory_stores'],
      ['POST', '/v1/memory_stores', { name: 'mine' }],
      ['GET', `/v1/memory_stores/${other.id}`],
      ['GET', `/v1/memory_stores/${other.id}/memories`],
      ['GET', `/v1/memory_stores/${other.id}/memories/${otherMemory.id}`],
      ['POST', `/v1/memory_stores/${other.id}/search`, { query: 'o', limit: 1 }],
      ['POST', `/v1/memory_stores/${rw.id}`, { name: 'renamed' }],
      ['POST', `/v1/memory_stores/${rw.id}/archive`, {}],
      ['DELETE', `/v1/memory_stores/${rw.id}`],
    ];
    for (const [method, path, body] of refused) {
      const res = await withBearer(t, token, path, {
        method,
        ...(body !== undefined
          ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
          : {}),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(403);
      expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'forbidden' } });
    }
    expect((await ms.retrieve(rw.id)).name).toBe('rw');
    expect((await ms.retrieve(rw.id)).archived_at).toBeNull();
  });
});
