/**
 * OpenAI chat-completions provider (streaming), also used for OpenAI-compatible servers: the
 * model-provider port's adapter for the OpenAI protocol (core/src/models/port.ts).
 * Guarantees:
 * - one POST to `${baseUrl}/chat/completions` per stream(), key as a Bearer token; no retries;
 * - `speed: 'fast'` on a provider built with `supportsFast: false` throws
 *   UnsupportedModelFeatureError before any network call (otherwise it asks for
 *   `service_tier: 'priority'`);
 * - a request's extra headers (pi_config.headers) are sent, never replacing `authorization` or
 *   the card's custom headers (modelProviderHelpers providerHeaders);
 * - the emitted events follow the port's contract, or the iteration throws a ModelError /
 *   AbortError naming none of its credentials.
 * Request mapping is in requestBody.ts, stream decoding (sequential blocks from interleaved
 * fragments, usage, completion) in streamDecoder.ts. Proved by
 * core/test/modelProvider.contract.ts (run by core/test/modelProvider.test.ts) and
 * core/test/model-providers.openai.test.ts.
 */
import {
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  type ProviderConfig,
} from '../port.js';
import {
  postForEventStream,
  providerHeaders,
  transportError,
  providerStream,
} from '../providerHelpers.js';
import { OPENAI_DEFAULT_BASE_URL, openAIBodyBytes } from './requestBody.js';
import { decodeChatCompletionsStream } from './streamDecoder.js';

export type OpenAIProviderOptions = Omit<ProviderConfig, 'protocol'> & {
  protocol?: 'openai';
  /** Whether the endpoint accepts `service_tier: 'priority'` for `speed: 'fast'` (default true). */
  supportsFast?: boolean;
};

export class OpenAIChatProvider implements ModelProvider {
  readonly protocol = 'openai' as const;
  readonly supportsFast: boolean;

  constructor(private readonly options: OpenAIProviderOptions) {
    this.supportsFast = options.supportsFast ?? true;
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return providerStream(this.options, this.supportsFast, request, (r) => this.run(r));
  }

  private async *run(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const { apiKey } = this.options;
    const base = (this.options.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
    const headers = providerHeaders(
      { authorization: `Bearer ${apiKey}` },
      this.options.customHeaders,
      req.headers,
    );
    const body = await postForEventStream({
      url: `${base}/chat/completions`,
      headers,
      body: openAIBodyBytes(req),
      apiKey,
      signal: req.signal,
      fetch: this.options.fetch,
    });
    try {
      yield* decodeChatCompletionsStream(body, req.signal);
    } catch (err) {
      throw transportError(err, req.signal, apiKey);
    }
  }
}
