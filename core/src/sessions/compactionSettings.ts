/**
 * The compaction settings of an agent with `harness: 'pi'` (spec "Compaction metadata (harness
 * `pi`)"), read from its string-valued `metadata`. Guarantees:
 * - `harness` is `default` or `pi`; any other value is a 400 naming `harness` (not supported);
 * - with `pi`, a bad value is a 400 naming `metadata.<key>` at agent create/update and session
 *   create (agent overrides): `compaction_trigger_fraction` a number with 0 < x < 1,
 *   `compaction_max_summary_tokens` a positive integer (≤ 100000), `compaction_summary_prompt`
 *   non-empty; `compaction_strategy` is never refused: an unknown name falls back to `cc-style`
 *   (spec: "an invalid name falls back to cc-style");
 * - defaults (the spec does not show them): trigger fraction 0.8 of the model's context window
 *   (`pi_config.contextWindow`), summary cap 4096 tokens, the strategy's built-in prompt.
 * The worker reads the same parse (workers/src/turn/compaction/*), so what was accepted is what
 * runs.
 * Proved by test/e2e/turns/compaction.test.ts ("harness and compaction metadata") and
 * test/e2e/agents/unbuilt-agent-fields.test.ts.
 */
import { invalid } from '../errors.js';
import { notSupportedYet } from '../api/unsupported.js';

export const COMPACTION_STRATEGIES = ['cc-style', 'opencode-style', 'summarize'] as const;
export type CompactionStrategy = (typeof COMPACTION_STRATEGIES)[number];

export const DEFAULT_TRIGGER_FRACTION = 0.8;
export const DEFAULT_MAX_SUMMARY_TOKENS = 4096;
const MAX_SUMMARY_TOKENS_CEILING = 100_000;

export interface CompactionSettings {
  strategy: CompactionStrategy;
  /** The strategy name as sent, when it was not one of the three (it fell back to cc-style). */
  requestedStrategy?: string;
  triggerFraction: number;
  maxSummaryTokens: number;
  summaryPrompt?: string;
}

const HARNESSES = ['default', 'pi'];

/** Refuses a harness this deployment does not run (`null` and `default` mean the default). */
export function checkHarness(harness: unknown): void {
  if (harness === undefined || harness === null) return;
  if (!HARNESSES.includes(String(harness)))
    throw notSupportedYet('harness', `harness '${String(harness)}' (known: default, pi)`);
}

const NUMBER = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/** The settings a `pi` agent's metadata asks for; throws a 400 naming the bad key. */
export function compactionSettings(metadata: Record<string, string> | null | undefined) {
  const m = metadata ?? {};
  const out: CompactionSettings = {
    strategy: 'cc-style',
    triggerFraction: DEFAULT_TRIGGER_FRACTION,
    maxSummaryTokens: DEFAULT_MAX_SUMMARY_TOKENS,
  };
  const strategy = m.compaction_strategy;
  if (strategy !== undefined) {
    if ((COMPACTION_STRATEGIES as readonly string[]).includes(strategy.trim()))
      out.strategy = strategy.trim() as CompactionStrategy;
    else out.requestedStrategy = strategy;
  }
  const fraction = m.compaction_trigger_fraction;
  if (fraction !== undefined) {
    const v = NUMBER.test(fraction) ? Number(fraction) : NaN;
    if (!(v > 0 && v < 1))
      throw invalid(
        'metadata.compaction_trigger_fraction',
        `must be a number greater than 0 and less than 1, got ${JSON.stringify(fraction)}`,
      );
    out.triggerFraction = v;
  }
  const cap = m.compaction_max_summary_tokens;
  if (cap !== undefined) {
    const v = /^\s*\d+\s*$/.test(cap) ? Number(cap) : NaN;
    if (!(Number.isSafeInteger(v) && v > 0 && v <= MAX_SUMMARY_TOKENS_CEILING))
      throw invalid(
        'metadata.compaction_max_summary_tokens',
        `must be a positive integer up to ${MAX_SUMMARY_TOKENS_CEILING}, got ${JSON.stringify(cap)}`,
      );
    out.maxSummaryTokens = v;
  }
  const prompt = m.compaction_summary_prompt;
  if (prompt !== undefined) {
    if (!prompt.trim())
      throw invalid('metadata.compaction_summary_prompt', 'must not be empty when set');
    out.summaryPrompt = prompt;
  }
  return out;
}

/** The checks an agent version passes for its harness (agent create/update, session overrides). */
export function checkHarnessSpec(spec: {
  harness?: string | null;
  metadata?: Record<string, string> | null;
}): void {
  checkHarness(spec.harness);
  if (spec.harness === 'pi') compactionSettings(spec.metadata);
}
