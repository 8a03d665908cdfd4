/**
 * OpenAI chat-completions provider (streaming), also used for OpenAI-compatible servers.
 * Guarantees:
 * - one POST to `${baseUrl}/chat/completions` per stream(); no retries;
 * - `speed: 'fast'` on a provider built with `supportsFast: false` throws
 *   UnsupportedModelFeatureError before any network call;
 * - blocks are emitted strictly sequentially even when the upstream interleaves content,
 *   reasoning and tool-call fragments: a tool call streams live when it starts after the
 *   previous block is complete; a call whose fragments interleave with an unfinished one is
 *   buffered and emitted, whole, after it;
 * - usage follows the port's Anthropic-shaped meaning: `input_tokens` excludes cached prompt
 *   tokens, which are reported as `cache_read_input_tokens`;
 * - the stream completes on `data: [DONE]`, or at end of body if a finish_reason was seen;
 *   otherwise it is a (retryable) error.
 */
import {
  ModelError,
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

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export const OPENAI_REASONING_EFFORT: Readonly<Record<Effort, 'low' | 'medium' | 'high'>> = {
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'high',
  max: 'high',
};

export type OpenAIProviderOptions = Omit<ProviderConfig, 'protocol'> & {
  protocol?: 'openai';
  /** Whether the endpoint accepts `service_tier: 'priority'` for `speed: 'fast'` (default true). */
  supportsFast?: boolean;
};

/** Builds the chat-completions body. The output cap is sent as `max_completion_tokens`. */
export function toOpenAIBody(req: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.model,
    messages: toOpenAIMessages(req.system, req.messages),
    max_completion_tokens: req.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    }));
  }
  if (req.effort) body.reasoning_effort = OPENAI_REASONING_EFFORT[req.effort];
  if (req.speed === 'fast') body.service_tier = 'priority';
  return body;
}

/**
 * System prompt first; a user turn's tool_result blocks become `tool` messages placed before
 * its remaining content; assistant text blocks join with "\n" and tool_use blocks become
 * `tool_calls`; thinking blocks are not sent.
 */
export function toOpenAIMessages(
  system: string | undefined,
  messages: ChatMessage[],
): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  if (system) out.push({ role: 'system', content: system });
  for (const m of messages) {
    if (m.role === 'assistant') {
      const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
      const calls = m.content.flatMap((b) =>
        b.type === 'tool_use'
          ? [
              {
                id: b.id,
                type: 'function',
                function: { name: b.name, arguments: JSON.stringify(b.input) },
              },
            ]
          : [],
      );
      const msg: Record<string, unknown> = {
        role: 'assistant',
        content: text || (calls.length ? null : ''),
      };
      if (calls.length) msg.tool_calls = calls;
      out.push(msg);
      continue;
    }
    for (const b of m.content) {
      if (b.type === 'tool_result')
        out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content) });
    }
    const rest = m.content.filter(
      (b) => b.type === 'text' || b.type === 'image' || b.type === 'document',
    );
    if (rest.length === 0) continue;
    if (rest.every((b) => b.type === 'text')) {
      out.push({ role: 'user', content: rest.map((b) => (b as { text: string }).text).join('\n') });
    } else {
      out.push({ role: 'user', content: rest.flatMap(toUserPart) });
    }
  }
  return out;
}

function toUserPart(b: ContentBlock): Array<Record<string, unknown>> {
  if (b.type === 'text') return [{ type: 'text', text: b.text }];
  if (b.type === 'image') {
    const url =
      b.source.type === 'url'
        ? b.source.url
        : `data:${b.source.media_type};base64,${b.source.data}`;
    return [{ type: 'image_url', image_url: { url } }];
  }
  if (b.type === 'document') {
    const s = b.source;
    if (s.type === 'text' && typeof s.data === 'string') return [{ type: 'text', text: s.data }];
    if (s.type === 'base64' && typeof s.data === 'string') {
      const file_data = `data:${String(s.media_type ?? 'application/pdf')};base64,${s.data}`;
      return [{ type: 'file', file: { filename: b.title ?? 'document.pdf', file_data } }];
    }
  }
  return [];
}

function toolResultText(content: Array<Record<string, unknown>>): string {
  return content
    .map((p) =>
      p.type === 'text' && typeof p.text === 'string'
        ? p.text
        : p.type === 'image'
          ? '[image]'
          : JSON.stringify(p),
    )
    .join('\n');
}

const FINISH_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
};

interface ToolCall {
  index: number;
  id: string;
  name: string;
  args: string;
  state: 'pending' | 'open' | 'closed';
}

type OpenBlock =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; thinking: string }
  | { kind: 'tool'; call: ToolCall };

export class OpenAIChatProvider implements ModelProvider {
  readonly protocol = 'openai' as const;
  readonly supportsFast: boolean;

  constructor(private readonly options: OpenAIProviderOptions) {
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
    const base = (this.options.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
    const headers = new Headers({ authorization: `Bearer ${apiKey}` });
    for (const [k, v] of Object.entries(this.options.customHeaders ?? {})) headers.set(k, v);
    const body = await postForEventStream({
      url: `${base}/chat/completions`,
      headers,
      body: toOpenAIBody(req),
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
    const calls = new Map<number, ToolCall>();
    let finish: string | null = null;
    let open: OpenBlock | null = null;
    let out: ModelStreamEvent[] = [];

    const closeOpen = () => {
      const b = open;
      open = null;
      if (!b) return;
      if (b.kind === 'text') out.push({ type: 'text_end', text: b.text });
      else if (b.kind === 'thinking') out.push({ type: 'thinking_end', thinking: b.thinking });
      else {
        b.call.state = 'closed';
        out.push({
          type: 'tool_use_end',
          id: b.call.id,
          name: b.call.name,
          input: parseToolInput(b.call.name, b.call.args),
        });
      }
    };
    const openTool = (call: ToolCall) => {
      closeOpen();
      if (!call.id) call.id = `call_${call.index}`;
      call.state = 'open';
      open = { kind: 'tool', call };
      out.push({ type: 'tool_use_start', id: call.id, name: call.name });
      if (call.args) out.push({ type: 'tool_use_delta', id: call.id, partial_json: call.args });
    };
    const onText = (kind: 'text' | 'thinking', t: string) => {
      if (!t) return;
      let b = open as OpenBlock | null;
      if (b?.kind !== kind) {
        closeOpen();
        b = kind === 'text' ? { kind, text: '' } : { kind, thinking: '' };
        open = b;
        out.push({ type: kind === 'text' ? 'text_start' : 'thinking_start' });
      }
      if (b.kind === 'text') {
        b.text += t;
        out.push({ type: 'text_delta', text: t });
      } else if (b.kind === 'thinking') {
        b.thinking += t;
        out.push({ type: 'thinking_delta', thinking: t });
      }
    };
    const openIsDone = (): boolean => {
      const b = open as OpenBlock | null;
      if (!b || b.kind !== 'tool') return true;
      try {
        const v: unknown = JSON.parse(b.call.args);
        return !!v && typeof v === 'object' && !Array.isArray(v);
      } catch {
        return false;
      }
    };
    const onToolFragment = (frag: Record<string, unknown>) => {
      const fn = (frag.function ?? {}) as Record<string, unknown>;
      const id = typeof frag.id === 'string' ? frag.id : '';
      let index: number;
      if (typeof frag.index === 'number') index = frag.index;
      else {
        const known = [...calls.values()].find((c) => id && c.id === id);
        const last = Math.max(-1, ...calls.keys());
        index = known ? known.index : id || last < 0 ? last + 1 : last;
      }
      let call = calls.get(index);
      if (!call) {
        call = { index, id: '', name: '', args: '', state: 'pending' };
        calls.set(index, call);
      }
      if (id && !call.id) call.id = id;
      const name = typeof fn.name === 'string' ? fn.name : '';
      if (name && call.state === 'pending' && name !== call.name) call.name += name;
      const args = typeof fn.arguments === 'string' ? fn.arguments : '';
      if (call.state === 'closed') {
        if (args.trim())
          throw protocolError(`fragment for tool call ${call.name} after it was closed`);
        return;
      }
      call.args += args;
      if (call.state === 'open') {
        if (args) out.push({ type: 'tool_use_delta', id: call.id, partial_json: args });
      } else if (call.name && openIsDone()) {
        openTool(call);
      }
    };
    const finishMessage = (): ModelStreamEvent[] => {
      out = [];
      closeOpen();
      for (const call of [...calls.values()].sort((a, b) => a.index - b.index)) {
        if (call.state !== 'pending') continue;
        if (!call.name) throw protocolError(`tool call ${call.index} has no function name`);
        openTool(call);
        closeOpen();
      }
      let stop = finish ? (FINISH_REASONS[finish] ?? 'end_turn') : 'end_turn';
      if (stop === 'end_turn' && calls.size > 0) stop = 'tool_use';
      out.push({ type: 'message_end', stop_reason: stop, usage: { ...usage } });
      return out;
    };

    yield { type: 'message_start' };
    for await (const sse of parseSSE(body, signal)) {
      if (sse.data.trim() === '[DONE]') {
        yield* finishMessage();
        return;
      }
      const chunk = parseJSONEvent(sse.data);
      if (chunk.error !== undefined || sse.event === 'error') {
        const up = upstreamError(chunk);
        throw modelErrorFor(
          undefined,
          up.type,
          `model stream error: ${up.type ?? 'error'}: ${up.message ?? 'unknown'}`,
        );
      }
      out = [];
      const choices = Array.isArray(chunk.choices)
        ? (chunk.choices as Array<Record<string, unknown>>)
        : [];
      const choice = choices.find((c) => (c.index ?? 0) === 0);
      if (choice) {
        const delta = (choice.delta ?? {}) as Record<string, unknown>;
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (typeof reasoning === 'string') onText('thinking', reasoning);
        if (typeof delta.content === 'string') onText('text', delta.content);
        if (Array.isArray(delta.tool_calls)) {
          for (const frag of delta.tool_calls as Array<Record<string, unknown>>)
            onToolFragment(frag);
        }
        if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
      }
      if (chunk.usage && typeof chunk.usage === 'object')
        readUsage(usage, chunk.usage as Record<string, unknown>);
      yield* out;
    }
    if (finish === null) throw truncatedStreamError();
    yield* finishMessage();
  }
}

function readUsage(into: ModelUsage, u: Record<string, unknown>): void {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const details = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const cached = n(details.cached_tokens);
  into.input_tokens = Math.max(0, n(u.prompt_tokens) - cached);
  into.cache_read_input_tokens = cached;
  into.output_tokens = n(u.completion_tokens);
}

function protocolError(message: string): ModelError {
  return new ModelError(
    'model_request_failed_error',
    `malformed model stream: ${message}`,
    undefined,
    true,
  );
}
