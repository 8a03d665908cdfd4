/**
 * Anthropic Messages stream decoding: the SSE body of `POST /v1/messages` as the port's
 * normalized events. Guarantees: `message_start` first, blocks strictly sequential (each ends
 * before the next starts), exactly one `message_end` carrying the stop reason and the usage
 * (later reports win field by field); block types the port cannot represent (redacted thinking,
 * server tools) are skipped; an `error` event is a ModelError of the matching kind; a body that
 * ends without `message_stop` is a retryable ModelError, never a silent success. Proved by
 * core/test/modelProvider.contract.ts (run by core/test/modelProvider.test.ts) and
 * core/test/model-providers.anthropic.test.ts ("wire edge cases").
 */
import type { ModelStreamEvent, ModelUsage, StopReason } from '../port.js';
import {
  modelErrorFor,
  parseJSONEvent,
  parseSSE,
  type ByteStream,
  parseToolInput,
  truncatedStreamError,
  upstreamError,
} from '../providerHelpers.js';

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

/** Decodes one Messages event stream; aborting `signal` ends it with an AbortError. */
export async function* decodeMessagesStream(
  body: ByteStream,
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

  let complete = false;
  for await (const sse of parseSSE(body, signal, () => complete)) {
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
        complete = true;
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
