/**
 * Session budgets (SDK BetaManagedAgentsBudgetLimit, `budget` on session create and update):
 * a hard ceiling on the session's tracked list cost.
 *
 * Guarantees (proved by test/e2e/turns/budget.test.ts and test/e2e/sdk/sdk_suite/test_budget.py):
 * - `max_list_cost` is USD in cents as an integer string ("2500" is $25.00); anything else is
 *   a 400 naming `budget.max_list_cost.amount` or `.currency`.
 * - Create with a budget: the session's model must have a list price (../models/prices.ts), else a 400
 *   with reason `model_not_budgetable`.
 * - Update: an object replaces the budget of a session created with one; `null` removes it;
 *   omitted preserves it. Refused (400, `details.error_code` and `details.reason` both set):
 *   adding a budget to a session created without one or whose budget was removed
 *   (`budget_create_only`); a new `max_list_cost` at or below the consumed list cost
 *   (`budget_not_raised`); a model with no list price (`model_not_budgetable`); a terminated
 *   session. A raise accepted after unpriced usage (the model has a price again) lifts the stop.
 * - The consumed cost is kept in nano-dollars on the session (`list_cost_nanos`, moved by the
 *   same update that appends the model request's events: workers/src/turn/budget.ts) and served as
 *   `usage.list_cost` in cents, rounded up; `null` once any usage had no list price.
 * - `budgetReached`: a budgeted session whose cost is at or above the ceiling, or whose usage
 *   includes an unpriced model, issues no model request (its turns end with `budget_reached`).
 */
import { ApiError, invalid } from '../errors.js';
import type { Collections } from '../store/collections.js';
import type { SessionDoc } from './records.js';
import { modelListPrice, NANOS_PER_CENT } from '../models/prices.js';

export interface BudgetLimit {
  type: 'limit';
  max_list_cost: { amount: string; currency: string };
}

/** The budget bookkeeping a session document carries beside the SDK fields. */
export interface SessionBudgetState {
  /** Tracked list cost in nano-dollars (absent: nothing consumed). */
  list_cost_nanos?: number;
  /** True once a model request ran with no list price: the cost cannot be measured. */
  unpriced_usage?: boolean;
  /** True once the budget was removed: it cannot be added again. */
  budget_removed?: boolean;
}

const stateOf = (s: SessionDoc) => s as SessionDoc & SessionBudgetState;

export type BudgetRefusal = 'budget_create_only' | 'budget_not_raised' | 'model_not_budgetable';

/** A 400 carrying the SDK's reason as `details.error_code` and `details.reason`. */
export const budgetRefusal = (reason: BudgetRefusal, message: string) =>
  new ApiError('invalid_request', `budget: ${message}`, {
    field: 'budget',
    error_code: reason,
    reason,
  });

/** Validates the amount and currency; answers the ceiling in nano-dollars. */
export function budgetCeilingNanos(budget: BudgetLimit): number {
  const { amount, currency } = budget.max_list_cost;
  if (currency !== 'USD')
    throw invalid('budget.max_list_cost.currency', `'${currency}' is not supported; use USD`);
  if (!/^(0|[1-9][0-9]{0,7})$/.test(amount))
    throw invalid(
      'budget.max_list_cost.amount',
      'must be an integer number of cents (at most 8 digits) without leading zeros, e.g. "2500" for $25.00',
    );
  return Number(amount) * NANOS_PER_CENT;
}

async function assertBudgetable(
  c: Pick<Collections, 'modelCards'>,
  tenant: string,
  modelId: string,
  hasVendorFallback: boolean,
): Promise<void> {
  if (!(await modelListPrice(c, tenant, modelId, hasVendorFallback)))
    throw budgetRefusal(
      'model_not_budgetable',
      `model '${modelId}' has no list price (set pi_config.cost on its model card)`,
    );
}

/** Create: validates the budget, if any, for the session's model. */
export async function checkCreateBudget(
  c: Pick<Collections, 'modelCards'>,
  tenant: string,
  budget: BudgetLimit | null | undefined,
  modelId: string,
  hasVendorFallback: boolean,
): Promise<void> {
  if (!budget) return;
  budgetCeilingNanos(budget);
  await assertBudgetable(c, tenant, modelId, hasVendorFallback);
}

/** Update: the fields to set for `budget` (none when omitted), or the SDK's refusal. */
export async function budgetUpdateFields(
  c: Pick<Collections, 'modelCards'>,
  tenant: string,
  s: SessionDoc,
  budget: BudgetLimit | null | undefined,
  hasVendorFallback: boolean,
): Promise<Record<string, unknown>> {
  if (budget === undefined) return {};
  if (s.terminated_at) throw invalid('budget', `session ${s._id} is terminated`);
  const st = stateOf(s);
  if (budget === null) return s.budget ? { budget: null, budget_removed: true } : {};
  if (!s.budget)
    throw budgetRefusal(
      'budget_create_only',
      st.budget_removed
        ? 'a removed budget cannot be added again'
        : 'a budget can only be set when the session is created',
    );
  const ceiling = budgetCeilingNanos(budget);
  if (ceiling <= (st.list_cost_nanos ?? 0))
    throw budgetRefusal(
      'budget_not_raised',
      `max_list_cost must be above the consumed list cost (${renderCents(st.list_cost_nanos ?? 0)} cents)`,
    );
  await assertBudgetable(c, tenant, s.agent.model.id, hasVendorFallback);
  // Accepted only when the model has a list price again: earlier unpriced usage stops blocking.
  return st.unpriced_usage ? { budget, unpriced_usage: false } : { budget };
}

/** True when a budgeted session may issue no further model request. */
export function budgetReached(s: SessionDoc): boolean {
  if (!s.budget) return false;
  const st = stateOf(s);
  if (st.unpriced_usage) return true;
  let ceiling: number;
  try {
    ceiling = budgetCeilingNanos(s.budget as BudgetLimit);
  } catch {
    return true; // a budget stored before amounts were checked: closed until replaced or removed
  }
  return (st.list_cost_nanos ?? 0) >= ceiling;
}

const renderCents = (nanos: number) => String(Math.ceil(nanos / NANOS_PER_CENT));

/** The session's `usage` as served: token counts plus `list_cost` (SDK BetaManagedAgentsSessionUsage). */
export function renderUsage(s: SessionDoc) {
  const st = stateOf(s);
  return {
    ...s.usage,
    list_cost: st.unpriced_usage
      ? null
      : { amount: renderCents(st.list_cost_nanos ?? 0), currency: 'USD' as const },
  };
}
