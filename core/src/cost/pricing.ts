/**
 * The price card of the cost report (`GET` / `PUT /v1/svc/cost_report/pricing`, operator key
 * only): `{currency, services: {"<provider>/<model>": {input_tokens, output_tokens,
 * cache_read_input_tokens, cache_creation_input_tokens}}}`, rates in `currency` per million
 * tokens.
 *
 * Guarantees (test/e2e/cost/cost-report.test.ts "price card"):
 * - until the operator sets one, the card is the vendors' public list prices in USD (the
 *   anthropic/… and openai/… models of core/src/models/prices.ts), `updated_at: null`;
 * - a PUT replaces the whole card and is strict: an unknown field, a currency that is not three
 *   capital letters, a service key that is not `<provider>/<model>` or whose provider is neither
 *   a provider the platform speaks nor one the ledger has seen, an unknown rate name, a
 *   negative, non-finite or non-numeric rate — each a 400 naming the field; nothing is stored;
 * - a rate left out is missing, not zero: usage it would price makes the report partial.
 */
import { invalid } from '../errors.js';
import { VENDOR_LIST_PRICES } from '../models/prices.js';
import { providerProtocol } from '../models/protocols.js';
import { nowIso } from '../util.js';
import type { PriceCardDoc, ServiceRates, UsageField } from './records.js';
import { USAGE_FIELDS } from './records.js';

export const MAX_SERVICES = 2000;
const SERVICE = /^([A-Za-z0-9._-]{1,64})\/([A-Za-z0-9._:@+-][A-Za-z0-9._:@+/-]{0,199})$/;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The card before any PUT: the vendors' list prices, USD per million tokens. */
export function defaultPriceCard(): PriceCardDoc {
  const services: Record<string, ServiceRates> = {};
  for (const [vendor, models] of Object.entries(VENDOR_LIST_PRICES))
    for (const [model, p] of Object.entries(models))
      services[`${vendor}/${model}`] = {
        input_tokens: p.input,
        output_tokens: p.output,
        cache_read_input_tokens: p.cacheRead,
        cache_creation_input_tokens: p.cacheWrite,
      };
  return { _id: 'current', currency: 'USD', services, updated_at: null };
}

/**
 * Checks a PUT body; `seenProvider` says whether the ledger has recorded calls of a provider
 * the platform has no table entry for (a custom provider of a card's pi_config).
 */
export async function checkPriceCard(
  body: unknown,
  seenProvider: (provider: string) => Promise<boolean>,
): Promise<PriceCardDoc> {
  if (!isObj(body)) throw invalid('body', 'must be a JSON object');
  const extra = Object.keys(body).find((k) => k !== 'currency' && k !== 'services');
  if (extra) throw invalid(extra, 'is not a field of the price card (currency, services)');
  if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency))
    throw invalid('currency', 'must be an ISO 4217 code (three capital letters, e.g. USD)');
  if (!isObj(body.services)) throw invalid('services', 'must be an object of services');
  const entries = Object.entries(body.services);
  if (entries.length > MAX_SERVICES) throw invalid('services', `at most ${MAX_SERVICES} services`);
  const services: Record<string, ServiceRates> = {};
  for (const [key, rates] of entries) {
    const field = `services[${JSON.stringify(key.slice(0, 80))}]`;
    const m = SERVICE.exec(key);
    if (!m) throw invalid(field, 'must be a service key "<provider>/<model>"');
    if (!providerProtocol(m[1]!) && !(await seenProvider(m[1]!)))
      throw invalid(field, `unknown service: no provider ${JSON.stringify(m[1])} here`);
    if (!isObj(rates)) throw invalid(field, 'must be an object of rates per million tokens');
    const out: ServiceRates = {};
    for (const [name, v] of Object.entries(rates)) {
      if (!(USAGE_FIELDS as readonly string[]).includes(name))
        throw invalid(
          `${field}.${name.slice(0, 40)}`,
          `is not a rate (rates: ${USAGE_FIELDS.join(', ')})`,
        );
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw invalid(`${field}.${name}`, 'must be a number (per million tokens)');
      if (v < 0) throw invalid(`${field}.${name}`, 'must not be negative');
      if (v > 1_000_000) throw invalid(`${field}.${name}`, 'must be at most 1000000');
      out[name as UsageField] = v;
    }
    services[key] = out;
  }
  return { _id: 'current', currency: body.currency, services, updated_at: nowIso() };
}

/** The card as served. */
export const renderPriceCard = (c: PriceCardDoc) => ({
  type: 'price_card' as const,
  currency: c.currency,
  services: c.services,
  updated_at: c.updated_at,
});
