/**
 * Standalone (not a section of `npm run bench`): the store calls of one turn on the embedded
 * platform, by collection and method, then the POST → first chunk / idle p50 of N sequential
 * turns on one session (default 1,000; `N=`). A turn here is section b's: zero-latency scripted
 * model in its own process, SSE ?include=chunks open, platform and client in this process.
 * `PROF=<file>` also writes a CPU profile of the timed turns (Chrome DevTools format).
 * `CONCURRENT=<sessions>` times (and profiles) section b's concurrent phase instead, driven by
 * a client process on that many fresh sessions for `BENCH_SECONDS` (default 6), and prints
 * turns/s and the event loop's busy share.
 *
 *   npm run build && npx tsx load/bench/turnCalls.ts   (the built platform, as npm start runs it)
 *
 * The counter wraps TenantCollection's methods in this process only (the product is untouched).
 */
import { EventLog, TenantCollection } from '@agentfleet/core';
import { startBenchPlatform } from './context.js';
import { cpuProfile } from './cpuProfile.js';
import { sleep, summarize } from './stats.js';
import { turnsFromClientProcess } from './turnClientProcess.js';
import { sessionWithStream, turn, type Stream } from './turns.js';

const METHODS = [
  'insert',
  'insertMany',
  'get',
  'findOne',
  'find',
  'count',
  'updateOne',
  'findOneAndUpdate',
  'deleteOne',
  'deleteMany',
  'scanAll',
] as const;

const counts = new Map<string, number>();
let counting = false;
const proto = TenantCollection.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
for (const m of METHODS) {
  const orig = proto[m]!;
  proto[m] = function (this: { spec: { name: string } }, ...a: unknown[]) {
    if (counting)
      counts.set(`${this.spec.name}.${m}`, (counts.get(`${this.spec.name}.${m}`) ?? 0) + 1);
    return orig.apply(this, a);
  };
}

const log = EventLog.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
const append = log.append!;
log.append = function (this: unknown, ...a: unknown[]) {
  if (counting) counts.set('EventLog.append', (counts.get('EventLog.append') ?? 0) + 1);
  return append.apply(this, a);
};

const n = Number(process.env.N ?? 1000);
const p = await startBenchPlatform({ SANDBOX_DRIVER: 'none' });
try {
  const { sid, stream } = await sessionWithStream(p);
  for (let i = 0; i < 50; i++) await turn(p, stream, sid);
  counting = true;
  await turn(p, stream, sid);
  await sleep(200); // the drain's last reads after the idle
  counting = false;
  console.log('store calls of one turn (an EventLog.append is one embedded transaction):');
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${v}  ${k}`);
  const stop = await cpuProfile(process.env.PROF);
  const concurrent = Number(process.env.CONCURRENT ?? 0);
  const line =
    concurrent > 0 ? await concurrentPhase(concurrent) : await sequentialPhase(stream, sid);
  await stop();
  console.log(line);
  stream.close();
} finally {
  await p.close();
}

/** N sequential turns on the measured session. */
async function sequentialPhase(stream: Stream, sid: string) {
  const first: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = await turn(p, stream, sid);
    first.push(t.firstChunkMs);
    idle.push(t.idleMs);
  }
  const f = summarize(first);
  const d = summarize(idle);
  return `${n} sequential turns: first chunk p50 ${f.p50.toFixed(2)} ms, idle p50 ${d.p50.toFixed(2)} ms, idle mean ${d.mean.toFixed(2)} ms`;
}

/** Section b's concurrent phase from a client process on `sessions` fresh sessions. */
async function concurrentPhase(sessions: number) {
  const ids = (await p.sessions(sessions)).sessionIds;
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const perSecond: string[] = [];
  let last = elu0;
  const tick = setInterval(() => {
    const now = performance.eventLoopUtilization();
    perSecond.push((100 * performance.eventLoopUtilization(now, last).utilization).toFixed(0));
    last = now;
  }, 1000);
  try {
    const r = await turnsFromClientProcess({
      url: p.url,
      apiKey: p.apiKey,
      sessionIds: ids,
      turns: 20,
      seconds: Number(process.env.BENCH_SECONDS ?? 6),
    });
    const cpu = process.cpuUsage(cpu0);
    return (
      `event loop busy % per second: ${perSecond.join(' ')}\n` +
      `${sessions} sessions, client process: ${r.turnsPerSec.toFixed(1)} turns/s, idle p50 ${r.concurrentIdle.p50.toFixed(2)} ms, ${r.errors} errors; ` +
      `event loop ${(100 * performance.eventLoopUtilization(elu0).utilization).toFixed(0)} % busy, ` +
      `process CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms`
    );
  } finally {
    clearInterval(tick);
  }
}
