/**
 * What a model request asks of the provider, from the agent's model controls and the model
 * card's `pi_config` (spec: effort "normalized to the nearest level the resolved model
 * supports"). Guarantees:
 * - effort: a card without pi_config (or the vendor fallback) gets the agent's level as is; a
 *   card whose pi_config does not say `reasoning: true` gets no thinking at all; otherwise the
 *   level is the nearest one the card supports (ties go to the lower level). With a
 *   `thinkingLevelMap`, the supported levels are the ones /v1/models reports
 *   (core/src/models/info.ts capabilitiesOf): its low/medium/high/xhigh entries that are
 *   not null (`max` is never claimed, so it normalises down); with no map, low/medium/high (the
 *   runtime library's defaults; one rule with /v1/models: core effortLevels). The map's value for
 *   the level goes to the provider (`effortValue`); no level supported → no thinking;
 * - `pi_config.maxTokens` caps the request's output (`min(TURN_MAX_TOKENS, maxTokens)`), thinking
 *   included (`maxTokensLimit`);
 * - `pi_config.headers`: string values under valid header names are sent (the adapters never let
 *   them replace credentials or the card's custom headers);
 * - `pi_config.contextWindow`: the input (estimated conservatively) plus the output cap never
 *   exceeds it: the oldest turns are left out (a cut starts at a user turn; tool results whose
 *   call was cut are dropped; system messages are kept); when even the latest turn does not
 *   fit, the request is refused with a terminal model_request_failed_error, never sent. Harness
 *   `pi` sessions are not trimmed: compaction keeps them under the window (./compaction), and
 *   their output cap is what the window leaves after the input;
 * - harness `pi`: the request carries the session id (`sessionId`, the provider's cache key);
 * - `pi_config.samplingParams` (temperature, topP, topK) and `compat.maxTokensField` go to the
 *   request as checked at card create/update (core/src/models/piRequest.ts); a card whose
 *   `pi_config.input` lacks `image` gets every image block as a text note instead
 *   (test/e2e/models/pi-request-settings.test.ts).
 * Proved by test/e2e/models/effort-pi-config.test.ts (both protocols, through the scripted model) and, for
 * harness `pi`, test/e2e/turns/compaction.test.ts.
 */
import {
  effortLevels,
  ModelError,
  type ChatMessage,
  type ContentBlock,
  type Effort,
  type ModelRequest,
  type ResolvedModel,
  type SessionDoc,
  type ToolSpec,
} from '@agentfleet/core';
import { toolSpecs } from '../tools/executor.js';

const LEVELS: readonly Effort[] = ['low', 'medium', 'high', 'xhigh', 'max'];

type PiConfig = Record<string, unknown>;

export interface ModelSettings {
  effort?: Effort;
  effortValue?: string | number;
  maxTokens: number;
  maxTokensLimit?: number;
  headers?: Record<string, string>;
  contextWindow?: number;
  sampling?: ModelRequest['sampling'];
  maxTokensField?: ModelRequest['maxTokensField'];
  /** pi_config.input states no `image`: image blocks are not sent. */
  textOnly?: boolean;
}

const positiveInt = (v: unknown) =>
  Number.isInteger(v) && (v as number) > 0 ? (v as number) : undefined;

const levelMap = (pi: PiConfig): Record<string, unknown> | null =>
  pi.thinkingLevelMap && typeof pi.thinkingLevelMap === 'object'
    ? (pi.thinkingLevelMap as Record<string, unknown>)
    : null;

/** The effort levels a card supports: null when unknown (no pi_config). */
export const supportedEfforts = (pi: PiConfig | null): Effort[] | null => effortLevels(pi);

/** The supported level nearest to `wanted`; on a tie the lower one. */
export function nearestEffort(wanted: Effort, supported: readonly Effort[]): Effort | undefined {
  const at = LEVELS.indexOf(wanted);
  let best: Effort | undefined;
  for (const l of supported) {
    const d = Math.abs(LEVELS.indexOf(l) - at);
    const bestD = best === undefined ? Infinity : Math.abs(LEVELS.indexOf(best) - at);
    if (d < bestD || (d === bestD && LEVELS.indexOf(l) < LEVELS.indexOf(best!))) best = l;
  }
  return best;
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function piHeaders(pi: PiConfig): Record<string, string> | undefined {
  if (!pi.headers || typeof pi.headers !== 'object' || Array.isArray(pi.headers)) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(pi.headers as Record<string, unknown>))
    if (typeof value === 'string' && HEADER_NAME.test(name) && HEADER_VALUE.test(value))
      out[name] = value;
  return Object.keys(out).length ? out : undefined;
}

/** The request settings for one model call. */
export function modelSettings(
  pi: PiConfig | null,
  wanted: Effort | undefined,
  platformMaxTokens: number,
): ModelSettings {
  const cardMax = pi ? positiveInt(pi.maxTokens) : undefined;
  const out: ModelSettings = {
    maxTokens: cardMax === undefined ? platformMaxTokens : Math.min(platformMaxTokens, cardMax),
  };
  if (cardMax !== undefined) out.maxTokensLimit = cardMax;
  const supported = supportedEfforts(pi);
  if (wanted) {
    out.effort = supported === null ? wanted : nearestEffort(wanted, supported);
    const value = out.effort && pi ? levelMap(pi)?.[out.effort] : undefined;
    if (typeof value === 'string' || typeof value === 'number') out.effortValue = value;
  }
  if (pi) {
    const headers = piHeaders(pi);
    if (headers) out.headers = headers;
    const cw = positiveInt(pi.contextWindow);
    if (cw !== undefined) out.contextWindow = cw;
    const sampling = samplingOf(pi.samplingParams);
    if (sampling) out.sampling = sampling;
    const field = (pi.compat as Record<string, unknown> | undefined)?.maxTokensField;
    if (field === 'max_tokens' || field === 'max_completion_tokens') out.maxTokensField = field;
    if (Array.isArray(pi.input) && !pi.input.includes('image')) out.textOnly = true;
  }
  return out;
}

function samplingOf(sp: unknown): ModelRequest['sampling'] {
  if (!sp || typeof sp !== 'object') return undefined;
  const out: NonNullable<ModelRequest['sampling']> = {};
  for (const k of ['temperature', 'topP', 'topK'] as const) {
    const v = (sp as Record<string, unknown>)[k];
    if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The note an image block is sent as to a model whose card states text-only input. */
export const IMAGE_LEFT_OUT =
  '[an image was left out: this model accepts text input only (model card pi_config.input)]';

/** The conversation with every image block (tool results included) as IMAGE_LEFT_OUT. */
function withoutImages(messages: ChatMessage[]): ChatMessage[] {
  const note = { type: 'text' as const, text: IMAGE_LEFT_OUT };
  const hasImage = (c: readonly { type?: unknown }[]) => c.some((b) => b.type === 'image');
  return messages.map((m) => {
    if (
      !m.content.some(
        (b) => b.type === 'image' || (b.type === 'tool_result' && hasImage(b.content)),
      )
    )
      return m;
    const content = m.content.map((b): ContentBlock => {
      if (b.type === 'image') return note;
      if (b.type === 'tool_result' && hasImage(b.content))
        return { ...b, content: b.content.map((x) => (x.type === 'image' ? note : x)) };
      return b;
    });
    return { ...m, content };
  });
}

// ---- context window ----

/** Tokens assumed per image (the providers bill a large image at about this much). */
const IMAGE_TOKENS = 1_600;
/** Characters per token assumed: fewer than the usual ~4, so the estimate errs high. */
const CHARS_PER_TOKEN = 3;

function blockTokens(b: ContentBlock): number {
  if (b.type === 'image') return IMAGE_TOKENS;
  if (b.type === 'document' && typeof b.source.data === 'string' && b.source.type === 'base64')
    return Math.ceil((b.source.data as string).length / 2);
  return Math.ceil(JSON.stringify(b).length / CHARS_PER_TOKEN);
}

/** A conservative estimate of a message list's input tokens. */
export function estimateTokens(messages: ChatMessage[]): number {
  return messages.reduce((n, m) => n + 4 + m.content.reduce((k, b) => k + blockTokens(b), 0), 0);
}

/** A conservative estimate of a whole request's input tokens (system, tools and messages). */
export function estimateRequestTokens(
  system: string | undefined,
  tools: ToolSpec[] | undefined,
  messages: ChatMessage[],
): number {
  const fixed =
    Math.ceil(((system ?? '').length + JSON.stringify(tools ?? []).length) / CHARS_PER_TOKEN) + 16;
  return fixed + estimateTokens(messages);
}

/**
 * The messages that fit `contextWindow` with `outputTokens` left for the answer, and the output
 * ceiling that remains. Throws a terminal ModelError when even the latest turn does not fit.
 */
export function fitContextWindow(
  contextWindow: number,
  outputTokens: number,
  system: string | undefined,
  tools: ToolSpec[] | undefined,
  messages: ChatMessage[],
): { messages: ChatMessage[]; outputLimit: number } {
  const fixed =
    Math.ceil(((system ?? '').length + JSON.stringify(tools ?? []).length) / CHARS_PER_TOKEN) + 16;
  const output = Math.min(outputTokens, Math.floor(contextWindow / 2));
  const room = contextWindow - output - fixed;
  // Mid-conversation system messages (a session's system.message) hold for every later turn.
  const isSystem = (m: ChatMessage) => (m.role as string) === 'system';
  for (let i = 0; i < messages.length; i++) {
    const first = messages[i]!;
    if (first.role !== 'user') continue;
    // The calls these results answer were cut.
    const head: ChatMessage =
      i === 0
        ? first
        : { ...first, content: first.content.filter((b) => b.type !== 'tool_result') };
    if (head.content.length === 0) continue;
    const candidate = [...messages.slice(0, i).filter(isSystem), head, ...messages.slice(i + 1)];
    const used = estimateTokens(candidate);
    if (used <= room) return { messages: candidate, outputLimit: contextWindow - fixed - used };
  }
  throw new ModelError(
    'model_request_failed_error',
    `the latest turn does not fit the model's context window of ${contextWindow} tokens (pi_config.contextWindow) with ${output} tokens left for the answer`,
    undefined,
    false,
  );
}

/** One model call's provider request: the session's agent, the card's pi_config, the history. */
export function providerRequest(
  resolved: Pick<ResolvedModel, 'wireModel' | 'piConfig'>,
  agent: SessionDoc['agent'],
  history: ChatMessage[],
  platformMaxTokens: number,
  signal: AbortSignal,
  /** The turn's MCP tools (workers/src/tools/mcp.ts), offered after the agent's own. */
  mcpTools: ToolSpec[] = [],
  /**
   * Harness `pi` (workers/src/compaction): the history is sent whole (compaction, not
   * trimming, keeps it under the window; the output cap is what the window leaves), with the
   * session id for the provider's cache.
   */
  pi?: { sessionId: string },
): ModelRequest {
  const settings = modelSettings(resolved.piConfig, agent.model.effort?.type, platformMaxTokens);
  const system = agent.system ?? undefined;
  const specs = [...toolSpecs(agent.tools as any[]), ...mcpTools];
  const tools = specs.length ? specs : undefined;
  if (settings.textOnly) history = withoutImages(history);
  let messages = history;
  let limit = settings.maxTokensLimit;
  if (settings.contextWindow !== undefined && pi) {
    const used = estimateRequestTokens(system, tools, history);
    limit = Math.min(limit ?? Infinity, Math.max(1, settings.contextWindow - used));
  } else if (settings.contextWindow !== undefined) {
    const fit = fitContextWindow(
      settings.contextWindow,
      settings.maxTokens,
      system,
      tools,
      history,
    );
    messages = fit.messages;
    limit = Math.min(limit ?? Infinity, fit.outputLimit);
  }
  return {
    model: resolved.wireModel,
    system,
    messages,
    tools,
    maxTokens: settings.maxTokens,
    ...(limit !== undefined ? { maxTokensLimit: limit } : {}),
    ...(settings.effort ? { effort: settings.effort } : {}),
    ...(settings.effortValue !== undefined ? { effortValue: settings.effortValue } : {}),
    ...(settings.headers ? { headers: settings.headers } : {}),
    ...(settings.sampling ? { sampling: settings.sampling } : {}),
    ...(settings.maxTokensField ? { maxTokensField: settings.maxTokensField } : {}),
    speed: agent.model.speed,
    ...(pi ? { sessionId: pi.sessionId } : {}),
    signal,
  };
}
