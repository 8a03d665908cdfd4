/**
 * Memory search (`POST /v1/memory_stores/:id/search`) through HTTP against an in-process
 * platform, with a fake OpenAI-compatible embedding model on 127.0.0.1
 * (test/kit/fixtures/embeddingServer.ts: bag-of-words hashed into 64 dimensions). Proves the
 * guarantees of core/src/memory/search/search.ts: lexical without a model, semantic with one
 * (and says which), tenant + store scoping, updates and deletes reflected, vectors persisted
 * (a restarted platform answers the same without re-embedding the corpus), embedding failures
 * never failing a write and retried at search, 400s naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startEmbeddingServer, type EmbeddingServer } from '../../kit/fixtures/embeddingServer.js';

let t: TestPlatform;
let emb: EmbeddingServer;

beforeAll(async () => {
  emb = await startEmbeddingServer();
  t = await startPlatform({ env: { EGRESS_ALLOW_PRIVATE_HOSTS: emb.host } });
});
afterAll(async () => {
  await t?.close();
  await emb?.close();
});

type Json = Record<string, any>;
const call = async (path: string, json?: unknown, key?: string, method = 'POST') => {
  const res = await t.http(path, { method, key, headers: BETA, json });
  return { status: res.status, body: (await res.json()) as Json };
};
const search = (store: string, query: string, limit?: number, key?: string) =>
  call(`/v1/memory_stores/${store}/search`, { query, ...(limit ? { limit } : {}) }, key);

const DOCS: Record<string, string> = {
  '/runbooks/deploy.md': 'To deploy the gateway, build the image and roll the gateway fleet.',
  '/recipes/pasta.md': 'Boil the pasta in salted water, then toss with tomato sauce and basil.',
  '/pets/cats.md': 'Cats sleep most of the day and like to climb on shelves.',
};

async function storeWith(key: string | undefined, embeddingModel?: string): Promise<string> {
  const s = await call(
    '/v1/memory_stores',
    { name: 'notes', ...(embeddingModel ? { embedding_model: embeddingModel } : {}) },
    key,
  );
  expect(s.status).toBe(200);
  for (const [path, content] of Object.entries(DOCS)) {
    const m = await call(`/v1/memory_stores/${s.body.id}/memories`, { path, content }, key);
    expect(m.status).toBe(200);
  }
  return s.body.id as string;
}

const idOf = async (store: string, path: string, key?: string) => {
  const list = await call(`/v1/memory_stores/${store}/memories`, undefined, key, 'GET');
  return (list.body.data as Json[]).find((m) => m.path === path)!.id as string;
};

async function embeddingCard(key: string | undefined, modelId: string): Promise<void> {
  const res = await call(
    '/v1/svc/model_cards',
    {
      model_id: modelId,
      provider: 'oai-compatible',
      model: 'bow-64',
      base_url: emb.url,
      api_key: 'sk-embed-secret',
      pi_config: { embedding: true },
    },
    key,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

describe('memory search', () => {
  it('lexical: with no embedding model the relevant memory ranks first and the answer says lexical', async () => {
    const store = await storeWith(undefined);
    const r = await search(store, 'how do I deploy the gateway');
    expect(r.status).toBe(200);
    expect(r.body.mode).toBe('lexical');
    expect(r.body.embedding_model).toBeUndefined();
    expect(r.body.data[0].path).toBe('/runbooks/deploy.md');
    expect(r.body.data[0].snippet).toContain('deploy');
    expect(r.body.data[0].memory_id).toMatch(/^mem/);
  });

  it('semantic: the store embedding model card embeds memories and query; results scoped to tenant and store', async () => {
    const tenant = await t.newTenant('searcher');
    await embeddingCard(tenant.apiKey, 'bow');
    const before = emb.requests.length;
    const store = await storeWith(tenant.apiKey, 'bow');
    const other = await storeWith(tenant.apiKey, 'bow');
    const r = await search(store, 'pasta with tomato sauce', 3, tenant.apiKey);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ mode: 'semantic', embedding_model: 'bow' });
    expect(r.body.data[0].path).toBe('/recipes/pasta.md');
    expect(r.body.data[0].score).toBeGreaterThan(r.body.data[1].score);
    // Only this store's memories, though the other store holds the same paths.
    const mine = (
      await call(`/v1/memory_stores/${store}/memories`, undefined, tenant.apiKey, 'GET')
    ).body.data.map((m: Json) => m.id);
    expect(r.body.data.every((h: Json) => mine.includes(h.memory_id))).toBe(true);
    const theirs = await search(other, 'pasta with tomato sauce', 3, tenant.apiKey);
    expect(theirs.body.data.some((h: Json) => mine.includes(h.memory_id))).toBe(false);
    // The card's key went to the endpoint, its wire model named.
    const sent = emb.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((q) => q.headers.authorization === 'Bearer sk-embed-secret')).toBe(true);
    expect(sent.every((q) => q.model === 'bow-64')).toBe(true);
    expect(JSON.stringify(r.body)).not.toContain('sk-embed-secret');
    // Another tenant (the operator's) cannot search it: 404, as if it did not exist.
    const foreign = await search(store, 'pasta');
    expect(foreign.status).toBe(404);
  });

  it('updates and deletes are reflected; a restarted platform answers the same from persisted vectors', async () => {
    const tenant = await t.newTenant('updater');
    await embeddingCard(tenant.apiKey, 'bow');
    const store = await storeWith(tenant.apiKey, 'bow');
    const key = tenant.apiKey;
    const cats = await idOf(store, '/pets/cats.md', key);
    const deploy = await idOf(store, '/runbooks/deploy.md', key);
    expect((await search(store, 'gateway fleet rollout', 1, key)).body.data[0].memory_id).toBe(
      deploy,
    );
    // The cats memory now speaks of a rollback of the gateway fleet; the deploy one is deleted.
    const upd = await call(
      `/v1/memory_stores/${store}/memories/${cats}`,
      { content: 'Rollback: roll the gateway fleet back to the previous gateway image.' },
      key,
    );
    expect(upd.status).toBe(200);
    const del = await call(
      `/v1/memory_stores/${store}/memories/${deploy}`,
      undefined,
      key,
      'DELETE',
    );
    expect(del.status).toBe(200);
    const after = await search(store, 'gateway fleet rollout', 3, key);
    expect(after.body.data[0].memory_id).toBe(cats);
    expect(after.body.data.map((h: Json) => h.memory_id)).not.toContain(deploy);
    expect(after.body.data[0].snippet).toContain('gateway');

    await t.restart();
    const sentBefore = emb.requests.length;
    const again = await search(store, 'gateway fleet rollout', 3, key);
    expect(again.body.data.map((h: Json) => [h.memory_id, h.path])).toEqual(
      after.body.data.map((h: Json) => [h.memory_id, h.path]),
    );
    expect(again.body.unindexed).toBe(0);
    // Only the query was embedded: the memories' vectors came from the store.
    expect(emb.requests.slice(sentBefore).map((q) => q.input)).toEqual([['gateway fleet rollout']]);
  });

  it('an embedding failure never fails the write; the memory is embedded at the next search, and a failing search falls back to lexical', async () => {
    const tenant = await t.newTenant('flaky');
    await embeddingCard(tenant.apiKey, 'bow');
    const store = await storeWith(tenant.apiKey, 'bow');
    const key = tenant.apiKey;
    emb.failing = true;
    try {
      const m = await call(
        `/v1/memory_stores/${store}/memories`,
        { path: '/ops/pager.md', content: 'The pager rotation changes every monday at noon.' },
        key,
      );
      expect(m.status).toBe(200);
      const down = await search(store, 'pager rotation', 2, key);
      expect(down.status).toBe(200);
      expect(down.body.mode).toBe('lexical');
      expect(down.body.fallback_reason).toMatch(/bow.*HTTP 503/);
      expect(down.body.data[0].path).toBe('/ops/pager.md');
    } finally {
      emb.failing = false;
    }
    const up = await search(store, 'pager rotation monday', 2, key);
    expect(up.body).toMatchObject({ mode: 'semantic', embedding_model: 'bow', unindexed: 0 });
    expect(up.body.data[0].path).toBe('/ops/pager.md');
  });

  it('a query of no words answers an empty list; a deleted store is a 404 and its search entries are gone', async () => {
    const tenant = await t.newTenant('dropper');
    await embeddingCard(tenant.apiKey, 'bow');
    const store = await storeWith(tenant.apiKey, 'bow');
    const none = await search(store, '?!', 5, tenant.apiKey);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ mode: 'semantic', data: [] });
    await t.server.platform.memorySearch.idle();
    const entries = t.server.platform.memorySearch.entries.entries;
    expect(await entries.count(tenant.tenantId, { store_id: store })).toBe(3);
    const del = await call(`/v1/memory_stores/${store}`, undefined, tenant.apiKey, 'DELETE');
    expect(del.status).toBe(200);
    expect((await search(store, 'pasta', 5, tenant.apiKey)).status).toBe(404);
    expect(await entries.count(tenant.tenantId, { store_id: store })).toBe(0);
  });

  it('refuses bad input with a 400 naming the field, an unknown store with 404', async () => {
    const store = await storeWith(undefined);
    for (const [body, field] of [
      [{ query: 'x', limit: 0 }, 'limit'],
      [{ query: 'x', limit: 101 }, 'limit'],
      [{ query: 'x', limit: 'ten' }, 'limit'],
      [{ query: 'x', limit: 1.5 }, 'limit'],
      [{}, 'query'],
      [{ query: '' }, 'query'],
      [{ query: '   ' }, 'query'],
      [{ query: 'x', extra: 1 }, 'extra'],
    ] as const) {
      const r = await call(`/v1/memory_stores/${store}/search`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.message, JSON.stringify(body)).toContain(field);
    }
    expect((await search('memstore_nope', 'x')).status).toBe(404);
    // A non-embedding card: test/e2e/memory/memory-embedding-model.test.ts.
  });
});
