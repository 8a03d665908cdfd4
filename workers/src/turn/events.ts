/**
 * Event drafts a turn appends and the errors that end it. Guarantees: a model request span is
 * always closed by one span.model_request_end naming its start (is_error, usage, stop reason);
 * a failure is reported as session.error with a retry status (retrying | exhausted | terminal);
 * any failure of a model call maps to a ModelError kind, never to an unclassified throw.
 * Proven by test/e2e/sessions/sessions-events.test.ts, test/e2e/sdk/sdk-flow.test.ts and test/e2e/server/crash-recovery.test.ts.
 */
import {
  ApiError,
  ModelError,
  UnsupportedModelFeatureError,
  type EventDraft,
  type ModelUsage,
} from '@agentfleet/core';
import type { UsageUpdate } from './budget.js';

/**
 * How a turn ended: the session.status_idle stop reason, whether an interrupt ended it, and the
 * final model answer when it is appended with the idle (./finish.ts).
 */
export type TurnEnd = {
  stop_reason: Record<string, unknown>;
  interrupted?: boolean;
  held?: HeldAnswer;
};

/** A final model answer not yet appended: its events and the session update carrying its usage. */
export interface HeldAnswer {
  drafts: EventDraft[];
  update: UsageUpdate;
}

/** The reason a turn's abort signal fired. */
export class TurnAborted extends Error {
  constructor(readonly reason: 'interrupt' | 'terminated' | 'lease_lost') {
    super(reason);
  }
}

export const zeroUsage = (): ModelUsage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
});

export function spanEnd(
  startId: string,
  isError: boolean,
  usage: ModelUsage,
  stopReason: string,
  speed?: string,
): EventDraft {
  return {
    type: 'span.model_request_end',
    payload: {
      model_request_start_id: startId,
      is_error: isError,
      model_usage: { ...usage, ...(speed ? { speed } : {}) },
      stop_reason: stopReason,
    },
  };
}

export function sessionError(
  type: string,
  message: string,
  retry: 'retrying' | 'exhausted' | 'terminal',
): EventDraft {
  return {
    type: 'session.error',
    payload: { error: { type, message, retry_status: { type: retry } } },
  };
}

export function toModelError(err: unknown): ModelError {
  if (err instanceof ModelError) return err;
  if (err instanceof UnsupportedModelFeatureError)
    return new ModelError('model_request_failed_error', `unsupported: ${err.message}`);
  if (err instanceof ApiError) return new ModelError('model_request_failed_error', err.message);
  return new ModelError('unknown_error', (err as Error)?.message ?? String(err));
}
