/**
 * An outcome evaluation survives kill -9 of the all-in-one process mid-evaluation
 * (workers/src/turn/outcome.ts): the outcome is left `evaluating` with its
 * span.outcome_evaluation_start open; the recovered turn resumes that evaluation (the same
 * start event, the grader asked again) before the agent is asked anything, so the agent answers
 * once, the cycle has one start and one end, and the outcome ends satisfied. On the real
 * adapters too (realAdapterEnv).
 */
import { describe, expect, it } from 'vitest';
import { kill9 } from '../../kit/process.js';
import { crashPlatform, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-outcome-crash-');
const MODEL = 'outcome-crash-model';
const isGrader = (r: any) => String(r.body?.system ?? '').includes('outcome grader');

describe('outcomes across a crash', () => {
  it('a worker killed mid-evaluation: the evaluation resumes once, the agent is not asked again', async () => {
    const c = await crashPlatform(fx, 'outcome-crash');
    const call = c.call;
    let proc = await c.start();
    try {
      await c.addCard(MODEL);
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (await call('/v1/agents', { name: 'a', model: MODEL })).body.id;
      const sid = (await call('/v1/sessions', { agent: agentId, environment_id: envId })).body.id;
      fx.model.script(
        MODEL,
        { steps: [{ text: 'the answer: 42' }] },
        // The grader's first call never finishes: the process dies during it.
        { steps: [{ delay_ms: 60_000 }, { text: '{}' }] },
        { steps: [{ text: '{"result": "satisfied", "explanation": "it is 42"}' }] },
      );
      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [
          {
            type: 'user.define_outcome',
            description: 'Answer with 42.',
            rubric: { type: 'text', content: 'The answer is 42.' },
          },
        ],
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      await waitFor(async () => fx.model.requests.filter(isGrader).length >= 1, 30_000);
      const mid = (await call(`/v1/sessions/${sid}`)).body;
      expect(mid.outcome_evaluations[0].result).toBe('evaluating');
      await kill9(proc.child);

      proc = await c.start();
      const events = await sessionEvents(call).firstIdle(sid);
      const mine = fx.model.requests.filter((r) => r.model === MODEL);
      expect(mine.map(isGrader)).toEqual([false, true, true]);
      expect(events.filter((e) => e.type === 'agent.message')).toHaveLength(1);
      const starts = events.filter((e) => e.type === 'span.outcome_evaluation_start');
      const ends = events.filter((e) => e.type === 'span.outcome_evaluation_end');
      expect(starts).toHaveLength(1);
      expect(ends.map((e) => [e.outcome_evaluation_start_id, e.result])).toEqual([
        [starts[0].id, 'satisfied'],
      ]);
      const after = (await call(`/v1/sessions/${sid}`)).body;
      expect(after.outcome_evaluations[0]).toMatchObject({ result: 'satisfied', iteration: 0 });
    } finally {
      await kill9(proc.child);
    }
  }, 120_000);
});
