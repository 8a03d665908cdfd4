// The CJS build, as Apollo and graphql-sse use (see schema.ts).
import { GraphQLError, type GraphQLFormattedError } from 'graphql/index.js';
import { ValidationError, type ErrorType } from '@agentfleet/schemas';
import { ApiError, type Logger } from '@agentfleet/core';

/** REST error type → GraphQL `extensions.code` (Apollo's names where Apollo has one). */
const CODES: Record<ErrorType, string> = {
  invalid_request: 'BAD_USER_INPUT',
  unauthorized: 'UNAUTHENTICATED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  rate_limited: 'RATE_LIMITED',
  internal_error: 'INTERNAL_SERVER_ERROR',
};

export const isNotFound = (err: unknown) => err instanceof ApiError && err.type === 'not_found';

/**
 * Maps a service error to a GraphQL error: `extensions: { code, type, http_status }` plus the
 * REST error's details (`field` for validation errors, `current_version` for conflicts). Anything else is logged and served as
 * an opaque internal error, never with its message or stack.
 */
export function toGraphQLError(err: unknown, log: Logger): GraphQLError {
  if (err instanceof GraphQLError) return err;
  if (err instanceof ApiError) {
    return new GraphQLError(err.message, {
      extensions: { ...err.details, code: CODES[err.type], type: err.type, http_status: err.status },
    });
  }
  if (err instanceof ValidationError) {
    return new GraphQLError(err.message, { extensions: { code: 'BAD_USER_INPUT', type: 'invalid_request', http_status: 400, field: err.field } });
  }
  log.error('graphql resolver failed', { err: String((err as Error)?.stack ?? err) });
  return new GraphQLError('internal error', { extensions: { code: 'INTERNAL_SERVER_ERROR', type: 'internal_error', http_status: 500 } });
}

/**
 * Apollo's last word on every error. Resolver errors are already mapped (above); this only
 * fills in `type`/`http_status` for Apollo's own errors (parse, validation, variable coercion).
 */
export const formatError = (log: Logger) => (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
  const ext = formatted.extensions ?? {};
  if (ext.type) return formatted;
  const code = String(ext.code ?? 'INTERNAL_SERVER_ERROR');
  if (code === 'INTERNAL_SERVER_ERROR') {
    log.error('graphql error', { message: formatted.message, path: formatted.path, err: String((error as Error)?.stack ?? error) });
    return { message: 'internal error', locations: formatted.locations, path: formatted.path, extensions: { code, type: 'internal_error', http_status: 500 } };
  }
  return { ...formatted, extensions: { ...ext, type: 'invalid_request', http_status: 400 } };
};
