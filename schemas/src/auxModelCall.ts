/**
 * Extension `aux.model_call` (spec Events, extension events): one per model call of a session
 * that is not the agent's own turn and whose usage the session counts — a harness `pi`
 * compaction summary (kind `compaction`) or an outcome grader (kind `grader`). Appended in the
 * same append as that call's span end (`span.compaction_summarize_end`,
 * `span.outcome_evaluation_end`) and the session update that adds its usage, so it is written
 * once or not at all. Listed; streamed only with `?include=chunks` (./eventTypes.ts
 * EXTENSION_CANONICAL_TYPES). Behaviour: workers/src/turn/ledger.ts auxModelCall; proved by
 * test/e2e/turns/aux-model-call.test.ts.
 */
import { Type } from '@sinclair/typebox';
import { Id, Nullable, Obj } from './common.js';
import { eventOf } from './eventEnvelope.js';
import { SpanModelUsage } from './spanUsage.js';

export const AUX_MODEL_CALL_KINDS = ['compaction', 'grader'] as const;

/**
 * The call's list cost: what the session's tracked list cost gained from it. `amount` in US
 * cents rounded up (the format of the session's `usage.list_cost`), `amount_nanos` exact, in
 * nano-dollars (sums of these reconcile; sums of rounded cents may not).
 */
export const AuxListCost = Obj({
  amount: Type.String({ pattern: '^(0|[1-9][0-9]*)$' }),
  currency: Type.Literal('USD'),
  amount_nanos: Type.Integer({ minimum: 0 }),
});

export const AUX_MODEL_CALL_PAYLOAD = {
  kind: Type.Union(AUX_MODEL_CALL_KINDS.map((k) => Type.Literal(k))),
  /** The session's model card id. */
  model: Type.String(),
  /** `<provider id>/<wire model>`: what was called (the cost ledger's provider and model). */
  provider_model: Type.String(),
  usage: SpanModelUsage,
  /** null: the model has no list price (the session's `usage.list_cost` is null from then on). */
  list_cost: Nullable(AuxListCost),
  /** Wall time of the call, from the request to the end of its answer. */
  duration_ms: Type.Integer({ minimum: 0 }),
  /** kind `compaction`: the span of the summary call. */
  compaction_summarize_start_id: Type.Optional(Id('sevt_')),
  /** kind `grader`: the evaluation cycle the call judged. */
  outcome_id: Type.Optional(Id('outc_')),
  outcome_evaluation_start_id: Type.Optional(Id('sevt_')),
  iteration: Type.Optional(Type.Integer({ minimum: 0 })),
};

export const AuxModelCallEvent = eventOf('aux.model_call', AUX_MODEL_CALL_PAYLOAD);

/** Merged into the session event catalog (./events.ts EVENT_PAYLOADS, SESSION_EVENT_SCHEMAS). */
export const AUX_EVENT_PAYLOADS = { 'aux.model_call': AUX_MODEL_CALL_PAYLOAD };
export const AUX_EVENT_SCHEMAS = { 'aux.model_call': AuxModelCallEvent };
