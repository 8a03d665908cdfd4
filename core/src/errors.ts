import { ERROR_STATUS, type ErrorType } from '@agentfleet/schemas';

/** An error that carries its own API type (and so its HTTP status) to the edge. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.status = ERROR_STATUS[type];
  }
}

/**
 * The official SDKs' typed error codes (`error.details.error_code`, read by the TS SDK as
 * `APIError.errorCode`) the platform can produce. Proved by test/e2e/api/error-codes.test.ts.
 */
export type SdkErrorCode =
  | 'environment_archived'
  | 'environment_not_found'
  | 'invalid_config_type_change'
  | 'invalid_metadata'
  | 'file_expired';

/** Not-found errors whose resource has an SDK code of its own. */
const NOT_FOUND_CODES: Record<string, SdkErrorCode> = { environment: 'environment_not_found' };

/** An ApiError carrying the SDK's `error_code` in its details (beside what it had). */
export const withErrorCode = (err: ApiError, error_code: SdkErrorCode) =>
  new ApiError(err.type, err.message, { ...err.details, error_code });

/**
 * The error code implied by an error's details when none was set where it was thrown: any
 * invalid_request naming a `metadata` field (a bad key, value or count) is `invalid_metadata`.
 */
export function impliedErrorCode(
  type: string,
  details: Record<string, unknown> | undefined,
): SdkErrorCode | undefined {
  const field = typeof details?.field === 'string' ? details.field : '';
  if (type === 'invalid_request' && /^metadata(?:$|[.[])/.test(field)) return 'invalid_metadata';
  return undefined;
}

export const notFound = (what: string, id: string) =>
  new ApiError(
    'not_found',
    `${what} ${id} not found`,
    NOT_FOUND_CODES[what] ? { error_code: NOT_FOUND_CODES[what] } : undefined,
  );
export const invalid = (field: string, message: string) =>
  new ApiError('invalid_request', `${field}: ${message}`, { field });
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new ApiError('conflict', message, details);

/** Thrown when a fenced write comes from a lease holder that has been replaced. */
export class StaleLeaseError extends Error {
  override readonly name = 'StaleLeaseError';
}
