/**
 * The names of the session event catalog, by how each is delivered. Canonical events are
 * persisted with a gap-free `seq`; chunk events (stream lifecycle) are broadcast live only and
 * never persisted (spec Events rule 1); the extension canonical events are persisted and listed
 * but left out of the spec's default SSE union: streamed only with `?include=chunks`
 * (gateway/src/sessionStream.ts). The schemas of each type are ./events.ts (persisted) and
 * ./liveEvents.ts (chunks), which re-export these lists. Proved by
 * test/e2e/api/contract-shapes.test.ts, test/e2e/events/event-deltas.test.ts and
 * test/e2e/sessions/sessions-events.test.ts.
 */
import { PENDING_QUEUE_EVENT_TYPES } from './pendingQueueEvents.js';
import { THREAD_EVENT_TYPES } from './threadEvents.js';

export const CANONICAL_EVENT_TYPES = [
  'user.message',
  'user.define_outcome',
  'user.interrupt',
  'user.custom_tool_result',
  'user.tool_confirmation',
  'user.tool_result',
  'system.message',
  'session.status_running',
  'session.status_idle',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.error',
  'session.warning',
  'session.deleted',
  'session.updated',
  'agent.thinking',
  'agent.message',
  'agent.tool_use',
  'agent.tool_result',
  'agent.mcp_tool_use',
  'agent.mcp_tool_result',
  'agent.custom_tool_use',
  'span.model_request_start',
  'span.model_request_end',
  'agent.thread_context_compacted',
  ...THREAD_EVENT_TYPES,
  'span.compaction_summarize_start',
  'span.compaction_summarize_end',
  'span.outcome_evaluation_start',
  'span.outcome_evaluation_ongoing',
  'span.outcome_evaluation_end',
  ...PENDING_QUEUE_EVENT_TYPES,
  'aux.model_call',
  'span.wakeup_scheduled',
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
export const EXTENSION_CANONICAL_TYPES: ReadonlySet<string> = new Set([
  'session.warning',
  'span.compaction_summarize_start',
  'span.compaction_summarize_end',
  'aux.model_call',
  ...PENDING_QUEUE_EVENT_TYPES,
  'span.wakeup_scheduled',
]);
