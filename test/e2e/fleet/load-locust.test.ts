/**
 * `npm run load` as a smoke: the runner (load/locust/run.ts) drives Locust
 * (load/locust/locustfile.py, from the venv) for 20 s with 2 users (one session-flow user, one
 * REST-reads user) against an in-process platform (the real adapters in CI). Proves the runner
 * exits 0 and Locust's CSV stats hold every request type of both flows, each with requests and
 * no failures: sessions created, streams opened, messages sent, the first event and
 * session.status_idle read from each stream, and the four reads answered. The p95 thresholds are
 * raised here (the machine is shared with the rest of the suite); the failure ratio is not.
 *
 * Needs the venv from test/kit/python/setup.sh with locust (.ci/run creates it and sets
 * AGENTFLEET_PYTHON): without AGENTFLEET_PYTHON the test is skipped, and .ci/run fails on any
 * skipped test.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { parseCsv } from '../../../load/locust/stats.js';

const PYTHON = process.env.AGENTFLEET_PYTHON;
const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const SECONDS = 20;

let t: TestPlatform;
let csvDir: string;

function runLoad(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      join(REPO, 'node_modules/.bin/tsx'),
      ['--conditions=source', join(REPO, 'load/locust/run.ts')],
      {
        cwd: REPO,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), (SECONDS + 60) * 1000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.skipIf(!PYTHON)(
  `npm run load (Locust)${PYTHON ? '' : ' (skipped: AGENTFLEET_PYTHON unset; run test/kit/python/setup.sh)'}`,
  () => {
    beforeAll(async () => {
      t = await startPlatform({ env: { RATE_LIMIT_PER_MINUTE: '10000000' } });
      csvDir = mkdtempSync(join(tmpdir(), 'agentfleet-locust-test-'));
    });
    afterAll(async () => {
      await t?.close();
      if (csvDir) rmSync(csvDir, { recursive: true, force: true });
    });

    it(
      `runs ${SECONDS} s with 2 users, every request type answered, no failures`,
      async () => {
        const { code, out } = await runLoad({
          AGENTFLEET_PYTHON: PYTHON!,
          LOAD_BASE_URL: t.url,
          LOAD_API_KEY: t.apiKey,
          LOAD_USERS: '2',
          LOAD_SECONDS: String(SECONDS),
          LOAD_CSV_DIR: csvDir,
          // A pause between tasks keeps the smoke from taking the CPU the other tests run on.
          LOAD_WAIT_S: '0.1',
          LOAD_P95_MS: '30000',
        });
        expect(out, 'the venv has no locust: run test/kit/python/setup.sh').not.toMatch(
          /No module named locust/,
        );
        expect(code, out).toBe(0);
        const rows = parseCsv(readFileSync(join(csvDir, 'locust_stats.csv'), 'utf8'));
        const byName = new Map(rows.map((r) => [`${r.Type} ${r.Name}`, r]));
        for (const key of [
          'POST create_environment',
          'POST create_agent',
          'POST create_session',
          'GET open_stream',
          'POST send_message',
          'SSE first_event',
          'SSE idle',
          'GET list_agents',
          'GET get_agent',
          'GET list_sessions',
          'GET list_events',
        ]) {
          const row = byName.get(key);
          expect(row, `${key} in ${[...byName.keys()].join(', ')}`).toBeDefined();
          expect(Number(row!['Request Count']), key).toBeGreaterThan(0);
          expect(Number(row!['Failure Count']), key).toBe(0);
        }
        // Every turn that began was read to its idle; the last may have been cut by the end.
        const sent = Number(byName.get('POST send_message')!['Request Count']);
        const idle = Number(byName.get('SSE idle')!['Request Count']);
        expect(idle).toBeGreaterThanOrEqual(sent - 2);
        const total = byName.get(' Aggregated');
        expect(Number(total!['Failure Count'])).toBe(0);
        process.stdout.write(out.slice(out.indexOf('type  name')));
      },
      (SECONDS + 90) * 1000,
    );
  },
);
