/**
 * The memory store and memory updates (`POST /v1/memory_stores/:id`,
 * `POST /v1/memory_stores/:id/memories/:memory_id`, gateway/src/routes/memoryStores.ts) need a
 * body, over HTTP against an in-process platform:
 * - no body at all (no content-type, no payload), or an empty application/json body, is a 400
 *   `invalid_request` naming `body`, and nothing changes;
 * - `{}` (what the Python SDK sends for an update without fields) changes nothing and answers
 *   the object with 200.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let apiKey: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  ({ apiKey } = await t.newTenant('memory-body'));
});
afterAll(async () => {
  await t?.close();
});

const call = async (path: string, init: RequestInit & { json?: unknown } = {}) => {
  const r = await t.http(path, { key: apiKey, ...init });
  return { status: r.status, body: (await r.json()) as any };
};

describe('memory updates need a body', () => {
  it('a missing body is a 400 naming body; {} is a no-op answering the object', async () => {
    const store = await call('/v1/memory_stores', {
      method: 'POST',
      json: { name: 'kept', description: 'd' },
    });
    expect(store.status).toBe(200);
    const sid = store.body.id as string;
    const mem = await call(`/v1/memory_stores/${sid}/memories?view=full`, {
      method: 'POST',
      json: { path: '/notes/a.md', content: 'hello' },
    });
    expect(mem.status).toBe(200);
    const mid = mem.body.id as string;

    for (const path of [`/v1/memory_stores/${sid}`, `/v1/memory_stores/${sid}/memories/${mid}`]) {
      const none = await call(path, { method: 'POST' });
      const emptyJson = await call(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      for (const r of [none, emptyJson]) {
        expect(r.status, path).toBe(400);
        expect(r.body.error.type).toBe('invalid_request');
        expect(r.body.error.message).toMatch(/^body: /);
      }
      const noop = await call(path, { method: 'POST', json: {} });
      expect(noop.status, path).toBe(200);
      expect(noop.body.id).toBe(path.endsWith(mid) ? mid : sid);
    }
    const after = await call(`/v1/memory_stores/${sid}`);
    expect([after.body.name, after.body.description]).toEqual(['kept', 'd']);
    const read = await call(`/v1/memory_stores/${sid}/memories/${mid}`);
    expect([read.body.path, read.body.content, read.body.memory_version_id]).toEqual([
      '/notes/a.md',
      'hello',
      mem.body.memory_version_id,
    ]);
  });
});
