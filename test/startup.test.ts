import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './process.js';

const run = (env: Record<string, string>) =>
  spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', join(REPO, 'gateway/src/cli.ts'), 'all'], {
    cwd: REPO, env: { HOME: process.env.HOME ?? '', PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000,
  });

describe('start-up failures are one clear message and exit code 1', () => {
  it('lists every configuration problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-start-'));
    try {
      const r = run({ DATA_DIR: dir, PORT: 'abc', LOG_LEVEL: 'loud', STORE_BACKENDS: '{', SANDBOX_DRIVER: 'none' });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/PORT must be an integer/);
      expect(r.stderr).toMatch(/LOG_LEVEL must be one of/);
      expect(r.stderr).toMatch(/STORE_BACKENDS is not valid JSON/);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
