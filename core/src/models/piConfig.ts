/**
 * Validation of a model card's `pi_config` fields that the platform applies (accepted
 * means honoured), at card create and update, so a value that would be silently ignored at
 * request time is a 400 naming it instead: `reasoning` (boolean), `contextWindow` and
 * `maxTokens` (positive integers), `thinkingLevelMap` (level → string, number or null),
 * `headers` (string values, valid names, never a credential or connection header), `cost`
 * (non-negative numbers per token kind). `samplingParams`, `compat` and `input` are checked
 * against the card's protocol by ./piRequest.ts. Other keys are descriptive (pi's model
 * metadata) and kept as sent. Proved by test/e2e/models/pi-config-validation.test.ts.
 *
 * pi_config cannot override the card's identity, provider, wire model, endpoint or credential
 * (spec "Model card"): the keys in CARD_OWNED_KEYS are a 400 naming `pi_config.<key>` that
 * points at the card field to set instead. Proved by test/e2e/models/model-cards-full.test.ts
 * ("pi_config cannot override the card").
 */
import { invalid } from '../errors.js';
import { isProtectedHeader } from './providerHelpers.js';

const LEVELS = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];
const COST_KINDS = ['input', 'output', 'cacheRead', 'cacheWrite'];

/** pi's own names and the card's names for what the card alone decides → the card field. */
const CARD_OWNED_KEYS: Readonly<Record<string, string>> = {
  id: 'model_id',
  model_id: 'model_id',
  provider: 'provider',
  model: 'model',
  baseUrl: 'base_url',
  base_url: 'base_url',
  endpoint: 'base_url',
  apiKey: 'api_key',
  api_key: 'api_key',
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);
const positiveInt = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

export function checkPiConfig(pi: unknown): void {
  if (pi === undefined || pi === null) return;
  if (!isObject(pi)) throw invalid('pi_config', 'must be an object');
  for (const key of Object.keys(pi))
    if (Object.hasOwn(CARD_OWNED_KEYS, key))
      throw invalid(
        `pi_config.${key}`,
        `pi_config cannot override the card's ${CARD_OWNED_KEYS[key]}; set the card field instead`,
      );
  if (pi.reasoning !== undefined && typeof pi.reasoning !== 'boolean')
    throw invalid('pi_config.reasoning', 'must be a boolean');
  for (const k of ['contextWindow', 'maxTokens'])
    if (pi[k] !== undefined && !positiveInt(pi[k]))
      throw invalid(`pi_config.${k}`, 'must be a positive integer');
  if (pi.thinkingLevelMap !== undefined) {
    if (!isObject(pi.thinkingLevelMap))
      throw invalid('pi_config.thinkingLevelMap', 'must be an object');
    for (const [level, v] of Object.entries(pi.thinkingLevelMap)) {
      if (!LEVELS.includes(level))
        throw invalid(
          `pi_config.thinkingLevelMap.${level}`,
          `unknown level (${LEVELS.join(', ')})`,
        );
      if (v !== null && typeof v !== 'string' && !(typeof v === 'number' && v >= 0))
        throw invalid(`pi_config.thinkingLevelMap.${level}`, 'must be a string, a number or null');
    }
  }
  if (pi.headers !== undefined) {
    if (!isObject(pi.headers)) throw invalid('pi_config.headers', 'must be an object');
    for (const [name, value] of Object.entries(pi.headers)) {
      const field = `pi_config.headers.${name}`;
      if (typeof value !== 'string') throw invalid(field, 'must be a string');
      try {
        new Headers().set(name, value);
      } catch {
        throw invalid(field, 'not a valid HTTP header name or value');
      }
      if (isProtectedHeader(name))
        throw invalid(field, 'credentials and connection headers are set by the platform');
    }
  }
  if (pi.cost !== undefined) {
    if (!isObject(pi.cost)) throw invalid('pi_config.cost', 'must be an object');
    for (const k of COST_KINDS) {
      const v = pi.cost[k];
      if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0))
        throw invalid(
          `pi_config.cost.${k}`,
          'must be a non-negative number (USD per million tokens)',
        );
    }
  }
}
