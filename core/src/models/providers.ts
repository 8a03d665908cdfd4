/**
 * Model-provider adapter selection: createProvider builds the adapter for a model card's wire
 * protocol, the ProviderFactory (./port.ts) that the assembly (server/src/platform.ts) hands to
 * ModelResolver; exported from `@agentfleet/core/adapters` only. An unknown protocol is a
 * programming error. Which protocol a provider id speaks is ./protocols.ts. Proved by
 * core/test/model-providers.shared.test.ts ("providers") and core/test/modelProvider.test.ts
 * (the contract suite built through createProvider).
 */
import { AnthropicMessagesProvider } from './anthropic/provider.js';
import { OpenAIChatProvider } from './openai/provider.js';
import type { ProviderFactory } from './port.js';

export { AnthropicMessagesProvider } from './anthropic/provider.js';
export { OpenAIChatProvider } from './openai/provider.js';

/**
 * Builds the provider for `config.protocol`. `supportsFast` defaults to true; with false,
 * `speed: 'fast'` requests throw UnsupportedModelFeatureError before any network call.
 */
export const createProvider: ProviderFactory = (config) => {
  const { protocol, ...options } = config;
  switch (protocol) {
    case 'anthropic':
      return new AnthropicMessagesProvider(options);
    case 'openai':
      return new OpenAIChatProvider(options);
    default:
      throw new TypeError(`unknown model protocol: ${String(protocol)}`);
  }
};
