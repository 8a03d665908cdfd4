/**
 * The embedded store's WAL checkpoints (core/src/store/embedded/checkpointer.ts): the worker
 * checkpoints every checkpointAfterBytes and nothing is lost across a reopen; under writes that
 * never pause the WAL stays bounded (the store empties it between two commits).
 */
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/store/embedded/documentStore.js';
import { useTempDirs } from './fixtures/tempDirs.js';

interface Item {
  _id: string;
  n: number;
  pad?: string;
}

const tempDir = useTempDirs('embedded-checkpoint-');

describe('embedded store WAL checkpoints', () => {
  it('checkpoints the WAL in a worker every checkpointAfterBytes, losing nothing across reopen', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir, checkpointAfterBytes: 8192 });
    const c = store.collection<Item>({ name: 'k', indexes: [{ fields: { n: 1 }, unique: true }] });
    // The worker checkpoints concurrently: write batches until it has done a few (bounded).
    let b = 0;
    for (; b < 20 || (store.stats().compactions <= 3 && b < 2000); b++)
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          c.insertOne({ _id: `k${b * 50 + i}`, n: b * 50 + i, pad: 'p'.repeat(200) }),
        ),
      );
    await c.deleteMany({ n: { $gte: 900 } });
    const stats = store.stats();
    expect(stats.compactions).toBeGreaterThan(3);
    expect(stats.compactionError).toBeUndefined();
    expect(stats.records).toBe(b * 50 + 1);
    await store.close();
    expect(await readdir(dir)).not.toContain('store.sqlite3-wal');
    const again = await openEmbeddedStore({ dir });
    const r = again.collection<Item>({ name: 'k', indexes: [{ fields: { n: 1 }, unique: true }] });
    expect(await r.count({})).toBe(900);
    expect(await r.findOne({ n: 7 })).toEqual({ _id: 'k7', n: 7, pad: 'p'.repeat(200) });
    await expect(r.insertOne({ _id: 'dup', n: 5 })).rejects.toThrow(/duplicate key/);
    await again.close();
  });

  it('keeps the WAL bounded under sustained writes with no pause (the checkpointer catches up and empties it)', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir, checkpointAfterBytes: 256 * 1024 });
    const c = store.collection<Item>({ name: 'w', indexes: [{ fields: { n: 1 }, unique: true }] });
    // 8 writers, one write after another each, ~1 KB documents: without a pause, a passive
    // checkpoint alone never lets SQLite restart the WAL (it grew by about 12 KB a write).
    const pad = 'w'.repeat(1000);
    let largest = 0;
    let n = 0;
    const started = Date.now();
    // Writes for 3 s, and on until the checkpointer has finished 3 checkpoints (at most 30 s).
    const more = () =>
      Date.now() - started < 30_000 &&
      (Date.now() - started < 3000 || store.stats().compactions < 3);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (more()) {
          const i = n++;
          await c.insertOne({ _id: `w${i}`, n: i, pad });
          if (i % 500 === 0) largest = Math.max(largest, store.stats().logBytes);
        }
      }),
    );
    const stats = store.stats();
    expect(stats.compactionError).toBeUndefined();
    expect(stats.compactions).toBeGreaterThanOrEqual(3);
    expect(stats.walTruncations).toBeGreaterThanOrEqual(1);
    // Unchecked, the WAL grew by about 4.5 KB a write here (100 MB in 24,000 writes).
    expect(n).toBeGreaterThan(24_000);
    expect(largest).toBeLessThan(48 * 1024 * 1024);
    await store.close();
    const again = await openEmbeddedStore({ dir });
    const r = again.collection<Item>({ name: 'w', indexes: [{ fields: { n: 1 }, unique: true }] });
    expect(await r.count({})).toBe(n);
    expect(await r.findOne({ n: n - 1 })).toEqual({ _id: `w${n - 1}`, n: n - 1, pad });
    await again.close();
  });
});
