/**
 * Anthropic Messages request mapping: the port's ModelRequest as a `POST /v1/messages` body.
 * Guarantees: the output cap the caller asked for survives extended thinking (see
 * toAnthropicBody) within the model card's ceiling (outputCap: `maxTokensLimit`; a numeric
 * thinkingLevelMap value is the budget); thinking blocks without a signature are never
 * replayed; mid-conversation system messages join the top-level `system` (systemTexts); the
 * card's samplingParams are sent as `temperature`, `top_p`, `top_k`. Proved by
 * core/test/model-providers.anthropic.test.ts ("request mapping"), the shared contract
 * (core/test/modelProvider.contract.ts, fast mode) and, for samplingParams,
 * test/e2e/models/pi-request-settings.test.ts.
 */
import type { ChatMessage, ContentBlock, Effort, ModelRequest } from '../port.js';
import { bodyHead, commaJSON, ConversationBytes } from '../wireText.js';

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

/**
 * Builds the Messages request body. With effort set, `max_tokens` becomes
 * `budget + maxTokens` whenever `maxTokens` does not exceed the thinking budget, so the
 * answer keeps the room the caller asked for, within `maxTokensLimit` (outputCap). Thinking
 * blocks without a signature (e.g. from another protocol) cannot be replayed to Anthropic and
 * are dropped. The provider sends anthropicBodyBytes(req), this object as JSON.
 */
export function toAnthropicBody(req: ModelRequest): Record<string, unknown> {
  return {
    ...bodyFields(req, systemTexts(req.messages)),
    messages: sameRoleRuns(req.messages).map((run) => ({
      role: run[0]!.role,
      content: run.flatMap((m) => toWireMessage(m).content),
    })),
  };
}

/**
 * The conversation's bytes, resumed from the last request's (../wireText.ts). A message's text leaves
 * its run open (`,{"role":…,"content":[…`) so a next message of the same role joins it, as in
 * toAnthropicBody; the state also carries the mid-conversation system texts (bodyFields).
 */
type Encoding = { open: string | undefined; system: readonly string[] };
const conversation = new ConversationBytes<Encoding>(
  { open: undefined, system: [] },
  (state, m) => {
    if (m.role === 'system') {
      const texts = systemTexts([m]);
      return {
        text: '',
        state: texts.length ? { ...state, system: [...state.system, ...texts] } : state,
      };
    }
    const { content } = toWireMessage(m);
    if (!content.length) return { text: '', state };
    if (state.open === m.role) return { text: commaJSON(content), state };
    const start = `${state.open ? ']}' : ''},{"role":${JSON.stringify(m.role)},"content":[`;
    return { text: start + commaJSON(content).slice(1), state: { ...state, open: m.role } };
  },
  (state) => (state.open ? ']}' : ''),
);

/** toAnthropicBody(req) as UTF-8 JSON, with `messages` last. */
export function anthropicBodyBytes(req: ModelRequest): Buffer {
  const head = (state: Encoding) => bodyHead(bodyFields(req, state.system), 'messages');
  return conversation.body(head, req.messages, ']}');
}

/** Everything but `messages`; `midSystem`: systemTexts(req.messages). */
function bodyFields(req: ModelRequest, midSystem: readonly string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens,
    stream: true,
  };
  if (midSystem.length)
    body.system = [...(req.system ? [req.system] : []), ...midSystem].map((text) => ({
      type: 'text',
      text,
    }));
  else if (req.system) body.system = req.system;
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.input_schema,
    }));
  }
  Object.assign(body, outputCap(req));
  if (req.sampling?.temperature !== undefined) body.temperature = req.sampling.temperature;
  if (req.sampling?.topP !== undefined) body.top_p = req.sampling.topP;
  if (req.sampling?.topK !== undefined) body.top_k = req.sampling.topK;
  if (req.speed === 'fast') body.speed = 'fast';
  if (req.sessionId) body.metadata = { user_id: req.sessionId };
  return body;
}

/**
 * Mid-conversation system messages (session `system.message`): the Messages API has no such
 * role, so their text joins the top-level `system`, in order, after the agent's prompt.
 */
function systemTexts(messages: ChatMessage[]): string[] {
  const out: string[] = [];
  for (const m of messages)
    if (m.role === 'system')
      for (const b of m.content) if (b.type === 'text' && b.text) out.push(b.text);
  return out;
}

/**
 * The non-system messages with content left on the wire, grouped into runs of one role: lifting
 * system messages out (or dropping an emptied one) can leave two user turns side by side, and
 * each run is sent as one message.
 */
function sameRoleRuns(messages: ChatMessage[]): ChatMessage[][] {
  const runs: ChatMessage[][] = [];
  let last: ChatMessage[] | undefined;
  for (const m of messages) {
    if (m.role === 'system' || !toWireMessage(m).content.length) continue;
    if (last && last[0]!.role === m.role) last.push(m);
    else runs.push((last = [m]));
  }
  return runs;
}

/** The smallest thinking budget the Messages API accepts. */
export const ANTHROPIC_MIN_THINKING_BUDGET = 1024;

/** A thinkingLevelMap value read as a thinking budget: a positive integer (or its digits). */
function budgetValue(v: string | number | undefined): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * `max_tokens` and `thinking`. The budget is the level's (ANTHROPIC_THINKING_BUDGETS) or the
 * card's numeric thinkingLevelMap value. Without a ceiling, max_tokens becomes `budget +
 * maxTokens` when maxTokens does not exceed the budget. With `maxTokensLimit`, max_tokens never
 * exceeds it: thinking then gets at most half of it, and none below the API's minimum budget.
 */
function outputCap(req: ModelRequest): Record<string, unknown> {
  const limit = req.maxTokensLimit;
  const capped = limit === undefined ? req.maxTokens : Math.min(req.maxTokens, limit);
  if (!req.effort) return { max_tokens: capped };
  let budget = budgetValue(req.effortValue) ?? ANTHROPIC_THINKING_BUDGETS[req.effort];
  let total = req.maxTokens <= budget ? budget + req.maxTokens : req.maxTokens;
  if (limit !== undefined && total > limit) {
    total = limit;
    budget = Math.min(budget, Math.floor(limit / 2));
  }
  if (budget < ANTHROPIC_MIN_THINKING_BUDGET) return { max_tokens: capped };
  return { max_tokens: total, thinking: { type: 'enabled', budget_tokens: budget } };
}

/** A thinking block the API would refuse: one without its signature. */
const unsigned = (b: ContentBlock) => b.type === 'thinking' && !b.signature;

/** The message as sent; its content array is shared when no block is left out. */
function toWireMessage(m: ChatMessage): { role: string; content: ContentBlock[] } {
  const content = m.content.some(unsigned) ? m.content.filter((b) => !unsigned(b)) : m.content;
  return { role: m.role, content };
}
