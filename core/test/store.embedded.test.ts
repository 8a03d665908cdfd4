import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbeddedStore, type EmbeddedStore } from '../src/adapters/embedded/documentStore.js';
import { storeContract } from './store.contract.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../..');
const writer = join(here, 'fixtures/store-writer.ts');

const dirs: string[] = [];
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-store-'));
  dirs.push(dir);
  return dir;
};
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

storeContract('embedded (memory)', async () => {
  const store = await openEmbeddedStore({});
  return { store, cleanup: () => store.close() };
});

for (const compactAfterBytes of [undefined, 2048]) {
  storeContract(`embedded (dir${compactAfterBytes ? ', compacting' : ''})`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'embedded-contract-'));
    let current = await openEmbeddedStore({ dir, compactAfterBytes });
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await openEmbeddedStore({ dir, compactAfterBytes });
        return current;
      },
      cleanup: async () => {
        await current.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
}

const walFile = async (dir: string) => {
  const name = (await readdir(dir)).find((n) => n.startsWith('wal-'));
  if (!name) throw new Error(`no log in ${dir}`);
  return join(dir, name);
};

interface Item {
  _id: string;
  n: number;
  pad?: string;
}

describe('embedded store durability', () => {
  it('keeps every acknowledged write when the writer process is SIGKILLed (3 rounds)', async () => {
    const dir = await tempDir();
    const acked: string[] = [];
    const deleted = new Set<string>();
    let incs = 0;
    for (const round of [0, 1, 2]) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', writer, dir, '65536', `r${round}`],
        {
          cwd: repoRoot,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let pending = '',
        stderr = '',
        killedAt = 0,
        ready = false;
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdout.on('data', (d: Buffer) => {
        const lines = (pending + d.toString()).split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (line === 'ready') ready = true;
          else if (line.startsWith('ack ')) acked.push(line.slice(4));
          else if (line.startsWith('del ')) deleted.add(line.slice(4));
          else if (line === 'inc') incs++;
        }
        if (!killedAt && acked.length >= 2000 * (round + 1)) {
          killedAt = acked.length;
          child.kill('SIGKILL');
        }
      });
      const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
      expect(ready, stderr).toBe(true);
      expect(signal, `writer exited with ${code}: ${stderr}`).toBe('SIGKILL');

      const store = await openEmbeddedStore({ dir, compactAfterBytes: 65536 });
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

  it('ignores a torn last line, truncates it, and keeps appending cleanly', async () => {
    const dir = await tempDir();
    let store = await openEmbeddedStore({ dir });
    let c = store.collection<Item>({ name: 't' });
    for (let i = 0; i < 10; i++) await c.insertOne({ _id: `i${i}`, n: i });
    await store.close();
    const wal = await walFile(dir);
    await appendFile(wal, '{"c":"t","op":"put","doc":{"_id":"torn","n":');

    store = await openEmbeddedStore({ dir });
    c = store.collection<Item>({ name: 't' });
    expect(await c.count({})).toBe(10);
    expect(await c.findOne({ _id: 'torn' })).toBeNull();
    await c.insertOne({ _id: 'after', n: 10 });
    await store.close();

    store = await openEmbeddedStore({ dir });
    c = store.collection<Item>({ name: 't' });
    expect(await c.count({})).toBe(11);
    const text = await readFile(await walFile(dir), 'utf8');
    expect(text.endsWith('\n') && !text.includes('torn')).toBe(true);
    await store.close();
  });

  it('refuses to open when a line before the tail is corrupt, naming the file and line', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir });
    const c = store.collection<Item>({ name: 't' });
    for (let i = 0; i < 5; i++) await c.insertOne({ _id: `i${i}`, n: i });
    await store.close();
    const wal = await walFile(dir);
    const good = await readFile(wal, 'utf8');
    const lines = good.split('\n');
    lines.splice(2, 0, '{"c":"t","op":"pu');
    await writeFile(wal, lines.join('\n'));
    await expect(openEmbeddedStore({ dir })).rejects.toThrow(
      new RegExp(`${wal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line 3 .*corrupt`),
    );
    await writeFile(wal, good);
    const again = await openEmbeddedStore({ dir });
    expect(await again.collection<Item>({ name: 't' }).count({})).toBe(5);
    await again.close();
  });

  it('compacts into a snapshot and a fresh log, losing nothing across reopen', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir, compactAfterBytes: 8192 });
    const c = store.collection<Item>({ name: 'k', indexes: [{ fields: { n: 1 }, unique: true }] });
    for (let b = 0; b < 40; b++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          c.insertOne({ _id: `k${b * 50 + i}`, n: b * 50 + i, pad: 'p'.repeat(40) }),
        ),
      );
    }
    for (let b = 0; b < 10; b++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          c.updateOne({ _id: `k${b * 50 + i}` }, { $set: { pad: 'updated' } }),
        ),
      );
    }
    await c.deleteMany({ n: { $gte: 1900 } });
    const stats = store.stats();
    expect(stats.compactions).toBeGreaterThan(3);
    expect(stats.compactionError).toBeUndefined();
    await store.close();

    const files = (await readdir(dir)).sort();
    expect(files.filter((f) => f.startsWith('snapshot-'))).toHaveLength(1);
    expect(files.filter((f) => f.startsWith('wal-'))).toHaveLength(1);
    expect(files).not.toContain('LOCK');
    const logSize = (await stat(await walFile(dir))).size;
    expect(logSize).toBeLessThan(8192 + 50 * 200);
    expect(stats.records).toBeGreaterThan(2500); // ~250 KB of records went through the logs

    // Leftovers of an interrupted compaction: a partial tmp snapshot and an obsolete older log.
    await writeFile(join(dir, 'snapshot-000000009999.jsonl.tmp'), '{"snapshot":1');
    await writeFile(join(dir, 'wal-000000000000.log'), 'garbage from an older generation');
    const again = await openEmbeddedStore({ dir, compactAfterBytes: 8192 });
    const r = again.collection<Item>({ name: 'k', indexes: [{ fields: { n: 1 }, unique: true }] });
    expect(await r.count({})).toBe(1900);
    expect(await r.findOne({ _id: 'k7' })).toEqual({ _id: 'k7', n: 7, pad: 'updated' });
    expect(await r.findOne({ _id: 'k1000' })).toEqual({
      _id: 'k1000',
      n: 1000,
      pad: 'p'.repeat(40),
    });
    expect(await r.findOne({ n: 1950 })).toBeNull();
    await expect(r.insertOne({ _id: 'dup', n: 5 })).rejects.toThrow(/duplicate key/);
    await again.close();
    expect(
      (await readdir(dir)).filter((f) => f.endsWith('.tmp') || f === 'wal-000000000000.log'),
    ).toEqual([]);
  });
});

describe('embedded store lock and lifecycle', () => {
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

  it('rejects values that would not survive the log (Date, NaN) and non-string _id', async () => {
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

describe('embedded store performance', () => {
  it('group-commits concurrent writes: 1000 concurrent inserts share a few fdatasyncs', async () => {
    const dir = await tempDir();
    const store = (await openEmbeddedStore({ dir })) as EmbeddedStore;
    const c = store.collection<Item>({ name: 'g' });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 1000 }, (_, i) => c.insertOne({ _id: `g${i}`, n: i })));
    const ms = performance.now() - t0;
    const { syncs, records } = store.stats();
    expect(records).toBe(1000);
    expect(syncs).toBeLessThanOrEqual(10);
    console.info(
      `group commit: 1000 concurrent inserts in ${ms.toFixed(1)} ms with ${syncs} fdatasync(s)`,
    );
    for (let i = 0; i < 20; i++) await c.insertOne({ _id: `s${i}`, n: i });
    expect(store.stats().syncs).toBe(syncs + 20);
    await store.close();
  });

  it('lists one session among 200k events through the equality index, not a scan', async () => {
    const store = await openEmbeddedStore({});
    const events = store.collection<{ _id: string; session_id: string; seq: number }>({
      name: 'events',
      indexes: [{ fields: { session_id: 1, seq: 1 }, unique: true }],
    });
    for (let i = 0; i < 200_000; i++) {
      await events.insertOne({
        _id: `e${i}`,
        session_id: `s${i % 2000}`,
        seq: Math.floor(i / 2000),
      });
    }
    const before = store.stats().docsExamined;
    const t0 = performance.now();
    const page = await events.find({ session_id: 's777', seq: { $gte: 50 } }, { sort: { seq: 1 } });
    const ms = performance.now() - t0;
    expect(page).toHaveLength(50);
    expect(page[0]).toEqual({ _id: 'e100777', session_id: 's777', seq: 50 });
    expect(store.stats().docsExamined - before).toBe(100);
    expect(await events.count({ session_id: { $in: ['s1', 's2'] } })).toBe(200);
    expect(store.stats().docsExamined - before).toBe(300);
    console.info(`indexed find among 200k docs: ${ms.toFixed(2)} ms`);
    await store.close();
  }, 60_000);
});
