/**
 * A memory store's `embedding_model` through HTTP against an in-process platform, with the fake
 * OpenAI-compatible embedding model of test/kit/fixtures/embeddingServer.ts. Proves the guarantees
 * of core/src/memory/search/embeddings.ts (checkEmbeddingModel, chooseEmbeddingModel):
 * - create and update refuse a name that resolves to no embedding model of the workspace (no
 *   card, or a card that is not an embedding model) with a 400 naming `embedding_model` that
 *   lists the available embedding models;
 * - update switches the store's model (search then runs on it) and `null` returns it to the
 *   platform default;
 * - every lexical answer says why (`fallback_reason`): no model configured, or the store's model
 *   card deleted after the store named it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startEmbeddingServer, type EmbeddingServer } from '../../kit/fixtures/embeddingServer.js';

let t: TestPlatform;
let emb: EmbeddingServer;

beforeAll(async () => {
  emb = await startEmbeddingServer();
  t = await startPlatform({
    env: { EGRESS_ALLOW_PRIVATE_HOSTS: emb.host, SANDBOX_DRIVER: 'none' },
  });
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
const card = (key: string, modelId: string, embedding: boolean) =>
  call(
    '/v1/svc/model_cards',
    {
      model_id: modelId,
      provider: 'oai-compatible',
      model: embedding ? 'bow-64' : 'chat',
      base_url: emb.url,
      api_key: 'sk-embed-secret',
      ...(embedding ? { pi_config: { embedding: true } } : {}),
    },
    key,
  );

describe('memory store embedding_model', () => {
  it('embedding_model is validated at create and update: a 400 naming it, listing what is available', async () => {
    const { apiKey: key } = await t.newTenant('embvalid');
    expect((await card(key, 'bow', true)).status).toBe(200);
    expect((await card(key, 'chatty', false)).status).toBe(200);

    const unknown = await call('/v1/memory_stores', { name: 's', embedding_model: 'nope' }, key);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.type).toBe('invalid_request');
    expect(unknown.body.error.message).toMatch(/^embedding_model: no embedding model 'nope'/);
    expect(unknown.body.error.message).toContain('available: bow');
    const chat = await call('/v1/memory_stores', { name: 's', embedding_model: 'chatty' }, key);
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toMatch(/^embedding_model: .*'chatty' is not an embedding/);
    expect(chat.body.error.message).toContain('available: bow');
    const none = await t.newTenant('embnone');
    const empty = await call(
      '/v1/memory_stores',
      { name: 's', embedding_model: 'bow' },
      none.apiKey,
    );
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toContain('available: none');

    // Update: refused the same way; a valid name switches the search to it; null goes back.
    const s = await call('/v1/memory_stores', { name: 's' }, key);
    expect(s.status).toBe(200);
    const id = s.body.id as string;
    const mem = { path: '/pasta.md', content: 'Boil the pasta in salted water.' };
    expect((await call(`/v1/memory_stores/${id}/memories`, mem, key)).status).toBe(200);
    const bad = await call(`/v1/memory_stores/${id}`, { embedding_model: 'nope' }, key);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^embedding_model: .*available: bow/);
    const lexical = await call(`/v1/memory_stores/${id}/search`, { query: 'pasta' }, key);
    expect(lexical.body).toMatchObject({ mode: 'lexical' });
    expect(lexical.body.fallback_reason).toMatch(/no embedding model.*MEMORY_EMBEDDING_MODEL/);

    const upd = await call(`/v1/memory_stores/${id}`, { embedding_model: 'bow' }, key);
    expect(upd.status, JSON.stringify(upd.body)).toBe(200);
    expect(upd.body.embedding_model).toBe('bow');
    const semantic = await call(`/v1/memory_stores/${id}/search`, { query: 'pasta' }, key);
    expect(semantic.body).toMatchObject({ mode: 'semantic', embedding_model: 'bow' });
    expect(semantic.body.fallback_reason).toBeUndefined();
    expect(semantic.body.data[0].path).toBe('/pasta.md');

    const back = await call(`/v1/memory_stores/${id}`, { embedding_model: null }, key);
    expect(back.body.embedding_model).toBeNull();
    const again = await call(`/v1/memory_stores/${id}/search`, { query: 'pasta' }, key);
    expect(again.body.mode).toBe('lexical');
  });

  it('a store whose model card was deleted searches lexically and says why', async () => {
    const { apiKey: key } = await t.newTenant('embgone');
    const c = await card(key, 'bow', true);
    expect(c.status).toBe(200);
    const s = await call('/v1/memory_stores', { name: 's', embedding_model: 'bow' }, key);
    expect(s.status).toBe(200);
    const mem = { path: '/cats.md', content: 'Cats sleep most of the day.' };
    expect((await call(`/v1/memory_stores/${s.body.id}/memories`, mem, key)).status).toBe(200);
    expect((await call(`/v1/svc/model_cards/${c.body.id}`, undefined, key, 'DELETE')).status).toBe(
      200,
    );
    const r = await call(`/v1/memory_stores/${s.body.id}/search`, { query: 'cats' }, key);
    expect(r.status).toBe(200);
    expect(r.body.mode).toBe('lexical');
    expect(r.body.fallback_reason).toBe("the store's embedding_model 'bow' names no model card");
    expect(r.body.data[0].path).toBe('/cats.md');
  });
});
