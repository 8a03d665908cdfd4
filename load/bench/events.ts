/**
 * Section c (and f on FerretDB): session event log appends per second on the platform's store,
 * calling its EventLog.append in-process (durable insert + log-head update + live publish).
 */
import type { EventDraft } from '@agentfleet/core';
import { OPERATOR_TENANT, type BenchPlatform } from './context.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, nowMs, printSection, printTable, summarize, type Summary } from './stats.js';
import type { TurnFigures } from './turns.js';

const MAX_APPENDS = 1_000_000;

const draft = (i: number): EventDraft => ({
  type: 'agent.message',
  payload: { content: [{ type: 'text', text: `bench event ${i}` }] },
});

export interface AppendFigures {
  name: string;
  sessions: number;
  batch: number;
  appends: number;
  events: number;
  eventsPerSec: number;
  latency: Summary;
  errors: number;
}

async function measure(
  p: BenchPlatform,
  name: string,
  sessionIds: string[],
  batch: number,
  durationMs: number,
): Promise<AppendFigures> {
  const log = p.server.platform.events;
  const latencies: number[] = [];
  let appends = 0;
  let errors = 0;
  let n = 0;
  const t0 = nowMs();
  const end = t0 + durationMs;
  await Promise.all(
    sessionIds.map(async (sid) => {
      while (nowMs() < end && appends + errors < MAX_APPENDS) {
        const drafts = Array.from({ length: batch }, () => draft(n++));
        const a = nowMs();
        try {
          await log.append(OPERATOR_TENANT, sid, drafts);
          latencies.push(nowMs() - a);
          appends++;
        } catch (err) {
          if (++errors === 1) console.error(`  append error: ${(err as Error).message}`);
          if (errors >= 10) break;
        }
      }
    }),
  );
  const elapsed = (nowMs() - t0) / 1000;
  return {
    name,
    sessions: sessionIds.length,
    batch,
    appends,
    events: appends * batch,
    eventsPerSec: (appends * batch) / elapsed,
    latency: summarize(latencies),
    errors,
  };
}

/** The section's figures; the flat keys are the goal rows of goals.ts. */
export interface EventsFigures {
  /** Single-event appends per second, one session, one at a time. */
  sequentialPerS: number;
  /** Events per second, one session, 10 events per append. */
  sequentialBatch10PerS: number;
  /** Single-event appends per second across all sessions at once. */
  concurrentPerS: number;
  /** The slowest single append() of the whole section, ms. */
  maxAppendMs: number;
  rows: AppendFigures[];
}

export interface EventsSectionLabels {
  /** Section heading. */
  title: string;
  /** Which section's concurrent turns the closing note quotes. */
  turnsSection: string;
}

const EMBEDDED: EventsSectionLabels = {
  title: 'c. Event log appends/s (embedded store, EventLog.append in-process)',
  turnsSection: 'section b',
};

export async function eventsSection(
  p: BenchPlatform,
  s: BenchSettings,
  turns?: TurnFigures,
  labels: EventsSectionLabels = EMBEDDED,
): Promise<EventsFigures> {
  printSection(labels.title);
  const { sessionIds } = await p.sessions(Math.max(1, s.sessions));
  const ms = s.seconds * 1000;
  const rows: AppendFigures[] = [];
  rows.push(await measure(p, 'sequential, 1 session', sessionIds.slice(0, 1), 1, ms));
  rows.push(await measure(p, 'sequential, 1 session, batch 10', sessionIds.slice(0, 1), 10, ms));
  rows.push(await measure(p, `concurrent, ${sessionIds.length} sessions`, sessionIds, 1, ms));
  printTable(
    `appends for ${s.seconds}s each; latency is per append() call`,
    ['mode', 'events/s', 'appends/s', 'events', 'p50 ms', 'p99 ms', 'max ms', 'errors'],
    rows.map((r) => [
      r.name,
      fmtInt(r.eventsPerSec),
      fmtInt(r.eventsPerSec / r.batch),
      fmtInt(r.events),
      fmt(r.latency.p50, 3),
      fmt(r.latency.p99, 3),
      fmt(r.latency.max, 3),
      fmtInt(r.errors),
    ]),
    turns
      ? [
          `during ${labels.turnsSection}'s concurrent turns (${turns.concurrent.sessions} sessions, via HTTP + turn runner): ${fmtInt(turns.concurrent.eventsPerSec)} persisted events/s`,
        ]
      : [],
  );
  return {
    sequentialPerS: rows[0]!.eventsPerSec,
    sequentialBatch10PerS: rows[1]!.eventsPerSec,
    concurrentPerS: rows[2]!.eventsPerSec,
    maxAppendMs: Math.max(...rows.map((r) => r.latency.max)),
    rows,
  };
}
