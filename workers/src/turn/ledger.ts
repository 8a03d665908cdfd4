/**
 * Each finished model call of a session (agent turns, compaction summaries, graders) goes into
 * the runtime ledger of the cost report (core/src/cost/ledger.ts) as soon as its stream ends —
 * before its events are appended, because the provider has billed it whether or not they are.
 * A ledger write that fails is logged and does not fail the turn (the report then undercounts
 * that call; the session's own usage is unaffected). Proved by test/e2e/cost/cost-report.test.ts.
 *
 * A call that is not the agent's own turn and whose usage the session counts (a compaction
 * summary, a grader) is also told in the session's log: `auxModelCall` builds its
 * `aux.model_call` event, which the caller appends with the call's span end and the session
 * update that adds its usage (one append: written once or not at all, never twice). Its
 * `list_cost` is priced with the same price and formula as that update (./budget.ts
 * usageUpdate), so it is exactly what the session's tracked list cost gained. Proved by
 * test/e2e/turns/aux-model-call.test.ts. Dreams have no session log: their calls stay in the
 * ledger only (kind `dream`).
 */
import { sessionOf } from '@agentfleet/core';
import {
  NANOS_PER_CENT,
  usageCostNanos,
  type CallKind,
  type EventDraft,
  type Logger,
  type ModelUsage,
  type ResolvedModel,
  type SessionDoc,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import type { ListPrice } from './budget.js';

export type LedgerServices = Pick<WorkerServices, 'cost'>;

export async function recordCall(
  p: LedgerServices,
  tenant: string,
  s: Pick<SessionDoc, '_id' | 'agent'>,
  resolved: Pick<ResolvedModel, 'providerId' | 'wireModel'>,
  usage: ModelUsage,
  kind: CallKind,
  log?: Logger,
): Promise<void> {
  if (!p.cost) return;
  try {
    await p.cost.record({
      tenantId: tenant,
      sessionId: sessionOf(s), // a child thread's calls are its session's
      agentId: (s.agent as { id?: string }).id ?? null,
      agentVersion: (s.agent as { version?: number }).version ?? null,
      modelCard: s.agent.model.id,
      provider: resolved.providerId,
      model: resolved.wireModel,
      kind,
      usage,
    });
  } catch (err) {
    log?.error('cost ledger write failed', { session_id: s._id, err: String(err) });
  }
}

/** What an `aux.model_call` event says of one call (schemas/src/auxModelCall.ts). */
export interface AuxModelCall {
  kind: 'compaction' | 'grader';
  s: Pick<SessionDoc, 'agent'>;
  resolved: Pick<ResolvedModel, 'providerId' | 'wireModel'>;
  usage: ModelUsage;
  /** The price the session's usage update used (null: unpriced). */
  price: ListPrice;
  durationMs: number;
  /** The call's correlation ids (span start, outcome cycle). */
  refs: Record<string, string | number>;
}

/** The `aux.model_call` draft for one counted call; append it with the call's span end. */
export function auxModelCall(c: AuxModelCall): EventDraft {
  const nanos = c.price ? usageCostNanos(c.usage, c.price) : null;
  return {
    type: 'aux.model_call',
    payload: {
      kind: c.kind,
      model: c.s.agent.model.id,
      provider_model: `${c.resolved.providerId}/${c.resolved.wireModel}`,
      usage: {
        input_tokens: c.usage.input_tokens,
        output_tokens: c.usage.output_tokens,
        cache_read_input_tokens: c.usage.cache_read_input_tokens,
        cache_creation_input_tokens: c.usage.cache_creation_input_tokens,
      },
      list_cost:
        nanos === null
          ? null
          : {
              amount: String(Math.ceil(nanos / NANOS_PER_CENT)),
              currency: 'USD',
              amount_nanos: nanos,
            },
      duration_ms: Math.max(0, Math.round(c.durationMs)),
      ...c.refs,
    },
  };
}
