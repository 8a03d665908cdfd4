/**
 * The cost service as the composition root (server/src/platform.ts) builds it: the ledger and
 * price card collections of the control store, the configured billing sources
 * (core/src/config/billing.ts) and a `cost` logger for billing datasets that fail.
 */
import type { Config } from '../config/config.js';
import { createLogger } from '../log.js';
import type { Collection } from '../store/port.js';
import { billingSources } from './billing/index.js';
import { CostService } from './ledger.js';
import type { LedgerBucketDoc, PriceCardDoc } from './records.js';

export const costService = (
  c: { costLedger: Collection<LedgerBucketDoc>; priceCards: Collection<PriceCardDoc> },
  config: Pick<Config, 'billing' | 'logLevel'>,
) =>
  new CostService({
    ledger: c.costLedger,
    priceCards: c.priceCards,
    billing: billingSources(config.billing),
    log: createLogger(config.logLevel, { component: 'cost' }),
  });
