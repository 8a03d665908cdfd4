/**
 * OpenAI chat-completions request mapping: the port's ModelRequest as a
 * `POST /chat/completions` body (also for OpenAI-compatible servers). Guarantees: the system
 * prompt comes first; a mid-conversation system message is a `system` message in place; tool
 * results become `tool` messages placed before the rest of their user
 * turn; tool calls keep their ids; thinking blocks are never sent; the output cap is
 * `max_completion_tokens` (or the card's `compat.maxTokensField`), within `maxTokensLimit`;
 * `temperature` and `top_p` are the card's samplingParams; reasoning_effort is the card's own
 * value for the level when it maps one (test/e2e/models/pi-request-settings.test.ts). Proved by core/test/model-providers.openai.test.ts ("request
 * mapping") and the shared contract (core/test/modelProvider.contract.ts, fast mode).
 */
import type { ChatMessage, ContentBlock, Effort, ModelRequest } from '../port.js';
import { bodyHead, commaJSON, ConversationBytes } from '../wireText.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export const OPENAI_REASONING_EFFORT: Readonly<Record<Effort, 'low' | 'medium' | 'high'>> = {
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'high',
  max: 'high',
};

/**
 * Builds the chat-completions body. The output cap is sent as `max_completion_tokens`, never
 * above `maxTokensLimit`; `reasoning_effort` is the card's thinkingLevelMap value for the level
 * when it has one.
 */
export function toOpenAIBody(req: ModelRequest): Record<string, unknown> {
  return { ...bodyFields(req), messages: toOpenAIMessages(req.system, req.messages) };
}

/** The conversation's bytes, resumed from the last request's (../wireText.ts). */
const conversation = new ConversationBytes<null>(
  null,
  (state, m) => ({ text: commaJSON(openAIMessages(m)), state }),
  () => '',
);

/** toOpenAIBody(req) as UTF-8 JSON, with `messages` last. */
export function openAIBodyBytes(req: ModelRequest): Buffer {
  const system = req.system ? JSON.stringify(systemMessage(req.system)) : '';
  const head = () => bodyHead(bodyFields(req), 'messages') + system;
  return conversation.body(head, req.messages, ']}', !!system);
}

const systemMessage = (content: string) => ({ role: 'system', content });

/** Everything but `messages`. */
function bodyFields(req: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.model,
    [req.maxTokensField ?? 'max_completion_tokens']:
      req.maxTokensLimit === undefined
        ? req.maxTokens
        : Math.min(req.maxTokens, req.maxTokensLimit),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (req.sampling?.temperature !== undefined) body.temperature = req.sampling.temperature;
  if (req.sampling?.topP !== undefined) body.top_p = req.sampling.topP;
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    }));
  }
  // The card's thinkingLevelMap value is the server's own name for the level.
  if (req.effort)
    body.reasoning_effort =
      typeof req.effortValue === 'string' && req.effortValue
        ? req.effortValue
        : OPENAI_REASONING_EFFORT[req.effort];
  if (req.speed === 'fast') body.service_tier = 'priority';
  if (req.sessionId) body.prompt_cache_key = req.sessionId;
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
  if (system) out.push(systemMessage(system));
  for (const m of messages) out.push(...openAIMessages(m));
  return out;
}

/** The chat-completions messages one ChatMessage becomes (zero or more). */
function openAIMessages(m: ChatMessage): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  // A mid-conversation system message (session system.message) stays in place.
  if (m.role === 'system') {
    const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
    if (text) out.push({ role: 'system', content: text });
    return out;
  }
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
    return out;
  }
  for (const b of m.content) {
    if (b.type === 'tool_result')
      out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content) });
  }
  const rest = m.content.filter(
    (b) => b.type === 'text' || b.type === 'image' || b.type === 'document',
  );
  if (rest.length === 0) return out;
  if (rest.every((b) => b.type === 'text')) {
    out.push({ role: 'user', content: rest.map((b) => (b as { text: string }).text).join('\n') });
  } else {
    out.push({ role: 'user', content: rest.flatMap(toUserPart) });
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
