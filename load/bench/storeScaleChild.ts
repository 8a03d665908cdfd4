/**
 * Child process of the store-scale section (storeScale.ts): measures the embedded store on a
 * filled dir with nothing else in the process, so RSS is the store's. It opens the store
 * (restart time: open, declaring the sessions and events collections as the platform does,
 * until ready), samples RSS, then runs the query of `GET /v1/sessions/:id/events?limit=100`
 * (gateway/src/routes/sessions.ts listEvents: the session's getDoc, then events of the session
 * and tenant sorted by seq, limit + 1) for random sessions, timing each, and samples RSS again.
 * Args: <dir> <sessions> <queries>; answers a StoreScaleChildResult over IPC.
 */
import { COLLECTIONS, type EventDoc, type SessionDoc } from '@agentfleet/core';
import { openEmbeddedStore } from '@agentfleet/core/adapters';
import { summarize } from './stats.js';

export interface StoreScaleChildResult {
  /** The child's RSS before opening the store (node + tsx + modules): the floor of the others. */
  rssBeforeOpenMb: number;
  restartMs: number;
  rssAfterOpenMb: number;
  rssAfterQueriesMb: number;
  queryP50Ms: number;
  queryP99Ms: number;
  /** Rows the queries answered on average (101 when every session has more than 100 events). */
  rowsPerQuery: number;
}

export const TENANT = 'tnt_bench';
export const sessionId = (i: number) => `sess_bench${String(i).padStart(6, '0')}`;
const rssMb = () => process.memoryUsage().rss / 2 ** 20;

async function main(): Promise<StoreScaleChildResult> {
  const [dir, sessionsArg, queriesArg] = process.argv.slice(2);
  const sessions = Number(sessionsArg),
    queries = Number(queriesArg);
  const rssBeforeOpenMb = rssMb();
  const t0 = performance.now();
  const store = await openEmbeddedStore({ dir });
  const sessionDocs = store.collection<SessionDoc>(COLLECTIONS.sessions);
  const events = store.collection<EventDoc>(COLLECTIONS.events);
  await store.ready();
  const restartMs = performance.now() - t0;
  const rssAfterOpenMb = rssMb();
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % sessions;
  const times: number[] = [];
  let rows = 0,
    rssAfterQueriesMb: number;
  try {
    for (let q = 0; q < queries; q++) {
      const id = sessionId(next());
      const s = performance.now();
      const session = await sessionDocs.findOne({ _id: id, tenant_id: TENANT });
      if (!session) throw new Error(`session ${id} missing`);
      const page = await events.find(
        { session_id: id, tenant_id: TENANT },
        { sort: { seq: 1 }, limit: 101 },
      );
      times.push(performance.now() - s);
      rows += page.length;
    }
    rssAfterQueriesMb = rssMb();
  } finally {
    // Ref'd while closing: the store's checkpoint worker is unref'd (see storeScale.ts fill).
    const keepAlive = setInterval(() => undefined, 1000);
    await store.close().finally(() => clearInterval(keepAlive));
  }
  const t = summarize(times);
  return {
    rssBeforeOpenMb,
    restartMs,
    rssAfterOpenMb,
    rssAfterQueriesMb,
    queryP50Ms: t.p50,
    queryP99Ms: t.p99,
    rowsPerQuery: rows / queries,
  };
}

if (process.send) {
  main().then(
    (result) => process.send!({ result }, () => process.exit(0)),
    (err) => process.send!({ error: String((err as Error).stack ?? err) }, () => process.exit(1)),
  );
}
