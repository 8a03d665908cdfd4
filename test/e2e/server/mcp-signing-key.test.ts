/**
 * MCP_SIGNING_KEY (a deployment secret in the spec's list) is refused at start-up, through the
 * CLI: this deployment signs no MCP tokens (core/src/config/mcpSigning.ts), so the platform exits
 * with code 1 naming the setting as not supported, without echoing its value, instead of
 * starting with a secret it never reads. INTEGRATIONS_INTERNAL_SECRET likewise: integrations run
 * inside the gateway and workers (core/src/config/integrations.ts), so there is no separate
 * integrations service for it to authenticate.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@agentfleet/core';
import { REPO } from '../../kit/process.js';

function startWith(name: string, secret: string) {
  const dir = mkdtempSync(join(tmpdir(), 'agentfleet-refused-'));
  try {
    return spawnSync(
      process.execPath,
      ['--conditions=source', '--import', 'tsx', join(REPO, 'server/src/cli.ts'), 'all'],
      {
        cwd: REPO,
        env: {
          HOME: process.env.HOME ?? '',
          PATH: process.env.PATH ?? '',
          DATA_DIR: dir,
          SANDBOX_DRIVER: 'none',
          [name]: secret,
        },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('INTEGRATIONS_INTERNAL_SECRET', () => {
  it('is refused at start-up, naming it as not supported, without echoing the value', () => {
    const secret = `internal-${Math.random().toString(36).slice(2)}-0123456789`;
    const r = startWith('INTEGRATIONS_INTERNAL_SECRET', secret);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /INTEGRATIONS_INTERNAL_SECRET is not supported: integrations run inside/,
    );
    expect(r.stdout + r.stderr).not.toContain(secret);
    expect(r.stdout).not.toMatch(/started/);
  });
});

describe('MCP_SIGNING_KEY', () => {
  it('is refused at start-up, naming it as not supported, without echoing the value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfleet-mcpkey-'));
    const secret = `mcp-signing-${Math.random().toString(36).slice(2)}`;
    try {
      const r = spawnSync(
        process.execPath,
        ['--conditions=source', '--import', 'tsx', join(REPO, 'server/src/cli.ts'), 'all'],
        {
          cwd: REPO,
          env: {
            HOME: process.env.HOME ?? '',
            PATH: process.env.PATH ?? '',
            DATA_DIR: dir,
            SANDBOX_DRIVER: 'none',
            MCP_SIGNING_KEY: secret,
          },
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/MCP_SIGNING_KEY is not supported: this deployment signs no MCP/);
      expect(r.stdout + r.stderr).not.toContain(secret);
      expect(r.stdout).not.toMatch(/started/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Unset (or empty), nothing is said about it.
    expect(() => loadConfig('all', { DATA_DIR: dir, MCP_SIGNING_KEY: '' })).not.toThrow();
  });
});
