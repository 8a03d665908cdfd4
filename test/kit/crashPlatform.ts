/**
 * Set-up shared by the kill -9 tests that run the all-in-one platform as a child process
 * (test/e2e/sandbox/permission-crash.test.ts, test/e2e/turns/budget-recovery.test.ts, test/e2e/turns/rescheduling.test.ts):
 * a scripted model and a data directory that outlive the process (so a restart finds its
 * state), the child's base environment with fast recovery, and a small JSON API caller.
 * Plumbing only: the tests keep their own assertions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from './fixtures/scriptedModel.js';
import { realAdapterEnv, waitFor } from './harness.js';
import { freePort, startProcess } from './process.js';

export interface CrashFixture {
  model: ScriptedModelServer;
  dataDir: string;
}

/** Registers beforeAll/afterAll hooks that start a scripted model and a temp data directory. */
export function useCrashFixture(
  dirPrefix: string,
  modelOpts?: Parameters<typeof startScriptedModelServer>[0],
): CrashFixture {
  const fx = {} as CrashFixture;
  beforeAll(async () => {
    fx.model = await startScriptedModelServer(modelOpts);
    fx.dataDir = mkdtempSync(join(tmpdir(), dirPrefix));
  });
  afterAll(async () => {
    await fx.model?.close();
    if (fx.dataDir) rmSync(fx.dataDir, { recursive: true, force: true });
  });
  return fx;
}

/** The child's base env: port, data dir, operator key and secret, quick recovery scans. */
export function crashEnv(opts: {
  port: number;
  dataDir: string;
  key: string;
  secret: string;
}): Record<string, string> {
  return {
    PORT: String(opts.port),
    DATA_DIR: opts.dataDir,
    API_KEY: opts.key,
    PLATFORM_ROOT_SECRET: opts.secret,
    LOG_LEVEL: 'error',
    RECOVERY_SCAN_MS: '200',
    SESSION_LEASE_TTL_MS: '3000',
  };
}

/** A JSON caller for the child: POST with a body, GET without; returns status and parsed body. */
export function apiCaller(port: number, key: string, extraHeaders: Record<string, string> = {}) {
  const base = `http://127.0.0.1:${port}`;
  return async (path: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...extraHeaders },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: (await r.json()) as any };
  };
}

/**
 * A session's events through the child's API, and the two waits crash tests make on them: the
 * first `session.status_idle` (a recovered turn ended), and a last event that is an idle with
 * `end_turn` (the turn finished after the client answered).
 */
export function sessionEvents(call: ReturnType<typeof apiCaller>) {
  const events = async (sid: string) =>
    (await call(`/v1/sessions/${sid}/events?limit=1000`)).body.data as any[];
  return {
    events,
    firstIdle: (sid: string) =>
      waitFor(async () => {
        const ev = await events(sid);
        return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
      }, 60_000),
    endTurn: (sid: string) =>
      waitFor(async () => {
        const ev = await events(sid);
        return ev.at(-1)?.type === 'session.status_idle' &&
          ev.at(-1).stop_reason.type === 'end_turn'
          ? ev
          : null;
      }, 60_000),
  };
}

/**
 * The all-in-one child of a crash test on `fx` (no sandbox driver, the scripted model reachable
 * through the egress policy, the real adapters when configured), not started yet: its env, a
 * JSON caller with the beta header, `start()` for each (re)start, and `addCard` for a model
 * card served by the scripted model.
 */
export async function crashPlatform(fx: CrashFixture, name: string) {
  const port = await freePort();
  const key = `op-${name}`;
  const env = {
    ...crashEnv({
      port,
      dataDir: fx.dataDir,
      key,
      secret: `${name}-secret-0123456789abcdef0123456789`,
    }),
    SANDBOX_DRIVER: 'none',
    EGRESS_ALLOW_PRIVATE_HOSTS: new URL(fx.model.url).host,
    ...realAdapterEnv(),
  };
  const call = apiCaller(port, key, { 'anthropic-beta': 'managed-agents-2026-04-01' });
  return {
    env,
    call,
    start: () => startProcess('all', env),
    addCard: async (model: string, extra: Record<string, unknown> = {}) => {
      const card = await call('/v1/svc/model_cards', {
        model_id: model,
        provider: 'anthropic',
        model,
        base_url: fx.model.url,
        api_key: 'sk-crash',
        ...extra,
      });
      if (card.status !== 200) throw new Error(`model card: ${JSON.stringify(card.body)}`);
    },
  };
}
