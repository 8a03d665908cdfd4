/**
 * The turn side of session budgets (core/src/sessions/budget.ts).
 *
 * Guarantees (proved by test/e2e/turns/budget.test.ts; compaction summary calls by
 * test/e2e/turns/compaction-usage.test.ts):
 * - Each model request's usage is priced at the model's list price as read when the request
 *   started (its model card is read once for the provider and the price), and the cost moves in the same session update as that request's token usage and
 *   log head (`usageUpdate`), so a redelivered command or a recovered turn, which never re-runs
 *   a finished request, never counts it twice. A request with no list price marks the session's
 *   usage unpriced instead. A harness `pi` compaction summary call (./compaction) is a model
 *   request of the session like any other: its usage and cost move with its
 *   span.compaction_summarize_end the same way.
 * - Before every model request the turn checks the session (`budgetStop`; the first request of
 *   a turn with the session document the turn started from, read moments before, every later
 *   one with a fresh read): once a budgeted session's cost reached its ceiling (or its usage is
 *   unpriced) the turn ends with the SDK's `budget_reached` stop reason and no model request is
 *   made, until the budget is raised or removed. A turn started by a new user message then ends
 *   at once the same way.
 * - A coordinator session has one budget (core/src/threads): the check of the primary or of any
 *   child thread reads the session's budget against the usage of all its threads
 *   (test/e2e/threads/threads-budget.test.ts).
 * - A crash between a request's event insert and its session update (two documents) would lose
 *   that request's usage: before that check, a budgeted session's token counts are compared
 *   with its span.model_request_end and span.compaction_summarize_end events, and usage the
 *   session lacks is added, priced now (compare-and-set on the counts, so it is added once).
 */
import {
  budgetReached,
  usageCostNanos,
  withThreadUsage,
  type ModelUsage,
  type SessionDoc,
  type TokenPrices,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import type { TurnEnd } from './events.js';

/** What pricing a request's usage reads: the model's list price. */
export type PricingServices = Pick<WorkerServices, 'models'>;
/** What the budget check reads and reconciles: the stored session, its usage span ends. */
export type BudgetServices = Pick<WorkerServices, 'models' | 'sessions'>;

/** The model's list price (null: unpriced), read from its model card. */
export type ListPrice = TokenPrices | null;

/** The list price of a session's model; a request reads it while it streams (./modelRequest.ts). */
export function listPriceOf(
  p: PricingServices,
  tenant: string,
  modelId: string,
): Promise<ListPrice> {
  return p.models.listPrice(tenant, modelId);
}

/** The session update that records one request's list cost (merge into its usage update). */
export async function costUpdate(
  p: PricingServices,
  tenant: string,
  modelId: string,
  usage: ModelUsage,
  known?: ListPrice,
): Promise<{ inc: Record<string, number>; set: Record<string, unknown> }> {
  const price = known !== undefined ? known : await listPriceOf(p, tenant, modelId);
  if (!price) return { inc: {}, set: { unpriced_usage: true } };
  return { inc: { list_cost_nanos: usageCostNanos(usage, price) }, set: {} };
}

/** The session update that records one finished model request's usage and list cost. */
export type UsageUpdate = { $inc: Record<string, number>; $set: Record<string, unknown> };

/**
 * The session update for one finished model request: its token usage and its list cost
 * (`price`: the price read with the model card when the request started, else read now).
 */
export async function usageUpdate(
  p: PricingServices,
  tenant: string,
  modelId: string,
  usage: ModelUsage,
  price?: ListPrice,
): Promise<UsageUpdate> {
  const cost = await costUpdate(p, tenant, modelId, usage, price);
  return {
    $inc: {
      'usage.input_tokens': usage.input_tokens,
      'usage.output_tokens': usage.output_tokens,
      'usage.cache_read_input_tokens': usage.cache_read_input_tokens,
      'usage.cache_creation_input_tokens': usage.cache_creation_input_tokens,
      ...cost.inc,
    },
    $set: cost.set,
  };
}

/** `budget_reached` when the session may issue no further model request, else null. */
export async function budgetStop(
  p: BudgetServices,
  tenant: string,
  sessionId: string,
  current?: SessionDoc,
): Promise<TurnEnd | null> {
  let s = current ?? (await p.sessions.turns.session(tenant, sessionId));
  // A coordinator session's threads share its budget: the session's, over every thread's usage.
  const root = s?.thread_of ? await p.sessions.turns.session(tenant, s.thread_of) : s;
  if (root?.roster) {
    const reconciled = root.budget ? await reconcileUsage(p, tenant, root) : root;
    const children = await p.sessions.threads.children(tenant, root._id);
    return budgetReached(withThreadUsage(reconciled, children))
      ? { stop_reason: { type: 'budget_reached' } }
      : null;
  }
  if (s?.budget) s = await reconcileUsage(p, tenant, s);
  return s && budgetReached(s) ? { stop_reason: { type: 'budget_reached' } } : null;
}

const USAGE_KEYS = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
] as const;

/** The span ends that carry a finished model request's usage (main requests, compaction summaries). */
export const USAGE_SPAN_ENDS = ['span.model_request_end', 'span.compaction_summarize_end'];

/** Adds usage present in the session's usage span ends but not in its counts. */
async function reconcileUsage(
  p: BudgetServices,
  tenant: string,
  s: SessionDoc,
): Promise<SessionDoc> {
  const ends = await p.sessions.turns.eventsOfTypes(tenant, s._id, USAGE_SPAN_ENDS);
  const missing = {} as ModelUsage;
  for (const k of USAGE_KEYS) {
    const logged = ends.reduce(
      (n, e) => n + (Number((e.payload as any)?.model_usage?.[k]) || 0),
      0,
    );
    missing[k] = Math.max(0, logged - (s.usage[k] ?? 0));
  }
  if (USAGE_KEYS.every((k) => missing[k] === 0)) return s;
  const cost = await costUpdate(p, tenant, s.agent.model.id, missing);
  const inc: Record<string, number> = { ...cost.inc };
  for (const k of USAGE_KEYS) inc[`usage.${k}`] = missing[k];
  const seen = Object.fromEntries(USAGE_KEYS.map((k) => [`usage.${k}`, s.usage[k]]));
  const after = await p.sessions.turns.addUsage(tenant, s._id, seen, {
    $inc: inc,
    ...(Object.keys(cost.set).length ? { $set: cost.set } : {}),
  });
  return after ?? s;
}
