/**
 * Section store-scale: the embedded store (SQLite) at BENCH_STORE_EVENTS events (default 1M).
 * Fills a fresh store in a temp dir through openEmbeddedStore with the events and sessions
 * collections' real declared indexes (COLLECTIONS) and real-shaped ~1 KB events, 1,000 per
 * session interleaved as concurrent sessions append them (1,000 sessions at 1M), printing the
 * fill rate. Then a CHILD process (storeScaleChild.ts, so RSS is the store's, not the filler's)
 * measures restart time (open until ready), RSS after open and after 2,000 queries of
 * `GET …/events?limit=100` (the route's exact filter, sort and limit), and that query's p50/p99.
 * Baseline of the same run: the same child on a 10k-event store (10 sessions), so growth with
 * size shows; the pre-SQLite store's figures are printed as quoted baselines (that store
 * is gone, nothing of it is measured). Skipped with one line when the temp dir's file system has
 * less than 4 GB free. The temp dirs are deleted afterwards. Figures only, no thresholds.
 */
import { mkdtempSync, readdirSync, rmSync, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COLLECTIONS, newId, PREFIX, type Doc, type EventDoc } from '@agentfleet/core';
import { openEmbeddedStore } from '@agentfleet/core/adapters';
import { runResultChild } from './procs.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, printSection, printTable } from './stats.js';
import { sessionId, TENANT, type StoreScaleChildResult } from './storeScaleChild.js';

export interface StoreScaleRun extends StoreScaleChildResult {
  events: number;
  sessions: number;
  fillPerS: number;
  dataMb: number;
}
export interface StoreScaleFigures {
  events: number;
  fillPerS: number;
  restartMs: number;
  /** The child's RSS: the higher of its samples after open and after the queries. */
  rssMb: number;
  queryP50Ms: number;
  queryP99Ms: number;
  /** The same child on the 10k-event store of this run. */
  baseline: StoreScaleRun;
  run: StoreScaleRun;
}

const EVENTS_PER_SESSION = 1000;
const QUERIES = 2000;
const BATCH = 1000;
const FILL_IN_FLIGHT = 8;
const MIN_FREE_BYTES = 4 * 2 ** 30;
const CHILD_BOUND_MS = 300_000;
const TEXT = 'The tool returned the listing below; I will now summarise what changed. '.repeat(12);

/** ~1 KB, shaped as a stored agent.message (core/src/store/collections.ts EventDoc). */
function event(i: number, sessions: number, created: string): EventDoc {
  return {
    _id: newId(PREFIX.event),
    tenant_id: TENANT,
    session_id: sessionId(i % sessions),
    seq: Math.floor(i / sessions) + 1,
    type: 'agent.message',
    payload: { content: [{ type: 'text', text: `${i}: ${TEXT}` }] },
    created_at: created,
  };
}

/** Shaped as a stored session (SessionDoc); the agent snapshot is abridged. */
function session(i: number, now: string): Doc & Record<string, unknown> {
  return {
    _id: sessionId(i),
    tenant_id: TENANT,
    agent_id: 'agent_bench',
    agent_version: 1,
    agent: { id: 'agent_bench', version: 1, name: 'bench', model: { id: 'claude-sonnet-4-5' } },
    environment_id: 'env_bench',
    title: null,
    metadata: {},
    resources: [],
    vault_ids: [],
    budget: null,
    last_seq: EVENTS_PER_SESSION,
    input_seq: 0,
    processed_seq: 0,
    fence: 0,
    recoveries: 0,
    usage: {
      input_tokens: 0,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
    terminated_at: null,
    archived_at: null,
    deleted_at: null,
    created_at: now,
    updated_at: now,
  };
}

const dirBytes = (dir: string) =>
  readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

/** Fills `dir` with `events` events; answers events per second. */
async function fill(dir: string, events: number, sessions: number): Promise<number> {
  const store = await openEmbeddedStore({ dir });
  try {
    const now = new Date().toISOString();
    const ss = store.collection<Doc & Record<string, unknown>>(COLLECTIONS.sessions);
    await ss.insertMany(Array.from({ length: sessions }, (_, i) => session(i, now)));
    const evs = store.collection<EventDoc>(COLLECTIONS.events);
    const t0 = performance.now();
    let lastReport = t0;
    // FILL_IN_FLIGHT batches in flight: the store's group commit takes them in one transaction.
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; i < events; i += BATCH) {
      const batch: EventDoc[] = [];
      for (let j = i; j < Math.min(events, i + BATCH); j++) batch.push(event(j, sessions, now));
      const p: Promise<void> = evs.insertMany(batch).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= FILL_IN_FLIGHT) await Promise.race(inFlight);
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        console.log(`  filling: ${fmtInt(i + BATCH)} of ${fmtInt(events)} events`);
      }
    }
    await Promise.all(inFlight);
    return events / ((performance.now() - t0) / 1000);
  } finally {
    // A ref'd timer while closing: the store's checkpoint worker is unref'd and close() awaits
    // its exit, so with nothing else pending the process would exit mid-close (exit code 13).
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      await store.close();
    } finally {
      clearInterval(keepAlive);
    }
  }
}

function runChild(dir: string, sessions: number): Promise<StoreScaleChildResult> {
  return runResultChild<StoreScaleChildResult>(
    new URL('./storeScaleChild.ts', import.meta.url),
    [dir, String(sessions), String(QUERIES)],
    'store-scale child',
    { boundMs: CHILD_BOUND_MS },
  );
}

async function measure(events: number): Promise<StoreScaleRun> {
  const sessions = Math.max(1, Math.ceil(events / EVENTS_PER_SESSION));
  const dir = mkdtempSync(join(tmpdir(), 'agentfleet-store-scale-'));
  try {
    const fillPerS = await fill(dir, events, sessions);
    const dataMb = dirBytes(dir) / 2 ** 20;
    const child = await runChild(dir, sessions);
    return { events, sessions, fillPerS, dataMb, ...child };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function storeScaleSection(s: BenchSettings): Promise<StoreScaleFigures | undefined> {
  printSection(
    `j. Embedded store at ${fmtInt(s.storeEvents)} events of ~1 KB: fill rate, restart, RSS, GET …/events?limit=100 (measured in a child process)`,
  );
  const fs = statfsSync(tmpdir());
  const free = fs.bavail * fs.bsize;
  if (free < MIN_FREE_BYTES) {
    console.log(
      `skipped: ${fmt(free / 2 ** 30, 1)} GB free in ${tmpdir()}, the section needs 4 GB`,
    );
    return undefined;
  }
  const baseline = await measure(Math.min(10_000, s.storeEvents));
  const run = await measure(s.storeEvents);
  const row = (label: string, r: StoreScaleRun) => [
    label,
    fmtInt(r.events),
    `${fmtInt(r.dataMb)} MB`,
    fmtInt(r.fillPerS),
    fmt(r.restartMs, 1),
    fmtInt(r.rssBeforeOpenMb),
    fmtInt(r.rssAfterOpenMb),
    fmtInt(r.rssAfterQueriesMb),
    fmt(r.queryP50Ms, 3),
    fmt(r.queryP99Ms, 3),
  ];
  printTable(
    `sessions of ${EVENTS_PER_SESSION} events each; ${QUERIES} page queries on random sessions`,
    [
      'store',
      'events',
      'on disk',
      'fill/s',
      'restart ms',
      'RSS before MB',
      'RSS open MB',
      'RSS queried MB',
      'query p50 ms',
      'query p99 ms',
    ],
    [
      row('SQLite, baseline size', baseline),
      row('SQLite', run),
      // The old store's figures go under "RSS open" (800 MB held at 200k; 3.1 GB after restart).
      ['pre-SQLite, quoted baseline, not measured', '200,000', '-', '-', '-', '-', '800'],
      [
        'pre-SQLite, quoted baseline, not measured',
        '1,000,000',
        '1.2 GB',
        '-',
        '12,600',
        '-',
        '3,100',
      ],
    ],
    [
      'RSS before = the child process before it opens the store (node, tsx, modules)',
      'restart = open + declare the sessions and events collections + ready, in a fresh process',
      `query = sessions.findOne({_id, tenant_id}) + events.find({session_id, tenant_id}, sort seq, limit 101): ${fmt(run.rowsPerQuery, 1)} rows per query`,
      'the pre-SQLite store held every document in memory and replayed its log on start; the issue quotes 2.1 GB RSS while filling 1M',
    ],
  );
  return {
    events: run.events,
    fillPerS: run.fillPerS,
    restartMs: run.restartMs,
    rssMb: Math.max(run.rssAfterOpenMb, run.rssAfterQueriesMb),
    queryP50Ms: run.queryP50Ms,
    queryP99Ms: run.queryP99Ms,
    baseline,
    run,
  };
}
