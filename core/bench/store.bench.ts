/**
 * Embedded store figures (no assertions): durable insert throughput with group commit vs a
 * sequential await loop, recovery time, and indexed vs scanned finds.
 * Run: npx tsx core/bench/store.bench.ts [docs=200000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../src/adapters/embedded/documentStore.js';

interface Event {
  _id: string;
  session_id: string;
  seq: number;
  kind: string;
  payload: { text: string };
}

const total = Number(process.argv[2] ?? 200_000);
const sessions = Math.max(1, Math.floor(total / 100));
const event = (i: number): Event => ({
  _id: `e${i}`,
  session_id: `s${i % sessions}`,
  seq: Math.floor(i / sessions),
  kind: i % 7 ? 'text' : 'tool',
  payload: { text: `event ${i} `.padEnd(120, '.') },
});
const spec = {
  name: 'events',
  indexes: [{ fields: { session_id: 1 as const, seq: 1 as const }, unique: true }],
};
const rate = (n: number, ms: number) => `${Math.round((n / ms) * 1000).toLocaleString('en-US')}/s`;
const time = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
};

const dir = await mkdtemp(join(tmpdir(), 'store-bench-'));
try {
  const store = await openEmbeddedStore({ dir });
  const events = store.collection<Event>(spec);
  let next = 0;

  const seqN = 500;
  const [, seqMs] = await time(async () => {
    for (let i = 0; i < seqN; i++) await events.insertOne(event(next++));
  });
  console.log(
    `durable inserts, sequential await loop: ${rate(seqN, seqMs)} (${(seqMs / seqN).toFixed(2)} ms each)`,
  );

  for (const inFlight of [16, 128, 1024]) {
    const n = Math.min(20_000, total);
    const before = store.stats(),
      stop = next + n;
    const [, ms] = await time(async () => {
      const worker = async () => {
        while (next < stop) await events.insertOne(event(next++));
      };
      await Promise.all(Array.from({ length: inFlight }, worker));
    });
    const s = store.stats();
    const syncs = s.syncs - before.syncs,
      recs = s.records - before.records;
    console.log(
      `durable inserts, ${inFlight} in flight: ${rate(recs, ms)} (${syncs} fdatasyncs, ${(recs / syncs).toFixed(1)} records each)`,
    );
  }

  const [, fillMs] = await time(async () => {
    const batch: Promise<void>[] = [];
    while (next < total) {
      batch.push(events.insertOne(event(next++)));
      if (batch.length === 4096) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
  });
  console.log(
    `filled to ${total.toLocaleString('en-US')} events (${fillMs.toFixed(0)} ms); log ${(store.stats().logBytes / 2 ** 20).toFixed(1)} MiB`,
  );
  await store.close();

  const [reopened, openMs] = await time(() => openEmbeddedStore({ dir }));
  const [again, indexMs] = await time(async () => reopened.collection<Event>(spec));
  console.log(
    `reopen (replay ${total.toLocaleString('en-US')} records): ${openMs.toFixed(0)} ms; index build ${indexMs.toFixed(0)} ms`,
  );

  const q = 2000;
  const [, findMs] = await time(async () => {
    for (let i = 0; i < q; i++)
      await again.find({ session_id: `s${(i * 7919) % sessions}` }, { sort: { seq: 1 } });
  });
  console.log(
    `find one session's ~100 events by indexed session_id among ${total.toLocaleString('en-US')}: ${rate(q, findMs)} (${((findMs / q) * 1000).toFixed(0)} µs each)`,
  );
  const [, oneMs] = await time(async () => {
    for (let i = 0; i < q; i++) await again.findOne({ session_id: `s${i % sessions}`, seq: 3 });
  });
  console.log(`findOne by (session_id, seq): ${((oneMs / q) * 1000).toFixed(0)} µs each`);
  const [, scanMs] = await time(() => again.find({ seq: 5, kind: 'tool' }));
  console.log(
    `unindexed find (full scan of ${total.toLocaleString('en-US')}): ${scanMs.toFixed(1)} ms`,
  );
  await reopened.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
