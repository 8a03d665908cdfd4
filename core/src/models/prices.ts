/**
 * List prices of models, for session budgets (SDK BetaManagedAgentsBudgetLimit): what one model
 * request's usage costs at public list rates, in nano-US-dollars (1e-9 USD, integers, so sums
 * never round).
 *
 * Guarantees (proved by test/e2e/turns/budget.test.ts):
 * - A model card's `pi_config.cost` (pi's model metadata: USD per million tokens for `input`,
 *   `output`, `cacheRead`, `cacheWrite`) is its price. A card without one whose provider is the
 *   vendor itself (`anthropic`/`ant`, `openai`/`oai`; not a `*-compatible` endpoint) takes that
 *   vendor's list below for its wire model; the fallback vendor key (ANTHROPIC_API_KEY) prices
 *   the models it serves from the Anthropic list.
 * - A model with no price (a custom provider without `pi_config.cost`, an unlisted model) is
 *   `null`: never priced as free. Missing cache rates are filled conservatively (a cache read
 *   at the input rate, a cache write at 1.25 × input).
 * - Costs round up per request, so the tracked cost is never below the list charge.
 */
import type { ModelUsage } from './port.js';
import type { Collections } from '../store/collections.js';
import type { ModelCardDoc } from './records.js';
import { readThrough } from '../store/readCache.js';

/** USD per million tokens. */
export interface TokenPrices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** Nano-dollars per USD; one cent (the API's minor unit) is 1e7 nano-dollars. */
export const NANOS_PER_USD = 1_000_000_000;
export const NANOS_PER_CENT = 10_000_000;

const anthropic = (input: number, output: number): TokenPrices => ({
  input,
  output,
  cacheRead: input / 10,
  cacheWrite: input * 1.25, // the 5-minute cache write; the platform sets no 1-hour TTL
});
const openai = (input: number, output: number, cached: number): TokenPrices => ({
  input,
  output,
  cacheRead: cached,
  cacheWrite: input,
});

/**
 * Public list prices (USD per million tokens) of vendor models the platform knows, by model id
 * without a date suffix. Only prices published by the vendor are listed; any other model needs
 * `pi_config.cost` on its card to be budgeted.
 */
export const VENDOR_LIST_PRICES: Readonly<
  Record<'anthropic' | 'openai', Readonly<Record<string, TokenPrices>>>
> = {
  anthropic: {
    'claude-opus-4-5': anthropic(5, 25),
    'claude-opus-4-1': anthropic(15, 75),
    'claude-opus-4-0': anthropic(15, 75),
    'claude-opus-4': anthropic(15, 75),
    'claude-sonnet-4-5': anthropic(3, 15),
    'claude-sonnet-4-0': anthropic(3, 15),
    'claude-sonnet-4': anthropic(3, 15),
    'claude-3-7-sonnet': anthropic(3, 15),
    'claude-haiku-4-5': anthropic(1, 5),
    'claude-3-5-haiku': anthropic(0.8, 4),
    'claude-3-haiku': anthropic(0.25, 1.25),
  },
  openai: {
    'gpt-5': openai(1.25, 10, 0.125),
    'gpt-5-mini': openai(0.25, 2, 0.025),
    'gpt-5-nano': openai(0.05, 0.4, 0.005),
    'gpt-4.1': openai(2, 8, 0.5),
    'gpt-4.1-mini': openai(0.4, 1.6, 0.1),
    'gpt-4.1-nano': openai(0.1, 0.4, 0.025),
    'gpt-4o': openai(2.5, 10, 1.25),
    'gpt-4o-mini': openai(0.15, 0.6, 0.075),
  },
};

/** Card providers that are the vendor itself (not a `*-compatible` endpoint): the list applies. */
const VENDOR_PROVIDERS: Readonly<Record<string, 'anthropic' | 'openai'>> = {
  anthropic: 'anthropic',
  ant: 'anthropic',
  openai: 'openai',
  oai: 'openai',
};

/** The list price of a vendor's model id (`-20250929`, `-2024-08-06` and `-latest` suffixes ignored). */
export function vendorListPrice(
  protocol: 'anthropic' | 'openai',
  modelId: string,
): TokenPrices | null {
  const list = VENDOR_LIST_PRICES[protocol];
  const base = modelId.replace(/-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/, '');
  return Object.hasOwn(list, base) ? list[base]! : null;
}

const rate = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

/** A card's `pi_config.cost`, or null when it has no usable input and output rate. */
export function cardListPrice(piConfig: Record<string, unknown> | null): TokenPrices | null {
  const cost = piConfig?.cost as Record<string, unknown> | undefined;
  if (!cost || typeof cost !== 'object') return null;
  const input = rate(cost.input);
  const output = rate(cost.output);
  if (input === null || output === null) return null;
  return {
    input,
    output,
    cacheRead: rate(cost.cacheRead) ?? input,
    cacheWrite: rate(cost.cacheWrite) ?? input * 1.25,
  };
}

/**
 * The price a session's model runs at for this tenant: its card's (pi_config.cost, else the
 * vendor list for a known vendor provider's wire model), else the fallback vendor key's list
 * price, else null (no list price).
 */
export async function modelListPrice(
  c: Pick<Collections, 'modelCards'>,
  tenant: string,
  modelId: string,
  hasVendorFallback: boolean,
): Promise<TokenPrices | null> {
  const card = await cardOf(c, tenant, modelId);
  return listPriceOfCard(card, modelId, hasVendorFallback);
}

/**
 * The tenant's card for a model, or null: through the platform's model card cache
 * (../store/readCache.ts QueryReadCache) where it set one up, else read.
 */
export function cardOf(
  c: Pick<Collections, 'modelCards'>,
  tenant: string,
  modelId: string,
): Promise<ModelCardDoc | null> {
  return readThrough(c.modelCards, tenant, `model_id:${modelId}`, () =>
    c.modelCards.findOne(tenant, { model_id: modelId }),
  );
}

/** `modelListPrice` for a model card already read (null: the model has none). */
export function listPriceOfCard(
  card: Pick<ModelCardDoc, 'pi_config' | 'provider' | 'model'> | null,
  modelId: string,
  hasVendorFallback: boolean,
): TokenPrices | null {
  if (card) {
    const own = cardListPrice(card.pi_config);
    if (own) return own;
    const vendor = Object.hasOwn(VENDOR_PROVIDERS, card.provider)
      ? VENDOR_PROVIDERS[card.provider]!
      : null;
    return vendor ? vendorListPrice(vendor, card.model) : null;
  }
  // The fallback key is an Anthropic key: it serves (and is priced for) Anthropic models only.
  return hasVendorFallback ? vendorListPrice('anthropic', modelId) : null;
}

/** One request's list cost in nano-dollars, rounded up. */
export function usageCostNanos(usage: ModelUsage, price: TokenPrices): number {
  // USD per million tokens × tokens = 1e-6 USD = 1e3 nano-dollars.
  const perMillion =
    usage.input_tokens * price.input +
    usage.output_tokens * price.output +
    usage.cache_read_input_tokens * price.cacheRead +
    usage.cache_creation_input_tokens * price.cacheWrite;
  return Math.ceil(perMillion * 1000 - 1e-6);
}
