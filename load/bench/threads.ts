/**
 * Section `threads`: multiagent coordinator sessions (core/src/threads, workers/src/turn/threads.ts)
 * on the embedded adapters. Each round, a fresh coordinator session gets one user.message; its
 * scripted model answers with eight `start_thread` calls in one response; each child thread
 * answers `ok` after one model call and replies; the coordinator's turn waits for the replies
 * (it polls every 100 ms), asks its model again and ends with one session.status_idle. Rounds
 * alternate with a baseline round: 8 single-agent sessions running one turn each concurrently.
 * Two phases: the model at zero latency, then the threads' model (and the baseline's) delayed
 * BENCH_MODEL_DELAY_MS (the coordinator's stays at zero), where the coordinator waits for replies.
 * Figures: the round's wall time (POST → the primary's session.status_idle on its SSE stream);
 * turns/s of both (a threaded round is 9 turns: the coordinator's and its 8 threads'); and, from
 * the stored logs, thread start (the primary's session.thread_created) → the thread's first
 * event in its own log (GET …/threads/:thread_id/events), its turn start, its answer, its idle,
 * and thread idle → the reply delivered in the primary log.
 *
 * A fresh session per round: a session holds at most MAX_THREADS (20) threads. The platform and
 * the model (threadsModelChild.ts, in its own process, scriptable over IPC) are the section's own.
 */
import { startBenchPlatform, type BenchPlatform } from './context.js';
import { startModelProcess, type ModelProcess } from './procs.js';
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

const MODEL_CHILD = new URL('./threadsModelChild.ts', import.meta.url).pathname;
const COORD_MODEL = 'claude-bench-coordinator';
const THREAD_MODEL = 'claude-bench-thread';
const THREAD_AGENT = 'bench-thread';
const THREADS = 8;
/** Timed rounds of each kind at most (also bounded by 2 × BENCH_SECONDS for both kinds). */
const MAX_ROUNDS = 50;

/** The model process's IPC requests (threadsModelChild.ts). */
function modelControl(m: ModelProcess) {
  let next = 0;
  const ask = (msg: Record<string, unknown>) =>
    new Promise<{ counts?: Record<string, number> }>((resolve, reject) => {
      const id = ++next;
      const timer = setTimeout(() => reject(new Error('threads model: no IPC answer')), 10_000);
      const on = (r: { id?: number; counts?: Record<string, number> }) => {
        if (r.id !== id) return;
        clearTimeout(timer);
        m.child.off('message', on);
        resolve(r);
      };
      m.child.on('message', on);
      m.child.send({ id, ...msg });
    });
  return {
    script: (model: string, ...responses: unknown[]) =>
      ask({ script: model, responses }).then(() => {}),
    counts: async () => (await ask({ counts: true })).counts ?? {},
  };
}

const expectOk = async <T = any>(
  p: BenchPlatform,
  method: string,
  path: string,
  body?: unknown,
) => {
  const r = await p.json<T>(method, path, body);
  if (r.status < 200 || r.status >= 300)
    throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
};
const events = async (p: BenchPlatform, path: string) =>
  (await expectOk<{ data: any[] }>(p, 'GET', `${path}/events?limit=1000`)).data;
const at = (e: { created_at: string } | undefined) => (e ? Date.parse(e.created_at) : NaN);

/** `n` answers of `ok` after `delayMs` each. */
const delayed = (n: number, delayMs: number) =>
  Array.from({ length: n }, () => ({ steps: [{ delay_ms: delayMs }, { text: 'ok' }] }));

/** One threaded round's figures, ms (per thread: arrays of THREADS). */
interface Round {
  wallMs: number;
  coordinatorCalls: number;
  createdToFirst: number[];
  firstType: string[];
  createdToRunning: number[];
  createdToAnswer: number[];
  createdToIdle: number[];
  idleToDelivered: number[];
  /** POST's first thread_created → the last thread's idle; last delivery → the primary's idle. */
  postToCreated: number;
  threadsSpan: number;
  tail: number;
}

async function threadedRound(
  p: BenchPlatform,
  model: ReturnType<typeof modelControl>,
  agentId: string,
  envId: string,
  delayMs: number,
): Promise<Round> {
  const s = await expectOk<{ id: string }>(p, 'POST', '/v1/sessions', {
    agent: agentId,
    environment_id: envId,
  });
  const stream = await openStream(p, s.id);
  try {
    await sleep(100); // the stream subscribes just after its headers
    await model.script(COORD_MODEL, {
      steps: Array.from({ length: THREADS }, (_, i) => ({
        tool_use: { name: 'start_thread', input: { agent_name: THREAD_AGENT, task: `task ${i}` } },
      })),
      stop_reason: 'tool_use',
    });
    if (delayMs) await model.script(THREAD_MODEL, ...delayed(THREADS, delayMs));
    const before = (await model.counts())[COORD_MODEL] ?? 0;
    const postAt = Date.now();
    const t = await turn(p, stream, s.id);
    const coordinatorCalls = ((await model.counts())[COORD_MODEL] ?? 0) - before;
    const primary = await events(p, `/v1/sessions/${s.id}`);
    const created = primary.filter((e) => e.type === 'session.thread_created');
    if (created.length !== THREADS)
      throw new Error(`threaded round: ${created.length} session.thread_created, not ${THREADS}`);
    const r: Round = {
      wallMs: t.idleMs,
      coordinatorCalls,
      createdToFirst: [],
      firstType: [],
      createdToRunning: [],
      createdToAnswer: [],
      createdToIdle: [],
      idleToDelivered: [],
      postToCreated: at(created[0]) - postAt,
      threadsSpan: NaN,
      tail: NaN,
    };
    let lastIdle = -Infinity;
    let lastDelivered = -Infinity;
    for (const c of created) {
      const tid = c.session_thread_id as string;
      const own = await events(p, `/v1/sessions/${s.id}/threads/${tid}`);
      const t0 = at(c);
      const idle = own.find((e) => e.type === 'session.status_idle');
      const delivered = primary.find(
        (e) => e.type === 'agent.thread_message_received' && e.from_session_thread_id === tid,
      );
      r.createdToFirst.push(at(own[0]) - t0);
      r.firstType.push(own[0]?.type ?? '-');
      r.createdToRunning.push(at(own.find((e) => e.type === 'session.status_running')) - t0);
      r.createdToAnswer.push(at(own.find((e) => e.type === 'agent.message')) - t0);
      r.createdToIdle.push(at(idle) - t0);
      r.idleToDelivered.push(at(delivered) - at(idle));
      lastIdle = Math.max(lastIdle, at(idle));
      lastDelivered = Math.max(lastDelivered, at(delivered));
    }
    r.threadsSpan = lastIdle - at(created[0]);
    r.tail = at(primary.findLast((e) => e.type === 'session.status_idle')) - lastDelivered;
    return r;
  } finally {
    stream.close();
  }
}

/** One baseline round: one turn on each single-agent session at once; its wall time, ms. */
async function baselineRound(
  p: BenchPlatform,
  model: ReturnType<typeof modelControl>,
  streams: Stream[],
  ids: string[],
  delayMs: number,
) {
  if (delayMs) await model.script(THREAD_MODEL, ...delayed(ids.length, delayMs));
  const t0 = nowMs();
  await Promise.all(ids.map((id, i) => turn(p, streams[i]!, id)));
  return nowMs() - t0;
}

/** Alternating threaded and baseline rounds for `seconds` (at most MAX_ROUNDS of each). */
interface Phase {
  delayMs: number;
  rounds: Round[];
  base: number[];
  errors: number;
}

async function phase(
  p: BenchPlatform,
  model: ReturnType<typeof modelControl>,
  setup: { coordId: string; envId: string; streams: Stream[]; ids: string[] },
  delayMs: number,
  seconds: number,
): Promise<Phase> {
  const { coordId, envId, streams, ids } = setup;
  const out: Phase = { delayMs, rounds: [], base: [], errors: 0 };
  const end = nowMs() + seconds * 1000;
  while (out.rounds.length < MAX_ROUNDS && nowMs() < end && out.errors < 3) {
    try {
      out.rounds.push(await threadedRound(p, model, coordId, envId, delayMs));
      out.base.push(await baselineRound(p, model, streams, ids, delayMs));
    } catch (err) {
      out.errors++;
      console.error(`  round error: ${(err as Error).message}`);
    }
  }
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const p50 = (xs: number[]) => fmt(summarize(xs).p50, 0);
const rate = (turns: number, wallMs: number[]) => (turns * wallMs.length) / (sum(wallMs) / 1000);

function report(phases: Phase[], seconds: number): void {
  const row = (name: string, x: Summary) => [
    name,
    fmtInt(x.n),
    fmt(x.p50, 1),
    fmt(x.p99, 1),
    fmt(x.max, 1),
    fmt(x.mean, 1),
  ];
  for (const ph of phases) {
    const flat = (f: (r: Round) => number[]) => summarize(ph.rounds.flatMap(f));
    const firstTypes = [...new Set(ph.rounds.flatMap((r) => r.firstType))].join(', ');
    printTable(
      `per thread, threads' model ${ph.delayMs ? `delayed ${ph.delayMs} ms` : 'zero-latency'} (${ph.rounds.length} rounds x ${THREADS} threads, from the stored logs; created_at has ms resolution)`,
      ['measure', 'n', 'p50 ms', 'p99 ms', 'max ms', 'mean ms'],
      [
        row(
          "thread_created -> thread's first event",
          flat((r) => r.createdToFirst),
        ),
        row(
          "thread_created -> thread's session.status_running",
          flat((r) => r.createdToRunning),
        ),
        row(
          "thread_created -> thread's agent.message",
          flat((r) => r.createdToAnswer),
        ),
        row(
          "thread_created -> thread's session.status_idle",
          flat((r) => r.createdToIdle),
        ),
        row(
          'thread idle -> reply delivered (primary log)',
          flat((r) => r.idleToDelivered),
        ),
      ],
      [
        `thread_created: the primary's session.thread_created; the thread's first event in its own log: ${firstTypes || '-'}`,
        `round errors: ${ph.errors}`,
      ],
    );
  }
  const rows: string[][] = [];
  const notes: string[] = [
    `turns/s: ${THREADS + 1} turns per threaded round (coordinator + threads), ${THREADS} per baseline round, over the rounds' wall time (session set-up excluded)`,
  ];
  for (const ph of phases) {
    const label = ph.delayMs ? `, threads' model +${ph.delayMs} ms` : '';
    const wall = summarize(ph.rounds.map((r) => r.wallMs));
    const baseWall = summarize(ph.base);
    rows.push(
      [
        `coordinator + ${THREADS} threads${label}`,
        fmtInt(wall.n),
        fmt(
          rate(
            THREADS + 1,
            ph.rounds.map((r) => r.wallMs),
          ),
          1,
        ),
        fmt(wall.p50, 1),
        fmt(wall.p99, 1),
        fmt(wall.max, 1),
      ],
      [
        `baseline: ${THREADS} sessions x 1 turn${label}`,
        fmtInt(baseWall.n),
        fmt(rate(THREADS, ph.base), 1),
        fmt(baseWall.p50, 1),
        fmt(baseWall.p99, 1),
        fmt(baseWall.max, 1),
      ],
    );
    const calls = summarize(ph.rounds.map((r) => r.coordinatorCalls));
    notes.push(
      `threaded round${label}, p50: POST -> first thread_created ${p50(ph.rounds.map((r) => r.postToCreated))} ms; first thread_created -> last thread idle ${p50(ph.rounds.map((r) => r.threadsSpan))} ms; last reply delivered -> primary idle ${p50(ph.rounds.map((r) => r.tail))} ms; coordinator model calls p50 ${fmt(calls.p50, 0)}, max ${fmt(calls.max, 0)}`,
    );
  }
  printTable(
    `rounds: ${THREADS} threads from one coordinator turn (user.message -> the session's idle) vs ${THREADS} single-agent sessions, one turn each at once (alternating; ${MAX_ROUNDS} rounds / ${seconds}s per phase)`,
    ['measure', 'rounds', 'turns/s', 'wall p50 ms', 'wall p99 ms', 'wall max ms'],
    rows,
    notes,
  );
}

export interface ThreadsFigures {
  rounds: number;
  threadStartToFirstEvent: Summary;
  roundWall: Summary;
  threadedTurnsPerS: number;
  baselineTurnsPerS: number;
}

export async function threadsSection(s: BenchSettings): Promise<ThreadsFigures> {
  printSection(
    `threads. Coordinator sessions: ${THREADS} concurrent threads per round vs ${THREADS} single-agent sessions (embedded adapters, scripted model)`,
  );
  const m = await startModelProcess(MODEL_CHILD);
  let p: BenchPlatform | undefined;
  let streams: Stream[] = [];
  try {
    // The section's own platform on this model (the model process it starts itself idles).
    p = await startBenchPlatform({ ANTHROPIC_BASE_URL: m.url });
    const model = modelControl(m);
    const worker = await expectOk(p, 'POST', '/v1/agents', {
      name: THREAD_AGENT,
      model: THREAD_MODEL,
    });
    const coord = await expectOk(p, 'POST', '/v1/agents', {
      name: 'bench-coordinator',
      model: COORD_MODEL,
      multiagent: { type: 'coordinator', agents: [worker.id] },
    });
    const single = await expectOk(p, 'POST', '/v1/agents', {
      name: 'bench-single',
      model: THREAD_MODEL,
    });
    const env = await expectOk(p, 'POST', '/v1/environments', { name: 'bench-threads' });
    const ids: string[] = [];
    for (let i = 0; i < THREADS; i++)
      ids.push(
        (await expectOk(p, 'POST', '/v1/sessions', { agent: single.id, environment_id: env.id }))
          .id,
      );
    streams = await Promise.all(ids.map((id) => openStream(p!, id)));
    await sleep(100);
    const setup = { coordId: coord.id, envId: env.id, streams, ids };
    // Warm-up: one round of each.
    await threadedRound(p, model, coord.id, env.id, 0);
    await baselineRound(p, model, streams, ids, 0);
    // Zero latency: the platform's own cost. Threads' model delayed: the coordinator's wait.
    const phases = [
      await phase(p, model, setup, 0, s.seconds),
      await phase(p, model, setup, s.modelDelayMs, s.seconds),
    ];
    report(phases, s.seconds);
    const zero = phases[0]!;
    return {
      rounds: zero.rounds.length,
      threadStartToFirstEvent: summarize(zero.rounds.flatMap((r) => r.createdToFirst)),
      roundWall: summarize(zero.rounds.map((r) => r.wallMs)),
      threadedTurnsPerS: rate(
        THREADS + 1,
        zero.rounds.map((r) => r.wallMs),
      ),
      baselineTurnsPerS: rate(THREADS, zero.base),
    };
  } finally {
    for (const st of streams) st.close();
    try {
      await p?.close();
    } finally {
      await m.close();
    }
  }
}
