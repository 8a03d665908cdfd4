/**
 * Cost: the runtime ledger of model calls, the operator's price card and the cost report
 * (./ledger.ts, ./pricing.ts), and the providers' billed cost (./billing). The composition
 * root (server/src/platform.ts) builds the service on the control store with the configured
 * billing sources; the worker records each model call.
 */
export {
  CostService,
  MAX_RANGE_DAYS,
  MAX_ROWS,
  GROUP_KEYS,
  REPORT_SOURCES,
  type LedgerCall,
} from './ledger.js';
export {
  billingSources,
  BILLING_ERROR_TYPES,
  BILLED_GROUP_KEYS,
  type BillingConfig,
} from './billing/index.js';
export { defaultPriceCard, MAX_SERVICES } from './pricing.js';
export { CALL_KINDS, type CallKind, type LedgerBucketDoc, type PriceCardDoc } from './records.js';
export { costService } from './service.js';
