/**
 * test/e2e/sdk/sdk_suite/test_threads.py, run alone through the official Python SDK against an
 * in-process platform WITH the local sandbox (the default driver; python-sdk.test.ts runs the
 * whole suite with SANDBOX_DRIVER=none, where the roster agents' writes are error results).
 * With AGENTFLEET_THREADS_SANDBOX=1 the Python test proves the threads share the session's
 * sandbox: each thread's `write` (/workspace/a.txt, /workspace/b.txt) succeeds (is_error False),
 * and the coordinator, once both replies reached it, runs `bash cat` of both files and its
 * agent.tool_result holds both contents; the rest of test_threads.py (roster stored resolved,
 * thread events, threads.list / retrieve / archive / events.list / stream) runs as in the
 * sandbox-less run. Each named Python test must be reported as passed; any failure fails this
 * test with pytest's output.
 *
 * Needs the venv from test/kit/python/setup.sh (.ci/run creates it and sets AGENTFLEET_PYTHON):
 * without it the test is skipped, and .ci/run fails on any skipped test.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, decide, say, sentText, useTool } from '../../kit/turnHelpers.js';

const PYTHON =
  process.env.AGENTFLEET_PYTHON ?? join(homedir(), '.cache/agentfleet/venv/bin/python');
const available = existsSync(PYTHON);
const SUITE = join(dirname(fileURLToPath(import.meta.url)), 'sdk_suite');
/** The coordinator (starts both threads, reads both files once both replied, answers) and its roster. */
const COORD = 'py-threads-sandbox-coordinator';
const WA = 'py-threads-sandbox-writer-a';
const WB = 'py-threads-sandbox-writer-b';

let t: TestPlatform;

function pytest(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      PYTHON,
      ['-m', 'pytest', '-v', '-p', 'no:cacheprovider', join(SUITE, 'test_threads.py')],
      {
        cwd: SUITE,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 4 * 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.skipIf(!available)(
  `official Python SDK, threads in the shared sandbox${available ? '' : ` (skipped: no ${PYTHON}; run test/kit/python/setup.sh or set AGENTFLEET_PYTHON)`}`,
  () => {
    beforeAll(async () => {
      t = await startPlatform();
      for (const m of [COORD, WA, WB]) await addModelCard(t, m, { apiKey: 'sk-py' });
      // The coordinator starts both threads, then answers by what its request holds: the
      // second turn's message; the cat's output (both files); both replies (it reads both
      // files with bash); or neither yet (it waits).
      t.model.script(
        COORD,
        {
          steps: [
            {
              tool_use: {
                name: 'start_thread',
                input: { agent_name: 'py-writer-a', task: 'write a' },
              },
            },
            {
              tool_use: {
                name: 'start_thread',
                input: { agent_name: 'py-writer-b', task: 'write b' },
              },
            },
          ],
          stop_reason: 'tool_use',
        },
        ...Array.from({ length: 8 }, () =>
          decide((body) =>
            sentText(body).includes('py stream turn')
              ? say('streamed answer')
              : sentText(body).includes('alpha') && sentText(body).includes('beta')
                ? say('both threads replied')
                : sentText(body).includes('A wrote') && sentText(body).includes('B wrote')
                  ? useTool('bash', { command: 'cat /workspace/a.txt /workspace/b.txt' })
                  : say('waiting for the threads'),
          ),
        ),
      );
      t.model.script(
        WA,
        useTool('write', { file_path: '/workspace/a.txt', content: 'alpha\n' }),
        say('A wrote a.txt'),
      );
      t.model.script(
        WB,
        useTool('write', { file_path: '/workspace/b.txt', content: 'beta\n' }),
        say('B wrote b.txt'),
      );
    }, 60_000);
    afterAll(async () => {
      await t?.close();
    });

    it(
      'test_threads.py passes with the threads writing into the shared sandbox',
      async () => {
        const { code, out } = await pytest({
          AGENTFLEET_BASE_URL: t.url,
          AGENTFLEET_API_KEY: t.apiKey,
          AGENTFLEET_THREADS_COORDINATOR_MODEL: COORD,
          AGENTFLEET_THREADS_WRITER_A_MODEL: WA,
          AGENTFLEET_THREADS_WRITER_B_MODEL: WB,
          AGENTFLEET_THREADS_SANDBOX: '1',
        });
        expect(code, `pytest exit ${code}:\n${out.slice(-40_000)}`).toBe(0);
        for (const name of [
          'test_coordinator_roster_is_stored_resolved',
          'test_threads_run_reply_and_are_served',
        ])
          expect(out, out).toMatch(new RegExp(`::${name} PASSED`));
      },
      5 * 60_000,
    );
  },
);
