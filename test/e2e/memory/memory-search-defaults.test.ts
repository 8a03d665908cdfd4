/**
 * Memory search with the platform's settings (core/src/memory/search): MEMORY_EMBEDDING_MODEL
 * names the operator's embedding card, used for a tenant's store without its own
 * `embedding_model`; MEMORY_SEARCH_MAX_OPEN_INDEXES bounds the indexes a process keeps open,
 * and a store whose index was evicted answers the same, rebuilt from its persisted vectors
 * without embedding its memories again. A memory whose search entry was lost is found once a
 * process opens the store (the entries are reconciled with the memories). An independent index
 * holder (as another gateway process in fleet mode) follows writes made elsewhere. Fake embedding endpoint: test/kit/fixtures/embeddingServer.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startEmbeddingServer, type EmbeddingServer } from '../../kit/fixtures/embeddingServer.js';

let t: TestPlatform;
let emb: EmbeddingServer;

beforeAll(async () => {
  emb = await startEmbeddingServer();
  t = await startPlatform({
    env: {
      EGRESS_ALLOW_PRIVATE_HOSTS: emb.host,
      MEMORY_EMBEDDING_MODEL: 'house-embeddings',
      MEMORY_SEARCH_MAX_OPEN_INDEXES: '1',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await emb?.close();
});

type Json = Record<string, any>;
const call = async (path: string, json: unknown, key?: string) => {
  const res = await t.http(path, { method: 'POST', key, headers: BETA, json });
  return { status: res.status, body: (await res.json()) as Json };
};

async function store(key: string, docs: Record<string, string>): Promise<string> {
  const s = await call('/v1/memory_stores', { name: 'notes' }, key);
  expect(s.status).toBe(200);
  for (const [path, content] of Object.entries(docs))
    expect(
      (await call(`/v1/memory_stores/${s.body.id}/memories`, { path, content }, key)).status,
    ).toBe(200);
  return s.body.id as string;
}

describe('memory search platform settings', () => {
  it("a store without embedding_model uses MEMORY_EMBEDDING_MODEL, the operator's card; evicted indexes rebuild from persisted vectors", async () => {
    const card = await call('/v1/svc/model_cards', {
      model_id: 'house-embeddings',
      provider: 'oai-compatible',
      model: 'bow-64',
      base_url: emb.url,
      api_key: 'sk-house-embed',
      pi_config: { embedding: true },
    });
    expect(card.status, JSON.stringify(card.body)).toBe(200);
    const tenant = await t.newTenant('defaults');
    const a = await store(tenant.apiKey, {
      '/a/tides.md': 'The tide tables for the harbour are pinned by the door.',
      '/a/bikes.md': 'Bike tyres need pumping every second week.',
    });
    const b = await store(tenant.apiKey, {
      '/b/tea.md': 'Green tea steeps for two minutes at eighty degrees.',
      '/b/ink.md': 'The printer ink is in the second drawer.',
    });
    const first = await call(
      `/v1/memory_stores/${a}/search`,
      { query: 'harbour tide' },
      tenant.apiKey,
    );
    expect(first.body).toMatchObject({ mode: 'semantic', embedding_model: 'house-embeddings' });
    expect(first.body.data[0].path).toBe('/a/tides.md');
    expect(emb.requests.every((r) => r.headers.authorization === 'Bearer sk-house-embed')).toBe(
      true,
    );

    const other = await call(
      `/v1/memory_stores/${b}/search`,
      { query: 'green tea' },
      tenant.apiKey,
    );
    expect(other.body.data[0].path).toBe('/b/tea.md');
    // One open index per process: b's evicted a's.
    expect(t.server.platform.memorySearch.openCount).toBe(1);
    // Background embeddings of the writes are over; from here on only queries are embedded.
    await t.server.platform.memorySearch.idle();
    const sent = emb.requests.length;
    const again = await call(
      `/v1/memory_stores/${a}/search`,
      { query: 'harbour tide' },
      tenant.apiKey,
    );
    expect(again.body.data).toEqual(first.body.data);
    expect(emb.requests.slice(sent).map((r) => r.input)).toEqual([['harbour tide']]);
  });

  it('a memory whose search entry was lost (its hook never ran) is indexed when a process opens the store', async () => {
    const tenant = await t.newTenant('lost');
    const s = await store(tenant.apiKey, {
      '/x/owl.md': 'Owls hunt at night in the old barn.',
      '/x/fox.md': 'The fox den is under the oak by the river.',
    });
    await t.server.platform.memorySearch.idle();
    const list = await t.http(`/v1/memory_stores/${s}/memories`, {
      key: tenant.apiKey,
      headers: BETA,
    });
    const owl = ((await list.json()) as Json).data.find((m: Json) => m.path === '/x/owl.md').id;
    // As if the process died between the memory write and its search entry write.
    await t.server.platform.memorySearch.entries.entries.deleteOne(tenant.tenantId, { _id: owl });
    await t.restart();
    const r = await call(
      `/v1/memory_stores/${s}/search`,
      { query: 'owls hunt in the barn' },
      tenant.apiKey,
    );
    expect(r.body.mode).toBe('semantic');
    expect(r.body.data[0]).toMatchObject({ memory_id: owl, path: '/x/owl.md' });
    expect(r.body.unindexed).toBe(0);
  });

  it('a second index holder (as another gateway process) that never sees the writes follows them through the persisted entries', async () => {
    const tenant = await t.newTenant('fleet');
    const key = tenant.apiKey;
    const s = await store(key, {
      '/f/kite.md': 'The kite string is in the blue box in the garage.',
      '/f/oven.md': 'The oven needs descaling every spring.',
    });
    // Its own indexes and no hook: it learns of writes only through the store.
    const mine = t.server.platform.memorySearch;
    const other = new (mine.constructor as new (o: typeof mine.o) => typeof mine)(mine.o);
    const ask = (q: string) => other.search(tenant.tenantId, s, q, 5);
    const before = await ask('kite string');
    expect(before.data[0]!.path).toBe('/f/kite.md');
    const ovenScore = (r: typeof before) => r.data.find((h) => h.path === '/f/oven.md')?.score ?? 0;
    expect(ovenScore(before)).toBeLessThan(0.1);
    const list = await t.http(`/v1/memory_stores/${s}/memories`, { key, headers: BETA });
    const ids = Object.fromEntries(
      ((await list.json()) as Json).data.map((m: Json) => [m.path, m.id]),
    );
    await call(
      `/v1/memory_stores/${s}/memories/${ids['/f/oven.md']}`,
      { content: 'The kite string was moved to the oven drawer.' },
      key,
    );
    await t.http(`/v1/memory_stores/${s}/memories/${ids['/f/kite.md']}`, {
      method: 'DELETE',
      key,
      headers: BETA,
    });
    const after = await ask('kite string');
    expect(after.data.map((h) => h.path)).toEqual(['/f/oven.md']);
    // Ranked by its new content's vector, which this holder read from the store.
    expect(ovenScore(after)).toBeGreaterThan(0.25);
    expect(after.data[0]!.snippet).toContain('oven drawer');
  });
});
