import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, type ComponentOverrides, type RunningServer } from '@agentfleet/server';
import { startScriptedModelServer, type ScriptedModelServer } from './fixtures/scriptedModel.js';

export const BETA = { 'anthropic-beta': 'managed-agents-2026-04-01' };

/** True when the real servers are configured (CI): every platform then runs on them. */
export const REAL = !!(
  process.env.KAFKA_BROKERS &&
  process.env.MONGODB_URL &&
  process.env.REDIS_URL
);

/**
 * Env for a platform on the real adapters, isolated by its own namespace: Kafka topics and
 * consumer groups, Redis keys and the MongoDB database all carry it.
 */
export function realAdapterEnv(
  namespace = `t${Math.random().toString(36).slice(2, 10)}`,
  opts: { faultSet?: boolean } = {},
): Record<string, string> {
  if (!REAL) return {};
  // The fault set (FAULT_*) is the one the fault tests restart; the main set is never restarted.
  const e = (name: string) =>
    (opts.faultSet ? process.env[`FAULT_${name}`] : undefined) ?? process.env[name]!;
  // MongoDB always from the main set: the fault set's FerretDB is bounced by the store's own
  // restart test (core/test/store.mongo.test.ts), and a fleet whose Redis and Kafka are being
  // restarted must not also lose its store at the same time (its objects live in GridFS there).
  const mongo = new URL(process.env.MONGODB_URL!.replace(/^mongodb:/, 'http:'));
  mongo.pathname = `/${namespace}`;
  return {
    KAFKA_BROKERS: e('KAFKA_BROKERS'),
    REDIS_URL: e('REDIS_URL'),
    MONGODB_URL: mongo.toString().replace(/^http:/, 'mongodb:'),
    FLEET_NAMESPACE: namespace,
    KAFKA_PARTITIONS: '4',
    // A killed process's partitions move on after 6 s instead of Kafka's default 30 s.
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
  };
}

export interface TestPlatform {
  url: string;
  apiKey: string;
  operatorKey: string;
  model: ScriptedModelServer;
  server: RunningServer;
  dataDir: string;
  client: Anthropic;
  clientFor(apiKey: string): Anthropic;
  newTenant(name?: string): Promise<{ tenantId: string; apiKey: string; client: Anthropic }>;
  http(
    path: string,
    init?: RequestInit & { key?: string | null; json?: unknown },
  ): Promise<Response>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The settings every test platform starts with: loopback, the data dir, the operator key, the
 * test root secret (upgrade fixtures were written under it) and the scripted model.
 */
export function testServerEnv(
  dataDir: string,
  operatorKey: string,
  modelUrl: string,
): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    API_KEY: operatorKey,
    PLATFORM_ROOT_SECRET: 'test-root-secret-0123456789abcdef0123456789',
    // Fleet mode has no console without it (the embedded data dir would generate one).
    CONSOLE_SESSION_SECRET: 'test-console-secret-0123456789abcdef0123456',
    ANTHROPIC_API_KEY: 'sk-test-vendor',
    ANTHROPIC_BASE_URL: modelUrl,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
  };
}

/** Starts the whole platform (embedded adapters) and a scripted model server on 127.0.0.1. */
export async function startPlatform(
  opts: {
    env?: Record<string, string>;
    model?: ScriptedModelServer;
    /** Components replacing the config's defaults (server/src/components.ts). */
    overrides?: ComponentOverrides;
  } = {},
): Promise<TestPlatform> {
  const model = opts.model ?? (await startScriptedModelServer());
  const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-test-'));
  const operatorKey = `op-${Math.random().toString(36).slice(2)}`;
  const env: Record<string, string> = {
    ...testServerEnv(dataDir, operatorKey, model.url),
    RECOVERY_SCAN_MS: '500',
    SHUTDOWN_GRACE_MS: '2000',
    ...realAdapterEnv(),
    ...opts.env,
    // The scripted model listens on loopback, which the egress policy refuses for tenants'
    // model cards: the operator opens it (plus whatever the test opens itself).
    EGRESS_ALLOW_PRIVATE_HOSTS: [new URL(model.url).host, opts.env?.EGRESS_ALLOW_PRIVATE_HOSTS]
      .filter(Boolean)
      .join(','),
  };
  let server = await startServer('all', env, opts.overrides);
  const clientFor = (apiKey: string) =>
    new Anthropic({ apiKey, baseURL: server.url, maxRetries: 0, timeout: 20_000 });
  const t: TestPlatform = {
    get url() {
      return server.url;
    },
    apiKey: operatorKey,
    operatorKey,
    model,
    get server() {
      return server;
    },
    dataDir,
    get client() {
      return clientFor(operatorKey);
    },
    clientFor,
    async newTenant(name = 'tenant') {
      const res = await t.http('/v1/svc/tenants', {
        method: 'POST',
        json: { name },
        headers: BETA,
      });
      if (res.status !== 200)
        throw new Error(`tenant create failed: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { tenant_id: string; api_key: string };
      return { tenantId: body.tenant_id, apiKey: body.api_key, client: clientFor(body.api_key) };
    },
    async http(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.key !== null) headers.set('x-api-key', init.key ?? operatorKey);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(`${server.url}${path}`, { ...init, headers, body });
    },
    async restart() {
      const port = new URL(server.url).port;
      await server.close();
      server = await startServer('all', { ...env, PORT: port }, opts.overrides);
    },
    async close() {
      await server.close();
      if (!opts.model) await model.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

/** Reads an SSE response into frames until `until` returns true or the stream ends. */
export async function readSse(
  res: Response,
  until: (f: { event: string; data: any; id?: string }) => boolean,
  timeoutMs = 15_000,
) {
  const frames: Array<{ event: string; data: any; id?: string }> = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (Date.now() > deadline)
        throw new Error(`SSE timeout; got ${frames.map((f) => f.event).join(',')}`);
      const { value, done } = await reader.read();
      if (done) return frames;
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: { event: string; data: any; id?: string } = { event: 'message', data: null };
        for (const line of raw.split('\n')) {
          if (line.startsWith('event: ')) f.event = line.slice(7);
          else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
          else if (line.startsWith('id: ')) f.id = line.slice(4);
        }
        if (f.event === 'ping') continue;
        frames.push(f);
        if (until(f)) return frames;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

export const waitFor = async <T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('waitFor: condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
};
