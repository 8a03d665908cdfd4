/**
 * The agent document cache (core/src/store/readCache.ts), through HTTP:
 * - the embedded deployment reads agents through it (agentfleet_agent_cache_entries grows on
 *   GET); on the real store (CI's MongoDB/FerretDB) it stays off (the gauge stays 0);
 * - a cached agent is serialized once (gateway/src/routes/agents.ts): the same bytes and
 *   content-type as fastify's own serialization of the same agent;
 * - an update (POST and PATCH), a new version, an archive (POST …/archive and DELETE) is
 *   visible on the very next GET after its answer, also when that agent was cached before;
 * - another tenant's id answers 404 even while the owner's copy is cached;
 * - under concurrent updates and reads, no read answers an older version than one already
 *   acknowledged, and each reader sees versions only move forward;
 * - two platforms on one shared store (as gateway processes of a fleet) read each other's
 *   writes at once: a store passed in from outside is never cached.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleStore } from '@agentfleet/core';
import { openEmbeddedStore } from '@agentfleet/core/adapters';
import { REAL, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(async () => {
  await t?.close();
});

type Agent = { id: string; version: number; name: string; archived: boolean; system: string };

async function call(
  p: TestPlatform,
  method: string,
  path: string,
  json?: unknown,
  key?: string,
): Promise<{ status: number; body: any }> {
  const res = await p.http(path, { method, ...(json === undefined ? {} : { json }), key });
  return { status: res.status, body: await res.json() };
}

async function newAgent(p: TestPlatform, name = 'cached', key?: string): Promise<Agent> {
  const r = await call(p, 'POST', '/v1/agents', { name, model: 'claude-sonnet-4-5' }, key);
  expect(r.status).toBe(200);
  return r.body;
}

async function getAgent(p: TestPlatform, id: string, query = ''): Promise<Agent> {
  const r = await call(p, 'GET', `/v1/agents/${id}${query}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function cacheEntries(): Promise<number> {
  const text = await (await t.http('/metrics')).text();
  const m = /^agentfleet_agent_cache_entries (\d+)$/m.exec(text);
  expect(m).not.toBeNull();
  return Number(m![1]);
}

describe('agent cache', () => {
  it('is used by the embedded deployment, and off on a shared store', async () => {
    const a = await newAgent(t);
    await getAgent(t, a.id);
    await getAgent(t, a.id);
    if (REAL) expect(await cacheEntries()).toBe(0);
    else expect(await cacheEntries()).toBeGreaterThan(0);
  });

  it('a cached GET answers the same bytes and content-type as the uncached create answer', async () => {
    const created = await t.http('/v1/agents', {
      method: 'POST',
      json: { name: 'bytes', model: 'claude-sonnet-4-5', metadata: { k: 'v' }, system: 'é ✓' },
    });
    const createdText = await created.text();
    for (let i = 0; i < 3; i++) {
      const got = await t.http(`/v1/agents/${JSON.parse(createdText).id}`);
      expect(got.headers.get('content-type')).toBe(created.headers.get('content-type'));
      expect(await got.text()).toBe(createdText);
    }
  });

  it('an update is visible on the next GET, by POST and by PATCH, with the old version kept', async () => {
    const a = await newAgent(t, 'before');
    expect((await getAgent(t, a.id)).name).toBe('before');
    const u1 = await call(t, 'POST', `/v1/agents/${a.id}`, { version: 1, name: 'after-post' });
    expect(u1.status).toBe(200);
    expect(u1.body.version).toBe(2);
    const g1 = await getAgent(t, a.id);
    expect([g1.version, g1.name]).toEqual([2, 'after-post']);
    const u2 = await call(t, 'PATCH', `/v1/agents/${a.id}`, { system: 'be brief' });
    expect(u2.status).toBe(200);
    const g2 = await getAgent(t, a.id);
    expect([g2.version, g2.name, g2.system]).toEqual([3, 'after-post', 'be brief']);
    // The pinned versions still answer their own specs.
    expect((await getAgent(t, a.id, '?version=1')).name).toBe('before');
    expect((await getAgent(t, a.id, '?version=2')).system).toBeNull();
    const versions = await call(t, 'GET', `/v1/agents/${a.id}/versions`);
    expect(versions.body.data.map((v: Agent) => v.version)).toEqual([3, 2, 1]);
  });

  it('an archive is visible on the next GET, by POST …/archive and by DELETE', async () => {
    for (const archive of [
      (id: string) => call(t, 'POST', `/v1/agents/${id}/archive`),
      (id: string) => call(t, 'DELETE', `/v1/agents/${id}`),
    ]) {
      const a = await newAgent(t);
      expect((await getAgent(t, a.id)).archived).toBe(false);
      expect((await archive(a.id)).status).toBe(200);
      const g = await getAgent(t, a.id);
      expect(g.archived).toBe(true);
      // An archived agent refuses updates: the cached copy must say archived too.
      const u = await call(t, 'POST', `/v1/agents/${a.id}`, { name: 'x' });
      expect(u.status).toBe(400);
    }
  });

  it("another tenant's id answers 404 while the owner's copy is cached", async () => {
    const a = await newAgent(t);
    await getAgent(t, a.id);
    const b = await t.newTenant('cache-b');
    const theirs = await newAgent(t, 'b-agent', b.apiKey);
    for (const [path, key] of [
      [`/v1/agents/${a.id}`, b.apiKey],
      [`/v1/agents/${a.id}?version=1`, b.apiKey],
      [`/v1/agents/${theirs.id}`, t.operatorKey],
    ] as const) {
      const r = await call(t, 'GET', path, undefined, key);
      expect(r.status).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain('"name":"cached"');
    }
    const own = await call(t, 'GET', `/v1/agents/${theirs.id}`, undefined, b.apiKey);
    expect([own.status, own.body.name]).toEqual([200, 'b-agent']);
  });

  it('never answers a version older than one acknowledged, under concurrent updates and reads', async () => {
    const a = await newAgent(t, 'v1');
    let acknowledged = 1;
    let done = false;
    const regressions: string[] = [];
    const reader = async (n: number) => {
      let last = 0;
      while (!done) {
        const floor = acknowledged;
        const g = await getAgent(t, a.id);
        if (g.version < floor) regressions.push(`reader ${n}: v${g.version} after v${floor} acked`);
        if (g.version < last) regressions.push(`reader ${n}: v${g.version} after reading v${last}`);
        if (g.name !== `v${g.version}`)
          regressions.push(`reader ${n}: v${g.version} named ${g.name}`);
        last = g.version;
      }
    };
    const readers = [1, 2, 3, 4].map(reader);
    for (let v = 2; v <= 25; v++) {
      const u = await call(t, 'POST', `/v1/agents/${a.id}`, { name: `v${v}` });
      expect(u.body.version).toBe(v);
      acknowledged = v;
      const g = await getAgent(t, a.id);
      expect([g.version, g.name]).toEqual([v, `v${v}`]);
    }
    done = true;
    await Promise.all(readers);
    expect(regressions).toEqual([]);
  });
});

describe('agent cache on a store shared by two platforms', () => {
  let dir: string;
  let one: TestPlatform;
  let two: TestPlatform;
  let close: () => Promise<void>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentfleet-shared-store-'));
    const store = await openEmbeddedStore({ dir });
    close = () => store.close();
    const overrides = { store: { store, router: singleStore(store) } };
    const env = { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' };
    one = await startPlatform({ env, overrides });
    two = await startPlatform({ env, overrides });
  });
  afterAll(async () => {
    await two?.close();
    await one?.close();
    await close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it("each platform reads the other's update and archive at once", async () => {
    const a = await newAgent(one, 'shared');
    expect((await getAgent(two, a.id)).version).toBe(1);
    expect((await call(one, 'POST', `/v1/agents/${a.id}`, { name: 'moved' })).status).toBe(200);
    const g = await getAgent(two, a.id);
    expect([g.version, g.name]).toEqual([2, 'moved']);
    expect((await call(two, 'POST', `/v1/agents/${a.id}/archive`)).status).toBe(200);
    expect((await getAgent(one, a.id)).archived).toBe(true);
    const text = await (await one.http('/metrics')).text();
    expect(text).toMatch(/^agentfleet_agent_cache_entries 0$/m);
  });
});
