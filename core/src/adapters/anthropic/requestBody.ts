/**
 * Anthropic Messages request mapping: the port's ModelRequest as a `POST /v1/messages` body.
 * Guarantees: the output cap the caller asked for survives extended thinking (see
 * toAnthropicBody); thinking blocks without a signature are never replayed. Proved by
 * core/test/model-providers.anthropic.test.ts ("request mapping") and the shared contract
 * (core/test/modelProvider.contract.ts, fast mode).
 */
import type { ChatMessage, ContentBlock, Effort, ModelRequest } from '../../ports/modelProvider.js';

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
