/**
 * The built output runs: `node server/dist/cli.js` (what `npm run build` emits; no tsx, no
 * `source` export condition, so every package is loaded from its dist/ and the in-sandbox agent
 * from sandbox-agent's bundle) as a real process on a temp data dir and a free port.
 * - role all: prints `agentfleet all started`; through the official TS SDK an environment, an
 *   agent and a session are created, a message is sent and the turn finishes, after one bash
 *   tool call run by the bundled agent in a bubblewrap sandbox;
 * - role worker (a fleet process: on the real servers, so where they are configured, as in CI):
 *   starts and answers /healthz on its ops port; without them it exits 1 naming the settings.
 * Requires `npm run build` first (`npm test` runs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { REAL, realAdapterEnv } from '../../kit/harness.js';
import { REPO } from '../../kit/process.js';

const CLI = join(REPO, 'server/dist/cli.js');
const MODEL = 'claude-sonnet-4-5';

interface BuiltProcess {
  child: ChildProcess;
  output(): string;
  url: string;
}

/** Starts `node server/dist/cli.js <role>` and resolves with the address it printed. */
function startBuilt(role: 'all' | 'worker', env: Record<string, string>): Promise<BuiltProcess> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  const child = spawn(process.execPath, [CLI, role], {
    cwd: tmpdir(),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process did not start:\n${out}`)), 30_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`process exited ${code}:\n${out}`));
    };
    child.stdout!.on('data', () => {
      const m = /(?:REST|ops):\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (!/started/.test(out) || !m) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ child, output: () => out, url: m[1]! });
    });
    child.on('exit', onExit);
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

describe('the built output (node server/dist/cli.js)', () => {
  let model: ScriptedModelServer;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const baseEnv = (dataDir: string): Record<string, string> => ({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    API_KEY: 'op-built-output',
    PLATFORM_ROOT_SECRET: 'test-root-secret-0123456789abcdef0123456789',
    ANTHROPIC_API_KEY: 'sk-test-vendor',
    ANTHROPIC_BASE_URL: model.url,
    EGRESS_ALLOW_PRIVATE_HOSTS: new URL(model.url).host,
    LOG_LEVEL: 'error',
    SHUTDOWN_GRACE_MS: '2000',
  });
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'agentfleet-built-'));
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    model = await startScriptedModelServer();
  });
  afterAll(async () => {
    for (const c of children) await stop(c);
    await model?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('role all: starts, and a session turn with a bash tool call in a sandbox finishes through the SDK', async () => {
    const p = await startBuilt('all', {
      ...baseEnv(join(tempDir(), 'data')),
      SANDBOX_DRIVER: 'local',
    });
    children.push(p.child);
    expect(p.output()).toMatch(/^agentfleet all started\n/);
    const client = new Anthropic({
      apiKey: 'op-built-output',
      baseURL: p.url.replace(/\/v1$/, ''),
      maxRetries: 0,
      timeout: 30_000,
    });
    const environment = await client.beta.environments.create({ name: 'built' });
    const agent = await client.beta.agents.create({
      name: 'built',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const session = await client.beta.sessions.create({
      agent: agent.id,
      environment_id: environment.id,
    });
    model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo built-$((6*7))' } } }] },
      { steps: [{ text: 'done from the built output' }] },
    );
    const stream = await client.beta.sessions.events.stream(session.id);
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'run it' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const results = seen.filter((e) => e.type === 'agent.tool_result');
    expect(results).toHaveLength(1);
    expect(results[0].is_error, results[0].content[0].text).toBe(false);
    expect(results[0].content[0].text).toMatch(/^built-42\n/);
    const reply = seen.filter((e) => e.type === 'agent.message').at(-1);
    expect(reply.content).toEqual([{ type: 'text', text: 'done from the built output' }]);
    expect(await stop(p.child)).toBe(0);
  }, 90_000);

  it('role worker without the fleet servers: exits 1 naming the settings it needs', async () => {
    const child = spawn(process.execPath, [CLI, 'worker'], {
      cwd: tmpdir(),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...baseEnv(tempDir()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(err).toMatch(
      /^agentfleet: invalid configuration:\n {2}- role 'worker' runs as one process of a fleet: KAFKA_BROKERS, MONGODB_URL and REDIS_URL must all be set/,
    );
  }, 30_000);

  it.skipIf(!REAL)(
    'role worker: starts on the real servers and answers /healthz',
    async () => {
      const p = await startBuilt('worker', {
        ...baseEnv(join(tempDir(), 'data')),
        ...realAdapterEnv(),
        SANDBOX_DRIVER: 'none',
      });
      children.push(p.child);
      expect(p.output()).toMatch(/^agentfleet worker started\n/);
      const res = await fetch(`${p.url}/healthz`);
      expect(res.status).toBe(200);
      expect(await stop(p.child)).toBe(0);
    },
    60_000,
  );
});
