/**
 * The in-sandbox programs bundle into one dependency-free file each (bundleProgram, the one
 * definition used by `npm run bundle` and by sandboxProgram): nothing imported but node builtins,
 * and the bundled agent, run by node as a child process, serves the protocol.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleProgram, sandboxProgram } from '../src/program.js';

const cache = mkdtempSync(join(tmpdir(), 'sandbox-program-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

describe('in-sandbox program bundles', () => {
  for (const name of ['agent', 'launcher'] as const) {
    it(`${name}: imports nothing but node builtins`, async () => {
      const { code, imports } = await bundleProgram(name);
      expect(imports.length).toBeGreaterThan(0);
      for (const i of imports) expect(i).toMatch(/^node:/);
      // no other module reference survives in the text either
      const specifiers = [
        ...code.matchAll(/\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']/g),
      ];
      for (const m of specifiers) expect(m[1] ?? m[2]).toMatch(/^node:/);
      expect(code).not.toMatch(/\brequire\(/);
    });
  }

  it('sandboxProgram writes one content-hashed file and returns it again', async () => {
    const first = await sandboxProgram('agent', cache);
    expect(first).toMatch(/agent-[0-9a-f]{16}\.mjs$/);
    expect(await sandboxProgram('agent', cache)).toBe(first);
    expect(readFileSync(first, 'utf8')).toBe((await bundleProgram('agent')).code);
  });

  it('the bundled agent runs under node and answers ping', async () => {
    const file = await sandboxProgram('agent', cache);
    const child = spawn(process.execPath, [file], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: Array<Record<string, unknown>> = [];
    let buf = '';
    const answered = new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          lines.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          if (lines.some((l) => l.id === 1)) resolve();
        }
      });
    });
    child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    await answered;
    child.stdin.end();
    expect(lines[0]).toMatchObject({ method: 'ready', params: { protocol: 2 } });
    expect(lines.find((l) => l.id === 1)).toEqual({ jsonrpc: '2.0', id: 1, result: null });
  });
});
