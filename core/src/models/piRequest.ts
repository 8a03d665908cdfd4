/**
 * The model card `pi_config` keys that shape the model request, checked at card create and
 * update against the card's protocol, so a value is either sent or a 400 naming it (accepted
 * means honoured). Guarantees, proved by test/e2e/models/pi-request-settings.test.ts (through the scripted
 * model server, both protocols):
 * - `samplingParams`: `temperature`, `topP` and, on the Anthropic Messages protocol, `topK`, each
 *   within the protocol's range (Anthropic temperature 0–1, OpenAI 0–2; topP 0–1; topK an
 *   integer ≥ 1), are sent on every request (`temperature`, `top_p`, `top_k`). Any other key is a
 *   400 naming `pi_config.samplingParams.<key>`. On Anthropic with `reasoning: true` the
 *   Messages API refuses temperature and top_k beside extended thinking and takes top_p only
 *   from 0.95, so those are 400s too.
 * - `compat`: `supportsStrictMode` (boolean: /v1/models `structured_outputs`) and, on the OpenAI
 *   protocol, `maxTokensField` (`max_completion_tokens`, the default, or `max_tokens` for servers
 *   that only read the older name): the output cap is sent under that name. Any other key is a
 *   400 naming `pi_config.compat.<key>`.
 * - `input`: the model's input kinds, `text` with optionally `image`. /v1/models reports
 *   `image_input` from it, and a card without `image` gets no image: every image block of the
 *   conversation (tool results included) is sent as a text note saying it was left out
 *   (workers/src/turn/modelSettings.ts).
 */
import { invalid } from '../errors.js';

type Protocol = 'anthropic' | 'openai';
type Range = { min: number; max: number; int?: boolean };

const SAMPLING: Record<Protocol, Record<string, Range>> = {
  anthropic: {
    temperature: { min: 0, max: 1 },
    topP: { min: 0, max: 1 },
    topK: { min: 1, max: 1_000_000, int: true },
  },
  openai: { temperature: { min: 0, max: 2 }, topP: { min: 0, max: 1 } },
};
const COMPAT: Record<Protocol, string[]> = {
  anthropic: ['supportsStrictMode'],
  openai: ['supportsStrictMode', 'maxTokensField'],
};
const PROTOCOL_NAME: Record<Protocol, string> = {
  anthropic: 'the Anthropic Messages protocol',
  openai: 'the OpenAI chat-completions protocol',
};
const INPUT_KINDS = ['text', 'image'];

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

export function checkPiRequestConfig(pi: unknown, protocol: Protocol): void {
  if (!isObject(pi)) return;
  const on = PROTOCOL_NAME[protocol];
  if (pi.samplingParams !== undefined) {
    if (!isObject(pi.samplingParams))
      throw invalid('pi_config.samplingParams', 'must be an object');
    const ranges = SAMPLING[protocol];
    for (const [key, v] of Object.entries(pi.samplingParams)) {
      const field = `pi_config.samplingParams.${key}`;
      const r = ranges[key];
      if (!r)
        throw invalid(
          field,
          `is not supported on ${on} (supported: ${Object.keys(ranges).join(', ')})`,
        );
      const thinkingMin = protocol === 'anthropic' && pi.reasoning === true && key === 'topP';
      const min = thinkingMin ? 0.95 : r.min;
      const ok =
        typeof v === 'number' &&
        Number.isFinite(v) &&
        v >= min &&
        v <= r.max &&
        (!r.int || Number.isInteger(v));
      if (!ok)
        throw invalid(
          field,
          `must be ${r.int ? 'an integer' : 'a number'} from ${min} to ${r.max}`,
        );
      if (protocol === 'anthropic' && pi.reasoning === true && key !== 'topP')
        throw invalid(
          field,
          'is refused by the Anthropic Messages API beside extended thinking (pi_config.reasoning: true)',
        );
    }
  }
  if (pi.compat !== undefined) {
    if (!isObject(pi.compat)) throw invalid('pi_config.compat', 'must be an object');
    for (const [key, v] of Object.entries(pi.compat)) {
      const field = `pi_config.compat.${key}`;
      if (!COMPAT[protocol].includes(key))
        throw invalid(
          field,
          `is not supported on ${on} (supported: ${COMPAT[protocol].join(', ')})`,
        );
      if (key === 'supportsStrictMode' && typeof v !== 'boolean')
        throw invalid(field, 'must be a boolean');
      if (key === 'maxTokensField' && v !== 'max_tokens' && v !== 'max_completion_tokens')
        throw invalid(field, "must be 'max_completion_tokens' or 'max_tokens'");
    }
  }
  if (pi.input !== undefined) {
    const input = pi.input;
    if (
      !Array.isArray(input) ||
      !input.every((k) => INPUT_KINDS.includes(k)) ||
      new Set(input).size !== input.length ||
      !input.includes('text')
    )
      throw invalid('pi_config.input', "must list 'text' and optionally 'image', once each");
  }
}
