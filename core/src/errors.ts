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

export const notFound = (what: string, id: string) =>
  new ApiError('not_found', `${what} ${id} not found`);
export const invalid = (field: string, message: string) =>
  new ApiError('invalid_request', `${field}: ${message}`, { field });
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new ApiError('conflict', message, details);

/** Thrown when a fenced write comes from a lease holder that has been replaced. */
export class StaleLeaseError extends Error {
  override readonly name = 'StaleLeaseError';
}
