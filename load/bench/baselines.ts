/**
 * Section "floors": what the goal rows would cost without the platform, measured in the same run
 * on the same machine, so each platform figure is printed beside a floor rather than alone.
 * - turn floor: a bare fastify server with the platform's two routes (POST …/events answers 202
 *   and starts a streaming call to the same scripted model, in its own process as in section b;
 *   GET …/events/stream is an SSE stream that gets one `agent.message_chunk` frame per text
 *   delta and `session.status_idle` at the end), timed by the same client code as section b
 *   (turns.ts `openStream` and `turn`): the cost of HTTP in, one model call and SSE out, with no
 *   store, bus, lease or event log.
 * - append floor: better-sqlite3 on a temp file with the embedded store's settings (WAL,
 *   synchronous=NORMAL), a table of `(_id, doc JSON)` with an expression index on
 *   (session_id, seq), ~1 KB documents: one row per transaction (sequential appends on one
 *   session) and 8 rows per transaction (8 sessions appending at once under group commit).
 * Figures only; returns {@link FloorFigures}.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import http, { type ServerResponse } from 'node:http';
import Fastify from 'fastify';
import { benchClient } from './context.js';
import { startModelProcess } from './procs.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, nowMs, printSection, printTable, summarize, type Summary } from './stats.js';
import { clientProcessPhase, concurrentTurns, openStream, sequentialTurns } from './turns.js';
import type { ClientProcessTurns } from './turnClientProcess.js';

export interface FloorFigures {
  turn: {
    firstChunk: Summary;
    idle: Summary;
    turnsPerSec: number;
    sessions: number;
    /** The same client in its own process (turns.ts clientProcessPhase), as for section b. */
    clientProcess: ClientProcessTurns;
  };
  append: { sequentialPerSec: number; concurrentPerSec: number; maxMs: number };
}

const frame = (event: string, data: unknown) =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** Keep-alive connections to the scripted model (the platform keeps its model connection too). */
const modelAgent = new http.Agent({ keepAlive: true });

/** POSTs a JSON body with node:http; the response body. */
function postJson(url: string, body: unknown): Promise<http.IncomingMessage> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent: modelAgent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
        'x-api-key': 'floor',
      },
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(payload);
  });
}

/** Streams one model answer from the scripted model into `out` as platform-like SSE frames. */
async function relay(modelUrl: string, out: ServerResponse | undefined): Promise<void> {
  const res = await postJson(`${modelUrl}/v1/messages`, {
    model: 'floor',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const raw = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = raw.split('\n').find((l) => l.startsWith('data: '));
      if (!data) continue;
      const ev = JSON.parse(data.slice(6)) as { type: string; delta?: { text?: string } };
      if (ev.type === 'content_block_delta' && ev.delta?.text !== undefined)
        out?.write(
          frame('agent.message_chunk', { type: 'agent.message_chunk', text: ev.delta.text }),
        );
    }
  }
  out?.write(frame('session.status_idle', { type: 'session.status_idle' }));
}

async function turnFloor(s: BenchSettings): Promise<FloorFigures['turn']> {
  const model = await startModelProcess();
  const streams = new Map<string, ServerResponse>();
  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/events/stream', (req, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    reply.raw.write(': open\n\n');
    streams.set(req.params.id, reply.raw);
    req.raw.on('close', () => streams.delete(req.params.id));
  });
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/events', async (req, reply) => {
    relay(model.url, streams.get(req.params.id)).catch(() => {});
    return reply.code(202).send({ data: [] });
  });
  const url = (await app.listen({ host: '127.0.0.1', port: 0 })).replace('[::1]', '127.0.0.1');
  const client = benchClient(url, 'floor');
  const opened: Array<{ close(): void }> = [];
  try {
    const ids = Array.from({ length: Math.max(1, s.sessions) }, (_, i) => `sesn_floor${i}`);
    const st = await Promise.all(ids.map((id) => openStream(client, id)));
    opened.push(...st);
    // Half of BENCH_SECONDS per phase; a failed floor turn fails the section.
    const seq = await sequentialTurns(client, st[0]!, ids[0]!, s.turns, s.seconds / 2);
    const t0 = nowMs();
    const conc = await concurrentTurns(client, st, ids, s.seconds / 2);
    const turnsPerSec = conc.idle.length / ((nowMs() - t0) / 1000);
    if (seq.errors || conc.errors)
      throw new Error(`turn floor: ${seq.errors + conc.errors} turns failed`);
    const fresh = ids.map((id) => `${id}c`);
    const clientProcess = await clientProcessPhase(
      client,
      { ...s, seconds: s.seconds / 2 },
      fresh,
      'turn floor with the client in its own process',
    );
    return {
      firstChunk: summarize(seq.first),
      idle: summarize(seq.idle),
      turnsPerSec,
      sessions: ids.length,
      clientProcess,
    };
  } finally {
    for (const x of opened) x.close();
    client.agent.destroy();
    await app.close();
    await model.close();
  }
}

type Db = {
  pragma(s: string): unknown;
  exec(s: string): void;
  prepare(s: string): { run(...a: unknown[]): unknown };
  transaction<A extends unknown[]>(fn: (...a: A) => void): (...a: A) => void;
  close(): void;
};

function appendFloor(s: BenchSettings): FloorFigures['append'] {
  const require = createRequire(import.meta.url);
  const Database = require('better-sqlite3') as new (file: string) => Db;
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  const db = new Database(join(dir, 'floor.sqlite3'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(
      `CREATE TABLE events (_id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID;
       CREATE UNIQUE INDEX events_session_seq ON events (json_extract(doc,'$.session_id'), json_extract(doc,'$.seq'));`,
    );
    const insert = db.prepare('INSERT INTO events (_id, doc) VALUES (?, ?)');
    const pad = 'x'.repeat(900);
    const seq = new Map<string, number>();
    const row = (session: string) => {
      const n = (seq.get(session) ?? 0) + 1;
      seq.set(session, n);
      const id = `sevt_${session}_${n}`;
      insert.run(
        id,
        JSON.stringify({ _id: id, session_id: session, seq: n, type: 'user.message', pad }),
      );
    };
    const many = db.transaction((sessions: string[]) => sessions.forEach(row));
    const ms = Math.min(3, s.seconds / 2) * 1000;
    let max = 0;
    const timed = (fn: () => void) => {
      const t = nowMs();
      fn();
      max = Math.max(max, nowMs() - t);
    };
    let n = 0;
    let t0 = nowMs();
    while (nowMs() - t0 < ms) {
      timed(() => row('sesn_seq'));
      n++;
    }
    const sequentialPerSec = n / ((nowMs() - t0) / 1000);
    const eight = Array.from({ length: 8 }, (_, i) => `sesn_c${i}`);
    n = 0;
    t0 = nowMs();
    while (nowMs() - t0 < ms) {
      timed(() => many(eight));
      n += 8;
    }
    return { sequentialPerSec, concurrentPerSec: n / ((nowMs() - t0) / 1000), maxMs: max };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function floorsSection(s: BenchSettings): Promise<FloorFigures> {
  printSection('floors. The same work without the platform (same run, same client)');
  const t = await turnFloor(s);
  const a = appendFloor(s);
  printTable(
    'turn floor: bare fastify + one streaming call to the scripted model + SSE frames (no store, bus, lease or event log)',
    ['measure', 'p50 ms', 'p99 ms', 'turns/s'],
    [
      ['POST → first chunk', fmt(t.firstChunk.p50), fmt(t.firstChunk.p99), ''],
      ['POST → idle', fmt(t.idle.p50), fmt(t.idle.p99), ''],
      [`concurrent, ${t.sessions} sessions`, '', '', fmt(t.turnsPerSec, 1)],
    ],
  );
  printTable(
    'append floor: better-sqlite3, WAL, synchronous=NORMAL, ~1 KB JSON rows, (session_id, seq) index',
    ['mode', 'rows/s', 'max ms'],
    [
      ['1 row per transaction (sequential)', fmtInt(a.sequentialPerSec), ''],
      ['8 rows per transaction (8 sessions, group commit)', fmtInt(a.concurrentPerSec), ''],
      ['slowest transaction', '', fmt(a.maxMs, 3)],
    ],
  );
  return { turn: t, append: a };
}
