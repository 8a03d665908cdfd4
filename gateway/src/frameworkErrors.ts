import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './http.js';

/** Path parameters longer than this never match a route (ids are at most 128 characters). */
export const MAX_PARAM_LENGTH = 1024;

/**
 * Errors fastify's router raises before any route or hook runs (fastify's `frameworkErrors`),
 * answered in the API error shape instead of fastify's own: a path parameter over
 * MAX_PARAM_LENGTH characters cannot name anything (404 not_found); a path with malformed
 * percent-encoding is a bad request (400 naming `path`).
 * Found by test/e2e/api/schemathesis.test.ts; tested in test/e2e/api/openapi.test.ts ("router errors").
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const id = String(req.id);
  reply.header('request-id', id);
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply
      .code(404)
      .send(
        errorBody(
          'not_found',
          `no such resource: a path segment is longer than ${MAX_PARAM_LENGTH} characters`,
          id,
        ),
      );
    return;
  }
  void reply.code(400).send(
    errorBody('invalid_request', 'path: not a valid URL path (malformed percent-encoding)', id, {
      field: 'path',
    }),
  );
}
