/**
 * OpenAI chat-completions stream decoding: the SSE body of `POST /chat/completions` as the
 * port's normalized events. Guarantees:
 * - blocks are emitted strictly sequentially even when the upstream interleaves content,
 *   reasoning and tool-call fragments: a tool call streams live when it starts after the
 *   previous block is complete; a call whose fragments interleave with an unfinished one is
 *   buffered and emitted, whole, after it; a fragment for a closed call is a protocol error;
 * - usage follows the port's Anthropic-shaped meaning: `input_tokens` excludes cached prompt
 *   tokens, which are reported as `cache_read_input_tokens`;
 * - the stream completes on `data: [DONE]`, or at end of body if a finish_reason was seen;
 *   otherwise it is a (retryable) error.
 * Proved by core/test/modelProvider.contract.ts (run by core/test/modelProvider.test.ts) and
 * core/test/model-providers.openai.test.ts ("wire edge cases").
 */
import { ModelError, type ModelStreamEvent, type ModelUsage, type StopReason } from '../port.js';
import {
  modelErrorFor,
  parseJSONEvent,
  parseSSE,
  type ByteStream,
  parseToolInput,
  truncatedStreamError,
  upstreamError,
} from '../providerHelpers.js';

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

/** Decodes one chat-completions event stream; aborting `signal` ends it with an AbortError. */
export async function* decodeChatCompletionsStream(
  body: ByteStream,
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
  let complete = false;
  for await (const sse of parseSSE(body, signal, () => complete)) {
    if (sse.data.trim() === '[DONE]') {
      complete = true;
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
        for (const frag of delta.tool_calls as Array<Record<string, unknown>>) onToolFragment(frag);
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
