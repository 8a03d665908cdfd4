/**
 * Section m: the cost report over a month of usage. Its own in-process platform (embedded
 * adapters); the runtime ledger is filled through the platform's own `cost.record` (what each
 * model call does) with 1,000,000 calls spread over the last 30 days: 5 tenants, 50 agents,
 * 5,000 sessions of 200 calls each within two hours, two models, one call in ten a compaction
 * summary. Then, one at a time, GET /v1/svc/cost_report over the whole month with the default
 * grouping (tenant, model), by day, by agent, and for one tenant by session; beside it, as the
 * baseline of the same run, GET /v1/svc/cost_report/pricing (the same route's authentication
 * and the price card read, no ledger). Figures only: the goal (p50 under 200 ms) is read off
 * the table.
 */
import { startBenchPlatform } from './context.js';
import { request, svcHeaders } from './svc.js';
import { fmt, nowMs, printSection, printTable, summarize } from './stats.js';

const CALLS = Number(process.env.BENCH_COST_CALLS ?? 1_000_000);
const TENANTS = 5;
const AGENTS = 50;
const CALLS_PER_SESSION = 200;
const QUERIES = 30;
const DAY = 86_400_000;

export interface CostReportFigures {
  calls: number;
  buckets: number;
  fillSeconds: number;
  queries: Record<string, { p50: number; p99: number; rows: number }>;
}

export async function costReportSection(): Promise<CostReportFigures> {
  printSection(
    `m. Cost report over a month of usage (${CALLS.toLocaleString('en')} model calls in the runtime ledger) beside GET …/pricing`,
  );
  const p = await startBenchPlatform();
  try {
    const cost = p.server.platform.cost;
    const now = Date.now();
    const sessions = Math.ceil(CALLS / CALLS_PER_SESSION);
    const t0 = nowMs();
    let written = 0;
    const fill = async (worker: number, of: number) => {
      for (let s = worker; s < sessions; s += of) {
        const tenant = `tenant_bench_${s % TENANTS}`;
        const agent = `agent_bench_${s % AGENTS}`;
        // Sessions start over the month and end (two hours later) before now.
        const start = now - 30 * DAY + Math.floor((s / sessions) * (30 * DAY - 3 * 3_600_000));
        for (let i = 0; i < CALLS_PER_SESSION && written < CALLS; i++, written++)
          await cost.record({
            tenantId: tenant,
            sessionId: `sesn_bench_${s}`,
            agentId: agent,
            agentVersion: 1,
            modelCard: s % 2 ? 'sonnet' : 'haiku',
            provider: 'anthropic',
            model: s % 2 ? 'claude-sonnet-4-5' : 'claude-haiku-4-5',
            kind: i % 10 === 9 ? 'compaction' : 'turn',
            usage: {
              input_tokens: 1000 + (i % 7) * 100,
              output_tokens: 200,
              cache_read_input_tokens: 500,
              cache_creation_input_tokens: i === 0 ? 2000 : 0,
            },
            at: start + Math.floor((i / CALLS_PER_SESSION) * 2 * 3_600_000),
          });
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => fill(w, 8)));
    const fillSeconds = (nowMs() - t0) / 1000;
    const month = new URLSearchParams({
      starting_at: new Date(now - 31 * DAY).toISOString(),
      ending_at: new Date(now + 3_600_000).toISOString(),
    });
    const cases: Array<[string, string]> = [
      ['pricing (baseline)', '/v1/svc/cost_report/pricing'],
      ['month, tenant × model', `/v1/svc/cost_report?${month}`],
      ['month, by day', `/v1/svc/cost_report?${month}&group_by=day`],
      ['month, by agent', `/v1/svc/cost_report?${month}&group_by=agent`],
      [
        'month, one tenant by session',
        `/v1/svc/cost_report?${month}&tenant_id=tenant_bench_0&group_by=session`,
      ],
    ];
    const figures: CostReportFigures = { calls: written, buckets: 0, fillSeconds, queries: {} };
    const rows: Array<Array<string | number>> = [];
    for (const [label, path] of cases) {
      const ms: number[] = [];
      let rowCount = 0;
      for (let i = 0; i < QUERIES + 2; i++) {
        const q0 = nowMs();
        const r = await request(p, 'GET', path, svcHeaders(p));
        const took = nowMs() - q0;
        if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
        if (i < 2) continue; // warmup
        ms.push(took);
        const body = JSON.parse(r.text) as { rows?: unknown[]; calls?: number };
        rowCount = body.rows?.length ?? 0;
        if (label.startsWith('month, tenant') && body.calls !== written)
          throw new Error(`the report counts ${body.calls} calls, ${written} were recorded`);
      }
      const s = summarize(ms);
      figures.queries[label] = { p50: s.p50, p99: s.p99, rows: rowCount };
      rows.push([label, String(rowCount), s.p50, s.p99, s.max]);
    }
    figures.buckets = (await p.server.platform.collections.costLedger.count({})) as number;
    printTable(
      `GET /v1/svc/cost_report (ms; ${QUERIES} sequential requests each after 2 warmups)`,
      ['query', 'rows', 'p50', 'p99', 'max'],
      rows,
      [
        `ledger: ${written.toLocaleString('en')} calls in ${figures.buckets.toLocaleString('en')} hourly buckets, written in ${fmt(fillSeconds, 1)} s (${fmt(written / fillSeconds, 0)} calls/s through cost.record, 8 writers)`,
      ],
    );
    return figures;
  } finally {
    await p.close();
  }
}
