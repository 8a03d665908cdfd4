/**
 * Memory versions and their retention (core/src/memory/versions.ts, sweep.ts) through the
 * official TypeScript SDK (`client.beta.memoryStores.memoryVersions.*`) against an in-process
 * platform, time moved by the memory service's injectable clock:
 * - every write adds one version (created, modified for content and for a rename, deleted),
 *   listed newest first with created_by naming the calling API key; view=basic (the list's
 *   default) serves null content with hash and size; retrieve serves the content; filters
 *   memory_id, operation and api_key_id; versions stay after the memory is deleted;
 * - redact removes content, hash, size and path and keeps the record (redacted_at,
 *   redacted_by); redacting again changes nothing; the version holding a live memory's current
 *   content is refused (409);
 * - retention sweep on a fake clock: a 31-day-old version that is not its memory's newest is
 *   pruned, a 20-day-old one is kept, the newest is kept however old (also a deleted memory's
 *   `deleted` version);
 * - the daily timer's next run is 03:00 UTC, and of two sweeps racing for the lease exactly one
 *   runs.
 */
import Anthropic from '@anthropic-ai/sdk';
import { nextSweepAt, sweepUnderLease } from '@agentfleet/core';
import { MemoryLeaseStore } from '@agentfleet/core/adapters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(async () => {
  await t?.close();
});

const DAY = 24 * 60 * 60 * 1000;

async function status(p: Promise<unknown>): Promise<number> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.APIError);
  return (err as InstanceType<typeof Anthropic.APIError>).status!;
}

describe('memory versions', () => {
  it('every write adds a version; list, filters, retrieve, views', async () => {
    const { client: c, apiKey } = await t.newTenant('versions');
    const keys = await t.http('/v1/svc/api_keys', { key: apiKey, headers: BETA });
    const keyId = ((await keys.json()) as { data: Array<{ id: string }> }).data[0]!.id;
    const s = await c.beta.memoryStores.create({ name: 'v' });
    const mm = c.beta.memoryStores.memories;
    const mv = c.beta.memoryStores.memoryVersions;
    const m = await mm.create(s.id, { path: '/a.md', content: 'one' });
    await mm.update(m.id, { memory_store_id: s.id, content: 'two' });
    await mm.update(m.id, { memory_store_id: s.id, path: '/b.md' });
    const other = await mm.create(s.id, { path: '/other.md', content: 'x' });
    await mm.delete(m.id, { memory_store_id: s.id });

    const page = await mv.list(s.id, { memory_id: m.id });
    expect(page.data.map((v) => [v.operation, v.path])).toEqual([
      ['deleted', '/b.md'],
      ['modified', '/b.md'],
      ['modified', '/a.md'],
      ['created', '/a.md'],
    ]);
    const [deleted, renamed, edited, created] = page.data;
    expect(deleted).toMatchObject({
      content: null,
      content_sha256: null,
      content_size_bytes: null,
    });
    expect(edited).toMatchObject({ content: null, content_size_bytes: 3, memory_store_id: s.id });
    expect(edited!.content_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(created!.created_by).toEqual({ type: 'api_actor', api_key_id: keyId });
    expect(renamed!.redacted_at).toBeNull();
    expect((await mv.retrieve(edited!.id, { memory_store_id: s.id })).content).toBe('two');
    expect((await mv.retrieve(created!.id, { memory_store_id: s.id, view: 'basic' })).content).toBe(
      null,
    );
    const full = await mv.list(s.id, { memory_id: m.id, view: 'full' });
    expect(full.data.map((v) => v.content)).toEqual([null, 'two', 'two', 'one']);

    const all = await mv.list(s.id);
    expect(all.data).toHaveLength(5);
    expect(all.data.map((v) => v.id)).toEqual([...all.data.map((v) => v.id)].sort().reverse());
    expect((await mv.list(s.id, { operation: 'created' })).data.map((v) => v.memory_id)).toEqual([
      other.id,
      m.id,
    ]);
    expect((await mv.list(s.id, { api_key_id: keyId })).data).toHaveLength(5);
    expect((await mv.list(s.id, { api_key_id: 'key_other' })).data).toHaveLength(0);
    const paged: string[] = [];
    for await (const v of mv.list(s.id, { limit: 2 })) paged.push(v.id);
    expect(paged).toEqual(all.data.map((v) => v.id));
  });

  it('redact removes the content and keeps the record; the current version is refused', async () => {
    const { client: c } = await t.newTenant('redact');
    const s = await c.beta.memoryStores.create({ name: 'r' });
    const mm = c.beta.memoryStores.memories;
    const mv = c.beta.memoryStores.memoryVersions;
    const m = await mm.create(s.id, { path: '/secret.md', content: 'password=hunter2' });
    const fixed = await mm.update(m.id, { memory_store_id: s.id, content: 'password=<vault>' });
    expect(await status(mv.redact(fixed.memory_version_id, { memory_store_id: s.id }))).toBe(409);

    const r = await mv.redact(m.memory_version_id, { memory_store_id: s.id });
    expect(r).toMatchObject({
      id: m.memory_version_id,
      memory_id: m.id,
      operation: 'created',
      content: null,
      content_sha256: null,
      content_size_bytes: null,
      path: null,
    });
    expect(r.redacted_at).not.toBeNull();
    expect(r.redacted_by).toMatchObject({ type: 'api_actor' });
    expect(await mv.retrieve(r.id, { memory_store_id: s.id })).toEqual(r);
    expect(await mv.redact(r.id, { memory_store_id: s.id })).toEqual(r);
    const listed = await mv.list(s.id, { view: 'full' });
    expect(JSON.stringify(listed.data)).not.toContain('hunter2');
    expect(listed.data).toHaveLength(2);
    // An archived store still allows redaction.
    await c.beta.memoryStores.archive(s.id);
    await mm.delete(m.id, { memory_store_id: s.id });
    const afterDelete = await mv.redact(fixed.memory_version_id, { memory_store_id: s.id });
    expect(afterDelete.content).toBeNull();
  });
});

describe('retention', () => {
  it('the timer fires at 03:00 UTC; two sweeps racing for the lease: one runs', async () => {
    expect(new Date(nextSweepAt(Date.parse('2026-11-23T22:50:00Z'))).toISOString()).toBe(
      '2026-11-24T03:00:00.000Z',
    );
    expect(new Date(nextSweepAt(Date.parse('2026-11-24T02:59:59Z'))).toISOString()).toBe(
      '2026-11-24T03:00:00.000Z',
    );
    expect(new Date(nextSweepAt(Date.parse('2026-11-24T03:00:00Z'))).toISOString()).toBe(
      '2026-11-25T03:00:00.000Z',
    );
    const leases = new MemoryLeaseStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runs = 0;
    const sweep = async () => {
      runs++;
      await gate;
      return { pruned: 0 };
    };
    const first = sweepUnderLease({ sweep, clock: Date.now, leases, owner: 'w1' });
    const second = await sweepUnderLease({ sweep, clock: Date.now, leases, owner: 'w2' });
    expect(second).toBeNull();
    release();
    expect(await first).toEqual({ pruned: 0 });
    expect(runs).toBe(1);
    // The lease is released after the sweep: tomorrow's sweep can run.
    expect(await sweepUnderLease({ sweep, clock: Date.now, leases, owner: 'w2' })).toEqual({
      pruned: 0,
    });
  });

  it('sweep on a fake clock: old non-newest versions pruned, the newest kept however old', async () => {
    const { client: c } = await t.newTenant('sweep');
    const memory = t.server.platform.memory;
    const t0 = Date.now();
    let now = t0;
    memory.setClock(() => now);
    try {
      const s = await c.beta.memoryStores.create({ name: 'sweep' });
      const mm = c.beta.memoryStores.memories;
      const mv = c.beta.memoryStores.memoryVersions;
      const ids = async (memory_id: string) =>
        (await mv.list(s.id, { memory_id })).data.map((v) => v.id);
      const m = await mm.create(s.id, { path: '/kept.md', content: 'v1' });
      const v2 = await mm.update(m.id, { memory_store_id: s.id, content: 'v2' });
      const gone = await mm.create(s.id, { path: '/gone.md', content: 'x' });
      await mm.delete(gone.id, { memory_store_id: s.id });
      const goneVersions = await ids(gone.id);
      now = t0 + 20 * DAY;
      const v3 = await mm.update(m.id, { memory_store_id: s.id, content: 'v3' });
      const v4 = await mm.update(m.id, { memory_store_id: s.id, content: 'v4' });

      // Day 29 after t0: nothing is 30 days old yet.
      expect(await memory.sweepVersions(t0 + 29 * DAY)).toEqual({ pruned: 0 });
      expect(await ids(m.id)).toHaveLength(4);
      // Day 31: v1 and v2 (31 days old, not newest) go; v3 (11 days) and v4 stay.
      const r = await memory.sweepVersions(t0 + 31 * DAY);
      expect(r.pruned).toBeGreaterThanOrEqual(3);
      expect(await ids(m.id)).toEqual([v4.memory_version_id, v3.memory_version_id]);
      expect(await status(mv.retrieve(v2.memory_version_id, { memory_store_id: s.id }))).toBe(404);
      // The deleted memory keeps only its newest version, the `deleted` one.
      expect(await ids(gone.id)).toEqual([goneVersions[0]]);
      // A year later: v3 goes, the newest (v4) stays however old.
      await memory.sweepVersions(t0 + 365 * DAY);
      expect(await ids(m.id)).toEqual([v4.memory_version_id]);
      expect(await ids(gone.id)).toEqual([goneVersions[0]]);
      expect((await mm.retrieve(m.id, { memory_store_id: s.id })).content).toBe('v4');
    } finally {
      memory.setClock(Date.now);
    }
  });
});
