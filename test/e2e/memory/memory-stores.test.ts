/**
 * Memory stores and memories (core/src/memory, gateway/src/routes/memoryStores.ts) through the
 * official TypeScript SDK (`client.beta.memoryStores.*`, `.memories.*`) and plain HTTP (the
 * spec's `/v1/memory_stores` shapes) against an in-process platform:
 * - stores: create, retrieve, update (metadata patch), list (include_archived), archive (final;
 *   the archived store refuses memory writes and store updates with a 400 naming
 *   memory_store_id, still serves reads and memory deletes), delete (memory_store_deleted; its
 *   memories and versions are gone and the search hook's dropStore ran);
 * - the spec's create with agent_id and embedding_model, list per agent_id, /entries;
 * - memories: create (view basic: content null, hash and size set), retrieve (full), update
 *   content and rename (new memory_version_id, same id), list in path order with path_prefix,
 *   depth 1 roll-up into memory_prefix items and paging, delete (memory_deleted);
 * - path conflicts on create and rename (same path, ancestor, descendant) are 409s carrying
 *   conflicting_path and conflicting_memory_id on the error object;
 * - the content_sha256 precondition is a compare-and-swap: two concurrent updates with the same
 *   precondition give exactly one 200 and one 409 (five rounds); a stale precondition is a 409
 *   memory_precondition_failed_error; an update to the memory's own content succeeds whatever the
 *   hash; delete's expected_content_sha256 likewise;
 * - 100 kB: 102,400 bytes are accepted, one byte more is a 400 naming content;
 * - bad input: bad paths and path_prefix, bad precondition, unknown fields → 400 naming the field;
 * - tenancy: another tenant's store, memory and version ids are 404 on every route.
 * Versions, redaction and the retention sweep: test/e2e/memory/memory-versions.test.ts.
 */
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
const dropped: string[] = [];
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  // Record the search hook's calls (memory search registers itself the same way).
  t.server.platform.memory.setSearchHook({
    upsert: async () => {},
    remove: async () => {},
    dropStore: async (_tenant, storeId) => void dropped.push(storeId),
  });
});
afterAll(async () => {
  await t?.close();
});

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

async function apiError(p: Promise<unknown>): Promise<{ status: number; error: any }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'expected an API error').toBeInstanceOf(Anthropic.APIError);
  const e = err as InstanceType<typeof Anthropic.APIError>;
  return { status: e.status!, error: (e.error as any).error };
}
async function badRequest(p: Promise<unknown>, field: string) {
  const { status, error } = await apiError(p);
  expect(status, error?.message).toBe(400);
  expect(error.message).toContain(field);
}

describe('memory stores', () => {
  it('create, retrieve, update, list, archive (final, read-only memories), delete', async () => {
    const { client: c } = await t.newTenant('stores');
    const s = await c.beta.memoryStores.create({
      name: 'Team Notes',
      description: 'what we learned',
      metadata: { owner: 'ana', keep: 'x' },
    });
    expect(s).toMatchObject({ type: 'memory_store', name: 'Team Notes', archived_at: null });
    expect(s.id).toMatch(/^memstore_/);
    expect(await c.beta.memoryStores.retrieve(s.id)).toEqual(s);
    const u = await c.beta.memoryStores.update(s.id, {
      name: 'Notes',
      metadata: { owner: 'bo', keep: null },
    });
    expect(u).toMatchObject({ name: 'Notes', description: 'what we learned' });
    expect(u.metadata).toEqual({ owner: 'bo' });
    const other = await c.beta.memoryStores.create({ name: 'other' });
    const mem = await c.beta.memoryStores.memories.create(s.id, { path: '/a.md', content: 'A' });

    const archived = await c.beta.memoryStores.archive(s.id);
    expect(archived.archived_at).not.toBeNull();
    expect((await c.beta.memoryStores.archive(s.id)).archived_at).toBe(archived.archived_at);
    const listed = async (include_archived?: boolean) =>
      (await c.beta.memoryStores.list(include_archived ? { include_archived } : {})).data.map(
        (x) => x.id,
      );
    expect(await listed()).toEqual([other.id]);
    expect(await listed(true)).toEqual([other.id, s.id]);
    await badRequest(
      c.beta.memoryStores.memories.create(s.id, { path: '/b.md', content: 'B' }),
      'memory_store_id',
    );
    await badRequest(
      c.beta.memoryStores.memories.update(mem.id, { memory_store_id: s.id, content: 'A2' }),
      'memory_store_id',
    );
    await badRequest(c.beta.memoryStores.update(s.id, { name: 'again' }), 'memory_store_id');
    const read = await c.beta.memoryStores.memories.retrieve(mem.id, { memory_store_id: s.id });
    expect(read.content).toBe('A');
    expect(await c.beta.memoryStores.memories.delete(mem.id, { memory_store_id: s.id })).toEqual({
      type: 'memory_deleted',
      id: mem.id,
    });

    expect(await c.beta.memoryStores.delete(s.id)).toEqual({
      type: 'memory_store_deleted',
      id: s.id,
    });
    expect((await apiError(c.beta.memoryStores.retrieve(s.id))).status).toBe(404);
    expect(dropped).toContain(s.id);
  });

  it("the spec's routes: create with agent_id and embedding_model, list per agent, entries, delete drops everything", async () => {
    const { tenantId, apiKey } = await t.newTenant('spec');
    const post = (path: string, json: unknown) =>
      t.http(path, { method: 'POST', key: apiKey, json });
    const a: any = await (
      await post('/v1/memory_stores', { name: 'a', agent_id: 'agent_1' })
    ).json();
    // embedding_model must name an embedding model card (test/e2e/memory/memory-embedding-model.test.ts).
    const card = await t.http('/v1/svc/model_cards', {
      method: 'POST',
      key: apiKey,
      headers: BETA,
      json: {
        model_id: 'emb',
        provider: 'embedder',
        model: 'e',
        base_url: 'https://embeddings.example.com/v1',
        api_key: 'sk-e',
        pi_config: { api: 'openai-completions', embedding: true },
      },
    });
    expect(card.status, await card.text()).toBe(200);
    const b: any = await (
      await post('/v1/memory_stores', { name: 'b', agent_id: 'agent_2', embedding_model: 'emb' })
    ).json();
    expect(a).toMatchObject({ agent_id: 'agent_1', embedding_model: null });
    expect(b).toMatchObject({ agent_id: 'agent_2', embedding_model: 'emb' });
    expect(typeof b.vector_index).toBe('string');
    const list: any = await (
      await t.http('/v1/memory_stores?agent_id=agent_2', { key: apiKey })
    ).json();
    expect(list.data.map((x: { id: string }) => x.id)).toEqual([b.id]);

    for (const [path, content] of [
      ['/one', '1'],
      ['/two', '2'],
      ['/three', '3'],
    ])
      expect((await post(`/v1/memory_stores/${b.id}/memories`, { path, content })).status).toBe(
        200,
      );
    const entries: any = await (
      await t.http(`/v1/memory_stores/${b.id}/entries?limit=2`, { key: apiKey })
    ).json();
    expect(entries.data.map((m: { path: string }) => m.path)).toEqual(['/three', '/two']);
    expect(entries.data[0].content).toBe('3');

    const del = await t.http(`/v1/memory_stores/${b.id}`, { method: 'DELETE', key: apiKey });
    expect(await del.json()).toEqual({ type: 'memory_store_deleted', id: b.id });
    const c = t.server.platform.collections;
    expect(await c.memories.count(tenantId, { store_id: b.id })).toBe(0);
    expect(await c.memoryVersions.count(tenantId, { store_id: b.id })).toBe(0);
    expect(dropped).toContain(b.id);
    expect((await t.http(`/v1/memory_stores/${b.id}/entries`, { key: apiKey })).status).toBe(404);
  });
});

describe('memories', () => {
  it('create (basic view), retrieve (full), update, rename, list with prefixes and depth, delete', async () => {
    const { client: c } = await t.newTenant('memories');
    const s = await c.beta.memoryStores.create({ name: 'm' });
    const mm = c.beta.memoryStores.memories;
    const created = await mm.create(s.id, { path: '/notes/todo.md', content: 'buy milk' });
    expect(created).toMatchObject({
      type: 'memory',
      memory_store_id: s.id,
      path: '/notes/todo.md',
      content: null,
      content_sha256: sha('buy milk'),
      content_size_bytes: 8,
    });
    expect(created.memory_version_id).toMatch(/^memver_/);
    const full = await mm.retrieve(created.id, { memory_store_id: s.id });
    expect(full.content).toBe('buy milk');
    expect((await mm.retrieve(created.id, { memory_store_id: s.id, view: 'basic' })).content).toBe(
      null,
    );

    const edited = await mm.update(created.id, { memory_store_id: s.id, content: 'héllo' });
    expect(edited).toMatchObject({ id: created.id, content_size_bytes: 6, content: null });
    expect(edited.memory_version_id).not.toBe(created.memory_version_id);
    const moved = await mm.update(created.id, {
      memory_store_id: s.id,
      path: '/notes/done.md',
      view: 'full',
    });
    expect(moved).toMatchObject({ id: created.id, path: '/notes/done.md', content: 'héllo' });
    const same = await mm.update(created.id, { memory_store_id: s.id, content: 'héllo' });
    expect(same.memory_version_id).toBe(moved.memory_version_id);

    for (const p of ['/a.md', '/notes/x/deep.md', '/notes/x/deeper/y.md', '/notes-archive/z.md'])
      await mm.create(s.id, { path: p, content: p });
    const paths = async (q: Record<string, unknown>) =>
      (await mm.list(s.id, q as never)).data.map((i) => `${i.type}:${i.path}`);
    expect(await paths({})).toEqual([
      'memory:/a.md',
      'memory:/notes-archive/z.md',
      'memory:/notes/done.md',
      'memory:/notes/x/deep.md',
      'memory:/notes/x/deeper/y.md',
    ]);
    expect(await paths({ path_prefix: '/notes/' })).toEqual([
      'memory:/notes/done.md',
      'memory:/notes/x/deep.md',
      'memory:/notes/x/deeper/y.md',
    ]);
    expect(await paths({ path_prefix: '/notes/', depth: 1 })).toEqual([
      'memory:/notes/done.md',
      'memory_prefix:/notes/x/',
    ]);
    expect(await paths({ depth: 1 })).toEqual([
      'memory:/a.md',
      'memory_prefix:/notes-archive/',
      'memory_prefix:/notes/',
    ]);
    const all: string[] = [];
    for await (const i of mm.list(s.id, { limit: 2 })) all.push(i.path);
    expect(all).toHaveLength(5);
    expect([...all].sort()).toEqual(all);
    const listedFull = await mm.list(s.id, { view: 'full', limit: 100 });
    expect(listedFull.data).toHaveLength(5);
    expect((listedFull.data[0] as { content: string }).content).toBe('/a.md');

    expect(await mm.delete(created.id, { memory_store_id: s.id })).toEqual({
      type: 'memory_deleted',
      id: created.id,
    });
    expect((await apiError(mm.retrieve(created.id, { memory_store_id: s.id }))).status).toBe(404);
    // The path is free again.
    expect((await mm.create(s.id, { path: '/notes/done.md', content: '' })).content_sha256).toBe(
      sha(''),
    );
  });

  it('path conflicts on create and rename are 409s naming conflicting_path and conflicting_memory_id', async () => {
    const { client: c } = await t.newTenant('conflicts');
    const s = await c.beta.memoryStores.create({ name: 'c' });
    const mm = c.beta.memoryStores.memories;
    const notes = await mm.create(s.id, { path: '/notes', content: 'n' });
    const deep = await mm.create(s.id, { path: '/docs/a/b.md', content: 'b' });
    // One at a time: a request started early whose 409 arrives before its turn in the loop would
    // be an unhandled rejection until then.
    const cases: Array<[() => Promise<unknown>, string, string]> = [
      [() => mm.create(s.id, { path: '/notes', content: 'again' }), '/notes', notes.id],
      [() => mm.create(s.id, { path: '/notes/todo.md', content: 'x' }), '/notes', notes.id],
      [() => mm.create(s.id, { path: '/docs/a', content: 'x' }), '/docs/a/b.md', deep.id],
      [() => mm.update(deep.id, { memory_store_id: s.id, path: '/notes' }), '/notes', notes.id],
      [
        () => mm.update(notes.id, { memory_store_id: s.id, path: '/docs' }),
        '/docs/a/b.md',
        deep.id,
      ],
    ];
    for (const [request, path, id] of cases) {
      const { status, error } = await apiError(request());
      expect(status).toBe(409);
      expect(error).toMatchObject({ conflicting_path: path, conflicting_memory_id: id });
      expect(error.details).toMatchObject({ error_type: 'memory_path_conflict_error' });
    }
    // A rename below its own old path is no conflict with itself.
    const self = await mm.update(notes.id, { memory_store_id: s.id, path: '/notes/main.md' });
    expect(self.path).toBe('/notes/main.md');
  });

  it('content_sha256 precondition: of two concurrent updates exactly one wins', async () => {
    const { client: c, apiKey } = await t.newTenant('cas');
    const s = await c.beta.memoryStores.create({ name: 'cas' });
    const mm = c.beta.memoryStores.memories;
    const m = await mm.create(s.id, { path: '/counter', content: 'v0' });
    let current = 'v0';
    for (let round = 1; round <= 5; round++) {
      const update = (content: string) =>
        t.http(`/v1/memory_stores/${s.id}/memories/${m.id}`, {
          method: 'POST',
          key: apiKey,
          json: { content, precondition: { type: 'content_sha256', content_sha256: sha(current) } },
        });
      const [a, b] = await Promise.all([update(`a${round}`), update(`b${round}`)]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const loser = a.status === 409 ? a : b;
      expect(((await loser.json()) as any).error.details.error_type).toBe(
        'memory_precondition_failed_error',
      );
      current = (await mm.retrieve(m.id, { memory_store_id: s.id })).content!;
      expect(current).toBe(a.status === 200 ? `a${round}` : `b${round}`);
    }
    const stale = { type: 'content_sha256' as const, content_sha256: sha('v0') };
    const { status } = await apiError(
      mm.update(m.id, { memory_store_id: s.id, content: 'z', precondition: stale }),
    );
    expect(status).toBe(409);
    // Already the requested content: succeeds whatever the hash.
    const ok = await mm.update(m.id, {
      memory_store_id: s.id,
      content: current,
      precondition: stale,
    });
    expect(ok.content_sha256).toBe(sha(current));
    const del = await apiError(
      mm.delete(m.id, { memory_store_id: s.id, expected_content_sha256: sha('v0') }),
    );
    expect(del.status).toBe(409);
    await mm.delete(m.id, { memory_store_id: s.id, expected_content_sha256: sha(current) });
  });

  it('at most 100 kB per memory', async () => {
    const { client: c } = await t.newTenant('size');
    const s = await c.beta.memoryStores.create({ name: 'size' });
    const mm = c.beta.memoryStores.memories;
    const max = await mm.create(s.id, { path: '/max', content: 'x'.repeat(102_400) });
    expect(max.content_size_bytes).toBe(102_400);
    await badRequest(mm.create(s.id, { path: '/over', content: 'x'.repeat(102_401) }), 'content');
    // Bytes, not characters: 51,201 two-byte characters are 102,402 bytes.
    await badRequest(
      mm.update(max.id, { memory_store_id: s.id, content: 'é'.repeat(51_201) }),
      'content',
    );
  });

  it('bad input is a 400 naming the field', async () => {
    const { client: c, apiKey } = await t.newTenant('bad');
    const s = await c.beta.memoryStores.create({ name: 'bad' });
    const mm = c.beta.memoryStores.memories;
    const badPaths = [
      'no-slash',
      '/',
      '/a//b',
      '/a/../b',
      '/./a',
      '/a/',
      '/a\u0000b',
      '/a\u200bb',
      '/a\u2028b',
      '/lone\ud800',
      '/e\u0301',
      '/' + 'x'.repeat(1024),
      '/' + Array.from({ length: 21 }, () => 'a').join('/'),
    ];
    for (const path of badPaths) await badRequest(mm.create(s.id, { path, content: 'x' }), 'path');
    const m = await mm.create(s.id, { path: '/ok', content: 'x' });
    await badRequest(mm.update(m.id, { memory_store_id: s.id, path: '/a/../b' }), 'path');
    await badRequest(mm.list(s.id, { path_prefix: '/notes' }), 'path_prefix');
    await badRequest(
      mm.update(m.id, {
        memory_store_id: s.id,
        content: 'y',
        precondition: { type: 'content_sha256', content_sha256: 'XYZ' },
      }),
      'precondition',
    );
    await badRequest(mm.create(s.id, { path: '/lone.md', content: 'x\udc00' }), 'content');
    await badRequest(c.beta.memoryStores.create({ name: '' }), 'name');
    await badRequest(c.beta.memoryStores.create({ name: 'x', bogus: 1 } as never), 'bogus');
    const res = await t.http(`/v1/memory_stores/${s.id}/memories?view=everything`, { key: apiKey });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain('view');
  });

  it("another tenant's store, memory and version ids are 404 everywhere", async () => {
    const { client: a } = await t.newTenant('owner');
    const { client: b, apiKey: bKey } = await t.newTenant('intruder');
    const s = await a.beta.memoryStores.create({ name: 'private' });
    const m = await a.beta.memoryStores.memories.create(s.id, { path: '/p', content: 'secret' });
    const v = m.memory_version_id;
    const mine = await b.beta.memoryStores.create({ name: 'mine' });
    const calls: Array<[string, string, unknown?]> = [
      ['GET', `/v1/memory_stores/${s.id}`],
      ['POST', `/v1/memory_stores/${s.id}`, { name: 'x' }],
      ['POST', `/v1/memory_stores/${s.id}/archive`],
      ['DELETE', `/v1/memory_stores/${s.id}`],
      ['GET', `/v1/memory_stores/${s.id}/entries`],
      ['POST', `/v1/memory_stores/${s.id}/memories`, { path: '/q', content: 'x' }],
      ['GET', `/v1/memory_stores/${s.id}/memories`],
      ['GET', `/v1/memory_stores/${s.id}/memories/${m.id}`],
      ['POST', `/v1/memory_stores/${s.id}/memories/${m.id}`, { content: 'x' }],
      ['DELETE', `/v1/memory_stores/${s.id}/memories/${m.id}`],
      ['GET', `/v1/memory_stores/${s.id}/memory_versions`],
      ['GET', `/v1/memory_stores/${s.id}/memory_versions/${v}`],
      ['POST', `/v1/memory_stores/${s.id}/memory_versions/${v}/redact`],
      // Through the intruder's own store: still 404.
      ['GET', `/v1/memory_stores/${mine.id}/memories/${m.id}`],
      ['POST', `/v1/memory_stores/${mine.id}/memories/${m.id}`, { content: 'x' }],
      ['DELETE', `/v1/memory_stores/${mine.id}/memories/${m.id}`],
      ['GET', `/v1/memory_stores/${mine.id}/memory_versions/${v}`],
      ['POST', `/v1/memory_stores/${mine.id}/memory_versions/${v}/redact`],
    ];
    for (const [method, path, json] of calls) {
      const res = await t.http(path, { method, key: bKey, ...(json ? { json } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await b.beta.memoryStores.list()).data.map((x) => x.id)).toEqual([mine.id]);
    const still = await a.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id });
    expect(still.content).toBe('secret');
  });
});
