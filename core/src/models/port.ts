/**
 * Model provider port. A provider turns one request into a stream of normalized events,
 * whatever its wire protocol (Anthropic Messages, OpenAI chat completions). Providers never
 * retry on their own; the turn runner decides. Failures are ModelError, whose kind is the
 * session.error type the SDK sees; an aborted request rejects with an AbortError.
 *
 * Implementations (built by core/src/models/providers.ts createProvider, the ProviderFactory
 * the assembly hands to ModelResolver, from a model card's protocol):
 * - core/src/models/anthropic/provider.ts: AnthropicMessagesProvider (POST {base}/v1/messages,
 *   SSE; request mapping in requestBody.ts, stream decoding in streamDecoder.ts);
 * - core/src/models/openai/provider.ts: OpenAIChatProvider (POST {base}/chat/completions, SSE;
 *   same split).
 * Shared adapter helpers (SSE reader, HTTP and error plumbing) are beside this file in
 * core/src/models/providerHelpers.ts, so the adapters never import each other.
 * Both pass core/test/modelProvider.contract.ts against the scripted model server
 * (test/kit/fixtures/scriptedModel.ts), run by core/test/modelProvider.test.ts; request mapping and
 * wire edge cases per protocol are in core/test/model-providers.anthropic.test.ts and
 * core/test/model-providers.openai.test.ts, the SSE reader, the provider table and egress in
 * core/test/model-providers.shared.test.ts.
 */

export type ContentBlock =
  | { type: 'text'; text: string }
  | {
      type: 'image';
      source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
    }
  | { type: 'document'; source: Record<string, unknown>; title?: string | null }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: Array<{ type: 'text'; text: string } | Record<string, unknown>>;
      is_error?: boolean;
    };

/**
 * `system`: a mid-conversation system instruction (a session's `system.message` event; text
 * blocks only), privileged context for that turn and every later one. OpenAI-compatible
 * adapters send it in place as a `system` message; the Anthropic Messages API has no
 * mid-conversation system role, so its adapter appends the text to the top-level `system`.
 */
export interface ChatMessage {
  role: 'user' | 'assistant' | 'system';
  content: ContentBlock[];
}

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export type Effort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface ModelRequest {
  /** Wire-level model id. */
  model: string;
  system?: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  maxTokens: number;
  /** When set, ask for extended thinking / reasoning at this level. */
  effort?: Effort;
  /**
   * The provider's own value for `effort` (a model card's `pi_config.thinkingLevelMap` entry):
   * OpenAI sends it as `reasoning_effort`; Anthropic reads a numeric value as the thinking budget.
   */
  effortValue?: string | number;
  /**
   * Ceiling of the wire output cap, thinking included (the card's `pi_config.maxTokens`, and
   * what the context window leaves after the input). Absent: no ceiling beyond `maxTokens`.
   */
  maxTokensLimit?: number;
  /**
   * Extra request headers (a card's `pi_config.headers`). They never replace the credential or
   * protocol headers, and the card's sealed `custom_headers` win over them.
   */
  headers?: Record<string, string>;
  /**
   * Sampling parameters (a card's `pi_config.samplingParams`, checked against the protocol at
   * card create/update: core/src/models/piRequest.ts): Anthropic `temperature`, `top_p`,
   * `top_k`; OpenAI `temperature`, `top_p`.
   */
  sampling?: { temperature?: number; topP?: number; topK?: number };
  /** OpenAI: the output cap's field (a card's `pi_config.compat.maxTokensField`); default max_completion_tokens. */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
  speed?: 'standard' | 'fast';
  /**
   * The conversation identity the provider may key its prompt cache on (set for harness `pi`
   * sessions only: workers/src/turn/compaction): Anthropic `metadata.user_id`, OpenAI
   * `prompt_cache_key`. Absent: nothing is sent.
   */
  sessionId?: string;
  signal?: AbortSignal;
}

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal';

/** Normalized stream. Blocks are strictly sequential: a block ends before the next starts. */
export type ModelStreamEvent =
  | { type: 'message_start' }
  | { type: 'text_start' }
  | { type: 'text_delta'; text: string }
  | { type: 'text_end'; text: string }
  | { type: 'thinking_start' }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'thinking_end'; thinking: string; signature?: string }
  | { type: 'tool_use_start'; id: string; name: string }
  | { type: 'tool_use_delta'; id: string; partial_json: string }
  | { type: 'tool_use_end'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'message_end'; stop_reason: StopReason; usage: ModelUsage };

export interface ModelProvider {
  /** The wire protocol this provider speaks. */
  readonly protocol: 'anthropic' | 'openai';
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}

/** Error kinds map 1:1 onto the SDK's session.error types. */
export type ModelErrorKind =
  | 'model_overloaded_error'
  | 'model_rate_limited_error'
  | 'model_request_failed_error'
  | 'billing_error'
  | 'unknown_error';

export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
    readonly retryable = false,
  ) {
    super(message);
  }
}

/** Thrown when a request asks for something the protocol cannot do (e.g. speed: fast). */
export class UnsupportedModelFeatureError extends Error {
  override readonly name = 'UnsupportedModelFeatureError';
}

export interface ProviderConfig {
  protocol: 'anthropic' | 'openai';
  apiKey: string;
  baseUrl?: string;
  customHeaders?: Record<string, string>;
  /**
   * The HTTP client for model requests (default: global fetch). For a tenant's model card this
   * is `egressFetch` (core/src/egress): the base_url is checked and the connection pinned.
   */
  fetch?: (url: string, init?: RequestInit) => Promise<Response>;
}

/**
 * Builds the provider for `config.protocol` (core/src/models/providers.ts createProvider, from
 * `@agentfleet/core/adapters`). `supportsFast` defaults to true; with false, `speed: 'fast'`
 * requests throw UnsupportedModelFeatureError before any network call.
 */
export type ProviderFactory = (
  config: ProviderConfig & { supportsFast?: boolean },
) => ModelProvider;
