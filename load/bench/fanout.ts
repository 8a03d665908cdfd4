/**
 * Section: SSE fan-out. BENCH_FANOUT_SUBSCRIBERS (default 1,000) SSE subscribers, opened by a
 * separate client process (fanoutClient.ts), on ONE session during back-to-back streaming
 * turns of a zero-latency model that writes 200 text deltas per turn (fanoutModel.ts), through
 * GET …/events/stream?include=chunks. The platform (embedded adapters, temp data dir) runs as its
 * own process, `server/src/cli.ts all` like `npm start` (BENCH_FANOUT_PLATFORM=process, the
 * default), or in this process (BENCH_FANOUT_PLATFORM=inprocess). Baseline in the same
 * run, with the same client: a naive node:http SSE broadcast in this process that writes each
 * frame to each subscriber with its own `res.write(JSON.stringify(...))`, in bursts of 200
 * frames (one turn's chunks) with an event-loop turn between bursts, frames of the same shape
 * and size as the platform's chunk frames; it waits for 'drain' of a subscriber whose socket
 * refused data (so its memory stays bounded; a naive server that does not wait is no faster).
 *
 * Deliveries/s = chunk frames read by all subscribers in the window / window length (the
 * platform's other frames of a turn: status, stream start/end and the final agent.message, are
 * delivered too but not counted). Delivery latency = the client's read time minus the time
 * stamped in the frame: for the platform, when the model wrote that delta (so it includes the
 * model → worker hop and the turn loop); for the baseline, when the frame was built. Both on
 * this machine's Date.now() clock (ms resolution).
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchClient, benchPlatformEnv, startBenchPlatform, type BenchClient } from './context.js';
import type { ClientReport } from './fanoutClient.js';
import { startStampedModel, stampedText } from './fanoutModel.js';
import { BENCH_CHILD_EXEC_ARGV, startPlatformProcess, stopProcess } from './procs.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, printSection, printTable, sleep } from './stats.js';
import { openStream, turn } from './turns.js';

const CHUNKS_PER_TURN = 200;
/** Characters of each delta's text (a stamp and padding): about a few tokens of model output. */
const CHUNK_CHARS = 24;
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLIENT = fileURLToPath(new URL('./fanoutClient.ts', import.meta.url));
const IPC_TIMEOUT_MS = 60_000;

export interface FanoutFigures {
  subscribers: number;
  deliveriesPerS: number;
  baselineDeliveriesPerS: number;
  ratio: number;
  p50Ms: number;
  p99Ms: number;
  baselineP50Ms: number;
  baselineP99Ms: number;
  turns: number;
  /** Connections cut during the platform's window (slow consumers). */
  cut: number;
}

/** The client process and a typed request/answer over its IPC channel. */
interface Client {
  child: ChildProcess;
  ask<T>(msg: object, key: string): Promise<T>;
}

function startClient(): Client {
  const child = fork(CLIENT, [], {
    cwd: REPO,
    execArgv: BENCH_CHILD_EXEC_ARGV,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(msg: object, key: string) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`fan-out client: no '${key}' answer`)),
        IPC_TIMEOUT_MS,
      );
      const onMsg = (m: Record<string, unknown>) => {
        if (key in m) done(null, m as T);
      };
      const onExit = () => done(new Error('fan-out client exited'));
      function done(err: Error | null, v?: T) {
        clearTimeout(timer);
        child.off('message', onMsg);
        child.off('exit', onExit);
        if (err) reject(err);
        else resolve(v!);
      }
      child.on('message', onMsg);
      child.once('exit', onExit);
      child.send(msg);
    });
  return { child, ask };
}

async function openAll(c: Client, url: string, headers: Record<string, string>, n: number) {
  const r = await c.ask<{ opened: number; failed: number }>(
    { cmd: 'open', url, headers, n },
    'opened',
  );
  if (r.opened < n)
    throw new Error(
      `fan-out: ${r.failed} of ${n} SSE connections failed (check \`ulimit -n\`: two fds per subscriber on this machine)`,
    );
}

/** The platform under test: in this process, or `server/src/cli.ts all` as a child process. */
async function startPlatformUnderTest(
  s: BenchSettings,
  modelUrl: string,
): Promise<{ client: BenchClient; close(): Promise<void> }> {
  if (s.fanoutPlatform === 'inprocess') {
    const p = await startBenchPlatform({ ANTHROPIC_BASE_URL: modelUrl });
    return { client: p, close: () => p.close() };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-bench-fanout-'));
  const apiKey = `op-bench-${Math.random().toString(36).slice(2)}`;
  try {
    const proc = await startPlatformProcess('all', benchPlatformEnv({ dataDir, apiKey, modelUrl }));
    const client = benchClient(proc.url, apiKey);
    return {
      client,
      async close() {
        client.agent.destroy();
        await stopProcess(proc.child);
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

/** The platform: back-to-back turns on one session for `seconds`, `n` subscribers reading. */
async function measurePlatform(c: Client, s: BenchSettings, n: number) {
  const model = await startStampedModel(CHUNKS_PER_TURN, CHUNK_CHARS);
  try {
    const platform = await startPlatformUnderTest(s, model.url);
    try {
      const p = platform.client;
      const [sid] = (await p.sessions(1)).sessionIds;
      const url = `${p.url}/v1/sessions/${sid}/events/stream?include=chunks`;
      await openAll(c, url, { 'x-api-key': p.apiKey, accept: 'text/event-stream' }, n);
      const own = await openStream(p, sid!); // this process's stream: tells when a turn is idle
      try {
        await turn(p, own, sid!); // warm-up
        await c.ask({ cmd: 'start' }, 'started');
        const end = Date.now() + s.seconds * 1000;
        let turns = 0;
        while (Date.now() < end) {
          await turn(p, own, sid!);
          turns++;
        }
        const { report } = await c.ask<{ report: ClientReport }>({ cmd: 'stop' }, 'report');
        return { report, turns };
      } finally {
        own.close();
        await c.ask({ cmd: 'close' }, 'closedAll');
      }
    } finally {
      await platform.close();
    }
  } finally {
    await model.close();
  }
}

/** The naive broadcast: one res.write per frame per subscriber, JSON encoded per write. */
async function measureBaseline(c: Client, s: BenchSettings, n: number) {
  const subs = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    subs.add(res);
    req.on('close', () => subs.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`;
  let stop = false;
  try {
    await openAll(c, url, { accept: 'text/event-stream' }, n);
    const sessionId = 'sesn_0123456789abcdefghijklmn';
    const messageId = 'evt_0123456789abcdefghijklmn';
    const produce = async () => {
      while (!stop) {
        for (let j = 0; j < CHUNKS_PER_TURN; j++) {
          const ev = {
            type: 'agent.message_chunk',
            message_id: messageId,
            delta: stampedText(CHUNK_CHARS),
            index: 0,
            session_id: sessionId,
          };
          for (const res of subs) res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`);
        }
        await new Promise((r) => setImmediate(r));
        for (const res of subs)
          if (res.writableNeedDrain && !res.destroyed)
            await new Promise((r) => {
              res.once('drain', r);
              res.once('close', r);
            });
      }
    };
    await c.ask({ cmd: 'start' }, 'started');
    const producing = produce();
    await sleep(s.seconds * 1000);
    const { report } = await c.ask<{ report: ClientReport }>({ cmd: 'stop' }, 'report');
    stop = true;
    await producing;
    return report;
  } finally {
    stop = true;
    await c.ask({ cmd: 'close' }, 'closedAll');
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const rate = (r: ClientReport) => (r.frames * 1000) / r.windowMs;

export async function fanoutSection(s: BenchSettings): Promise<FanoutFigures> {
  const n = s.fanoutSubscribers;
  printSection(
    `Fan-out: ${fmtInt(n)} SSE subscribers (separate client process) on one session, ${CHUNKS_PER_TURN}-chunk turns, zero-latency model; platform ${s.fanoutPlatform === 'process' ? 'as its own process (cli.ts all)' : 'in-process'} vs a naive node:http SSE broadcast in this process, same client`,
  );
  const c = startClient();
  try {
    const platform = await measurePlatform(c, s, n);
    const base = await measureBaseline(c, s, n);
    const pr = platform.report;
    const figures: FanoutFigures = {
      subscribers: n,
      deliveriesPerS: rate(pr),
      baselineDeliveriesPerS: rate(base),
      ratio: rate(pr) / rate(base),
      p50Ms: pr.latency.p50,
      p99Ms: pr.latency.p99,
      baselineP50Ms: base.latency.p50,
      baselineP99Ms: base.latency.p99,
      turns: platform.turns,
      cut: pr.closed,
    };
    printTable(
      'Chunk frames delivered to every subscriber',
      ['', 'deliveries/s', 'bytes/frame', 'latency p50 ms', 'p99 ms', 'max ms', 'cut'],
      [
        [`platform (${platform.turns} turns)`, figures.deliveriesPerS, pr] as const,
        ['naive broadcast', figures.baselineDeliveriesPerS, base] as const,
      ].map(([label, perS, r]) => [
        label,
        fmtInt(perS),
        fmt(r.frames ? r.bytes / r.frames : NaN, 0),
        fmt(r.latency.p50, 0),
        fmt(r.latency.p99, 0),
        fmt(r.latency.max, 0),
        String(r.closed),
      ]),
      [
        `ratio: ${fmt(figures.ratio)}× the naive broadcast (goal ≥ 2.0×)`,
        "bytes/frame: wire bytes read (HTTP chunk framing included) / chunk frames; the platform's include its other frames of a turn",
        'latency: model write (platform) or frame build (naive) → client read; cut: connections ended by the server in the window',
      ],
    );
    return figures;
  } finally {
    await c.ask({ cmd: 'exit' }, 'never').catch(() => undefined);
    if (c.child.exitCode === null) c.child.kill('SIGKILL');
  }
}
