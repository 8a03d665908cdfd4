/**
 * Provider factory and the provider-id → wire-protocol table.
 */
import { AnthropicMessagesProvider } from './anthropic.js';
import { OpenAIChatProvider } from './openai.js';
import type { ModelProvider, ProviderConfig } from '../ports/modelProvider.js';

export { AnthropicMessagesProvider, ANTHROPIC_FAST_MODE_BETA } from './anthropic.js';
export { OpenAIChatProvider } from './openai.js';

/**
 * Builds the provider for `config.protocol`. `supportsFast` defaults to true; with false,
 * `speed: 'fast'` requests throw UnsupportedModelFeatureError before any network call.
 */
export function createProvider(config: ProviderConfig & { supportsFast?: boolean }): ModelProvider {
  const { protocol, ...options } = config;
  switch (protocol) {
    case 'anthropic':
      return new AnthropicMessagesProvider(options);
    case 'openai':
      return new OpenAIChatProvider(options);
    default:
      throw new TypeError(`unknown model protocol: ${String(protocol)}`);
  }
}

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
