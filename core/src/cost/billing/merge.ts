/**
 * The cost report with billed data (`source=billed|all`): the ledger's report (../ledger.ts)
 * and the billed part (./index.ts `billedPart`) as one answer.
 *
 * Guarantees (test/e2e/cost/billing.test.ts):
 * - `source=all`: the ledger rows (estimated) then the billed rows; `source=billed`: the billed
 *   rows only; `calls`, `usage` and `total_estimated_cost` stay the ledger's (what the platform
 *   counted, priced by the card);
 * - with no billing source configured, `billed` and `all` fall back to the price card: the
 *   ledger's rows and totals, `source: 'svc_metered'`, `total_cost: null`, and `datasets`
 *   naming only the ledger;
 * - with sources, `source: 'provider_billed'`, and the top-level `total_cost`, `currency`,
 *   `granularity`, `is_invoice_grade`, `reconciled_at` are the billed part's, and
 *   `estimated_currency` names the price card's currency (that of `total_estimated_cost`);
 *   `data_completeness` is partial when either part is; `datasets` lists the ledger and every
 *   billing dataset with its status and error.
 */
import type { billedPart } from './index.js';

interface LedgerReport {
  currency: string;
  data_completeness: 'complete' | 'partial';
  rows: Array<{ missing_rates?: string[] }>;
}

/** The ledger as a dataset of the report (its missing rates: an incomplete rate card). */
export function ledgerDataset(r: LedgerReport) {
  const missing = [...new Set(r.rows.flatMap((row) => row.missing_rates ?? []))].sort();
  return {
    name: 'ledger',
    provider: null,
    status: 'complete' as const,
    is_invoice_grade: false,
    reconciled_at: null,
    windows: null,
    requests: null,
    error: missing.length
      ? {
          type: 'incomplete_rate_card' as const,
          message: `the price card has no rate for ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', …' : ''}`,
          retryable: false,
          provider_status: null,
        }
      : null,
  };
}

export function mergeBilled<R extends LedgerReport>(
  ledger: R,
  billed: ReturnType<typeof billedPart>,
  source: 'billed' | 'all',
) {
  const partial = ledger.data_completeness === 'partial' || !billed.complete;
  return {
    ...ledger,
    source: 'provider_billed' as const,
    granularity: billed.granularity,
    is_invoice_grade: billed.is_invoice_grade,
    data_completeness: partial ? ('partial' as const) : ('complete' as const),
    reconciled_at: billed.reconciled_at,
    currency: billed.currency ?? ledger.currency,
    // The price card's currency, which `total_estimated_cost` (the ledger's) is in: `currency`
    // is the bill's and may differ.
    estimated_currency: ledger.currency,
    total_cost: billed.total_cost,
    rows: source === 'all' ? [...ledger.rows, ...billed.rows] : billed.rows,
    datasets: [ledgerDataset(ledger), ...billed.datasets],
  };
}
