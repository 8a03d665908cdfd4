/**
 * The closing table of `npm run bench`: each speed and memory goal row with the figure measured in
 * this run and the baseline it is compared with, measured in this same run (the floors section,
 * bare fastify, the naive SSE broadcast, one worker) or, where no same-run baseline can exist
 * (the pre-SQLite store is gone), the figure quoted from the issue and labelled so. Goals are
 * printed, never asserted. A row whose section did not run says so.
 */
import { fmt, fmtInt, printSection, printTable, type Cell } from './stats.js';

type Results = Map<string, unknown>;
/** Reads a dotted path from a section's returned figures; undefined when absent. */
function get(results: Results, section: string, path: string): number | undefined {
  let v: unknown = results.get(section);
  for (const k of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

interface Row {
  measure: string;
  goal: string;
  measured: (r: Results) => string | undefined;
  baseline: (r: Results) => string | undefined;
  section: string;
}

const ms = (v: number | undefined) => (v === undefined ? undefined : `${fmt(v)} ms`);
const per = (v: number | undefined, unit = '/s') =>
  v === undefined ? undefined : `${fmtInt(v)}${unit}`;
const x = (v: number | undefined) => (v === undefined ? undefined : `${fmt(v, 2)}×`);
const both = (...parts: Array<string | undefined>) =>
  parts.every((p) => p === undefined) ? undefined : parts.map((p) => p ?? '—').join(' / ');
/** A turn figure with the client in the platform's process, then with it in its own process. */
const clientBoth = (inProcess: string | undefined, own: string | undefined) =>
  inProcess === undefined && own === undefined
    ? undefined
    : `${inProcess ?? '—'} in-process client; ${own ?? '—'} client process`;
const ROWS: Row[] = [
  {
    measure: 'console: session list (1,000 sessions) first paint / rendered',
    goal: '< 1 s',
    section: 'console',
    measured: (r) =>
      both(ms(get(r, 'console', 'listFcpMs')), ms(get(r, 'console', 'listRenderedMs'))),
    baseline: (r) =>
      get(r, 'console', 'apiListMs') === undefined
        ? undefined
        : `the list's API call alone: ${ms(get(r, 'console', 'apiListMs'))}`,
  },
  {
    measure: 'console: live append → row in the DOM p50 / p99',
    goal: '< 50 ms p50',
    section: 'console',
    measured: (r) => both(ms(get(r, 'console', 'liveP50Ms')), ms(get(r, 'console', 'liveP99Ms'))),
    baseline: (r) =>
      get(r, 'console', 'sseP50Ms') === undefined
        ? undefined
        : `append → REST SSE frame: ${both(ms(get(r, 'console', 'sseP50Ms')), ms(get(r, 'console', 'sseP99Ms')))}`,
  },
  {
    measure: 'console: initial JavaScript, gzipped',
    goal: '< 300 KB',
    section: 'console',
    measured: (r) => {
      const v = get(r, 'console', 'jsGzipKb');
      return v === undefined ? undefined : `${fmt(v)} KB`;
    },
    baseline: () => 'none (no earlier console)',
  },
  {
    measure: 'store at 1M events: RSS / restart / events?limit=100 p50',
    goal: '≤ 400 MB / ≤ 1 s / ≤ 5 ms',
    section: 'store-scale',
    measured: (r) =>
      both(
        get(r, 'store-scale', 'rssMb') === undefined
          ? undefined
          : `${fmtInt(get(r, 'store-scale', 'rssMb'))} MB`,
        ms(get(r, 'store-scale', 'restartMs')),
        ms(get(r, 'store-scale', 'queryP50Ms')),
      ),
    baseline: () => 'pre-SQLite store (quoted baseline): 3.1 GB / 12.6 s / —',
  },
  {
    measure: 'turn: POST → first chunk p50 / POST → idle p50',
    goal: '≤ 3 ms / ≤ 5 ms',
    section: 'turns',
    measured: (r) =>
      clientBoth(
        both(
          ms(get(r, 'turns', 'sequential.firstChunk.p50')),
          ms(get(r, 'turns', 'sequential.idle.p50')),
        ),
        both(
          ms(get(r, 'turns', 'clientProcess.firstChunk.p50')),
          ms(get(r, 'turns', 'clientProcess.idle.p50')),
        ),
      ),
    baseline: (r) => {
      const v = clientBoth(
        both(ms(get(r, 'floors', 'turn.firstChunk.p50')), ms(get(r, 'floors', 'turn.idle.p50'))),
        both(
          ms(get(r, 'floors', 'turn.clientProcess.firstChunk.p50')),
          ms(get(r, 'floors', 'turn.clientProcess.idle.p50')),
        ),
      );
      return v && `floor: ${v}`;
    },
  },
  {
    measure: 'concurrent turns, 8 sessions',
    goal: '≥ 600 turns/s',
    section: 'turns',
    measured: (r) =>
      clientBoth(
        per(get(r, 'turns', 'concurrent.turnsPerSec'), ' turns/s'),
        per(get(r, 'turns', 'clientProcess.turnsPerSec'), ' turns/s'),
      ),
    baseline: (r) => {
      const v = clientBoth(
        per(get(r, 'floors', 'turn.turnsPerSec'), ' turns/s'),
        per(get(r, 'floors', 'turn.clientProcess.turnsPerSec'), ' turns/s'),
      );
      return v && `floor: ${v}`;
    },
  },
  {
    measure: 'appends: concurrent / sequential on one session',
    goal: '≥ 20k/s / ≥ 5k/s',
    section: 'events',
    measured: (r) =>
      both(per(get(r, 'events', 'concurrentPerS')), per(get(r, 'events', 'sequentialPerS'))),
    baseline: (r) => {
      const v = both(
        per(get(r, 'floors', 'append.concurrentPerSec')),
        per(get(r, 'floors', 'append.sequentialPerSec')),
      );
      return v && `floor (raw SQLite): ${v}`;
    },
  },
  {
    measure: 'slowest single append in the run',
    goal: '≤ 50 ms',
    section: 'events',
    measured: (r) => ms(get(r, 'events', 'maxAppendMs')),
    baseline: (r) => {
      const v = ms(get(r, 'floors', 'append.maxMs'));
      return v && `floor (raw SQLite): ${v}`;
    },
  },
  {
    measure: 'fan-out: 1,000 SSE subscribers, deliveries/s (p99)',
    goal: '≥ 2.0× naive broadcast',
    section: 'fanout',
    measured: (r) => {
      const v = per(get(r, 'fanout', 'deliveriesPerS'));
      const ratio = x(get(r, 'fanout', 'ratio'));
      const p99 = ms(get(r, 'fanout', 'p99Ms'));
      return v && `${v} = ${ratio ?? '—'} (p99 ${p99 ?? '—'})`;
    },
    baseline: (r) => {
      const v = per(get(r, 'fanout', 'baselineDeliveriesPerS'));
      return v && `naive Node SSE broadcast: ${v}`;
    },
  },
  {
    measure: 'GET /v1/agents/:id req/s',
    goal: '≥ 0.8× bare fastify',
    section: 'http',
    measured: (r) => {
      const v = per(get(r, 'http', 'platform.rps'));
      return v && `${v} = ${x(get(r, 'http', 'ratio'))}`;
    },
    baseline: (r) => {
      const v = per(get(r, 'http', 'bare.rps'));
      return v && `bare fastify: ${v}`;
    },
  },
  {
    measure: 'real infra: turn overhead p50 (POST → idle)',
    goal: '≤ 15 ms',
    section: 'real-turns',
    measured: (r) => ms(get(r, 'real-turns', 'sequential.idle.p50')),
    baseline: (r) => {
      const v = ms(get(r, 'turns', 'sequential.idle.p50'));
      const share = get(r, 'real-store-share', 'storeSharePct');
      const inStore = ms(get(r, 'real-store-share', 'storeMsPerTurn'));
      const turn = ms(get(r, 'real-store-share', 'turnP50Ms'));
      const parts = [
        v && `embedded, same run: ${v}`,
        share === undefined
          ? undefined
          : `f2: the store busy ${fmt(share, 0)} % (${inStore} of ${turn})`,
      ].filter((p) => p !== undefined);
      return parts.length ? parts.join('; ') : undefined;
    },
  },
  {
    measure: 'real infra: 2 workers vs 1 on turns/s (model delay 50 ms)',
    goal: '≥ 1.7×',
    section: 'workers',
    measured: (r) => {
      const v = x(get(r, 'workers', 'ratio'));
      return v && `${v} (${per(get(r, 'workers', 'two.turnsPerSec'), ' turns/s')})`;
    },
    baseline: (r) => {
      const v = per(get(r, 'workers', 'one.turnsPerSec'), ' turns/s');
      const busy = get(r, 'workers', 'oneWorkerCpuBusyPct');
      const store = get(r, 'workers', 'oneWorkerStoreCpuPct');
      const cpu =
        busy === undefined
          ? ''
          : `; the machine (2 cores = 100 %) ${fmt(busy, 0)} % busy with 1 worker, FerretDB and PostgreSQL ${fmt(store ?? 0, 0)} %`;
      return v && `1 worker: ${v}${cpu}`;
    },
  },
  {
    measure: 'cost report over a month of 1M model calls p50 / p99',
    goal: '< 200 ms p50',
    section: 'cost-report',
    measured: (r) =>
      both(
        ms(get(r, 'cost-report', 'queries.month, tenant × model.p50')),
        ms(get(r, 'cost-report', 'queries.month, tenant × model.p99')),
      ),
    baseline: (r) =>
      get(r, 'cost-report', 'queries.pricing (baseline).p50') === undefined
        ? undefined
        : `GET …/pricing: ${both(ms(get(r, 'cost-report', 'queries.pricing (baseline).p50')), ms(get(r, 'cost-report', 'queries.pricing (baseline).p99')))}`,
  },
  {
    measure: 'eval of 100 cases against the scripted model (16 at a time): cases per minute',
    goal: 'printed',
    section: 'evals',
    measured: (r) => per(get(r, 'evals', 'evalCasesPerMin'), ' cases/min'),
    baseline: (r) => {
      const v = per(get(r, 'evals', 'baselineSessionsPerMin'), ' sessions/min');
      return v && `the same prompts as client-driven sessions: ${v}`;
    },
  },
  {
    measure: 'RSS per idle session / per idle local sandbox',
    goal: 'printed',
    section: 'memory',
    measured: (r) => {
      const s = get(r, 'memory', 'rssPerIdleSessionKb');
      const b = get(r, 'memory', 'rssPerIdleSandboxKb');
      return both(
        s === undefined ? undefined : `${fmtInt(s)} KB`,
        b === undefined ? undefined : `${fmtInt(b)} KB`,
      );
    },
    baseline: (r) => {
      const v = get(r, 'memory', 'baselineRssMb');
      return v === undefined ? undefined : `platform with no sessions: ${fmtInt(v)} MB`;
    },
  },
];

/** Prints the goal table from the sections' returned figures. */
export function printGoals(results: Results): void {
  printSection('Speed and memory goals: measured in this run, beside the same-run baseline');
  const cells: Cell[][] = ROWS.map((row) => {
    const ran = results.has(row.section);
    return [
      row.measure,
      row.goal,
      row.measured(results) ?? (ran ? '(no figure)' : `(section ${row.section} did not run)`),
      row.baseline(results) ?? '—',
    ];
  });
  printTable(
    'goal rows (figures vary with the machine and its load)',
    ['measure', 'goal', 'measured', 'baseline'],
    cells,
  );
}
