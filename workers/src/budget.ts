/**
 * The turn side of session budgets (core/src/domain/budget.ts).
 *
 * Guarantees (proved by test/budget.test.ts):
 * - Each model request's usage is priced at the model's list price when its response is
 *   appended, and the cost moves in the same session update as that request's token usage and
 *   log head (`costUpdate`), so a redelivered command or a recovered turn, which never re-runs
 *   a finished request, never counts it twice. A request with no list price marks the session's
 *   usage unpriced instead.
 * - Before every model request the turn re-reads the session (`budgetStop`): once a budgeted
 *   session's cost reached its ceiling (or its usage is unpriced) the turn ends with the SDK's
 *   `budget_reached` stop reason and no model request is made, until the budget is raised or
 *   removed. A turn started by a new user message then ends at once the same way.
 */
import {
  budgetReached,
  modelListPrice,
  usageCostNanos,
  type ModelUsage,
  type Platform,
} from '@agentfleet/core';
import type { TurnEnd } from './turnEvents.js';

/** The session update that records one request's list cost (merge into its usage update). */
export async function costUpdate(
  p: Platform,
  tenant: string,
  modelId: string,
  usage: ModelUsage,
): Promise<{ inc: Record<string, number>; set: Record<string, unknown> }> {
  const price = await modelListPrice(p.collections, tenant, modelId, p.models.hasVendorFallback);
  if (!price) return { inc: {}, set: { unpriced_usage: true } };
  return { inc: { list_cost_nanos: usageCostNanos(usage, price) }, set: {} };
}

/** `budget_reached` when the session may issue no further model request, else null. */
export async function budgetStop(
  p: Platform,
  tenant: string,
  sessionId: string,
): Promise<TurnEnd | null> {
  const s = await p.collections.sessions.get(tenant, sessionId);
  return s && budgetReached(s) ? { stop_reason: { type: 'budget_reached' } } : null;
}
