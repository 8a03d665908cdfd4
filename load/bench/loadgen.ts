/**
 * The bounded keep-alive HTTP load loop: `connections` concurrent loops, each issuing one
 * request at a time over a keep-alive node:http Agent, for `durationMs` (after `warmupMs`,
 * whose requests are not counted) or until `maxRequests`, whichever comes first.
 *
 * `runLoad` runs the loop on a worker thread so the client does not share the event loop of
 * the server under test (both live in this process); if the worker cannot start it falls back
 * to the calling thread and says so in `thread`.
 */
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import { nowMs, summarize, type Summary } from './stats.js';

export interface LoadOptions {
  /** Base URL, e.g. http://127.0.0.1:1234 (127.0.0.1 only). */
  url: string;
  path: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationMs: number;
  warmupMs?: number;
  /** Hard bound on measured requests (default 5,000,000). */
  maxRequests?: number;
  /** Per-request timeout (default 10 s); a timed-out request counts as an error. */
  timeoutMs?: number;
  /** Status codes counted as success (default: 200 only). */
  okStatus?: number[];
}

export interface LoadResult {
  requests: number;
  errors: number;
  /** First few distinct error descriptions, for the report. */
  errorSamples: string[];
  elapsedMs: number;
  rps: number;
  bytes: number;
  /** Latency of successful requests, ms. */
  latency: Summary;
  thread: 'worker' | 'main';
}

const DEFAULT_MAX_REQUESTS = 5_000_000;

function assertLoopback(url: string): URL {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost')
    throw new Error(`loadgen: refusing non-loopback target ${url}`);
  return u;
}

/** One request over the agent; resolves with status and body size, rejects on error/timeout. */
function once(
  agent: http.Agent,
  u: URL,
  o: LoadOptions,
  timeoutMs: number,
): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: u.hostname,
        port: u.port,
        path: o.path,
        method: o.method ?? 'GET',
        headers: o.headers,
      },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(o.body);
  });
}

/** Runs the load loop on the calling thread. */
export async function runLoadInline(o: LoadOptions): Promise<Omit<LoadResult, 'thread'>> {
  const u = assertLoopback(o.url);
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: o.connections,
    maxFreeSockets: o.connections,
  });
  const timeoutMs = o.timeoutMs ?? 10_000;
  const ok = new Set(o.okStatus ?? [200]);
  const maxRequests = o.maxRequests ?? DEFAULT_MAX_REQUESTS;
  const errorSamples = new Set<string>();
  try {
    const phase = async (ms: number, record: boolean) => {
      const latencies: number[] = [];
      let issued = 0;
      let errors = 0;
      let bytes = 0;
      const start = nowMs();
      const end = start + ms;
      const loop = async () => {
        while (nowMs() < end && issued < maxRequests) {
          issued++;
          const t0 = nowMs();
          try {
            const r = await once(agent, u, o, timeoutMs);
            if (ok.has(r.status)) {
              if (record) latencies.push(nowMs() - t0);
              bytes += r.bytes;
            } else {
              errors++;
              if (errorSamples.size < 5) errorSamples.add(`HTTP ${r.status}`);
            }
          } catch (err) {
            errors++;
            if (errorSamples.size < 5) errorSamples.add(String((err as Error).message ?? err));
          }
        }
      };
      await Promise.all(Array.from({ length: o.connections }, loop));
      return { latencies, errors, bytes, elapsedMs: nowMs() - start };
    };
    if (o.warmupMs) await phase(o.warmupMs, false);
    errorSamples.clear();
    const m = await phase(o.durationMs, true);
    const requests = m.latencies.length + m.errors;
    return {
      requests,
      errors: m.errors,
      errorSamples: [...errorSamples],
      elapsedMs: m.elapsedMs,
      rps: m.latencies.length / (m.elapsedMs / 1000),
      bytes: m.bytes,
      latency: summarize(m.latencies),
    };
  } finally {
    agent.destroy();
  }
}

/** Runs the load loop on a worker thread (falls back to the calling thread). */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  assertLoopback(o.url);
  let tsxApi: string;
  try {
    tsxApi = import.meta.resolve('tsx/esm/api');
  } catch {
    return { ...(await runLoadInline(o)), thread: 'main' };
  }
  const entry = new URL('./loadgen.worker.ts', import.meta.url).href;
  // The worker has no tsx hooks of its own: register them first, then load the entry.
  const code = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  const bound = (o.warmupMs ?? 0) + o.durationMs + (o.timeoutMs ?? 10_000) + 10_000;
  const started = await new Promise<LoadResult | null>((resolve) => {
    let settled = false;
    const w = new Worker(code, { eval: true, workerData: o });
    const done = (v: LoadResult | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void w.terminate();
      resolve(v);
    };
    const timer = setTimeout(() => done(null), bound);
    w.on('message', (m: { result?: Omit<LoadResult, 'thread'>; error?: string }) => {
      if (m.result) done({ ...m.result, thread: 'worker' });
      else done(null);
    });
    w.on('error', () => done(null));
    w.on('exit', () => done(null));
  });
  return started ?? { ...(await runLoadInline(o)), thread: 'main' };
}
