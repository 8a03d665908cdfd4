import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '@agentfleet/schemas';
import { ApiError, type Logger } from '@agentfleet/core';
import { errorBody } from './http.js';

/**
 * The gateway's one error handler: every error reaches the client in the API error shape
 * (`errorBody`), and no client-caused error is a 500.
 *
 * - ApiError: its own type and status; ValidationError: 400 naming the field;
 * - fastify's body errors (FST_ERR_CTP_*): malformed JSON 400, unsupported media type 400,
 *   too large 413;
 * - @fastify/multipart's errors (FST_* with a 4xx status) and busboy's (plain errors, known by
 *   their messages: no boundary, truncated or malformed parts): 400, or 413 for size limits;
 * - any other error carrying a 4xx statusCode: 400 with its message;
 * - anything else: logged, and served as an opaque 500 `internal_error`.
 *
 * Tested in test/e2e/api/api-hardening.test.ts ("multipart", "JSON bodies", "query strings").
 */

/** busboy/dicer errors are plain Errors without a code: these messages are the client's doing. */
const MALFORMED_MULTIPART = [
  /^Multipart: Boundary not found/,
  /^Boundary required/,
  /^Unexpected end of (multipart data|form)/,
  /terminated early due to unexpected end of multipart data$/,
  /^Malformed (part )?header/,
  /^Missing Content-Type-header/,
  /^Unsupported Content-Type/,
];

const MULTIPART_LIMITS = new Set([
  'FST_REQ_FILE_TOO_LARGE',
  'FST_PARTS_LIMIT',
  'FST_FILES_LIMIT',
  'FST_FIELDS_LIMIT',
]);

export function errorHandler(log: Logger) {
  return (err: FastifyError & { field?: string }, req: FastifyRequest, reply: FastifyReply) => {
    const id = String(req.id);
    const bad = (message: string, details?: Record<string, unknown>, status = 400) =>
      reply.code(status).send(errorBody('invalid_request', message, id, details));
    if (err instanceof ApiError)
      return reply.code(err.status).send(errorBody(err.type, err.message, id, err.details));
    if (err instanceof ValidationError) return bad(err.message, { field: err.field });
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.name === 'SyntaxError')
      return bad(`body: malformed JSON (${err.message})`, { field: 'body' });
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
      return bad('body: a JSON object is required', { field: 'body' });
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return bad(
        `content-type: ${String(req.headers['content-type']).slice(0, 100)} is not supported; send application/json`,
        { field: 'content-type' },
      );
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return bad('body: exceeds the 32 MiB limit', { field: 'body' }, 413);
    if (MULTIPART_LIMITS.has(err.code))
      return bad(`body: multipart upload over a limit (${err.message})`, { field: 'body' }, 413);
    if (err.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
      return bad('content-type: the request is not multipart/form-data', { field: 'content-type' });
    if (typeof err.message === 'string' && MALFORMED_MULTIPART.some((re) => re.test(err.message)))
      return bad(`body: malformed multipart/form-data (${err.message})`, { field: 'body' });
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return bad(err.message);
    log.error('unhandled error', {
      request_id: id,
      method: req.method,
      url: req.url.split('?')[0],
      err: String(err.stack ?? err),
    });
    return reply.code(500).send(errorBody('internal_error', 'internal error', id));
  };
}
