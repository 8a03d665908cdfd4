/**
 * The outcome events (SDK `user.define_outcome`, `span.outcome_evaluation_start` / `_ongoing` / `_end`):
 * their payloads as appended and their served schemas, merged into the session event catalog
 * (./events.ts). Behaviour: core/src/outcomes, workers/src/turn/outcome.ts.
 */
import { Type } from '@sinclair/typebox';
import { Id, Nullable } from './common.js';
import { eventOf } from './eventEnvelope.js';
import { SpanModelUsage } from './spanUsage.js';

export const OUTCOME_EVENT_PAYLOADS = {
  /** SDK BetaManagedAgentsUserDefineOutcomeEvent: the input plus its `outc_` id; rubric as text. */
  'user.define_outcome': {
    outcome_id: Id('outc_'),
    description: Type.String(),
    rubric: Type.Object({ type: Type.Literal('text'), content: Type.String() }),
    max_iterations: Nullable(Type.Integer({ minimum: 1, maximum: 20 })),
  },
  /** SDK BetaManagedAgentsSpanOutcomeEvaluationStartEvent. */
  'span.outcome_evaluation_start': {
    outcome_id: Id('outc_'),
    iteration: Type.Integer({ minimum: 0 }),
  },
  /** SDK BetaManagedAgentsSpanOutcomeEvaluationOngoingEvent: the grader's heartbeat. */
  'span.outcome_evaluation_ongoing': {
    outcome_id: Id('outc_'),
    iteration: Type.Integer({ minimum: 0 }),
  },
  /** SDK BetaManagedAgentsSpanOutcomeEvaluationEndEvent. */
  'span.outcome_evaluation_end': {
    outcome_evaluation_start_id: Id('sevt_'),
    outcome_id: Id('outc_'),
    iteration: Type.Integer({ minimum: 0 }),
    result: Type.Union(
      ['satisfied', 'needs_revision', 'max_iterations_reached', 'failed', 'interrupted'].map((r) =>
        Type.Literal(r),
      ),
    ),
    explanation: Type.String(),
    usage: SpanModelUsage,
  },
};

const P = OUTCOME_EVENT_PAYLOADS;
export const UserDefineOutcomeEvent = eventOf('user.define_outcome', P['user.define_outcome']);
export const SpanOutcomeEvaluationStartEvent = eventOf(
  'span.outcome_evaluation_start',
  P['span.outcome_evaluation_start'],
);
export const SpanOutcomeEvaluationOngoingEvent = eventOf(
  'span.outcome_evaluation_ongoing',
  P['span.outcome_evaluation_ongoing'],
);
export const SpanOutcomeEvaluationEndEvent = eventOf(
  'span.outcome_evaluation_end',
  P['span.outcome_evaluation_end'],
);

export const OUTCOME_EVENT_SCHEMAS = {
  'user.define_outcome': UserDefineOutcomeEvent,
  'span.outcome_evaluation_start': SpanOutcomeEvaluationStartEvent,
  'span.outcome_evaluation_ongoing': SpanOutcomeEvaluationOngoingEvent,
  'span.outcome_evaluation_end': SpanOutcomeEvaluationEndEvent,
};
