/**
 * The platform under bench: the whole platform in this process (embedded adapters by default,
 * or the real ones when `env` carries their URLs; data dir in a temp dir) and the scripted model
 * server (zero latency, answers 'ok') in a process of its own, as a provider is (procs.ts
 * startModelProcess; in this process with `inlineModel`, for a section that scripts it), both
 * on 127.0.0.1. Also a small JSON client over a keep-alive node:http Agent for setup and turn
 * requests, usable against any gateway URL.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type ComponentOverrides, type RunningServer } from '@agentfleet/server';
import { startModelProcess } from './procs.js';

/** The operator key's tenant (core's DEFAULT_TENANT). */
export const OPERATOR_TENANT = 'tnt_default';

/** The parts of test/kit/fixtures/scriptedModel.ts the bench uses. */
export interface ScriptedModel {
  url: string;
  requests: Array<{ model: string }>;
  script(
    model: string,
    ...responses: Array<{ steps: Array<{ text: string } | { delay_ms: number }> }>
  ): void;
  close(): Promise<void>;
}

/** Starts the scripted model server of test/kit/fixtures/scriptedModel.ts on 127.0.0.1. */
export async function startScriptedModel(): Promise<ScriptedModel> {
  // The fixture lives in the test workspace (outside this project's tsconfig): load it at run time.
  const fixture = new URL('../../test/kit/fixtures/scriptedModel.ts', import.meta.url).href;
  const { startScriptedModelServer } = (await import(fixture)) as {
    startScriptedModelServer: () => Promise<ScriptedModel>;
  };
  const model = await startScriptedModelServer();
  // The fixture keeps every request whole for the tests' assertions. Over a bench run that is
  // hundreds of MB of request bodies (each holds the whole conversation) on the heap the
  // in-process platform shares, and its GC time; the bench only counts requests by model.
  const kept = model.requests;
  kept.push = (...rs) =>
    Array.prototype.push.apply(
      kept,
      rs.map((r) => ({ model: r.model })),
    );
  return model;
}

/** HTTP client of one gateway (operator key): JSON requests and session setup. */
export interface BenchClient {
  url: string;
  apiKey: string;
  /** Keep-alive agent for setup and turn requests (not the load loop's). */
  agent: http.Agent;
  json<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Creates an agent, an environment and `n` sessions; returns the ids. */
  sessions(n: number): Promise<{ agentId: string; environmentId: string; sessionIds: string[] }>;
}

export interface BenchPlatform extends BenchClient {
  server: RunningServer;
  /** The scripted model, with `inlineModel` only (else it runs in its own process). */
  model: ScriptedModel | undefined;
  close(): Promise<void>;
}

/** A client of the gateway at `url` (127.0.0.1 only). Destroy `agent` when done. */
export function benchClient(url: string, apiKey: string): BenchClient {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1') throw new Error(`bench: server is not on 127.0.0.1 (${url})`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  const json = <T>(method: string, path: string, body?: unknown) =>
    new Promise<{ status: number; body: T }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          agent,
          host: u.hostname,
          port: u.port,
          path,
          method,
          headers: {
            'x-api-key': apiKey,
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : null) as T });
            } catch (err) {
              reject(err);
            }
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${path}: timeout`)));
      req.on('error', reject);
      req.end(payload);
    });

  const expectOk = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const r = await json<T>(method, path, body);
    if (r.status < 200 || r.status >= 300)
      throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  return {
    url,
    apiKey,
    agent,
    json,
    async sessions(n) {
      const ag = await expectOk<{ id: string }>('POST', '/v1/agents', {
        name: 'bench-agent',
        model: 'claude-sonnet-4-5',
      });
      const env = await expectOk<{ id: string }>('POST', '/v1/environments', {
        name: `bench-env-${Math.random().toString(36).slice(2, 8)}`,
      });
      const sessionIds: string[] = [];
      for (let i = 0; i < n; i++) {
        const s = await expectOk<{ id: string }>('POST', '/v1/sessions', {
          agent: ag.id,
          environment_id: env.id,
        });
        sessionIds.push(s.id);
      }
      return { agentId: ag.id, environmentId: env.id, sessionIds };
    },
  };
}

/**
 * The settings every bench platform runs with, in-process or as processes: its data dir and
 * operator key, a fixed root secret, the vendor fallback pointed at the scripted model, quiet
 * logs, and no effective rate limit, per-address connection cap or per-tenant stream cap (the
 * bench drives far more than the default 6000/min, 256 connections and 256 streams).
 */
export function benchPlatformEnv(o: {
  dataDir: string;
  apiKey: string;
  modelUrl: string;
}): Record<string, string> {
  return {
    DATA_DIR: o.dataDir,
    API_KEY: o.apiKey,
    PLATFORM_ROOT_SECRET: 'bench-root-secret-0123456789abcdef0123456789',
    ANTHROPIC_API_KEY: 'sk-bench-vendor',
    ANTHROPIC_BASE_URL: o.modelUrl,
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: String(Number.MAX_SAFE_INTEGER),
    // The fan-out section opens BENCH_FANOUT_SUBSCRIBERS streams of one tenant from one address.
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: '1000000',
    SSE_MAX_STREAMS_PER_TENANT: '1000000',
  };
}

/**
 * Starts the whole platform in this process. `env` is merged over the bench's settings (the real
 * adapters' URLs and FLEET_NAMESPACE select Kafka, MongoDB and Redis instead of the embedded ones).
 */
export async function startBenchPlatform(
  env: Record<string, string> = {},
  overrides: ComponentOverrides = {},
  { inlineModel = false }: { inlineModel?: boolean } = {},
): Promise<BenchPlatform> {
  const inline = inlineModel ? await startScriptedModel() : undefined;
  const model: { url: string; close(): Promise<void> } = inline ?? (await startModelProcess());
  const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-bench-'));
  const apiKey = `op-bench-${Math.random().toString(36).slice(2)}`;
  let server: RunningServer;
  try {
    server = await startServer(
      'all',
      {
        PORT: '0',
        HOST: '127.0.0.1',
        ...benchPlatformEnv({ dataDir, apiKey, modelUrl: model.url }),
        ...env,
      },
      overrides,
    );
  } catch (err) {
    await model.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  let client: BenchClient;
  try {
    client = benchClient(server.url, apiKey);
  } catch (err) {
    await server.close();
    await model.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }

  return {
    ...client,
    server,
    model: inline,
    async close() {
      client.agent.destroy();
      try {
        await server.close();
      } finally {
        await model.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
