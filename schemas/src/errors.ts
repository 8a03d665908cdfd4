/**
 * Error types of the spec's Errors section and the HTTP status each carries at the edge.
 * The status codes follow the official API (400, 401, 403, 404, 409, 412, 429, 500).
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  /** A declared path asked with a method none of its routes declares (with `Allow`). */
  method_not_allowed: 405,
  conflict: 409,
  /** A Work heartbeat from a replaced generation or with a stale expected_last_heartbeat. */
  precondition_failed: 412,
  rate_limited: 429,
  internal_error: 500,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

// The error body (ErrorBody) is a schema in resources.ts.
