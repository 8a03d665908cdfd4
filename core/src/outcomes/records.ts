/**
 * Outcomes (SDK `user.define_outcome`): what a session's agent must produce and how a grader
 * judges it. The state of each outcome lives on its session document (`outcomes`, keyed by
 * `outc_` id) and is served as the session's `outcome_evaluations`; every step is also an event
 * (`user.define_outcome`, `span.outcome_evaluation_start` / `_end`).
 */

/** SDK BetaManagedAgentsOutcomeEvaluationResource `result`. */
export type OutcomeResult =
  | 'pending'
  | 'running'
  | 'evaluating'
  | 'satisfied'
  | 'max_iterations_reached'
  | 'failed'
  | 'interrupted';

/** What a grader's evaluation cycle ends with (span.outcome_evaluation_end `result`). */
export type EvaluationResult =
  'satisfied' | 'needs_revision' | 'max_iterations_reached' | 'failed' | 'interrupted';

export const TERMINAL_RESULTS: ReadonlySet<OutcomeResult> = new Set([
  'satisfied',
  'max_iterations_reached',
  'failed',
  'interrupted',
]);

export const DEFAULT_MAX_ITERATIONS = 3;

export interface OutcomeState {
  outcome_id: string;
  description: string;
  /** The rubric's text (a file rubric is read at send time). */
  rubric: string;
  max_iterations: number;
  result: OutcomeResult;
  /** 0-indexed revision cycle the outcome is on. */
  iteration: number;
  explanation: string | null;
  completed_at: string | null;
  /** Seq of its user.define_outcome (orders the list). */
  defined_seq: number;
}

/** The session's `outcome_evaluations`, oldest first. */
export function renderOutcomes(outcomes: Record<string, OutcomeState> | undefined) {
  return Object.values(outcomes ?? {})
    .sort((a, b) => a.defined_seq - b.defined_seq)
    .map((o) => ({
      type: 'outcome_evaluation' as const,
      outcome_id: o.outcome_id,
      description: o.description,
      result: o.result,
      iteration: o.iteration,
      explanation: o.explanation,
      completed_at: o.completed_at,
    }));
}

/** The outcome still being worked on, if any (at most one at a time). */
export function activeOutcome(
  outcomes: Record<string, OutcomeState> | undefined,
): OutcomeState | null {
  return Object.values(outcomes ?? {}).find((o) => !TERMINAL_RESULTS.has(o.result)) ?? null;
}
