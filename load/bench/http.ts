/**
 * Section a: GET /v1/agents/:id on the platform beside a bare fastify route that returns a
 * JSON document of the same size, with the same client settings, in the same run. The two are
 * measured in alternating rounds (platform, bare, bare, platform: ABBA), each half of
 * BENCH_SECONDS, so a load change on a shared machine lands on both sides; the ratio is total
 * successful requests over total measured time of each side. Also printed: each server's
 * event-loop busy time per request (performance.eventLoopUtilization over its rounds; both
 * servers run on this process's main loop, the client on a worker thread), whose ratio is the
 * throughput ratio where the server loop is the bottleneck, and moves less with other load.
 */
import Fastify from 'fastify';
import type { BenchPlatform } from './context.js';
import { runLoad, type LoadResult } from './loadgen.js';
import { fmt, fmtInt, printSection, printTable } from './stats.js';
import type { BenchSettings } from './settings.js';

export interface HttpFigures {
  /** Each target over all its rounds (rps, requests); latency figures of its first round. */
  platform: LoadResult;
  bare: LoadResult;
  /** platform req/s over bare req/s, both over all rounds. */
  ratio: number;
  /** Event-loop busy time per request of each server (same loop, same process), µs. */
  platformBusyUs: number;
  bareBusyUs: number;
}

const ORDER = ['platform', 'bare', 'bare', 'platform'] as const;

export async function httpSection(p: BenchPlatform, s: BenchSettings): Promise<HttpFigures> {
  printSection('a. HTTP read throughput: GET /v1/agents/:id vs bare fastify (same-sized JSON)');
  const { agentId } = await p.sessions(0);
  const got = await p.json<Record<string, unknown>>('GET', `/v1/agents/${agentId}`);
  if (got.status !== 200) throw new Error(`GET /v1/agents/${agentId}: HTTP ${got.status}`);
  const doc = got.body;
  const docBytes = Buffer.byteLength(JSON.stringify(doc));

  const bare = Fastify({ logger: false });
  bare.get('/v1/agents/:id', async () => doc);
  const bareUrl = (await bare.listen({ host: '127.0.0.1', port: 0 })).replace('[::1]', '127.0.0.1');
  try {
    const common = {
      path: `/v1/agents/${agentId}`,
      headers: { 'x-api-key': p.apiKey, accept: 'application/json' },
      connections: s.connections,
      durationMs: s.seconds * 1000,
      warmupMs: s.warmupMs,
    };
    const urls = { platform: p.url, bare: bareUrl };
    const rounds: Array<{ target: 'platform' | 'bare'; r: LoadResult; busyMs: number }> = [];
    for (const [i, target] of ORDER.entries()) {
      // Warm-up apart, so each round's event-loop figure covers only its measured requests.
      if (i === ORDER.indexOf(target) && s.warmupMs > 0)
        await runLoad({ ...common, url: urls[target], durationMs: s.warmupMs, warmupMs: 0 });
      const elu = performance.eventLoopUtilization();
      const r = await runLoad({
        ...common,
        url: urls[target],
        durationMs: (s.seconds * 1000) / 2,
        warmupMs: 0,
      });
      rounds.push({ target, r, busyMs: performance.eventLoopUtilization(elu).active });
    }
    /** Server event-loop busy time per request, µs: both servers share this process's loop. */
    const busyUs = (t: 'platform' | 'bare') => {
      const of = rounds.filter((x) => x.target === t);
      return (
        (1000 * of.reduce((a, x) => a + x.busyMs, 0)) / of.reduce((a, x) => a + x.r.requests, 0)
      );
    };
    /** One target's rounds as one result; latency figures are those of its first round. */
    const total = (t: 'platform' | 'bare'): LoadResult => {
      const of = rounds.filter((x) => x.target === t).map((x) => x.r);
      const ok = of.reduce((a, r) => a + r.requests - r.errors, 0);
      const elapsedMs = of.reduce((a, r) => a + r.elapsedMs, 0);
      return {
        ...of[0]!,
        requests: of.reduce((a, r) => a + r.requests, 0),
        errors: of.reduce((a, r) => a + r.errors, 0),
        errorSamples: [...new Set(of.flatMap((r) => r.errorSamples))].slice(0, 5),
        elapsedMs,
        rps: ok / (elapsedMs / 1000),
        bytes: of.reduce((a, r) => a + r.bytes, 0),
      };
    };
    const pt = total('platform');
    const bt = total('bare');
    const ratio = pt.rps / bt.rps;
    const platformBusyUs = busyUs('platform');
    const bareBusyUs = busyUs('bare');
    const row = (name: string, r: LoadResult) => [
      name,
      fmtInt(r.rps),
      fmtInt(r.requests),
      fmt(r.latency.p50),
      fmt(r.latency.p99),
      fmt(r.latency.max),
      fmtInt(r.errors),
      r.thread,
    ];
    printTable(
      `GET, ${s.connections} keep-alive connections, rounds of ${s.seconds / 2}s (each target warmed up ${s.warmupMs / 1000}s before its first), body ${docBytes} bytes`,
      ['round', 'req/s', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'client'],
      rounds.map((x, i) =>
        row(
          `${i + 1}. ${x.target === 'platform' ? 'platform GET /v1/agents/:id' : 'bare fastify, same JSON'}`,
          x.r,
        ),
      ),
      [
        `platform ${fmtInt(pt.rps)} req/s, bare ${fmtInt(bt.rps)} req/s over all rounds`,
        `ratio platform/bare req/s: ${fmt(ratio, 3)} (platform adds auth, rate limit, store read, serialization)`,
        `server event-loop busy per request: platform ${fmt(platformBusyUs, 1)} µs, bare ${fmt(bareBusyUs, 1)} µs (bare/platform ${fmt(bareBusyUs / platformBusyUs, 3)}: the ratio where the server loop is the bottleneck; less sensitive to other load on the machine)`,
        ...[...pt.errorSamples, ...bt.errorSamples].map((e) => `error sample: ${e}`),
      ],
    );
    return { platform: pt, bare: bt, ratio, platformBusyUs, bareBusyUs };
  } finally {
    await bare.close();
  }
}
