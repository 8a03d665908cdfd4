/**
 * Recognises a provider's "the request exceeds the context window" answer on both protocols.
 * The providers report it as a plain invalid request (HTTP 400, or 413 from some gateways), so
 * core/src/models/providerHelpers.ts modelErrorFor classifies it as a non-retryable
 * model_request_failed_error; what tells it apart is the upstream's message, which the port
 * keeps: Anthropic `prompt is too long: N tokens > M maximum`, OpenAI
 * `This model's maximum context length is N tokens` (code `context_length_exceeded`), and the
 * usual wording of OpenAI-compatible servers (vLLM, llama.cpp, LiteLLM). Harness `pi` sessions
 * compact and retry once on it (./turnCompaction.ts). Proved by test/e2e/turns/compaction-overflow.test.ts.
 */
import type { ModelError } from '@agentfleet/core';

const OVERFLOW =
  /prompt is too long|context[ _-]length|maximum context|context window|too many (input )?tokens|exceeds? (the )?(model'?s? )?(maximum )?(context|input)|input is too long|request too large/i;

export function isContextOverflow(err: ModelError): boolean {
  if (err.kind !== 'model_request_failed_error') return false;
  if (err.status !== undefined && err.status !== 400 && err.status !== 413) return false;
  return OVERFLOW.test(err.message);
}
