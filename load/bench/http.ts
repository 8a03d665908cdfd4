/**
 * Section a: GET /v1/agents/:id on the platform beside a bare fastify route that returns a
 * JSON document of the same size, with the same client settings, in the same run.
 */
import Fastify from 'fastify';
import type { BenchPlatform } from './context.js';
import { runLoad, type LoadResult } from './loadgen.js';
import { fmt, fmtInt, printSection, printTable } from './stats.js';
import type { BenchSettings } from './settings.js';

export interface HttpFigures {
  platform: LoadResult;
  bare: LoadResult;
  ratio: number;
}

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
    const platform = await runLoad({ ...common, url: p.url });
    const bareRes = await runLoad({ ...common, url: bareUrl });
    const ratio = platform.rps / bareRes.rps;
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
      `GET, ${s.connections} keep-alive connections, ${s.seconds}s each after ${s.warmupMs / 1000}s warm-up, body ${docBytes} bytes`,
      ['target', 'req/s', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'client'],
      [row('platform GET /v1/agents/:id', platform), row('bare fastify, same JSON', bareRes)],
      [
        `ratio platform/bare req/s: ${fmt(ratio, 3)} (platform adds auth, rate limit, store read, serialization)`,
        ...[...platform.errorSamples, ...bareRes.errorSamples].map((e) => `error sample: ${e}`),
      ],
    );
    return { platform, bare: bareRes, ratio };
  } finally {
    await bare.close();
  }
}
