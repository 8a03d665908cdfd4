import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../kit/process.js';

const run = (env: Record<string, string>, nodeArgs: string[] = []) =>
  spawnSync(
    process.execPath,
    [...nodeArgs, '--conditions=source', '--import', 'tsx', join(REPO, 'server/src/cli.ts'), 'all'],
    {
      cwd: REPO,
      env: { HOME: process.env.HOME ?? '', PATH: process.env.PATH ?? '', ...env },
      encoding: 'utf8',
      timeout: 30_000,
    },
  );

describe('start-up failures are one clear message and exit code 1', () => {
  it('lists every configuration problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    try {
      const r = run({
        DATA_DIR: dir,
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        STORE_BACKENDS: '{',
        SANDBOX_DRIVER: 'none',
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/PORT must be an integer/);
      expect(r.stderr).toMatch(/LOG_LEVEL must be one of/);
      expect(r.stderr).toMatch(/STORE_BACKENDS is not valid JSON/);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a Node.js older than the pinned 24, saying which one to use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    try {
      // This process's node, reporting itself as 20 before the CLI's first line runs.
      const older = `data:text/javascript,Object.defineProperty(process,'version',{value:'v20.19.0'})`;
      const r = run({ DATA_DIR: dir }, ['--import', older]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        /Node\.js v20\.19\.0 is too old: agentfleet runs on Node\.js 24 LTS/,
      );
      expect(r.stdout).not.toMatch(/started/);
      expect(existsSync(join(dir, 'operator-key.sha256'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('npm scripts run on the pinned Node.js (the root devDependency `node`)', () => {
    const pinned = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).devDependencies
      .node;
    expect(process.version).toBe(`v${pinned}`);
  });

  it('refuses to start without bubblewrap, saying how to install it (no unisolated fallback)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    const bin = join(dir, 'bin');
    try {
      spawnSync('mkdir', ['-p', bin]);
      symlinkSync(process.execPath, join(bin, 'node'));
      const r = run({ DATA_DIR: join(dir, 'data'), PORT: '0', PATH: bin });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/bubblewrap/);
      expect(r.stderr).toMatch(/apt-get install bubblewrap/);
      expect(r.stdout).not.toMatch(/started/);
      // Nothing stored whose key was never shown (test/e2e/server/operator-key.test.ts has the next start).
      expect(existsSync(join(dir, 'data', 'operator-key.sha256'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A host that can enforce no sandbox limit: the same machine, with the worker run as an
 * unprivileged user (no cgroup it may create, no mount). Needs root to switch users (CI is root).
 */
describe.runIf(process.getuid?.() === 0)('sandbox limits at start-up', () => {
  const NOBODY = 65534;
  const cli = [
    process.execPath,
    ['--conditions=source', '--import', 'tsx', join(REPO, 'server/src/cli.ts'), 'all'],
  ] as const;
  const envFor = (dir: string, extra: Record<string, string> = {}) => ({
    HOME: dir,
    PATH: process.env.PATH ?? '',
    DATA_DIR: join(dir, 'data'),
    PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  });
  /** Starts `all` (as user nobody when asked), waits for "started" (fails if it exits first), stops it; its output. */
  const startedOutput = async (
    extra: Record<string, string>,
    asNobody: boolean,
  ): Promise<string> => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    if (asNobody) chmodSync(dir, 0o777);
    const child = spawn(cli[0], cli[1], {
      cwd: REPO,
      env: envFor(dir, extra),
      ...(asNobody ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    try {
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      const outcome = await Promise.race([
        new Promise<'started'>((r) => {
          const t = setInterval(() => {
            if (/agentfleet all started/.test(out)) {
              clearInterval(t);
              r('started');
            }
          }, 100);
        }),
        exited.then(() => 'exited' as const),
      ]);
      expect(outcome, out).toBe('started');
      return out;
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('refuses to start when the host can enforce no limit, naming each and the setting that turns them off', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    chmodSync(dir, 0o777);
    try {
      const r = spawnSync(cli[0], cli[1], {
        cwd: REPO,
        env: envFor(dir),
        encoding: 'utf8',
        timeout: 30_000,
        uid: NOBODY,
        gid: NOBODY,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/cannot enforce any per-sandbox limit/);
      for (const limit of ['processes', 'memory', 'cpu', 'disk'])
        expect(r.stderr).toContain(`${limit}: `);
      expect(r.stderr).toMatch(/SANDBOX_UNSAFE_NO_LIMITS=true/);
      expect(r.stdout).not.toMatch(/started/);
      expect(existsSync(join(dir, 'data', 'operator-key.sha256'))).toBe(false); // no key stored that was never shown
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts with SANDBOX_UNSAFE_NO_LIMITS=true, saying that sandboxes run without limits', async () => {
    const out = await startedOutput({ SANDBOX_UNSAFE_NO_LIMITS: 'true' }, true);
    expect(out).toMatch(
      /SANDBOX_UNSAFE_NO_LIMITS=true: sandboxes run without process, memory, CPU or disk limits/,
    );
  }, 40_000);

  it('on a host that enforces them, names the limits it enforces', async () => {
    const out = await startedOutput({}, false);
    expect(out).toMatch(
      /"msg":"sandbox limits enforced".*"limits":\["processes","memory","cpu","disk"\]/,
    );
  }, 40_000);
});
