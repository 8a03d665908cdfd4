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
  method_not_allowed: 'METHOD_NOT_ALLOWED',
  conflict: 'CONFLICT',
  precondition_failed: 'PRECONDITION_FAILED',
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
      extensions: {
        ...err.details,
        code: CODES[err.type],
        type: err.type,
        http_status: err.status,
      },
    });
  }
  if (err instanceof ValidationError) {
    return new GraphQLError(err.message, {
      extensions: {
        code: 'BAD_USER_INPUT',
        type: 'invalid_request',
        http_status: 400,
        field: err.field,
      },
    });
  }
  log.error('graphql resolver failed', { err: String((err as Error)?.stack ?? err) });
  return new GraphQLError('internal error', {
    extensions: { code: 'INTERNAL_SERVER_ERROR', type: 'internal_error', http_status: 500 },
  });
}

/**
 * Apollo's last word on every error. Resolver errors are already mapped (above); this only
 * fills in `type`/`http_status` for Apollo's own errors (parse, validation, variable coercion).
 */
export const formatError =
  (log: Logger) =>
  (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const ext = formatted.extensions ?? {};
    if (ext.type) return formatted;
    const code = String(ext.code ?? 'INTERNAL_SERVER_ERROR');
    if (code === 'INTERNAL_SERVER_ERROR') {
      log.error('graphql error', {
        message: formatted.message,
        path: formatted.path,
        err: String((error as Error)?.stack ?? error),
      });
      return {
        message: 'internal error',
        locations: formatted.locations,
        path: formatted.path,
        extensions: { code, type: 'internal_error', http_status: 500 },
      };
    }
    return { ...formatted, extensions: { ...ext, type: 'invalid_request', http_status: 400 } };
  };

const withExtensions = (e: GraphQLError, message: string, extensions: Record<string, unknown>) =>
  new GraphQLError(message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    extensions,
  });

/** graphql-js validation errors, tagged as Apollo tags them (graphql-sse has no formatError). */
export const tagValidationErrors = (errors: readonly GraphQLError[]): GraphQLError[] =>
  errors.map((e) =>
    withExtensions(e, e.message, {
      ...e.extensions,
      code: 'GRAPHQL_VALIDATION_FAILED',
      type: 'invalid_request',
      http_status: 400,
    }),
  );

/**
 * The graphql-sse counterpart of formatError, applied to every streamed result: mapped errors
 * pass; errors without a path (variable coercion) are the client's; anything else raised while
 * executing is logged and served as an opaque internal error.
 */
export function formatStreamedErrors<R extends { errors?: readonly GraphQLError[] }>(
  result: R,
  log: Logger,
): R | undefined {
  if (!result.errors?.length) return undefined;
  const errors = result.errors.map((e) => {
    if (e.extensions?.type) return e;
    if (!e.path)
      return withExtensions(e, e.message, {
        ...e.extensions,
        code: 'BAD_USER_INPUT',
        type: 'invalid_request',
        http_status: 400,
      });
    log.error('graphql error', {
      message: e.message,
      path: e.path,
      err: String(e.originalError?.stack ?? e),
    });
    return withExtensions(e, 'internal error', {
      code: 'INTERNAL_SERVER_ERROR',
      type: 'internal_error',
      http_status: 500,
    });
  });
  return { ...result, errors };
}
