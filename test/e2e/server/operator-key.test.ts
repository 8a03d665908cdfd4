/**
 * The operator key of an embedded data dir, as a user meets it: real `agentfleet` processes
 * (the `npm start` entry) on a fresh data dir.
 *
 * - Config parsing writes nothing; a start that fails (no bubblewrap, the port taken) leaves no
 *   operator key hash behind; the start that stores one prints its key, and that key works.
 * - `rotate-operator-key` prints a new key once and stores only its hash; the old key is then
 *   refused (401) and the new one accepted, by a restarted server and by one left running;
 *   with API_KEY set it refuses.
 * - The console session secret is generated into the data dir (0600) and kept across restarts;
 *   fleet mode generates none (no console without CONSOLE_SESSION_SECRET).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, readDataDir } from '@agentfleet/core';
import { freePort, REPO, startProcess } from '../../kit/process.js';

const CLI = join(REPO, 'server/src/cli.ts');
const HASH_FILE = 'operator-key.sha256';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** A host where the worker cannot create cgroups (not root) runs the local driver only with limits opted out. */
const LIMITS_ENV: Record<string, string> =
  process.getuid?.() === 0 ? {} : { SANDBOX_UNSAFE_NO_LIMITS: 'true' };

const cli = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, ...args], {
    cwd: REPO,
    env: { HOME: process.env.HOME ?? '', PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });

const printedKey = (out: string) =>
  /operator API key[^\n]*\n\s+(afk_op_\S+)/i.exec(out)?.[1] ?? null;

async function status(port: number, key: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/v1/agents`, {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  });
  await r.arrayBuffer();
  return r.status;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const dirs: string[] = [];
const children: ChildProcess[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'agentfleet-opkey-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const c of children.splice(0)) await stop(c);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the operator key of an embedded data dir', () => {
  it('loadConfig writes nothing: no data dir, no secret', () => {
    const dataDir = join(tempDir(), 'data');
    const config = loadConfig('all', { DATA_DIR: dataDir });
    expect(config.dataDir).toBe(dataDir);
    expect(config.operatorKeyHash).toBeNull();
    expect(config.rootSecret).toBeNull();
    expect(existsSync(dataDir)).toBe(false);
    expect(loadConfig('all', { DATA_DIR: dataDir, API_KEY: 'k' }).operatorKeyHash).toBe(
      sha256('k'),
    );
  });

  it('a first start that fails (no bubblewrap) stores no operator key; the next start prints one that works', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    const failed = cli(['all'], { DATA_DIR: dataDir, PORT: '0', PATH: bin });
    expect(failed.status, failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/bubblewrap/);
    expect(printedKey(failed.stdout + failed.stderr)).toBeNull();
    expect(existsSync(join(dataDir, HASH_FILE))).toBe(false);
    expect(existsSync(join(dataDir, 'root-secret'))).toBe(false);

    // "bubblewrap installed": the same data dir, the real PATH.
    const port = await freePort();
    const { child, output } = await startProcess('all', {
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...LIMITS_ENV,
    });
    children.push(child);
    const key = printedKey(output());
    expect(key, output()).not.toBeNull();
    expect(readFileSync(join(dataDir, HASH_FILE), 'utf8').trim()).toBe(sha256(key!));
    expect(await status(port, key!)).toBe(200);
    expect(await status(port, `${key}x`)).toBe(401);
  }, 90_000);

  it('a start whose port is taken stores no operator key', async () => {
    const dataDir = join(tempDir(), 'data');
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    try {
      const port = (blocker.address() as { port: number }).port;
      const r = cli(['all'], {
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: String(port),
        SANDBOX_DRIVER: 'none',
        LOG_LEVEL: 'warn',
      });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/EADDRINUSE/);
      expect(printedKey(r.stdout)).toBeNull();
      expect(existsSync(join(dataDir, HASH_FILE))).toBe(false);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  }, 60_000);

  it('rotate-operator-key prints a new key once and stores only its hash; after a restart the old key gets 401, the new one 200', async () => {
    const dataDir = join(tempDir(), 'data');
    const port = await freePort();
    const env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      SANDBOX_DRIVER: 'none',
      LOG_LEVEL: 'warn',
    };
    const first = await startProcess('all', env);
    children.push(first.child);
    const oldKey = printedKey(first.output());
    expect(oldKey, first.output()).not.toBeNull();
    expect(await status(port, oldKey!)).toBe(200);
    await stop(first.child);

    // As `npm start -- rotate-operator-key` runs it: after the default role.
    const rotated = cli(['all', 'rotate-operator-key'], { DATA_DIR: dataDir });
    expect(rotated.status, rotated.stderr).toBe(0);
    const newKey = printedKey(rotated.stdout);
    expect(newKey, rotated.stdout).not.toBeNull();
    expect(newKey).not.toBe(oldKey);
    const stored = readFileSync(join(dataDir, HASH_FILE), 'utf8');
    expect(stored.trim()).toBe(sha256(newKey!));
    expect(stored).not.toContain(newKey!);

    const second = await startProcess('all', env);
    children.push(second.child);
    expect(printedKey(second.output())).toBeNull(); // a stored key is never printed again
    expect(await status(port, oldKey!)).toBe(401);
    expect(await status(port, newKey!)).toBe(200);
  }, 90_000);

  it('rotate-operator-key on a running server: the old key is refused from then on, the new one accepted, without a restart', async () => {
    const dataDir = join(tempDir(), 'data');
    const port = await freePort();
    const { child, output } = await startProcess('all', {
      DATA_DIR: dataDir,
      PORT: String(port),
      SANDBOX_DRIVER: 'none',
      LOG_LEVEL: 'info',
    });
    children.push(child);
    const oldKey = printedKey(output());
    expect(await status(port, oldKey!)).toBe(200);

    const rotated = cli(['rotate-operator-key'], { DATA_DIR: dataDir });
    expect(rotated.status, rotated.stderr).toBe(0);
    const newKey = printedKey(rotated.stdout)!;
    // The server re-reads the hash file on its own schedule: wait (bounded) until it logs the rotation.
    for (let i = 0; i < 150 && !/operator key rotated/.test(output()); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(output()).toMatch(/operator key rotated/);
    expect(output()).not.toContain(newKey);
    expect(await status(port, oldKey!)).toBe(401);
    expect(await status(port, newKey)).toBe(200);
  }, 90_000);

  it('rotate-operator-key refuses when API_KEY is set, saying the environment configures the key', () => {
    const dataDir = join(tempDir(), 'data');
    const r = cli(['rotate-operator-key'], { DATA_DIR: dataDir, API_KEY: 'op-from-env' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/API_KEY is set: the operator key is configured by the environment/);
    expect(r.stderr).not.toContain('op-from-env');
    expect(r.stdout).not.toMatch(/afk_op_/);
    expect(existsSync(join(dataDir, HASH_FILE))).toBe(false);
  });

  it('an unknown command is a usage error', () => {
    const r = cli(['all', 'rotate-the-key'], { DATA_DIR: join(tempDir(), 'data') });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/rotate-operator-key/);
  });
});

describe('the console session secret of an embedded data dir', () => {
  it('is generated into DATA_DIR/console-session-secret (0600) and kept: a console cookie survives a restart', async () => {
    const dataDir = join(tempDir(), 'data');
    const port = await freePort();
    const env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      SANDBOX_DRIVER: 'none',
      LOG_LEVEL: 'warn',
    };
    const first = await startProcess('all', env);
    children.push(first.child);
    const key = printedKey(first.output())!;
    const file = join(dataDir, 'console-session-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, 'utf8').trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(first.output()).not.toContain(secret);
    const signIn = await fetch(`http://127.0.0.1:${port}/v1/svc/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: key }),
    });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(cookie).toMatch(/^af_console=/);
    await stop(first.child);
    const second = await startProcess('all', env);
    children.push(second.child);
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
    const me = await fetch(`http://127.0.0.1:${port}/v1/svc/console/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
  }, 90_000);

  it('fleet mode without CONSOLE_SESSION_SECRET has no console (nothing is generated)', () => {
    const dataDir = join(tempDir(), 'fleet');
    const plan = readDataDir(
      loadConfig('all', {
        DATA_DIR: dataDir,
        API_KEY: 'op-key',
        PLATFORM_ROOT_SECRET: 'fleet-root-secret-0123456789abcdef0123',
        KAFKA_BROKERS: '127.0.0.1:9092',
        MONGODB_URL: 'mongodb://127.0.0.1:27017/x',
        REDIS_URL: 'redis://127.0.0.1:6379',
      }),
    );
    expect(plan.consoleSecretSource).toBe('off');
    expect(plan.config.consoleSessionSecret).toBeNull();
    expect(existsSync(dataDir)).toBe(false);
  });
});
