/**
 * Anthropic Messages API provider (streaming). Guarantees:
 * - one POST to `${baseUrl}/v1/messages` per stream(); no retries;
 * - `speed: 'fast'` on a provider built with `supportsFast: false` throws
 *   UnsupportedModelFeatureError before any network call;
 * - the emitted events follow the port's contract (message_start, strictly sequential blocks,
 *   exactly one message_end), or the iteration throws a ModelError / AbortError;
 * - a stream that ends without `message_stop` is an error (retryable), never a silent success.
 */
import {
  UnsupportedModelFeatureError,
  type ChatMessage,
  type ContentBlock,
  type Effort,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  type ModelUsage,
  type ProviderConfig,
  type StopReason,
} from '../ports/modelProvider.js';
import {
  modelErrorFor,
  parseJSONEvent,
  parseSSE,
  parseToolInput,
  postForEventStream,
  transportError,
  withCredentialsRedacted,
  truncatedStreamError,
  upstreamError,
} from './sse.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_VERSION = '2023-06-01';
/** Beta header value that enables `speed: 'fast'`. */
export const ANTHROPIC_FAST_MODE_BETA = 'fast-mode-2026-02-01';
/** Extended-thinking budget per effort level. */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<Effort, number>> = {
  low: 1024,
  medium: 4096,
  high: 10000,
  xhigh: 20000,
  max: 32000,
};

export type AnthropicProviderOptions = Omit<ProviderConfig, 'protocol'> & {
  protocol?: 'anthropic';
  /** Whether the endpoint accepts `speed: 'fast'` (default true). */
  supportsFast?: boolean;
};

/**
 * Builds the Messages request body. With effort set, `max_tokens` becomes
 * `budget + maxTokens` whenever `maxTokens` does not exceed the thinking budget, so the
 * answer keeps the room the caller asked for. Thinking blocks without a signature (e.g. from
 * another protocol) cannot be replayed to Anthropic and are dropped.
 */
export function toAnthropicBody(req: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens,
    stream: true,
  };
  if (req.system) body.system = req.system;
  body.messages = req.messages.map(toWireMessage).filter((m) => m.content.length > 0);
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.input_schema,
    }));
  }
  if (req.effort) {
    const budget = ANTHROPIC_THINKING_BUDGETS[req.effort];
    body.thinking = { type: 'enabled', budget_tokens: budget };
    if (req.maxTokens <= budget) body.max_tokens = budget + req.maxTokens;
  }
  if (req.speed === 'fast') body.speed = 'fast';
  return body;
}

function toWireMessage(m: ChatMessage): { role: string; content: ContentBlock[] } {
  return { role: m.role, content: m.content.filter((b) => b.type !== 'thinking' || !!b.signature) };
}

type OpenBlock =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'tool'; id: string; name: string; json: string }
  | { kind: 'ignored' };

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  refusal: 'refusal',
  model_context_window_exceeded: 'max_tokens',
  pause_turn: 'end_turn',
};

export class AnthropicMessagesProvider implements ModelProvider {
  readonly protocol = 'anthropic' as const;
  readonly supportsFast: boolean;

  constructor(private readonly options: AnthropicProviderOptions) {
    this.supportsFast = options.supportsFast ?? true;
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return withCredentialsRedacted(this.run(request), [
      this.options.apiKey,
      ...Object.values(this.options.customHeaders ?? {}),
    ]);
  }

  private async *run(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    if (req.speed === 'fast' && !this.supportsFast) {
      throw new UnsupportedModelFeatureError(
        `model ${req.model}: this provider does not support speed 'fast'`,
      );
    }
    const { apiKey } = this.options;
    const base = (this.options.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '');
    const headers = new Headers({ 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION });
    for (const [k, v] of Object.entries(this.options.customHeaders ?? {})) headers.set(k, v);
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
      body: toAnthropicBody(req),
      apiKey,
      signal: req.signal,
      fetch: this.options.fetch,
    });
    try {
      yield* this.events(body, req.signal);
    } catch (err) {
      throw transportError(err, req.signal, apiKey);
    }
  }

  private async *events(
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): AsyncGenerator<ModelStreamEvent> {
    const usage: ModelUsage = {
      input_tokens: 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    let stopReason: StopReason = 'end_turn';
    let started = false;
    let open: OpenBlock | null = null;

    const close = (): ModelStreamEvent | null => {
      const b = open;
      open = null;
      if (!b || b.kind === 'ignored') return null;
      if (b.kind === 'text') return { type: 'text_end', text: b.text };
      if (b.kind === 'thinking') {
        return b.signature
          ? { type: 'thinking_end', thinking: b.thinking, signature: b.signature }
          : { type: 'thinking_end', thinking: b.thinking };
      }
      return {
        type: 'tool_use_end',
        id: b.id,
        name: b.name,
        input: parseToolInput(b.name, b.json),
      };
    };

    for await (const sse of parseSSE(body, signal)) {
      const ev = parseJSONEvent(sse.data);
      const type = typeof ev.type === 'string' ? ev.type : sse.event;
      switch (type) {
        case 'message_start': {
          const message = (ev.message ?? {}) as Record<string, unknown>;
          mergeUsage(usage, message.usage);
          if (!started) {
            started = true;
            yield { type: 'message_start' };
          }
          break;
        }
        case 'content_block_start': {
          if (!started) {
            started = true;
            yield { type: 'message_start' };
          }
          const ended = close();
          if (ended) yield ended;
          const cb = (ev.content_block ?? {}) as Record<string, unknown>;
          if (cb.type === 'text') {
            open = { kind: 'text', text: '' };
            yield { type: 'text_start' };
            const initial = str(cb.text);
            if (initial) {
              open.text = initial;
              yield { type: 'text_delta', text: initial };
            }
          } else if (cb.type === 'thinking') {
            open = { kind: 'thinking', thinking: '', signature: str(cb.signature) };
            yield { type: 'thinking_start' };
            const initial = str(cb.thinking);
            if (initial) {
              open.thinking = initial;
              yield { type: 'thinking_delta', thinking: initial };
            }
          } else if (cb.type === 'tool_use') {
            const id = str(cb.id);
            const name = str(cb.name);
            open = { kind: 'tool', id, name, json: '' };
            yield { type: 'tool_use_start', id, name };
          } else {
            // redacted_thinking, server tool blocks, ...: not representable in the port.
            open = { kind: 'ignored' };
          }
          break;
        }
        case 'content_block_delta': {
          const d = (ev.delta ?? {}) as Record<string, unknown>;
          const b = open as OpenBlock | null;
          if (!b) break;
          if (d.type === 'text_delta' && b.kind === 'text') {
            const text = str(d.text);
            b.text += text;
            yield { type: 'text_delta', text };
          } else if (d.type === 'thinking_delta' && b.kind === 'thinking') {
            const thinking = str(d.thinking);
            b.thinking += thinking;
            yield { type: 'thinking_delta', thinking };
          } else if (d.type === 'signature_delta' && b.kind === 'thinking') {
            b.signature += str(d.signature);
          } else if (d.type === 'input_json_delta' && b.kind === 'tool') {
            const partial = str(d.partial_json);
            b.json += partial;
            if (partial) yield { type: 'tool_use_delta', id: b.id, partial_json: partial };
          }
          break;
        }
        case 'content_block_stop': {
          const ended = close();
          if (ended) yield ended;
          break;
        }
        case 'message_delta': {
          const d = (ev.delta ?? {}) as Record<string, unknown>;
          if (typeof d.stop_reason === 'string')
            stopReason = STOP_REASONS[d.stop_reason] ?? 'end_turn';
          mergeUsage(usage, ev.usage);
          break;
        }
        case 'message_stop': {
          const ended = close();
          if (ended) yield ended;
          if (!started) yield { type: 'message_start' };
          yield { type: 'message_end', stop_reason: stopReason, usage: { ...usage } };
          return;
        }
        case 'error': {
          const up = upstreamError(ev);
          throw modelErrorFor(
            undefined,
            up.type,
            `model stream error: ${up.type ?? 'error'}: ${up.message ?? 'unknown'}`,
          );
        }
        default:
          break; // ping and future event types
      }
    }
    throw truncatedStreamError();
  }
}

/** Later reports win field by field; absent or null fields keep the earlier value. */
function mergeUsage(into: ModelUsage, raw: unknown): void {
  if (!raw || typeof raw !== 'object') return;
  const u = raw as Record<string, unknown>;
  for (const key of [
    'input_tokens',
    'output_tokens',
    'cache_creation_input_tokens',
    'cache_read_input_tokens',
  ] as const) {
    const v = u[key];
    if (typeof v === 'number' && Number.isFinite(v)) into[key] = v;
  }
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
