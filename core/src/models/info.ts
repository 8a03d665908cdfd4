/**
 * The official `BetaModelInfo` resources (`GET /v1/models`, `GET /v1/models/:id`): every field
 * of the SDK's type, projected conservatively from the tenant's model cards and their
 * `pi_config`, plus the models served through the deployment's fallback vendor key
 * (ANTHROPIC_API_KEY), with the SDK's page shape (`data`, `has_more`, `first_id`, `last_id`).
 *
 * Guarantees (tested in test/e2e/models/models-info.test.ts and through the Python SDK in
 * test/e2e/sdk/python-sdk.test.ts):
 * - A capability is reported supported only when the card says so: `pi_config.input` listing
 *   `image` → image_input; `pi_config.reasoning: true` → thinking (type `enabled`); effort
 *   levels from `pi_config.thinkingLevelMap` (a non-null entry for low/medium/high/xhigh; `max`
 *   never); `pi_config.compat.supportsStrictMode: true` → structured_outputs. Everything else
 *   the platform cannot vouch for (batch, citations, code execution, PDF input, server tools,
 *   context management, compaction) is `supported: false`. A card without pi_config has
 *   `capabilities: null` (unknown), as do the vendor catalogue's entries.
 * - Token limits are `pi_config.contextWindow` / `pi_config.maxTokens` (positive integers),
 *   null when not given; display_name is `pi_config.name` or the model id.
 * - Every served model is `lifecycle: 'active'` (a card that exists can run), with
 *   deprecated_at/retires_at null and `allowed_fallback_models: null` (cards have none).
 * - A card shadows a vendor catalogue entry of the same id. Order: cards by creation, then the
 *   vendor catalogue. `limit` (1–1000, default 20), `after_id`, `before_id` page through it;
 *   an id not in the list is a 400 naming the parameter; an unknown model on retrieve is a 404.
 */
import type { ModelCardOut } from '@agentfleet/schemas';
import { invalid } from '../errors.js';
import type { Effort } from './port.js';

/** The levels a thinkingLevelMap can claim (`max` never: it normalises down). */
const CLAIMABLE: readonly Effort[] = ['low', 'medium', 'high', 'xhigh'];
/** A reasoning card without a map: the runtime library's default levels. */
const DEFAULT_LEVELS: readonly Effort[] = ['low', 'medium', 'high'];

/**
 * The effort levels a card serves, one rule for /v1/models and the turn runner
 * (workers/src/turn/modelSettings.ts): null without pi_config (unknown: the agent's level is sent
 * as asked); none unless `reasoning: true`; the non-null low/medium/high/xhigh entries of
 * `thinkingLevelMap`, or low/medium/high without a map.
 */
export function effortLevels(pi: Record<string, unknown> | null): Effort[] | null {
  if (!pi) return null;
  if (pi.reasoning !== true) return [];
  const map =
    pi.thinkingLevelMap && typeof pi.thinkingLevelMap === 'object'
      ? (pi.thinkingLevelMap as Record<string, unknown>)
      : null;
  if (!map) return [...DEFAULT_LEVELS];
  return CLAIMABLE.filter((l) => map[l] !== undefined && map[l] !== null);
}

const NO = { supported: false } as const;
const yes = (b: boolean) => ({ supported: b });

/** Anthropic models the fallback vendor key serves (ids the vendor accepts as the wire model). */
export const VENDOR_CATALOGUE: ReadonlyArray<{
  id: string;
  display_name: string;
  created_at: string;
}> = [
  { id: 'claude-opus-4-5', display_name: 'Claude Opus 4.5', created_at: '2025-11-24T00:00:00Z' },
  { id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-10-15T00:00:00Z' },
  {
    id: 'claude-sonnet-4-5',
    display_name: 'Claude Sonnet 4.5',
    created_at: '2025-09-29T00:00:00Z',
  },
  { id: 'claude-opus-4-1', display_name: 'Claude Opus 4.1', created_at: '2025-08-05T00:00:00Z' },
];

export interface ModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
  lifecycle: 'active' | 'deprecated' | 'retired';
  deprecated_at: string | null;
  retires_at: string | null;
  line: 'haiku' | 'sonnet' | 'opus' | null;
  max_input_tokens: number | null;
  max_tokens: number | null;
  allowed_fallback_models: string[] | null;
  capabilities: Record<string, unknown> | null;
}

const positiveInt = (v: unknown) =>
  Number.isInteger(v) && (v as number) > 0 ? (v as number) : null;

function lineOf(id: string): ModelInfo['line'] {
  return /haiku/.test(id)
    ? 'haiku'
    : /sonnet/.test(id)
      ? 'sonnet'
      : /opus/.test(id)
        ? 'opus'
        : null;
}

/** The SDK's BetaModelCapabilities from a pi_config, claiming only what the config states. */
function capabilitiesOf(pi: Record<string, unknown>): Record<string, unknown> {
  const input = Array.isArray(pi.input) ? pi.input : [];
  const reasoning = pi.reasoning === true;
  const levels = effortLevels(pi) ?? [];
  const level = (name: Effort) => yes(levels.includes(name));
  const byLevel = { low: level('low'), medium: level('medium'), high: level('high') };
  const compat = (pi.compat && typeof pi.compat === 'object' ? pi.compat : {}) as Record<
    string,
    unknown
  >;
  return {
    batch: NO,
    citations: NO,
    code_execution: NO,
    compaction: null,
    context_management: {
      supported: false,
      clear_thinking_20251015: null,
      clear_tool_uses_20250919: null,
      compact_20260112: null,
    },
    effort: {
      supported: levels.length > 0,
      ...byLevel,
      max: NO,
      xhigh: level('xhigh'),
    },
    image_input: yes(input.includes('image')),
    pdf_input: NO,
    server_tools: { supported: false, code_execution: NO, web_search: NO },
    structured_outputs: yes(compat.supportsStrictMode === true),
    thinking: {
      supported: reasoning,
      types: { enabled: yes(reasoning), adaptive: NO, between_tools: NO, disabled: yes(true) },
    },
  };
}

export function cardModelInfo(card: ModelCardOut): ModelInfo {
  const pi = (card.pi_config ?? null) as Record<string, unknown> | null;
  return {
    type: 'model',
    id: card.model_id,
    display_name: typeof pi?.name === 'string' && pi.name ? pi.name : card.model_id,
    created_at: card.created_at,
    lifecycle: 'active',
    deprecated_at: null,
    retires_at: null,
    line: card.provider === 'anthropic' ? lineOf(card.model) : null,
    max_input_tokens: positiveInt(pi?.contextWindow),
    max_tokens: positiveInt(pi?.maxTokens),
    allowed_fallback_models: null,
    capabilities: pi ? capabilitiesOf(pi) : null,
  };
}

/** Every model the tenant can execute: its cards, then the vendor catalogue (when configured). */
export function modelInfos(cards: ModelCardOut[], vendor: boolean): ModelInfo[] {
  const out = cards.map(cardModelInfo);
  const ids = new Set(out.map((m) => m.id));
  if (vendor)
    for (const v of VENDOR_CATALOGUE)
      if (!ids.has(v.id))
        out.push({
          type: 'model',
          ...v,
          lifecycle: 'active',
          deprecated_at: null,
          retires_at: null,
          line: lineOf(v.id),
          max_input_tokens: null,
          max_tokens: null,
          allowed_fallback_models: null,
          capabilities: null,
        });
  return out;
}

export interface ModelPageQuery {
  limit?: unknown;
  after_id?: unknown;
  before_id?: unknown;
  lifecycle?: unknown;
}

const one = (q: ModelPageQuery, name: keyof ModelPageQuery): string | undefined => {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !v) throw invalid(name, 'must be given once, as a non-empty string');
  return v;
};

/** The SDK's page of models: `limit`, `after_id` / `before_id` cursors, `lifecycle[]` filter. */
export function pageModels(all: ModelInfo[], q: ModelPageQuery) {
  const rawLimit = one(q, 'limit');
  const limit = rawLimit === undefined ? 20 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw invalid('limit', 'must be an integer from 1 to 1000');
  const after = one(q, 'after_id');
  const before = one(q, 'before_id');
  if (after && before) throw invalid('before_id', 'cannot be combined with after_id');
  let rows = all;
  if (q.lifecycle !== undefined) {
    const wanted = Array.isArray(q.lifecycle) ? q.lifecycle : [q.lifecycle];
    for (const l of wanted)
      if (l !== 'active' && l !== 'deprecated' && l !== 'retired')
        throw invalid('lifecycle', 'must be active, deprecated or retired');
    rows = rows.filter((m) => wanted.includes(m.lifecycle));
  }
  const at = (id: string, name: string) => {
    const i = rows.findIndex((m) => m.id === id);
    if (i < 0) throw invalid(name, `no model ${JSON.stringify(id.slice(0, 200))} in this list`);
    return i;
  };
  let data: ModelInfo[];
  let has_more: boolean;
  if (before) {
    const end = at(before, 'before_id');
    const start = Math.max(0, end - limit);
    data = rows.slice(start, end);
    has_more = start > 0;
  } else {
    const start = after ? at(after, 'after_id') + 1 : 0;
    data = rows.slice(start, start + limit);
    has_more = start + limit < rows.length;
  }
  return {
    data,
    has_more,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}
