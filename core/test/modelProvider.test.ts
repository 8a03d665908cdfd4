/**
 * The model-provider contract (modelProvider.contract.ts) against both protocol adapters, built
 * through createProvider as a model card builds them: AnthropicMessagesProvider (Anthropic
 * Messages) and OpenAIChatProvider (OpenAI chat completions).
 */
import { expect } from 'vitest';
import { ANTHROPIC_FAST_MODE_BETA } from '../src/models/anthropic/requestBody.js';
import { createProvider } from '../src/models/providers.js';
import { modelProviderContract } from './modelProvider.contract.js';

modelProviderContract({
  name: 'anthropic',
  make: (server, o) =>
    createProvider({
      protocol: 'anthropic',
      apiKey: o.apiKey ?? '',
      ...o,
      baseUrl: o.baseUrl ?? server.url,
    }),
  mountedAt: (server, prefix) => ({
    baseUrl: `${server.url}${prefix}/`,
    path: `${prefix}/v1/messages`,
  }),
  expectAuth(headers, key) {
    expect(headers['x-api-key']).toBe(key);
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(headers.authorization).toBeUndefined();
  },
  expectFast(fast, std) {
    expect(fast.body.speed).toBe('fast');
    expect(String(fast.headers['anthropic-beta']).split(',')).toEqual([
      'other-beta',
      ANTHROPIC_FAST_MODE_BETA,
    ]);
    expect(std.body.speed).toBeUndefined();
    expect(std.headers['anthropic-beta']).toBe('other-beta');
  },
  carriesThinkingSignature: true,
});

modelProviderContract({
  name: 'openai',
  make: (server, o) =>
    createProvider({
      protocol: 'openai',
      apiKey: o.apiKey ?? '',
      ...o,
      baseUrl: o.baseUrl ?? `${server.url}/v1`,
    }),
  mountedAt: (server, prefix) => ({
    baseUrl: `${server.url}${prefix}/v1/`,
    path: `${prefix}/v1/chat/completions`,
  }),
  expectAuth(headers, key) {
    expect(headers.authorization).toBe(`Bearer ${key}`);
    expect(headers['x-api-key']).toBeUndefined();
  },
  expectFast(fast, std) {
    expect(fast.body.service_tier).toBe('priority');
    expect(std.body.service_tier).toBeUndefined();
  },
  carriesThinkingSignature: false,
});
