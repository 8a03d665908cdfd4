/**
 * The memory API's 409s. Both carry the house error type `conflict`; `details.error_type` names
 * the SDK's error object type, and a path conflict carries `conflicting_path` and
 * `conflicting_memory_id` (the gateway also serves those two on the error object itself, where
 * the SDK's BetaManagedAgentsMemoryPathConflictErrorObject has them).
 */
import { ApiError } from '../errors.js';

export function pathConflict(path: string, memoryId: string, requested = path): ApiError {
  const by = memoryId ? `memory ${memoryId}` : 'another memory';
  const how = path === requested ? 'is used by' : `overlaps ${path}, the path of`;
  return new ApiError('conflict', `path: ${requested} ${how} ${by}`, {
    field: 'path',
    error_type: 'memory_path_conflict_error',
    conflicting_path: path,
    conflicting_memory_id: memoryId,
  });
}

export function preconditionFailed(memoryId: string, field = 'precondition'): ApiError {
  return new ApiError(
    'conflict',
    `${field}: memory ${memoryId}'s content_sha256 does not match; retrieve the memory and retry`,
    { field, error_type: 'memory_precondition_failed_error' },
  );
}
