/**
 * Anthropic Messages API provider (streaming): the model-provider port's adapter for the
 * Anthropic protocol (core/src/models/port.ts). Guarantees:
 * - one POST to `${baseUrl}/v1/messages` per stream(); no retries;
 * - `speed: 'fast'` on a provider built with `supportsFast: false` throws
 *   UnsupportedModelFeatureError before any network call; otherwise it adds the fast-mode beta
 *   to any `anthropic-beta` custom header;
 * - a request's extra headers (pi_config.headers) are sent, never replacing `x-api-key`,
 *   `anthropic-version` or the card's custom headers (modelProviderHelpers providerHeaders);
 * - the emitted events follow the port's contract (message_start, strictly sequential blocks,
 *   exactly one message_end), or the iteration throws a ModelError / AbortError naming none of
 *   its credentials;
 * - a stream that ends without `message_stop` is an error (retryable), never a silent success.
 * Request mapping is in requestBody.ts, stream decoding in streamDecoder.ts. Proved by
 * core/test/modelProvider.contract.ts (run by core/test/modelProvider.test.ts) and
 * core/test/model-providers.anthropic.test.ts.
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
import {
  ANTHROPIC_DEFAULT_BASE_URL,
  ANTHROPIC_FAST_MODE_BETA,
  ANTHROPIC_VERSION,
  anthropicBodyBytes,
} from './requestBody.js';
import { decodeMessagesStream } from './streamDecoder.js';

export type AnthropicProviderOptions = Omit<ProviderConfig, 'protocol'> & {
  protocol?: 'anthropic';
  /** Whether the endpoint accepts `speed: 'fast'` (default true). */
  supportsFast?: boolean;
};

export class AnthropicMessagesProvider implements ModelProvider {
  readonly protocol = 'anthropic' as const;
  readonly supportsFast: boolean;

  constructor(private readonly options: AnthropicProviderOptions) {
    this.supportsFast = options.supportsFast ?? true;
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return providerStream(this.options, this.supportsFast, request, (r) => this.run(r));
  }

  private async *run(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const { apiKey } = this.options;
    const base = (this.options.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '');
    const headers = providerHeaders(
      { 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION },
      this.options.customHeaders,
      req.headers,
    );
    if (req.speed === 'fast') {
      const beta = headers.get('anthropic-beta');
      headers.set(
        'anthropic-beta',
        beta ? `${beta},${ANTHROPIC_FAST_MODE_BETA}` : ANTHROPIC_FAST_MODE_BETA,
      );
    }
    const body = await postForEventStream({
      url: `${base}/v1/messages`,
      headers,
      body: anthropicBodyBytes(req),
      apiKey,
      signal: req.signal,
      fetch: this.options.fetch,
    });
    try {
      yield* decodeMessagesStream(body, req.signal);
    } catch (err) {
      throw transportError(err, req.signal, apiKey);
    }
  }
}
