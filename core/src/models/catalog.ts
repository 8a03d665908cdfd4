/**
 * The runtime model catalog served by `POST /v1/svc/models/list` (spec "Models and model
 * cards"), and the deprecated live discovery of the two legacy protocols.
 *
 * It also holds the card create probe's request (probeListing; its tests are the model card
 * tests of test/e2e/auth/tenancy-auth.test.ts and test/e2e/models/model-cards-egress.test.ts).
 *
 * Guarantees (tested in test/e2e/models/model-cards-full.test.ts, "models/list"):
 * - Without `api_key`, the answer is the static catalog of the provider: each entry has the
 *   model id and a `pi_config` of the card's pi_config shape (name, api, reasoning, input,
 *   contextWindow, maxTokens), valid as a card's pi_config as it stands. Legacy aliases answer
 *   their canonical provider's catalog (`ant` → anthropic, `oai` → openai). A compatible
 *   endpoint (`ant-compatible`, `oai-compatible`, `openai-compatible`) or an unknown custom
 *   provider has no discoverable catalog: an empty list, not an error (spec "Model card":
 *   such a card is created directly with base_url and pi_config.api).
 * - With `api_key` (deprecated), the models are read live from the provider's `GET …/models`
 *   (Anthropic `x-api-key`, OpenAI bearer), bounded at 6 s, through the caller's HTTP (the
 *   egress policy for a tenant's base_url, core/src/models/models.ts). A key the provider
 *   refuses is a 400 naming `api_key`; an unreachable or failing provider a 400 naming
 *   `base_url`; never a 5xx, and the key never appears in an answer.
 */
import { invalid } from '../errors.js';
import type { HttpFetch } from '../egress/dispatcher.js';

export type Protocol = 'anthropic' | 'openai';

export interface CatalogModel {
  type: 'model';
  id: string;
  display_name: string;
  provider: string;
  /** The card's pi_config for this model (spec "Model card" pi_config). */
  pi_config: Record<string, unknown>;
}

/** The card probe and live discovery are bounded alike (spec: probe 6 s). */
const LISTING_TIMEOUT_MS = 6_000;

const anthropic = (id: string, name: string, maxTokens: number): CatalogModel => ({
  type: 'model',
  id,
  display_name: name,
  provider: 'anthropic',
  pi_config: {
    name,
    api: 'anthropic-messages',
    reasoning: true,
    input: ['text', 'image'],
    contextWindow: 200_000,
    maxTokens,
  },
});
const openai = (
  id: string,
  name: string,
  reasoning: boolean,
  contextWindow: number,
  maxTokens: number,
): CatalogModel => ({
  type: 'model',
  id,
  display_name: name,
  provider: 'openai',
  pi_config: {
    name,
    api: 'openai-completions',
    reasoning,
    input: ['text', 'image'],
    contextWindow,
    maxTokens,
  },
});

/** Static catalogs of the providers the runtime knows by name. */
const CATALOG: Readonly<Record<string, readonly CatalogModel[]>> = {
  anthropic: [
    anthropic('claude-opus-4-5', 'Claude Opus 4.5', 64_000),
    anthropic('claude-sonnet-4-5', 'Claude Sonnet 4.5', 64_000),
    anthropic('claude-haiku-4-5', 'Claude Haiku 4.5', 64_000),
    anthropic('claude-opus-4-1', 'Claude Opus 4.1', 32_000),
  ],
  openai: [
    openai('gpt-5', 'GPT-5', true, 400_000, 128_000),
    openai('gpt-5-mini', 'GPT-5 mini', true, 400_000, 128_000),
    openai('gpt-4.1', 'GPT-4.1', false, 1_047_576, 32_768),
    openai('gpt-4o', 'GPT-4o', false, 128_000, 16_384),
  ],
};
const ALIASES: Readonly<Record<string, string>> = { ant: 'anthropic', oai: 'openai' };

/** The static catalog of `provider` (aliases resolved); empty when it has none. */
export function catalogFor(provider: string): CatalogModel[] {
  const name = Object.hasOwn(ALIASES, provider) ? ALIASES[provider]! : provider;
  const models = Object.hasOwn(CATALOG, name) ? CATALOG[name]! : [];
  return models.map((m) => structuredClone(m));
}

/** The listing request of a legacy protocol (also the card create probe's request). */
export function listingRequest(
  protocol: Protocol,
  apiKey: string,
  baseUrl?: string,
): { url: string; headers: Record<string, string> } {
  return protocol === 'anthropic'
    ? {
        url: `${baseUrl ?? 'https://api.anthropic.com'}/v1/models`,
        headers: { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
      }
    : {
        url: `${baseUrl ?? 'https://api.openai.com/v1'}/models`,
        headers: { authorization: `Bearer ${apiKey}` },
      };
}

/**
 * The card create probe (spec rule 1): the listing request with the key, bounded at 6 s, so a
 * bad key fails loudly. Egress refusals are rethrown for the caller to name the field.
 */
export async function probeListing(
  protocol: Protocol,
  apiKey: string,
  baseUrl: string | undefined,
  headers: Record<string, string>,
  http: HttpFetch,
  isRefusal: (err: unknown) => unknown,
): Promise<{ ok: boolean | null; status?: number; reason?: string }> {
  const { url, headers: auth } = listingRequest(protocol, apiKey, baseUrl);
  try {
    const res = await http(url, {
      headers: { ...headers, ...auth },
      signal: AbortSignal.timeout(LISTING_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.ok
      ? { ok: true, status: res.status }
      : { ok: false, status: res.status, reason: `HTTP ${res.status}` };
  } catch (err) {
    if (isRefusal(err)) throw err;
    return {
      ok: false,
      reason:
        (err as Error).name === 'TimeoutError'
          ? 'probe timed out after 6s'
          : 'unreachable: the provider could not be reached',
    };
  }
}

/**
 * Live discovery (deprecated path): the provider's model list read with the caller's key.
 * Egress refusals are rethrown for the caller to name the field.
 */
export async function discoverModels(
  provider: string,
  protocol: Protocol,
  apiKey: string,
  baseUrl: string | undefined,
  http: HttpFetch,
  isRefusal: (err: unknown) => unknown,
): Promise<CatalogModel[]> {
  const { url, headers } = listingRequest(protocol, apiKey, baseUrl);
  let res: Response;
  try {
    res = await http(url, { headers, signal: AbortSignal.timeout(LISTING_TIMEOUT_MS) });
  } catch (err) {
    if (isRefusal(err)) throw err;
    throw invalid(
      'base_url',
      (err as Error).name === 'TimeoutError'
        ? 'model discovery timed out after 6s'
        : 'unreachable: the provider could not be reached',
    );
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw invalid('api_key', `rejected by the provider (HTTP ${res.status})`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw invalid('base_url', `model discovery failed (HTTP ${res.status})`);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw invalid('base_url', 'model discovery answered something other than a JSON model list');
  }
  const data = (body as { data?: unknown })?.data;
  if (!Array.isArray(data))
    throw invalid('base_url', 'model discovery answered something other than a model list');
  const api = protocol === 'anthropic' ? 'anthropic-messages' : 'openai-completions';
  return data
    .filter((m): m is { id: string; display_name?: unknown } => typeof m?.id === 'string')
    .map((m) => {
      const name = typeof m.display_name === 'string' ? m.display_name : m.id;
      return { type: 'model', id: m.id, display_name: name, provider, pi_config: { name, api } };
    });
}
