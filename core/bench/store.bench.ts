/**
 * Embedded SQLite store micro figures (no assertions), run as bench section d (load/bench/store.ts)
 * or alone: npx tsx core/bench/store.bench.ts [seconds=4]. Within `seconds` in all:
 * durable inserts/s awaited one by one and with 8 / 64 / 512 in flight (commits and the
 * group-commit factor = writes per commit), $inc updates/s, point reads (findOne by _id) and the
 * events page (session_id + seq range, sort seq, limit 100) in µs, on a dir store with the
 * default sync (NORMAL) and the same insert loop with sync FULL.
 * Returns { seqInsertsPerS, seqInsertsFullPerS, concurrentInsertsPerS: {8,64,512},
 *   groupCommitFactor: {8,64,512}, incPerS, pointReadUs, eventsPageUs, docs }.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openEmbeddedStore, type StoreSync } from '../src/adapters/embedded/documentStore.js';

interface Event {
  _id: string;
  session_id: string;
  seq: number;
  type: string;
  payload: { text: string };
}

const SESSIONS = 50;
const spec = {
  name: 'events',
  indexes: [{ fields: { session_id: 1 as const, seq: 1 as const }, unique: true }],
};
const round = (x: number) => Math.round(x);

/** Runs `op` repeatedly for `ms`; returns operations per second. */
async function rateFor(ms: number, op: () => Promise<unknown>, inFlight = 1): Promise<number> {
  let n = 0;
  const end = performance.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await op();
        n++;
      }
    }),
  );
  return (n / (performance.now() - t0)) * 1000;
}

async function withStore<T>(
  sync: StoreSync,
  fn: (s: Awaited<ReturnType<typeof openEmbeddedStore>>) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'store-bench-'));
  const store = await openEmbeddedStore({ dir, sync });
  try {
    return await fn(store);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runStoreBench(opts: { seconds?: number } = {}) {
  const slice = (Math.max(1, opts.seconds ?? 4) * 1000) / 9;
  let next = 0;
  const event = (): Event => {
    const i = next++;
    return {
      _id: `e${i}`,
      session_id: `s${i % SESSIONS}`,
      seq: i,
      type: 'agent.message',
      payload: { text: `event ${i} `.padEnd(900, '.') },
    };
  };
  const seqInsertsFullPerS = await withStore('full', async (store) => {
    const events = store.collection<Event>(spec);
    return rateFor(slice, () => events.insertOne(event()));
  });
  return withStore('normal', async (store) => {
    const events = store.collection<Event>(spec);
    const seqInsertsPerS = await rateFor(slice, () => events.insertOne(event()));
    const concurrentInsertsPerS: Record<string, number> = {};
    const groupCommitFactor: Record<string, number> = {};
    for (const inFlight of [8, 64, 512]) {
      const before = store.stats();
      concurrentInsertsPerS[inFlight] = round(
        await rateFor(slice, () => events.insertOne(event()), inFlight),
      );
      const after = store.stats();
      groupCommitFactor[inFlight] =
        Math.round(((after.records - before.records) / (after.syncs - before.syncs)) * 10) / 10;
    }
    const counters = store.collection<{ _id: string; n: number }>({ name: 'counters' });
    await counters.insertOne({ _id: 'c', n: 0 });
    const incPerS = await rateFor(slice, () =>
      counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } }),
    );
    const docs = next;
    let r = 0;
    const pointRate = await rateFor(slice, () =>
      events.findOne({ _id: `e${(r++ * 7919) % docs}` }),
    );
    const pageRate = await rateFor(slice, () =>
      events.find(
        { session_id: `s${r++ % SESSIONS}`, seq: { $gte: 0 } },
        { sort: { seq: 1 }, limit: 100 },
      ),
    );
    return {
      seqInsertsPerS: round(seqInsertsPerS),
      seqInsertsFullPerS: round(seqInsertsFullPerS),
      concurrentInsertsPerS,
      groupCommitFactor,
      incPerS: round(incPerS),
      pointReadUs: Math.round((1e6 / pointRate) * 10) / 10,
      eventsPageUs: Math.round(1e6 / pageRate),
      docs,
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  console.log(await runStoreBench({ seconds: Number(process.argv[2] ?? 4) }));
