/**
 * Section g: turns/s with 1 vs 2 worker processes. Real processes on the real servers: one gateway
 * and one worker, then (on a fresh FLEET_NAMESPACE, so both start from an empty database) one
 * gateway and two workers (`server/src/cli.ts gateway|worker`), all processes of a run on the same
 * namespace. `BENCH_SESSIONS` sessions are driven concurrently through the gateway (each: SSE
 * stream open first, then one turn at a time: POST user.message, wait for session.status_idle)
 * for BENCH_SECONDS per worker count. The scripted model (in this process) answers every request
 * after BENCH_MODEL_DELAY_MS (one delayed response is queued per turn), so a turn holds a worker
 * for a while and worker parallelism can matter. Every child process is stopped after its run,
 * also on error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  benchClient,
  benchPlatformEnv,
  startScriptedModel,
  type BenchClient,
  type ScriptedModel,
} from './context.js';
import { cpuWindow, describeCpu, type CpuShare } from './cpuShare.js';
import { startPlatformProcess, stopProcess, type PlatformProcess } from './procs.js';
import { dropNamespace, newNamespace, realAdapterEnv, type RealServers } from './real.js';
import type { BenchSettings } from './settings.js';
import {
  fmt,
  fmtInt,
  nowMs,
  printSection,
  printTable,
  sleep,
  summarize,
  type Summary,
} from './stats.js';
import { openStream, turn, type Stream } from './turns.js';

const MODEL = 'claude-sonnet-4-5';
const MAX_TURNS_PER_PHASE = 100_000;

export interface WorkerPhase {
  workers: number;
  sessions: number;
  turns: number;
  errors: number;
  turnsPerSec: number;
  idle: Summary;
  /** Turns started by each worker process during the measurement (from its /metrics). */
  perWorker: number[];
  perSession: { min: number; max: number };
  modelRequests: number;
  sessionErrors: number;
  /** Where the machine's CPU went during the timed window (./cpuShare.ts). */
  cpu: CpuShare | null;
}

export interface WorkerFigures {
  one: WorkerPhase;
  two: WorkerPhase;
  ratio: number;
  oneWorkerTurnsPerS: number;
  twoWorkersTurnsPerS: number;
  /** twoWorkersTurnsPerS / oneWorkerTurnsPerS (the same as `ratio`). */
  scaling: number;
  /** Turn p50 (POST → idle) with 1 and 2 workers, ms. */
  oneWorkerIdleP50Ms: number;
  twoWorkersIdleP50Ms: number;
  /** With 1 worker: the machine's busy share and the store servers' (FerretDB + PostgreSQL), %. */
  oneWorkerCpuBusyPct?: number;
  oneWorkerStoreCpuPct?: number;
}

/** Sum of a counter's samples in a Prometheus text exposition (/metrics takes the operator key); NaN when unreadable. */
async function counter(url: string, name: string, operatorKey: string): Promise<number> {
  try {
    const res = await fetch(`${url}/metrics`, {
      headers: { 'x-api-key': operatorKey },
      signal: AbortSignal.timeout(5000),
    });
    const text = await res.text();
    let sum = 0;
    for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'gm')))
      sum += Number(m[1]);
    return sum;
  } catch {
    return NaN;
  }
}

const turnsStarted = (workers: PlatformProcess[], operatorKey: string) =>
  Promise.all(workers.map((w) => counter(w.url, 'agentfleet_turns_started_total', operatorKey)));

interface Driven {
  idle: number[];
  perSession: number[];
  errors: number;
  sessionErrors: number;
  elapsedMs: number;
  scripted: number;
}

/**
 * Every session loops turns until `durationMs` is up (at least one turn each), queueing one
 * delayed model response per turn. Bounded by time, by MAX_TURNS_PER_PHASE and by 3 errors per session.
 */
async function drive(
  c: BenchClient,
  model: ScriptedModel,
  delayMs: number,
  sessionIds: string[],
  streams: Stream[],
  durationMs: number,
): Promise<Driven> {
  const idle: number[] = [];
  const perSession = sessionIds.map(() => 0);
  let errors = 0;
  let sessionErrors = 0;
  let scripted = 0;
  const t0 = nowMs();
  const end = t0 + durationMs;
  await Promise.all(
    sessionIds.map(async (id, i) => {
      let errs = 0;
      while (nowMs() < end && idle.length + errors < MAX_TURNS_PER_PHASE) {
        model.script(MODEL, { steps: [{ delay_ms: delayMs }, { text: 'ok' }] });
        scripted++;
        try {
          const t = await turn(c, streams[i]!, id);
          idle.push(t.idleMs);
          perSession[i]!++;
          sessionErrors += t.sessionErrors;
        } catch (err) {
          errors++;
          if (++errs === 1) console.error(`  turn error: ${(err as Error).message}`);
          if (errs >= 3) break;
        }
      }
    }),
  );
  return { idle, perSession, errors, sessionErrors, elapsedMs: nowMs() - t0, scripted };
}

/** One measurement with the given workers: fresh sessions and streams, a warm-up, then `seconds` of turns. */
async function phase(
  c: BenchClient,
  model: ScriptedModel,
  s: BenchSettings,
  workers: PlatformProcess[],
  operatorKey: string,
  gatewayPid: number,
): Promise<WorkerPhase> {
  const { sessionIds } = await c.sessions(s.sessions);
  const streams: Stream[] = [];
  try {
    for (const id of sessionIds) streams.push(await openStream(c, id));
    // The stream subscribes just after its headers: give it a moment, then warm up (every
    // session runs at least one turn, so every worker has taken part before the measurement).
    await sleep(100);
    await drive(c, model, s.modelDelayMs, sessionIds, streams, s.warmupMs);
    const requestsBefore = model.requests.length;
    const before = await turnsStarted(workers, operatorKey);
    const cpu = cpuWindow({
      gateway: [gatewayPid],
      workers: workers.map((w) => w.pid),
      'bench (client, model)': [process.pid],
    });
    const d = await drive(c, model, s.modelDelayMs, sessionIds, streams, s.seconds * 1000);
    const cpuShare = cpu();
    const after = await turnsStarted(workers, operatorKey);
    const modelRequests = model.requests.length - requestsBefore;
    // The fixture keeps every request body (whole histories): drop them between measurements.
    model.requests.length = 0;
    return {
      workers: workers.length,
      sessions: sessionIds.length,
      turns: d.idle.length,
      errors: d.errors,
      turnsPerSec: d.idle.length / (d.elapsedMs / 1000),
      idle: summarize(d.idle),
      perWorker: after.map((a, i) => a - before[i]!),
      perSession: { min: Math.min(...d.perSession), max: Math.max(...d.perSession) },
      modelRequests,
      sessionErrors: d.sessionErrors,
      cpu: cpuShare,
    };
  } finally {
    for (const st of streams) st.close();
  }
}

interface FleetRun {
  phase: WorkerPhase;
  namespace: string;
  pids: { gateway: number; workers: number[] };
  startupS: number;
  cleanup: string;
}

/**
 * One gateway and `workers` worker processes on a fresh namespace (so every worker count starts
 * from an empty database: on FerretDB turns slow down as the database grows), one measurement,
 * then every process stopped and the namespace removed, also on error.
 */
async function fleetRun(
  servers: RealServers,
  s: BenchSettings,
  model: ScriptedModel,
  workers: number,
): Promise<FleetRun> {
  const namespace = newNamespace(`w${workers}`);
  const apiKey = `op-bench-${Math.random().toString(36).slice(2)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-bench-procs-'));
  const procs: PlatformProcess[] = [];
  let client: BenchClient | null = null;
  let run: Omit<FleetRun, 'cleanup'> | null = null;
  let cleanup = '';
  try {
    const env: Record<string, string> = {
      ...realAdapterEnv(servers, namespace),
      ...benchPlatformEnv({ dataDir, apiKey, modelUrl: model.url }),
      SHUTDOWN_GRACE_MS: '2000',
    };
    const t0 = nowMs();
    const gateway = await startPlatformProcess('gateway', env);
    procs.push(gateway);
    // One at a time: a worker prints "started" once its consumer joined the group, i.e. after
    // the rebalance that gives it its share of the partitions.
    const ws: PlatformProcess[] = [];
    for (let i = 0; i < workers; i++) {
      const w = await startPlatformProcess('worker', env);
      procs.push(w);
      ws.push(w);
    }
    const startupS = (nowMs() - t0) / 1000;
    client = benchClient(gateway.url, apiKey);
    const phaseFigures = await phase(client, model, s, ws, apiKey, gateway.pid);
    run = {
      phase: phaseFigures,
      namespace,
      pids: { gateway: gateway.pid, workers: ws.map((w) => w.pid) },
      startupS,
    };
  } finally {
    client?.agent.destroy();
    // SIGTERM to all (each shuts down gracefully: its consumers leave the group), SIGKILL after a grace period.
    await Promise.all(procs.map((p) => stopProcess(p.child)));
    rmSync(dataDir, { recursive: true, force: true });
    cleanup = `${procs.length} child processes stopped; ${await dropNamespace(servers, namespace)}`;
    if (!run) console.log(`  cleanup: ${cleanup}`);
  }
  return { ...run, cleanup };
}

export async function workersSection(
  servers: RealServers,
  s: BenchSettings,
): Promise<WorkerFigures> {
  printSection(
    'g. Turns/s with 1 vs 2 worker processes (gateway + workers as child processes on Kafka + FerretDB + Redis)',
  );
  const model = await startScriptedModel();
  try {
    const runs: FleetRun[] = [];
    for (const n of [1, 2]) runs.push(await fleetRun(servers, s, model, n));
    const [r1, r2] = runs as [FleetRun, FleetRun];
    const one = r1.phase;
    const two = r2.phase;
    const ratio = two.turnsPerSec / one.turnsPerSec;
    const row = (p: WorkerPhase) => [
      String(p.workers),
      fmtInt(p.turns),
      fmt(p.turnsPerSec, 1),
      fmt(p.idle.p50),
      fmt(p.idle.p99),
      fmt(p.idle.max),
      fmtInt(p.errors),
      p.perWorker.map((n) => fmtInt(n)).join(' / '),
    ];
    const bound = s.modelDelayMs > 0 ? (s.sessions * 1000) / s.modelDelayMs : NaN;
    const procLine = (r: FleetRun) =>
      `${r.phase.workers} worker(s): namespace ${r.namespace}, gateway pid ${r.pids.gateway}, worker pid ${r.pids.workers.join(', ')}, start-up ${fmt(r.startupS, 1)} s; cleanup: ${r.cleanup}`;
    printTable(
      `${s.sessions} sessions driven concurrently through 1 gateway for ${s.seconds}s per worker count (after ${s.warmupMs / 1000}s warm-up); model answers after ${s.modelDelayMs} ms`,
      [
        'workers',
        'turns',
        'turns/s',
        'idle p50 ms',
        'idle p99 ms',
        'idle max ms',
        'errors',
        'turns started per worker',
      ],
      [row(one), row(two)],
      [
        `ratio turns/s 2 workers / 1 worker: ${fmt(ratio, 2)}`,
        ...(Number.isFinite(bound)
          ? [
              `ceiling from the model delay alone: ${s.sessions} sessions x 1000/${s.modelDelayMs} ms = ${fmtInt(bound)} turns/s (one turn at a time per session)`,
            ]
          : []),
        `turns per session: 1 worker min ${one.perSession.min} max ${one.perSession.max}; 2 workers min ${two.perSession.min} max ${two.perSession.max}`,
        `model requests per turn: 1 worker ${fmt(one.modelRequests / one.turns, 2)}, 2 workers ${fmt(two.modelRequests / two.turns, 2)}; session.error frames (model retries): ${one.sessionErrors} / ${two.sessionErrors}`,
        `machine CPU in the timed window (2 cores busy = 100 %): 1 worker ${describeCpu(one.cpu)}; 2 workers ${describeCpu(two.cpu)}`,
        'each worker count runs on its own fresh namespace (empty database); sessions are spread over the workers by Kafka partition (session id hash), so the split is rarely even',
        ...runs.map(procLine),
      ],
    );
    return {
      one,
      two,
      ratio,
      oneWorkerTurnsPerS: one.turnsPerSec,
      twoWorkersTurnsPerS: two.turnsPerSec,
      scaling: ratio,
      oneWorkerIdleP50Ms: one.idle.p50,
      twoWorkersIdleP50Ms: two.idle.p50,
      oneWorkerCpuBusyPct: one.cpu?.busyPct,
      oneWorkerStoreCpuPct: one.cpu?.groups
        .filter((g) => g.group === 'FerretDB' || g.group === 'PostgreSQL')
        .reduce((a, g) => a + g.pct, 0),
    };
  } finally {
    await model.close();
  }
}
