/**
 * Session event catalog. Canonical events are persisted with a gap-free `seq`; stream
 * lifecycle events (chunks) are broadcast live only and never persisted (spec Events rule 1).
 */

export const CANONICAL_EVENT_TYPES = [
  'user.message',
  'user.interrupt',
  'user.custom_tool_result',
  'session.status_running',
  'session.status_idle',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.error',
  'session.warning',
  'session.deleted',
  'agent.thinking',
  'agent.message',
  'agent.tool_use',
  'agent.tool_result',
  'agent.mcp_tool_use',
  'agent.mcp_tool_result',
  'agent.custom_tool_use',
  'span.model_request_start',
  'span.model_request_end',
] as const;
export type CanonicalEventType = (typeof CANONICAL_EVENT_TYPES)[number];

/** Extension events delivered only with `?include=chunks` (and always on /messages). */
export const CHUNK_EVENT_TYPES = [
  'agent.message_stream_start',
  'agent.message_chunk',
  'agent.message_stream_end',
  'agent.thinking_stream_start',
  'agent.thinking_chunk',
  'agent.thinking_stream_end',
  'agent.tool_use_input_stream_start',
  'agent.tool_use_input_chunk',
  'agent.tool_use_input_stream_end',
  'span.model_first_token',
] as const;
export type ChunkEventType = (typeof CHUNK_EVENT_TYPES)[number];

/** The spec's default SSE union: every canonical type except extension ones. */
export const EXTENSION_CANONICAL_TYPES: ReadonlySet<string> = new Set(['session.warning']);

export type StopReason =
  | { type: 'end_turn' }
  | { type: 'requires_action'; event_ids: string[] }
  | { type: 'retries_exhausted' }
  | { type: 'budget_reached' }
  | { type: 'refusal' };

export type SessionErrorType =
  | 'unknown_error'
  | 'model_overloaded_error'
  | 'model_rate_limited_error'
  | 'model_request_failed_error'
  | 'billing_error';

/** A persisted event as served: the SDK's flat fields plus the spec's `data`, `seq`, `session_id`, `created_at`. */
export interface SessionEventOut {
  id: string;
  type: string;
  seq: number;
  session_id: string;
  created_at: string;
  processed_at: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

/** A live-only event (chunks, SDK deltas): no seq, never persisted. */
export interface LiveEventOut {
  type: string;
  session_id: string;
  ephemeral: true;
  [field: string]: unknown;
}
