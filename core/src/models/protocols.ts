/**
 * Which wire protocol a model card's provider id speaks, with its fast-mode support
 * (providerProtocol; protocolOf also reads a card's pi_config.api). Unknown ids answer null
 * (the caller refuses them as bad input). Pure tables: no adapter here, so ModelResolver and
 * memory search read them without importing a provider. Proved by
 * core/test/model-providers.shared.test.ts ("providers").
 */
const PROTOCOLS: Readonly<
  Record<string, { protocol: 'anthropic' | 'openai'; supportsFast: boolean }>
> = {
  anthropic: { protocol: 'anthropic', supportsFast: true },
  ant: { protocol: 'anthropic', supportsFast: true },
  'ant-compatible': { protocol: 'anthropic', supportsFast: false },
  openai: { protocol: 'openai', supportsFast: true },
  oai: { protocol: 'openai', supportsFast: true },
  'oai-compatible': { protocol: 'openai', supportsFast: false },
  'openai-compatible': { protocol: 'openai', supportsFast: false },
};

/** Protocol and fast-mode support for a provider id (exact match); null when unknown. */
export function providerProtocol(
  provider: string,
): { protocol: 'anthropic' | 'openai'; supportsFast: boolean } | null {
  const hit = Object.hasOwn(PROTOCOLS, provider) ? PROTOCOLS[provider] : undefined;
  return hit ? { ...hit } : null;
}

const PI_API: Record<string, 'anthropic' | 'openai'> = {
  'anthropic-messages': 'anthropic',
  anthropic: 'anthropic',
  'openai-completions': 'openai',
  'openai-chat': 'openai',
  openai: 'openai',
};

/** A card's protocol: its provider id's, else its pi_config `api` (no fast mode); null: neither. */
export function protocolOf(
  provider: string,
  piConfig: Record<string, unknown> | null,
): { protocol: 'anthropic' | 'openai'; supportsFast: boolean } | null {
  const known = providerProtocol(provider);
  if (known) return known;
  const api = typeof piConfig?.api === 'string' ? PI_API[piConfig.api] : undefined;
  return api ? { protocol: api, supportsFast: false } : null;
}
