/**
 * The embedded SQLite store: the DocumentStore contract on memory, on a dir and on a dir that
 * checkpoints its WAL constantly; kill -9 of a writer in the middle of group commits loses no
 * acknowledged write; one process per dir; STORE_SYNC; group commit; the events page pushed
 * down onto its index; the unique-index semantics the store supports and refuses.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/store/embedded/documentStore.js';
import { loadConfig } from '../src/config/config.js';
import { DuplicateKeyError } from '../src/store/port.js';
import { storeContract } from './store.contract.js';
import { useTempDirs } from './fixtures/tempDirs.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../..');
const writer = join(here, 'fixtures/store-writer.ts');

const tempDir = useTempDirs('embedded-store-');

storeContract('embedded (memory)', async () => {
  const store = await openEmbeddedStore({});
  return { store, cleanup: () => store.close() };
});

for (const checkpointAfterBytes of [undefined, 4096]) {
  storeContract(`embedded (dir${checkpointAfterBytes ? ', checkpointing' : ''})`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'embedded-contract-'));
    let current = await openEmbeddedStore({ dir, checkpointAfterBytes });
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await openEmbeddedStore({ dir, checkpointAfterBytes });
        return current;
      },
      cleanup: async () => {
        await current.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
}

interface Item {
  _id: string;
  n: number;
  pad?: string;
}

const startWriter = (dir: string, prefix: string) =>
  spawn(process.execPath, ['--import', 'tsx', writer, dir, '65536', prefix], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/** Calls `onLine` per stdout line of the writer. */
function lines(child: { stdout: NodeJS.ReadableStream }, onLine: (line: string) => void): void {
  let pending = '';
  child.stdout.on('data', (d: Buffer) => {
    const ls = (pending + d.toString()).split('\n');
    pending = ls.pop()!;
    for (const l of ls) onLine(l);
  });
}

describe('embedded store durability', () => {
  it('keeps every acknowledged write when the writer process is SIGKILLed mid group commits (3 rounds)', async () => {
    const dir = await tempDir();
    const acked: string[] = [];
    const deleted = new Set<string>();
    let incs = 0;
    for (const round of [0, 1, 2]) {
      const child = startWriter(dir, `r${round}`);
      let stderr = '',
        killedAt = 0,
        ready = false;
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      lines(child, (line) => {
        if (line === 'ready') ready = true;
        else if (line.startsWith('ack ')) acked.push(line.slice(4));
        else if (line.startsWith('del ')) deleted.add(line.slice(4));
        else if (line === 'inc') incs++;
        if (!killedAt && acked.length >= 2000 * (round + 1)) {
          killedAt = acked.length;
          child.kill('SIGKILL');
        }
      });
      const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
      expect(ready, stderr).toBe(true);
      expect(signal, `writer exited with ${code}: ${stderr}`).toBe('SIGKILL');

      const store = await openEmbeddedStore({ dir });
      const items = store.collection<Item>({ name: 'items', indexes: [{ fields: { n: 1 } }] });
      const present = new Set((await items.find({})).map((d) => d._id));
      const lost = acked.filter(
        (id) => !deleted.has(id) && Number(id.split('-')[1]) % 10 !== 0 && !present.has(id),
      );
      expect(lost, `lost acknowledged inserts (round ${round})`).toEqual([]);
      expect(
        [...deleted].filter((id) => present.has(id)),
        'resurrected deletes',
      ).toEqual([]);
      const counter = await store
        .collection<{ _id: string; v: number }>({ name: 'counters' })
        .findOne({ _id: 'c' });
      expect(counter?.v ?? 0).toBeGreaterThanOrEqual(incs);
      await store.close();
    }
  }, 60_000);
});

describe('embedded store lock, settings and lifecycle', () => {
  it('refuses a second open of a live dir, naming the dir and the holding pid', async () => {
    const dir = await tempDir();
    const first = await openEmbeddedStore({ dir });
    const err = await openEmbeddedStore({ dir }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(dir);
    expect((err as Error).message).toContain(`pid ${process.pid}`);
    expect(await first.healthy()).toBe(true);
    await first.close();
    const second = await openEmbeddedStore({ dir });
    await second.close();
  });

  it('a second process cannot open a dir another process holds', async () => {
    const dir = await tempDir();
    const holder = startWriter(dir, 'h');
    const ready = new Promise<void>((res) => lines(holder, (l) => l === 'ready' && res()));
    try {
      await ready;
      const second = startWriter(dir, 's');
      let stderr = '';
      second.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const [code] = (await once(second, 'close')) as [number | null];
      expect(code).not.toBe(0);
      expect(stderr).toContain(`is locked by pid ${holder.pid}`);
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'close');
    }
  }, 30_000);

  it('close() resolves in a process with nothing else pending after the checkpoint worker started', async () => {
    // Output goes to a file, not a pipe: an open pipe would keep the child's event loop alive.
    const dir = await tempDir();
    const log = join(dir, 'out.log');
    const fd = openSync(log, 'w');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(here, 'fixtures/store-close.ts'), join(dir, 'store')],
      { cwd: repoRoot, stdio: ['ignore', fd, fd] },
    );
    const [code] = (await once(child, 'close')) as [number | null];
    closeSync(fd);
    const out = await readFile(log, 'utf8');
    expect(out).toMatch(/checkpoints [1-9]/);
    expect(out.trim().endsWith('closed'), out).toBe(true);
    expect(code).toBe(0);
  }, 30_000);

  it('takes over a stale lock left by a dead process', async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, ['-e', '']);
    const deadPid = child.pid!;
    await once(child, 'exit');
    await writeFile(join(dir, 'LOCK'), `${deadPid}\n`);
    const store = await openEmbeddedStore({ dir });
    expect((await readFile(join(dir, 'LOCK'), 'utf8')).trim()).toBe(String(process.pid));
    await store.close();
  });

  it('honours STORE_SYNC: full sets PRAGMA synchronous=FULL, the default is NORMAL', async () => {
    expect(loadConfig('all', { STORE_SYNC: 'full' }).storeSync).toBe('full');
    const bad = (() => {
      try {
        return loadConfig('all', { STORE_SYNC: 'sometimes' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(String((bad as Error).message ?? JSON.stringify(bad))).toContain('STORE_SYNC');
    const full = await openEmbeddedStore({ dir: await tempDir(), sync: 'full' });
    expect(full.stats().synchronous).toBe('full');
    await full.close();
    const normal = await openEmbeddedStore({ dir: await tempDir() });
    expect(normal.stats().synchronous).toBe('normal');
    await normal.close();
  });

  it('is healthy while open; after close it releases the lock and rejects calls', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir });
    const c = store.collection<Item>({ name: 'x' });
    await store.ready();
    expect(await store.healthy()).toBe(true);
    const pending = c.insertOne({ _id: 'last', n: 1 });
    await store.close();
    await pending;
    expect(await store.healthy()).toBe(false);
    await expect(c.findOne({})).rejects.toThrow(/closed/);
    await expect(c.insertOne({ _id: 'late', n: 2 })).rejects.toThrow(/closed/);
    await expect(store.ready()).rejects.toThrow(/closed/);
    expect(() => store.collection({ name: 'y' })).toThrow(/closed/);
    expect(await readdir(dir)).not.toContain('LOCK');
    const again = await openEmbeddedStore({ dir });
    expect(await again.collection<Item>({ name: 'x' }).findOne({ _id: 'last' })).toEqual({
      _id: 'last',
      n: 1,
    });
    await again.close();
  });

  it('rejects values JSON would not keep (Date, NaN) and non-string _id', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<Item & Record<string, unknown>>({ name: 'v' });
    await expect(c.insertOne({ _id: 'd', n: 1, at: new Date() })).rejects.toThrow(/Date/);
    await expect(c.insertOne({ _id: 'n', n: Number.NaN })).rejects.toThrow(/non-finite/);
    await expect(c.insertOne({ _id: 5 as unknown as string, n: 1 })).rejects.toThrow(/_id/);
    await c.insertOne({ _id: 'u', n: 1, gone: undefined });
    expect(await c.findOne({ _id: 'u' })).toStrictEqual({ _id: 'u', n: 1 });
    await store.close();
  });
});

describe('embedded store unique indexes', () => {
  it('missing and null collide in a unique index (MongoDB semantics)', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<{ _id: string; k?: string | null; g?: string }>({
      name: 'u',
      indexes: [{ fields: { g: 1, k: 1 }, unique: true }],
    });
    await c.insertOne({ _id: 'a', g: 'x' });
    const err = await c.insertOne({ _id: 'b', g: 'x', k: null }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DuplicateKeyError);
    expect(err).toMatchObject({ index: 'g_1_k_1', key: { g: 'x', k: null } });
    await c.insertOne({ _id: 'c', g: 'y', k: null });
    await c.insertOne({ _id: 'd', g: 'x', k: 'v' });
    await expect(c.updateOne({ _id: 'd' }, { $unset: { k: 1 } })).rejects.toBeInstanceOf(
      DuplicateKeyError,
    );
    await c.updateOne({ _id: 'a' }, { $set: { n: 1 } });
    expect(await c.count({})).toBe(3);
    await store.close();
  });

  it('refuses booleans, objects and arrays in unique-indexed fields, writing nothing', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<{ _id: string; k?: unknown }>({
      name: 'r',
      indexes: [{ fields: { k: 1 }, unique: true }],
    });
    for (const k of [true, { a: 1 }, ['x']])
      await expect(c.insertOne({ _id: 'x', k })).rejects.toThrow(/unique index k_1 .*refuses/);
    expect(await c.count({})).toBe(0);
    expect(() => store.collection({ name: 'r2', indexes: [{ fields: { 'a b': 1 } }] })).toThrow(
      /not supported/,
    );
    await store.close();
  });
});

describe('embedded store document depth', () => {
  it('refuses a document nesting past SQLite JSON depth (1000) with a TypeError, writing nothing, with or without indexes; 900 levels are kept', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<{ _id: string; d?: unknown }>({
      name: 'deep',
      indexes: [{ fields: { k: 1 } }],
    });
    const nest = (levels: number) => {
      let v: unknown = 'leaf';
      for (let i = 0; i < levels; i++) v = { a: v };
      return v;
    };
    await expect(c.insertOne({ _id: 'x', d: nest(1200) })).rejects.toThrow(
      /cannot store document\.d\.a\.a.*…: the document nests deeper than 1000 levels/,
    );
    expect(await c.count({})).toBe(0);
    const plain = store.collection<{ _id: string; d?: unknown }>({ name: 'deep-plain' });
    await expect(plain.insertOne({ _id: 'x', d: nest(1001) })).rejects.toThrow(/nests deeper/);
    await plain.insertOne({ _id: 'x', d: nest(999) });
    expect(await plain.count({ _id: 'x' })).toBe(1);
    await c.insertOne({ _id: 'y', d: nest(900) });
    let got = (await c.findOne({ _id: 'y' }))?.d;
    let depth = 0;
    while (got && typeof got === 'object') {
      got = (got as { a: unknown }).a;
      depth++;
    }
    expect([depth, got]).toEqual([900, 'leaf']);
    await expect(c.updateOne({ _id: 'y' }, { $set: { d: nest(1200) } })).rejects.toThrow(
      /nests deeper/,
    );
    await store.close();
  });
});

describe('embedded store performance', () => {
  it('group-commits concurrent writes: 1000 concurrent inserts share a few commits', async () => {
    const store = await openEmbeddedStore({ dir: await tempDir() });
    const c = store.collection<Item>({ name: 'g' });
    await Promise.all(Array.from({ length: 1000 }, (_, i) => c.insertOne({ _id: `g${i}`, n: i })));
    const { syncs, records } = store.stats();
    expect(records).toBe(1000);
    expect(syncs).toBeLessThanOrEqual(10);
    for (let i = 0; i < 20; i++) await c.insertOne({ _id: `s${i}`, n: i });
    expect(store.stats().syncs).toBe(syncs + 20);
    await store.close();
  });

  it('a failing write in a group rolls back only itself', async () => {
    const store = await openEmbeddedStore({ dir: await tempDir() });
    const c = store.collection<Item>({ name: 'f' });
    const results = await Promise.allSettled([
      c.insertOne({ _id: 'a', n: 1 }),
      c.insertOne({ _id: 'a', n: 2 }),
      c.insertOne({ _id: 'b', n: 3 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(store.stats().syncs).toBe(1);
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
      { _id: 'a', n: 1 },
      { _id: 'b', n: 3 },
    ]);
    await store.close();
  });

  it('a failing first write of a group (no savepoint) rolls back only itself; the writes after it commit', async () => {
    const dir = await tempDir();
    let store = await openEmbeddedStore({ dir });
    let c = store.collection<Item>({ name: 'f' });
    await c.insertOne({ _id: 'a', n: 1 });
    // The group's first write: a transaction that inserts, updates, then throws.
    const results = await Promise.allSettled([
      store.transaction((tx) => {
        tx(c).insertMany([{ _id: 'x', n: 9 }]);
        tx(c).updateOne({ _id: 'a' }, { $set: { n: 99 } });
        throw new Error('changed my mind');
      }),
      c.insertOne({ _id: 'b', n: 2 }),
      c.updateOne({ _id: 'a' }, { $inc: { n: 1 } }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason.message).toBe('changed my mind');
    // A first write failing on a duplicate key, alone in its tick.
    await expect(c.insertOne({ _id: 'b', n: 3 })).rejects.toThrow(/duplicate key/);
    const expected = [
      { _id: 'a', n: 2 },
      { _id: 'b', n: 2 },
    ];
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual(expected);
    await store.close();
    store = await openEmbeddedStore({ dir });
    c = store.collection<Item>({ name: 'f' });
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual(expected);
    await store.close();
  });
  it('finds a boolean flag through its index, and keeps MongoDB equality on mixed fields', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<{ _id: string; pending?: unknown; f?: unknown }>({
      name: 'flags',
      indexes: [{ fields: { pending: 1 } }, { fields: { f: 1 } }],
    });
    await c.insertMany(
      Array.from({ length: 500 }, (_, i) => ({ _id: `s${i}`, pending: i % 50 === 0 })),
    );
    const before = store.stats().docsExamined;
    expect((await c.find({ pending: true })).map((d) => d._id).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `s${i * 50}`).sort(),
    );
    expect(store.stats().docsExamined - before).toBe(10);
    const mixed = [1, true, '1', 'x', { a: 1 }, [true, 'x'], null];
    await c.insertMany(mixed.map((f, i) => ({ _id: `m${i}`, f })));
    const ids = async (filter: Record<string, unknown>) =>
      (await c.find(filter)).map((d) => d._id).sort();
    expect(await ids({ f: true })).toEqual(['m1', 'm5']);
    expect(await ids({ f: 1 })).toEqual(['m0']);
    expect(await ids({ f: 'x' })).toEqual(['m3', 'm5']);
    expect(await ids({ f: '1' })).toEqual(['m2']);
    expect(await ids({ f: { $gt: 0 } })).toEqual(['m0']);
    expect(await ids({ f: { $in: ['x', '1'] } })).toEqual(['m2', 'm3', 'm5']);
    expect(await ids({ f: { $in: [true, 1] } })).toEqual(['m0', 'm1', 'm5']);
    const tags = store.collection<{ _id: string; tags?: unknown }>({ name: 'tags' });
    await tags.insertMany([
      { _id: 't1', tags: ['a', 'b'] },
      { _id: 't2', tags: 'a' },
      { _id: 't3', tags: [1, 'c'] },
      { _id: 't4', tags: { a: 1 } },
    ]);
    const tagIds = async (filter: Record<string, unknown>, sort?: Record<string, 1 | -1>) =>
      (await tags.find(filter, { sort, limit: 10 })).map((d) => d._id);
    expect(await tagIds({ tags: { $in: ['a', 'c'] } }, { _id: -1 })).toEqual(['t3', 't2', 't1']);
    expect(await tagIds({ tags: 1 })).toEqual(['t3']);
    await store.close();
  });

  it('pushes the tenant-scoped events page down onto the (session_id, seq) index: reads only the page', async () => {
    const store = await openEmbeddedStore({});
    const events = store.collection<{
      _id: string;
      tenant_id: string;
      session_id: string;
      seq: number;
    }>({
      name: 'events',
      indexes: [{ fields: { session_id: 1, seq: 1 }, unique: true }],
    });
    await events.insertMany(
      Array.from({ length: 20_000 }, (_, i) => ({
        _id: `e${i}`,
        tenant_id: i % 400 < 200 ? 't1' : 't2',
        session_id: `s${i % 200}`,
        seq: Math.floor(i / 200),
      })),
    );
    const before = store.stats().docsExamined;
    const page = await events.find(
      { session_id: 's77', seq: { $gt: 50 }, tenant_id: 't1' },
      { sort: { seq: 1 }, limit: 5 },
    );
    // Session s77's events alternate between tenants: seq 52, 54, … are t1's.
    expect(page.map((e) => e.seq)).toEqual([52, 54, 56, 58, 60]);
    expect(page[0]).toEqual({ _id: 'e10477', tenant_id: 't1', session_id: 's77', seq: 52 });
    expect(store.stats().docsExamined - before).toBe(5);
    const desc = await events.find(
      { session_id: 's77', tenant_id: 't2' },
      { sort: { seq: -1 }, limit: 2 },
    );
    expect(desc.map((e) => e.seq)).toEqual([99, 97]);
    expect(store.stats().docsExamined - before).toBe(7);
    expect(await events.count({ session_id: { $in: ['s1', 's2'] } })).toBe(200);
    await store.close();
  }, 60_000);
});
