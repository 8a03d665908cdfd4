/**
 * Cost records (core/src/cost), all in the control store: the cost report is deployment-wide
 * (the operator's), so it reads across tenants without opening every tenant's store.
 *
 * - `LedgerBucketDoc`: the runtime ledger — the usage of model calls, summed per hour, tenant,
 *   session, agent (version), model card, provider/model and kind of call. Written with each
 *   call (`$inc` on an upserted bucket), never derived from the event log at query time.
 * - `PriceCardDoc`: the operator's price card, one document (`_id: 'current'`).
 */
import type { ModelUsage } from '../models/port.js';

/** What a model call was for: an agent's turn, a compaction summary, an outcome grader, a dream. */
export type CallKind = 'turn' | 'compaction' | 'grader' | 'dream';
export const CALL_KINDS: readonly CallKind[] = ['turn', 'compaction', 'grader', 'dream'];

export const USAGE_FIELDS = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
] as const satisfies ReadonlyArray<keyof ModelUsage>;
export type UsageField = (typeof USAGE_FIELDS)[number];

export interface LedgerBucketDoc {
  /** sha256 of the bucket key (hour, tenant, session, agent, card, service, kind). */
  _id: string;
  tenant_id: string;
  session_id: string | null;
  agent_id: string | null;
  agent_version: number | null;
  /** The model card's `model_id` (the tenant's name for the model). */
  model_card: string;
  /** The model card's provider id. */
  provider: string;
  /** `<provider>/<wire model>`: the price card's service key. */
  service: string;
  kind: CallKind;
  /** Start of the hour, ms since the epoch. */
  hour_ms: number;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/** Rates per million tokens; a rate left out is missing (usage it would price is partial). */
export type ServiceRates = Partial<Record<UsageField, number>>;

export interface PriceCardDoc {
  _id: 'current';
  /** ISO 4217 code, e.g. USD. */
  currency: string;
  services: Record<string, ServiceRates>;
  updated_at: string | null;
}
