import type { FastifyInstance } from 'fastify';
import { ApiError, MAX_JSON_DEPTH } from '@agentfleet/core';

/**
 * The application/json body parser of the gateway.
 *
 * Guarantees (tested in test/e2e/api/api-hardening.test.ts, "JSON bodies"):
 * - nesting deeper than MAX_JSON_DEPTH is refused with 400 `invalid_request` naming the limit,
 *   found by an iterative scan of the raw text BEFORE JSON.parse or any validator runs (deeply
 *   nested input can no longer overflow the stack of a recursive validator, structuredClone or
 *   the store's copy);
 * - an empty body (or only whitespace) means "no body": the official Python SDK sends
 *   `POST …/archive` and deletes with `content-type: application/json` and nothing else;
 * - everything else is fastify's own parser (prototype-poisoning keys refused, malformed JSON
 *   reported as 400 by the error handler).
 */

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Deepest nesting of `{`/`[` in JSON text, stopping as soon as it passes `max` (so the answer is
 * at most max + 1). Brackets inside strings do not count. Malformed text is not diagnosed here:
 * JSON.parse does that afterwards.
 */
export function jsonTextDepth(text: string, max: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return deepest;
}

export const tooDeep = (field: string) =>
  new ApiError(
    'invalid_request',
    `${field}: JSON nests deeper than the limit of ${MAX_JSON_DEPTH} levels of objects and arrays`,
    { field, limit: MAX_JSON_DEPTH },
  );

/** Replaces fastify's application/json parser with the depth-checked one described above. */
export function registerJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    if (jsonTextDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
      return done(tooDeep('body'), undefined);
    parse(req, text, done);
  });
}
