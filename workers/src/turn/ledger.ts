/**
 * Each finished model call of a session (agent turns, compaction summaries) goes into the
 * runtime ledger of the cost report (core/src/cost/ledger.ts) as soon as its stream ends —
 * before its events are appended, because the provider has billed it whether or not they are.
 * A ledger write that fails is logged and does not fail the turn (the report then undercounts
 * that call; the session's own usage is unaffected). Proved by test/e2e/cost/cost-report.test.ts.
 */
import type { CallKind, Logger, ModelUsage, ResolvedModel, SessionDoc } from '@agentfleet/core';
import type { WorkerServices } from '../services.js';

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
      sessionId: s._id,
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
