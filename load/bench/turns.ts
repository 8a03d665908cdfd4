/**
 * Section b (and e on the real adapters): turn overhead with a zero-latency scripted model. Each
 * session has an SSE stream (`?include=chunks`) open before its turns; a turn is timed from the
 * POST …/events to the first `agent.message_chunk` frame and to `session.status_idle`.
 * `openStream` and `turn` also drive the worker-process section (workers.ts) through a gateway.
 */
import http from 'node:http';
import { OPERATOR_TENANT, type BenchClient, type BenchPlatform } from './context.js';
import type { BenchSettings } from './settings.js';
import { turnsFromClientProcess, type ClientProcessTurns } from './turnClientProcess.js';
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

const TURN_TIMEOUT_MS = 15_000;
const MESSAGE = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] };

type FrameHandler = (event: string, data: string) => void;

export interface Stream {
  onFrame: FrameHandler | null;
  close(): void;
}

/** Opens GET /v1/sessions/:id/events/stream?include=chunks and parses its frames. */
export function openStream(p: BenchClient, sessionId: string): Promise<Stream> {
  const u = new URL(p.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent: false,
        host: u.hostname,
        port: u.port,
        method: 'GET',
        path: `/v1/sessions/${sessionId}/events/stream?include=chunks`,
        headers: { 'x-api-key': p.apiKey, accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`SSE ${sessionId}: HTTP ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        const stream: Stream = { onFrame: null, close: () => req.destroy() };
        let buf = '';
        res.on('data', (chunk: string) => {
          buf += chunk;
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const raw = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let event = 'message';
            let data = '';
            for (const line of raw.split('\n')) {
              if (line.startsWith('event: ')) event = line.slice(7);
              else if (line.startsWith('data: ')) data = line.slice(6);
            }
            if (event !== 'ping') stream.onFrame?.(event, data);
          }
        });
        res.on('error', () => {});
        resolve(stream);
      },
    );
    req.on('error', (err) => reject(err));
    req.end();
  });
}

/**
 * One fresh session of `p` with its SSE stream open; the stream subscribes just after its
 * headers, so this returns after a moment's wait (the standalone scripts' set-up).
 */
export async function sessionWithStream(p: BenchClient): Promise<{ sid: string; stream: Stream }> {
  const [sid] = (await p.sessions(1)).sessionIds;
  const stream = await openStream(p, sid!);
  await sleep(100);
  return { sid: sid!, stream };
}

export interface TurnTiming {
  firstChunkMs: number;
  idleMs: number;
  sessionErrors: number;
}

export async function turn(p: BenchClient, stream: Stream, sessionId: string): Promise<TurnTiming> {
  const t0 = nowMs();
  let first = NaN;
  let sessionErrors = 0;
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<number>((resolve, reject) => {
    stream.onFrame = (event) => {
      if (event === 'agent.message_chunk' && Number.isNaN(first)) first = nowMs() - t0;
      else if (event === 'session.error') sessionErrors++;
      else if (event === 'session.status_idle') resolve(nowMs() - t0);
    };
    timer = setTimeout(
      () =>
        reject(
          new Error(`turn on ${sessionId}: no session.status_idle within ${TURN_TIMEOUT_MS} ms`),
        ),
      TURN_TIMEOUT_MS,
    );
  });
  try {
    const r = await p.json('POST', `/v1/sessions/${sessionId}/events`, MESSAGE);
    if (r.status !== 202)
      throw new Error(
        `POST /v1/sessions/${sessionId}/events: HTTP ${r.status} ${JSON.stringify(r.body)}`,
      );
    const idleMs = await idle;
    return { firstChunkMs: first, idleMs, sessionErrors };
  } finally {
    clearTimeout(timer);
    stream.onFrame = null;
    idle.catch(() => {});
  }
}

/** One phase's timings: `first` and `idle` per turn (ms), failed turns, session.error frames. */
export interface PhaseTimings {
  first: number[];
  idle: number[];
  errors: number;
  sessionErrors: number;
}

/**
 * Sequential turns on one session, `turns` of them or for `seconds`, whichever ends first;
 * stops after 3 failed turns (the first failures are logged).
 */
export async function sequentialTurns(
  c: BenchClient,
  stream: Stream,
  sessionId: string,
  turns: number,
  seconds: number,
): Promise<PhaseTimings> {
  const out: PhaseTimings = { first: [], idle: [], errors: 0, sessionErrors: 0 };
  const end = nowMs() + seconds * 1000;
  while (out.idle.length + out.errors < turns && nowMs() < end) {
    try {
      const t = await turn(c, stream, sessionId);
      out.idle.push(t.idleMs);
      out.sessionErrors += t.sessionErrors;
      if (!Number.isNaN(t.firstChunkMs)) out.first.push(t.firstChunkMs);
    } catch (err) {
      out.errors++;
      console.error(`  turn error: ${(err as Error).message}`);
      if (out.errors >= 3) break;
    }
  }
  return out;
}

/**
 * Every session loops turns (one at a time each) for `seconds`; a session stops after 3 failed
 * turns (its first failure is logged). `perSession`: turns each session completed.
 */
export async function concurrentTurns(
  c: BenchClient,
  streams: Stream[],
  sessionIds: string[],
  seconds: number,
): Promise<PhaseTimings & { perSession: number[] }> {
  const out = { first: [], idle: [] as number[], errors: 0, sessionErrors: 0 };
  const perSession = sessionIds.map(() => 0);
  const end = nowMs() + seconds * 1000;
  await Promise.all(
    sessionIds.map(async (id, i) => {
      let errs = 0;
      while (nowMs() < end) {
        try {
          const t = await turn(c, streams[i]!, id);
          out.idle.push(t.idleMs);
          perSession[i]!++;
          out.sessionErrors += t.sessionErrors;
        } catch (err) {
          out.errors++;
          if (++errs === 1) console.error(`  turn error: ${(err as Error).message}`);
          if (errs >= 3) break;
        }
      }
    }),
  );
  return { ...out, perSession };
}

const lastSeq = async (p: BenchPlatform, ids: string[]) => {
  let sum = 0;
  for (const id of ids)
    sum += (await p.server.platform.sessions.getDoc(OPERATOR_TENANT, id)).last_seq;
  return sum;
};

/** The section's figures; the flat keys are the goal rows of goals.ts (sequential p50/p99, concurrent rate). */
export interface TurnFigures {
  /** POST -> first agent.message_chunk, sequential turns on one session, ms. */
  firstChunkP50Ms: number;
  firstChunkP99Ms: number;
  /** POST -> session.status_idle, sequential turns on one session, ms. */
  idleP50Ms: number;
  idleP99Ms: number;
  /** Turns per second across all sessions, each session one turn at a time. */
  turnsPerS: number;
  sequential: {
    turns: number;
    errors: number;
    firstChunk: Summary;
    idle: Summary;
    eventsPerTurn: number;
  };
  concurrent: {
    sessions: number;
    turns: number;
    errors: number;
    turnsPerSec: number;
    idle: Summary;
    eventsPerSec: number;
  };
  /** The same phases with the client in its own process, on fresh sessions (section b only). */
  clientProcess?: ClientProcessTurns;
}

export async function turnsSection(
  p: BenchPlatform,
  s: BenchSettings,
  title = 'b. Turn overhead (zero-latency scripted model, SSE ?include=chunks already open)',
  withClientProcess = true,
): Promise<TurnFigures> {
  printSection(title);
  const { sessionIds } = await p.sessions(Math.max(1, s.sessions));
  const streams = await Promise.all(sessionIds.map((id) => openStream(p, id)));
  try {
    // The stream subscribes just after its headers: give it a moment, then one warm-up turn each.
    await sleep(100);
    await Promise.all(sessionIds.map((id, i) => turn(p, streams[i]!, id)));

    // Sequential turns on one session.
    const sid = sessionIds[0]!;
    const seqBefore = await lastSeq(p, [sid]);
    const {
      first,
      idle,
      errors: seqErrors,
      sessionErrors: seqSessionErrors,
    } = await sequentialTurns(p, streams[0]!, sid, s.turns, s.seconds);
    const eventsPerTurn = idle.length ? ((await lastSeq(p, [sid])) - seqBefore) / idle.length : NaN;
    const firstS = summarize(first);
    const idleS = summarize(idle);
    const row = (name: string, x: Summary) => [
      name,
      fmtInt(x.n),
      fmt(x.p50),
      fmt(x.p90),
      fmt(x.p99),
      fmt(x.max),
      fmt(x.mean),
    ];
    printTable(
      `sequential turns on one session (${idle.length} turns, bounded by ${s.turns} turns / ${s.seconds}s)`,
      ['measure', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'mean ms'],
      [row('POST -> first agent.message_chunk', firstS), row('POST -> session.status_idle', idleS)],
      [
        `errors: ${seqErrors}; session.error frames (model retries): ${seqSessionErrors}; persisted events per turn: ${fmt(eventsPerTurn, 1)}`,
        ...(first.length < idle.length
          ? [`${idle.length - first.length} turns had no agent.message_chunk frame`]
          : []),
      ],
    );

    // Concurrent turns: every session loops turns for `seconds`.
    const before = await lastSeq(p, sessionIds);
    const busBefore = p.server.platform.bus.stats();
    const t0 = nowMs();
    const {
      idle: cIdle,
      perSession,
      errors: cErrors,
      sessionErrors: cSessionErrors,
    } = await concurrentTurns(p, streams, sessionIds, s.seconds);
    const elapsed = (nowMs() - t0) / 1000;
    const events = (await lastSeq(p, sessionIds)) - before;
    const busAfter = p.server.platform.bus.stats();
    const cS = summarize(cIdle);
    const concurrent = {
      sessions: sessionIds.length,
      turns: cIdle.length,
      errors: cErrors,
      turnsPerSec: cIdle.length / elapsed,
      idle: cS,
      eventsPerSec: events / elapsed,
    };
    printTable(
      `concurrent turns across ${sessionIds.length} sessions for ${s.seconds}s (each session: one turn at a time)`,
      [
        'sessions',
        'turns',
        'turns/s',
        'idle p50 ms',
        'idle p99 ms',
        'idle max ms',
        'events/s',
        'errors',
      ],
      [
        [
          String(concurrent.sessions),
          fmtInt(concurrent.turns),
          fmt(concurrent.turnsPerSec, 1),
          fmt(cS.p50),
          fmt(cS.p99),
          fmt(cS.max),
          fmtInt(concurrent.eventsPerSec),
          fmtInt(cErrors),
        ],
      ],
      [
        'events/s: persisted session events (log appends) per second during these turns',
        `turns per session: min ${Math.min(...perSession)}, max ${Math.max(...perSession)}`,
        `session.error frames (model retries): ${cSessionErrors}; bus commands retried: ${busAfter.retried - busBefore.retried}, dead-lettered: ${busAfter.deadLettered - busBefore.deadLettered}`,
      ],
    );
    const clientProcess = withClientProcess ? await clientProcessPhase(p, s) : undefined;
    return {
      firstChunkP50Ms: firstS.p50,
      firstChunkP99Ms: firstS.p99,
      idleP50Ms: idleS.p50,
      idleP99Ms: idleS.p99,
      turnsPerS: concurrent.turnsPerSec,
      sequential: {
        turns: idle.length,
        errors: seqErrors,
        firstChunk: firstS,
        idle: idleS,
        eventsPerTurn,
      },
      concurrent,
      ...(clientProcess ? { clientProcess } : {}),
    };
  } finally {
    for (const st of streams) st.close();
  }
}

/**
 * The sequential and concurrent phases again, driven by a client process (turnClient.ts) on
 * fresh sessions: a user's client is never in the server's process, and in this one its
 * request building and frame parsing share the event loop with the platform and delay the
 * frames it times. The turn floor is measured the same way (baselines.ts).
 */
export async function clientProcessPhase(
  p: BenchClient,
  s: BenchSettings,
  sessionIds?: string[],
  label = 'the same with the client in its own process',
): Promise<ClientProcessTurns> {
  const ids = sessionIds ?? (await p.sessions(Math.max(1, s.sessions))).sessionIds;
  const r = await turnsFromClientProcess({
    url: p.url,
    apiKey: p.apiKey,
    sessionIds: ids,
    turns: s.turns,
    seconds: s.seconds,
  });
  const row = (name: string, x: Summary) => [
    name,
    fmtInt(x.n),
    fmt(x.p50),
    fmt(x.p99),
    fmt(x.mean),
  ];
  printTable(
    `${label} (fresh sessions; ${ids.length} for the concurrent phase)`,
    ['measure', 'n', 'p50 ms', 'p99 ms', 'mean ms'],
    [
      row('sequential: POST -> first agent.message_chunk', r.firstChunk),
      row('sequential: POST -> session.status_idle', r.idle),
      row(`concurrent: POST -> idle (${fmt(r.turnsPerSec, 1)} turns/s)`, r.concurrentIdle),
    ],
    [`errors: ${r.errors}`],
  );
  return r;
}
