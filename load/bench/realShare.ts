/**
 * Section f2 (after e and f): where a real-infra turn's time goes. The platform runs in this
 * process on Kafka + FerretDB + Redis (its own FLEET_NAMESPACE, removed afterwards) with its
 * document store wrapped in a timing wrapper (this bench platform only; the product's store is
 * untouched): every call of
 * every Collection method counts, and the store's busy time is the wall time during which at
 * least one call is in flight (overlapping calls are not double-counted). One session runs
 * sequential turns (zero-latency model, SSE open) for BENCH_SECONDS after a warm-up; the share
 * of the turns' wall time during which the store was busy is the store's share, the rest is the
 * platform itself plus Kafka and Redis. Background work (schedulers' scans) runs as in
 * production and counts as store time too.
 */
import { type Collection, type Doc, type DocumentStore, type StoreRouter } from '@agentfleet/core';
import { openMongoRouter } from '@agentfleet/core/adapters';
import { startBenchPlatform } from './context.js';
import { dropNamespace, newNamespace, realAdapterEnv, type RealServers } from './real.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, nowMs, printSection, printTable, sleep, summarize } from './stats.js';
import { openStream, turn } from './turns.js';

export interface StoreShareFigures {
  turns: number;
  turnP50Ms: number;
  /** Share of the turns' wall time during which at least one store call was in flight, %. */
  storeSharePct: number;
  storeCalls: number;
  storeCallsPerTurn: number;
  storeMsPerTurn: number;
  /** Store calls per Collection method during the measurement. */
  callsByMethod: Record<string, number>;
  /** Store calls per turn by `collection.method`. */
  perTurnByCall: Record<string, number>;
}

/** Busy-time accounting shared by every wrapped collection. */
class StoreClock {
  inFlight = 0;
  busyMs = 0;
  calls = 0;
  /** Calls per `collection.method`. */
  byCall: Record<string, number> = {};
  private since = 0;

  /** Calls per method, all collections together. */
  get byMethod(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [call, n] of Object.entries(this.byCall)) {
      const method = call.slice(call.lastIndexOf('.') + 1);
      out[method] = (out[method] ?? 0) + n;
    }
    return out;
  }

  async time<R>(method: string, op: () => Promise<R>, collection: string): Promise<R> {
    this.calls++;
    const call = `${collection}.${method}`;
    this.byCall[call] = (this.byCall[call] ?? 0) + 1;
    if (this.inFlight++ === 0) this.since = nowMs();
    try {
      return await op();
    } finally {
      if (--this.inFlight === 0) this.busyMs += nowMs() - this.since;
    }
  }

  reset(): void {
    this.busyMs = 0;
    this.calls = 0;
    this.byCall = {};
    if (this.inFlight > 0) this.since = nowMs();
  }
}

const METHODS = [
  'insertOne',
  'insertMany',
  'findOne',
  'find',
  'count',
  'updateOne',
  'findOneAndUpdate',
  'deleteOne',
  'deleteMany',
] as const;

function timedCollection<T extends Doc>(c: Collection<T>, clock: StoreClock): Collection<T> {
  const timed = {
    get name() {
      return c.name;
    },
  } as Collection<T>;
  for (const m of METHODS) {
    const fn = (c[m] as (...a: unknown[]) => Promise<unknown>).bind(c);
    (timed as unknown as Record<string, unknown>)[m] = (...args: unknown[]) =>
      clock.time(m, () => fn(...args), c.name);
  }
  return timed;
}

function timedStore(store: DocumentStore, clock: StoreClock): DocumentStore {
  return {
    collection: (spec) => timedCollection(store.collection(spec), clock),
    ready: () => store.ready(),
    healthy: () => store.healthy(),
    close: () => store.close(),
  };
}

function timedRouter(router: StoreRouter, clock: StoreClock): StoreRouter {
  const wrapped = new Map<DocumentStore, DocumentStore>();
  const wrap = (s: DocumentStore) => {
    let w = wrapped.get(s);
    if (!w) wrapped.set(s, (w = timedStore(s, clock)));
    return w;
  };
  return {
    control: wrap(router.control),
    forTenant: async (tenant) => wrap(await router.forTenant(tenant)),
    all: async () => (await router.all()).map(wrap),
  };
}

export async function storeShareSection(
  servers: RealServers,
  s: BenchSettings,
): Promise<StoreShareFigures> {
  printSection(
    'f2. Store share of a real-infra turn (in-process platform on Kafka + FerretDB + Redis, document store timed)',
  );
  const namespace = newNamespace('share');
  const env = realAdapterEnv(servers, namespace);
  const clock = new StoreClock();
  const mongo = await openMongoRouter({
    infra: { mongodbUrl: env.MONGODB_URL },
    fleet: { namespace, perTenantDb: false },
  } as Parameters<typeof openMongoRouter>[0]);
  const router = timedRouter(mongo.router, clock);
  try {
    const p = await startBenchPlatform(env, { store: { store: router.control, router } });
    try {
      const { sessionIds } = await p.sessions(1);
      const id = sessionIds[0]!;
      const stream = await openStream(p, id);
      try {
        await sleep(100);
        const warmEnd = nowMs() + s.warmupMs;
        while (nowMs() < warmEnd) await turn(p, stream, id);
        const times: number[] = [];
        clock.reset();
        const t0 = nowMs();
        const end = t0 + s.seconds * 1000;
        while (nowMs() < end && times.length < s.turns)
          times.push((await turn(p, stream, id)).idleMs);
        const elapsed = nowMs() - t0;
        const busy = clock.busyMs;
        const figures: StoreShareFigures = {
          turns: times.length,
          turnP50Ms: summarize(times).p50,
          storeSharePct: (100 * busy) / elapsed,
          storeCalls: clock.calls,
          storeCallsPerTurn: clock.calls / Math.max(1, times.length),
          storeMsPerTurn: busy / Math.max(1, times.length),
          callsByMethod: clock.byMethod,
          perTurnByCall: Object.fromEntries(
            Object.entries(clock.byCall).map(([k, n]) => [k, n / Math.max(1, times.length)]),
          ),
        };
        printTable(
          `1 session, sequential turns for ${s.seconds}s (after ${s.warmupMs / 1000}s warm-up), zero-latency model, SSE open`,
          ['turns', 'turn p50 ms', 'store busy %', 'store ms/turn', 'store calls/turn'],
          [
            [
              fmtInt(figures.turns),
              fmt(figures.turnP50Ms),
              fmt(figures.storeSharePct, 1),
              fmt(figures.storeMsPerTurn),
              fmt(figures.storeCallsPerTurn, 1),
            ],
          ],
          [
            `store calls by method: ${Object.entries(figures.callsByMethod)
              .sort((a, b) => b[1] - a[1])
              .map(([m, n]) => `${m} ${n}`)
              .join(', ')}`,
            `per turn by collection.method: ${Object.entries(figures.perTurnByCall)
              .sort((a, b) => b[1] - a[1])
              .map(([k, n]) => `${k} ${fmt(n, 1)}`)
              .join(', ')}`,
            "store busy % = wall time with >= 1 store call in flight / the turns' wall time; the rest is the platform, Kafka and Redis",
          ],
        );
        return figures;
      } finally {
        stream.close();
      }
    } finally {
      await p.close();
    }
  } finally {
    await mongo.close();
    console.log(`  cleanup: ${await dropNamespace(servers, namespace)}`);
  }
}
