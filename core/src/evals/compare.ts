/**
 * Two eval runs side by side, case by case (cases matched by their id): `fixed` (failed or
 * errored in the base, passed in the other), `regressed` (the reverse), `same`, `only_base` /
 * `only_other` (the case is in one run only), `pending` (either side has not ended).
 * Proved by test/e2e/evals/evals.test.ts ('compares two runs case by case').
 */
import type { EvalComparison } from '@agentfleet/schemas';
import type { RenderedRun } from './records.js';

type Case = RenderedRun['cases'][number];
type Change = EvalComparison['cases'][number]['change'];
const ended = (c: Case) => c.status === 'completed' || c.status === 'errored';
const ok = (c: Case) => c.status === 'completed' && c.passed === true;

function change(a: Case | null, b: Case | null): Change {
  if (!a) return 'only_other';
  if (!b) return 'only_base';
  if (!ended(a) || !ended(b)) return 'pending';
  if (ok(a) === ok(b)) return 'same';
  return ok(b) ? 'fixed' : 'regressed';
}

export function compareRuns(base: RenderedRun, other: RenderedRun): EvalComparison {
  const theirs = new Map(other.cases.map((c) => [c.id, c]));
  const ids = [...base.cases.map((c) => c.id), ...other.cases.map((c) => c.id)];
  const mine = new Map(base.cases.map((c) => [c.id, c]));
  const cases = [...new Set(ids)].map((id) => {
    const a = mine.get(id) ?? null;
    const b = theirs.get(id) ?? null;
    return { id, base: a, other: b, change: change(a, b) };
  });
  const count = (k: Change) => cases.filter((c) => c.change === k).length;
  const side = (r: RenderedRun) => ({ id: r.id, agent: r.agent, summary: r.summary });
  return {
    type: 'eval_comparison',
    base: side(base),
    other: side(other),
    cases,
    summary: {
      fixed: count('fixed'),
      regressed: count('regressed'),
      same: count('same'),
      unmatched: count('only_base') + count('only_other'),
    },
  };
}
