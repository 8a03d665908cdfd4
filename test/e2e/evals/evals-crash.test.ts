/**
 * An eval run survives kill -9 of the all-in-one process mid-run (core/src/evals/work.ts,
 * workers/src/jobs/evalRunner.ts): 20 cases with a mix of judges (expected text, rubric
 * through the outcome grader, check command in a real sandbox), 4 at a time, some answers
 * slow so that cases are starting, running and judging when the process dies. After the
 * restart every case ends exactly once: one session per case (never a second one for a case
 * taken over), its prompt sent once, the verdict its answers deserve, the run completed.
 * On the real adapters too (realAdapterEnv). The waits are generous: after the restart the
 * remaining cases each warm a real sandbox, which on a loaded 2-core CI machine takes minutes.
 */
import { describe, expect, it } from 'vitest';
import { kill9 } from '../../kit/process.js';
import { crashPlatform, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';
import { respond } from './evalKit.js';

const fx = useCrashFixture('agentfleet-eval-crash-');
const MODEL = 'eval-crash-model';

/** evalKit's answers, each after 400 ms for "slow" prompts. */
const slowly = (body: any) => {
  const r = respond(body);
  return JSON.stringify(body.messages?.[0] ?? '').includes('slow')
    ? { ...r, steps: [{ delay_ms: 400 }, ...r.steps] }
    : r;
};

const KINDS = [
  { prompt: 'Say banana.', expected_text: 'banana', pass: true },
  { prompt: 'Say apple slow.', expected_text: 'apple', pass: false },
  { prompt: 'Write a titled poem slow.', rubric: 'The poem has a title line.', pass: true },
  { prompt: 'Write a haiku.', rubric: 'The poem has a title line.', pass: false },
];
/**
 * The check-command cases come last: they start after the restart (the kill comes once 5
 * cases ended, so at most 9 have started), because a sandbox killed with its process loses
 * what was written since its last snapshot and the check would see that loss, not the agent.
 */
const CHECKS = [
  { prompt: 'make-file slow', check_command: 'test -s /workspace/made.txt', pass: true },
  { prompt: 'Say ok.', check_command: 'test -f /workspace/missing.txt', pass: false },
];
const KIND_OF = Array.from({ length: 20 }, (_, i) =>
  i < 15 ? KINDS[i % KINDS.length]! : CHECKS[i % CHECKS.length]!,
);
const CASES = KIND_OF.map(({ pass: _p, ...k }, i) => ({ id: `c${i}`, ...k }));

describe('eval runs across a crash', () => {
  it('a process killed mid-run: every case ends exactly once, with one session', async () => {
    const c = await crashPlatform(fx, 'eval-crash');
    // Real sandboxes for the check commands; quick scans and claims.
    Object.assign(c.env, { SANDBOX_DRIVER: 'local', EVAL_SCAN_MS: '300', EVAL_CLAIM_MS: '2000' });
    const call = c.call;
    let proc = await c.start();
    try {
      await c.addCard(MODEL);
      fx.model.script(MODEL, ...Array.from({ length: 400 }, () => ({ steps: [], decide: slowly })));
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (
        await call('/v1/agents', {
          name: 'a',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        })
      ).body.id;
      const started = await call('/v1/svc/evals', {
        agent: agentId,
        environment_id: envId,
        cases: CASES,
        concurrency: 4,
      });
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const id = started.body.id;
      let mid: any;
      await waitFor(async () => {
        mid = (await call(`/v1/svc/evals/${id}`)).body;
        return mid.summary.passed + mid.summary.failed >= 5;
      }, 120_000);
      expect(mid.status).toBe('running');
      // Cases are in flight when the process dies.
      const inFlight = mid.cases.filter((x: any) =>
        ['starting', 'running', 'judging'].includes(x.status),
      );
      expect(inFlight.length).toBeGreaterThan(0);
      await kill9(proc.child);

      proc = await c.start();
      let done: any;
      await waitFor(async () => {
        done = (await call(`/v1/svc/evals/${id}`)).body;
        return done.status !== 'running';
      }, 240_000);
      expect(done.status).toBe('completed');
      expect(done.summary).toMatchObject({ total: 20, errored: 0, cancelled: 0, pending: 0 });
      expect(
        done.cases.map((x: any) => [
          x.id,
          x.status,
          x.passed,
          x.passed === KIND_OF[Number(x.id.slice(1))]!.pass ? '' : x.reason,
        ]),
      ).toEqual(CASES.map((x, i) => [x.id, 'completed', KIND_OF[i]!.pass, '']));
      // One session per case, and only those: none made twice for a case taken over.
      const sessions: any[] = [];
      let page: string | null = null;
      do {
        const r = await call(`/v1/sessions?limit=100${page ? `&page=${page}` : ''}`);
        sessions.push(...r.body.data);
        page = r.body.next_page;
      } while (page);
      const mine = sessions.filter((s) => s.metadata?.eval_id === id);
      expect(mine).toHaveLength(20);
      expect(new Set(mine.map((s) => s.metadata.eval_case)).size).toBe(20);
      expect(new Set(done.cases.map((x: any) => x.session_id))).toEqual(
        new Set(mine.map((s) => s.id)),
      );
      // Each session got its prompt once.
      for (const s of mine) {
        const ev = (await call(`/v1/sessions/${s.id}/events?limit=200`)).body.data;
        const inputs = ev.filter((e: any) =>
          ['user.message', 'user.define_outcome'].includes(e.type),
        );
        expect(inputs, s.id).toHaveLength(1);
      }
    } finally {
      await kill9(proc.child);
    }
  }, 420_000);
});
