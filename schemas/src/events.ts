import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { Id, Nullable, Obj } from './common.js';
import { compileBody, ValidationError, type Validator } from './validate.js';
import { eventOf } from './eventEnvelope.js';
import { SessionWarningEvent } from './sessionWarnings.js';
import { SpanModelUsage } from './spanUsage.js';
import { OUTCOME_EVENT_PAYLOADS, OUTCOME_EVENT_SCHEMAS } from './outcomeEvents.js';
import { PENDING_QUEUE_EVENT_PAYLOADS, PENDING_QUEUE_EVENT_SCHEMAS } from './pendingQueueEvents.js';
import { INPUT_EVENT_PAYLOADS, INPUT_EVENT_SCHEMAS } from './inputEvents.js';
import type { CanonicalEventType } from './eventTypes.js';
import { AUX_EVENT_PAYLOADS, AUX_EVENT_SCHEMAS } from './auxModelCall.js';
import { WAKEUP_EVENT_PAYLOADS, WAKEUP_EVENT_SCHEMAS } from './wakeupEvents.js';
import { THREAD_EVENT_PAYLOADS, THREAD_EVENT_SCHEMAS } from './threadEvents.js';
import {
  CHUNK_EVENT_SCHEMAS,
  STREAM_DELTA_SCHEMAS,
  type ChunkEvent,
  type StreamDeltaEvent,
  type StreamStartEvent,
} from './liveEvents.js';

export * from './liveEvents.js';
export { SessionWarningEvent } from './sessionWarnings.js';
export { SpanModelUsage } from './spanUsage.js';
export * from './outcomeEvents.js';
export * from './pendingQueueEvents.js';
export * from './eventTypes.js';
export * from './inputEvents.js';

/**
 * Session event catalog: the persisted events' payloads and served schemas, the envelopes the
 * log and the pubsub carry, and the validation of served events. Which types exist and how each
 * is delivered is ./eventTypes.ts; the input events' entries are ./inputEvents.ts.
 */

// ---------------------------------------------------------------------------------------------
// Payload parts

export { StopReason } from './stopReason.js';
import { StopReason } from './stopReason.js';

const GENERAL_ERROR_TYPES = [
  'unknown_error',
  'model_overloaded_error',
  'model_rate_limited_error',
  'model_request_failed_error',
  'billing_error',
] as const;
/**
 * With `mcp_server_name`: the turn goes on without that server's tools
 * (workers/src/tools/mcp.ts).
 */
const MCP_ERROR_TYPES = ['mcp_connection_failed_error', 'mcp_authentication_failed_error'] as const;
/** SDK CompactionLimitReachedErrorObject: harness `pi` could not bring the request under the window. */
const COMPACTION_ERROR_TYPES = ['compaction_limit_reached_error'] as const;
export const SESSION_ERROR_TYPES = [
  ...GENERAL_ERROR_TYPES,
  ...MCP_ERROR_TYPES,
  ...COMPACTION_ERROR_TYPES,
] as const;
export const SessionErrorType = Type.Union(SESSION_ERROR_TYPES.map((t) => Type.Literal(t)));
export type SessionErrorType = Static<typeof SessionErrorType>;

export const RetryStatus = Type.Union([
  Obj({ type: Type.Literal('retrying') }),
  Obj({ type: Type.Literal('exhausted') }),
  Obj({ type: Type.Literal('terminal') }),
]);

/** `stop_reason` of a model response as recorded on its span (provider reason or how the call ended). */
export const SPAN_STOP_REASONS = [
  'end_turn',
  'tool_use',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'aborted',
  'error',
  'interrupted',
] as const;

/** SDK BetaManagedAgentsAgentEvaluatedPermission and BetaManagedAgentsAgentToolEvaluation. */
const EvaluatedPermission = Type.Union([
  Type.Literal('allow'),
  Type.Literal('ask'),
  Type.Literal('deny'),
]);
const ToolEvaluation = Type.Union([
  Obj({ type: Type.Literal('always_allow') }),
  Obj({ type: Type.Literal('always_ask') }),
  Obj({
    type: Type.Literal('auto'),
    evaluated_permission: Type.Union([
      Obj({ type: Type.Literal('allow') }),
      Obj({ type: Type.Literal('ask'), reason_code: Type.String() }),
      Obj({ type: Type.Literal('deny'), reason_code: Type.String() }),
    ]),
  }),
]);

const TextOut = Obj({ type: Type.Literal('text'), text: Type.String() });

// ---------------------------------------------------------------------------------------------
// Persisted (canonical) events, as served

/** The payloads the platform appends, per type: what `renderEvent` spreads flat and nests as `data`. */
export const EVENT_PAYLOADS = {
  ...INPUT_EVENT_PAYLOADS,
  'session.status_running': {},
  'session.status_idle': {
    stop_reason: StopReason,
    stop_details: Type.Null(),
    /** Extension: present (true) when the turn was ended by an interrupt or cancel. */
    interrupted: Type.Optional(Type.Literal(true)),
  },
  'session.status_rescheduled': {},
  'session.status_terminated': {},
  'session.error': {
    error: Type.Union([
      Obj({
        type: Type.Union(
          [...GENERAL_ERROR_TYPES, ...COMPACTION_ERROR_TYPES].map((t) => Type.Literal(t)),
        ),
        message: Type.String(),
        retry_status: RetryStatus,
      }),
      /** SDK MCPConnectionFailedErrorObject / MCPAuthenticationFailedErrorObject. */
      Obj({
        type: Type.Union(MCP_ERROR_TYPES.map((t) => Type.Literal(t))),
        mcp_server_name: Type.String(),
        message: Type.String(),
        retry_status: RetryStatus,
      }),
    ]),
  },
  'session.deleted': {},
  /** SDK BetaManagedAgentsSessionUpdatedEvent: each key present only when the update changed it. */
  'session.updated': {
    title: Type.Optional(Nullable(Type.String())),
    metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
    // The session's budget and agent as served on the session resource (schemas there).
    budget: Type.Optional(Nullable(Type.Any())),
    agent: Type.Optional(Type.Any()),
  },
  'agent.message': { content: Type.Array(TextOut, { minItems: 1 }) },
  /** Extension: the thinking text and signature ride along (the SDK's event carries neither). */
  'agent.thinking': { thinking: Type.String(), signature: Type.Optional(Type.String()) },
  /**
   * evaluated_permission/evaluation: the resolved permission_policy
   * (workers/src/tools/permissions.ts).
   */
  'agent.tool_use': {
    name: Type.String(),
    input: Type.Record(Type.String(), Type.Unknown()),
    evaluated_permission: Type.Optional(EvaluatedPermission),
    evaluation: Type.Optional(ToolEvaluation),
  },
  /** A call to a client-executed custom tool: the turn ends with requires_action. */
  'agent.custom_tool_use': {
    name: Type.String(),
    input: Type.Record(Type.String(), Type.Unknown()),
  },
  'agent.tool_result': {
    tool_use_id: Id('sevt_'),
    content: Type.Array(TextOut),
    is_error: Type.Boolean(),
  },
  /**
   * SDK BetaManagedAgentsAgentMCPToolUseEvent. `name` is the spec's `mcp__<server>__<tool>` (the
   * name the model called, Events rule 2); `mcp_tool_name` (extension) is the server's own tool
   * name, which the SDK's field text describes.
   */
  'agent.mcp_tool_use': {
    name: Type.String(),
    mcp_server_name: Type.String(),
    mcp_tool_name: Type.String(),
    input: Type.Record(Type.String(), Type.Unknown()),
    evaluated_permission: Type.Optional(EvaluatedPermission),
    evaluation: Type.Optional(ToolEvaluation),
  },
  /** SDK BetaManagedAgentsAgentMCPToolResultEvent: text and base64 image blocks (core/src/mcp/client.ts). */
  'agent.mcp_tool_result': {
    mcp_tool_use_id: Id('sevt_'),
    content: Type.Array(
      Type.Union([
        TextOut,
        Obj({
          type: Type.Literal('image'),
          source: Obj({
            type: Type.Literal('base64'),
            media_type: Type.String(),
            data: Type.String(),
          }),
        }),
      ]),
    ),
    is_error: Type.Boolean(),
  },
  'span.model_request_start': {},
  'span.model_request_end': {
    model_request_start_id: Id('sevt_'),
    is_error: Type.Boolean(),
    model_usage: SpanModelUsage,
    /** Extension. */
    stop_reason: Type.Union(SPAN_STOP_REASONS.map((r) => Type.Literal(r))),
  },
  /**
   * SDK BetaManagedAgentsAgentThreadContextCompactedEvent (id, processed_at, type), plus
   * extensions: the summary that replaces the history before it, the strategy that wrote it
   * (`truncate` when summarising failed and the platform's fallback did), why it ran, and the
   * estimated input tokens before. workers/src/turn/compaction/*.
   */
  'agent.thread_context_compacted': {
    summary: Type.String(),
    strategy: Type.Union(
      ['cc-style', 'opencode-style', 'summarize', 'truncate'].map((s) => Type.Literal(s)),
    ),
    trigger: Type.Union([Type.Literal('threshold'), Type.Literal('overflow')]),
    fallback_reason: Nullable(Type.String()),
    estimated_tokens_before: Type.Integer({ minimum: 0 }),
  },
  /** Extension (spec span.compaction_summarize_*): the summary model call of a compaction. */
  'span.compaction_summarize_start': {
    strategy: Type.String(),
    trigger: Type.Union([Type.Literal('threshold'), Type.Literal('overflow')]),
  },
  'span.compaction_summarize_end': {
    compaction_summarize_start_id: Id('sevt_'),
    is_error: Type.Boolean(),
    model_usage: SpanModelUsage,
  },
  ...OUTCOME_EVENT_PAYLOADS,
  ...PENDING_QUEUE_EVENT_PAYLOADS,
  ...AUX_EVENT_PAYLOADS,
  ...WAKEUP_EVENT_PAYLOADS,
  ...THREAD_EVENT_PAYLOADS,
} satisfies Partial<Record<CanonicalEventType, TProperties>>;

const P = EVENT_PAYLOADS;
export const SessionStatusRunningEvent = eventOf(
  'session.status_running',
  P['session.status_running'],
);
export const SessionStatusIdleEvent = eventOf('session.status_idle', P['session.status_idle']);
export const SessionStatusRescheduledEvent = eventOf(
  'session.status_rescheduled',
  P['session.status_rescheduled'],
);
export const SessionStatusTerminatedEvent = eventOf(
  'session.status_terminated',
  P['session.status_terminated'],
);
export const SessionErrorEvent = eventOf('session.error', P['session.error']);
export const SessionDeletedEvent = eventOf('session.deleted', P['session.deleted']);
export const SessionUpdatedEvent = eventOf('session.updated', P['session.updated']);
export const AgentMessageEvent = eventOf('agent.message', P['agent.message']);
export const AgentThinkingEvent = eventOf('agent.thinking', P['agent.thinking']);
export const AgentToolUseEvent = eventOf('agent.tool_use', P['agent.tool_use']);
export const AgentToolResultEvent = eventOf('agent.tool_result', P['agent.tool_result']);
export const AgentCustomToolUseEvent = eventOf('agent.custom_tool_use', P['agent.custom_tool_use']);
export const AgentMcpToolUseEvent = eventOf('agent.mcp_tool_use', P['agent.mcp_tool_use']);
export const AgentMcpToolResultEvent = eventOf('agent.mcp_tool_result', P['agent.mcp_tool_result']);
export const SpanModelRequestStartEvent = eventOf(
  'span.model_request_start',
  P['span.model_request_start'],
);
export const SpanModelRequestEndEvent = eventOf(
  'span.model_request_end',
  P['span.model_request_end'],
);

export const AgentThreadContextCompactedEvent = eventOf(
  'agent.thread_context_compacted',
  P['agent.thread_context_compacted'],
);
export const SpanCompactionSummarizeStartEvent = eventOf(
  'span.compaction_summarize_start',
  P['span.compaction_summarize_start'],
);
export const SpanCompactionSummarizeEndEvent = eventOf(
  'span.compaction_summarize_end',
  P['span.compaction_summarize_end'],
);
/** Schema per canonical type the platform emits. */
export const SESSION_EVENT_SCHEMAS = {
  ...INPUT_EVENT_SCHEMAS,
  'session.status_running': SessionStatusRunningEvent,
  'session.status_idle': SessionStatusIdleEvent,
  'session.status_rescheduled': SessionStatusRescheduledEvent,
  'session.status_terminated': SessionStatusTerminatedEvent,
  'session.error': SessionErrorEvent,
  'session.warning': SessionWarningEvent,
  'session.deleted': SessionDeletedEvent,
  'session.updated': SessionUpdatedEvent,
  'agent.message': AgentMessageEvent,
  'agent.thinking': AgentThinkingEvent,
  'agent.tool_use': AgentToolUseEvent,
  'agent.tool_result': AgentToolResultEvent,
  'agent.custom_tool_use': AgentCustomToolUseEvent,
  'agent.mcp_tool_use': AgentMcpToolUseEvent,
  'agent.mcp_tool_result': AgentMcpToolResultEvent,
  'span.model_request_start': SpanModelRequestStartEvent,
  'span.model_request_end': SpanModelRequestEndEvent,
  'agent.thread_context_compacted': AgentThreadContextCompactedEvent,
  'span.compaction_summarize_start': SpanCompactionSummarizeStartEvent,
  'span.compaction_summarize_end': SpanCompactionSummarizeEndEvent,
  ...OUTCOME_EVENT_SCHEMAS,
  ...PENDING_QUEUE_EVENT_SCHEMAS,
  ...AUX_EVENT_SCHEMAS,
  ...WAKEUP_EVENT_SCHEMAS,
  ...THREAD_EVENT_SCHEMAS,
} satisfies Partial<Record<CanonicalEventType, TSchema>>;

export const SessionEvent = Type.Union(
  Object.values(SESSION_EVENT_SCHEMAS) as Array<
    (typeof SESSION_EVENT_SCHEMAS)[keyof typeof SESSION_EVENT_SCHEMAS]
  >,
);
export type SessionEvent = Static<typeof SessionEvent>;

// ---------------------------------------------------------------------------------------------
// Internal envelopes (what the log and the pubsub carry between core, workers and gateway)

/** A persisted event as served: the SDK's flat fields plus the spec's `data`, `seq`, `session_id`, `created_at`. */
export const SessionEventEnvelope = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    seq: Type.Integer({ minimum: 1 }),
    session_id: Type.String(),
    created_at: Type.String(),
    processed_at: Type.String(),
    data: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: true },
);
/** Any persisted event, loosely typed (narrow with `SessionEvent` / `validateSessionEvent`). */
export type SessionEventOut = Static<typeof SessionEventEnvelope> & { [field: string]: unknown };

/** A live-only event on the pubsub (chunks): no seq, never persisted; `ephemeral` is stripped on SSE. */
export const LiveEventEnvelope = Type.Object(
  { type: Type.String(), session_id: Type.String(), ephemeral: Type.Literal(true) },
  { additionalProperties: true },
);
export type LiveEventOut = Static<typeof LiveEventEnvelope> & { [field: string]: unknown };

// ---------------------------------------------------------------------------------------------
// Validation of served events

const compiled = new Map<string, Validator<unknown>>();
function validateBy(schemas: Record<string, TSchema>, kind: string, value: unknown): unknown {
  const type =
    typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  const schema =
    typeof type === 'string' && Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (!schema)
    throw new ValidationError(`type: ${JSON.stringify(type)} is not a ${kind} type`, 'type');
  const key = `${kind}:${type}`;
  let v = compiled.get(key);
  if (!v) compiled.set(key, (v = compileBody(schema)));
  return v(value);
}

/**
 * Validates one served persisted event (REST list, SSE frame, POST …/events answer) against the
 * schema of its `type`; throws a ValidationError naming the offending field.
 */
export function validateSessionEvent(value: unknown): SessionEvent {
  return validateBy(SESSION_EVENT_SCHEMAS, 'session event', value) as SessionEvent;
}

/** Validates one served live-only chunk event (an SSE frame's data, `ephemeral` already stripped). */
export function validateChunkEvent(value: unknown): ChunkEvent {
  return validateBy(CHUNK_EVENT_SCHEMAS, 'chunk event', value) as ChunkEvent;
}

/** Validates any SSE frame's data: a persisted event, a chunk event or an SDK preview frame. */
export function validateStreamFrame(
  value: unknown,
): SessionEvent | ChunkEvent | Static<typeof StreamStartEvent> | Static<typeof StreamDeltaEvent> {
  const type =
    typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (typeof type === 'string' && Object.hasOwn(CHUNK_EVENT_SCHEMAS, type))
    return validateChunkEvent(value);
  if (typeof type === 'string' && Object.hasOwn(STREAM_DELTA_SCHEMAS, type)) {
    return validateBy(STREAM_DELTA_SCHEMAS, 'stream frame', value) as
      Static<typeof StreamStartEvent> | Static<typeof StreamDeltaEvent>;
  }
  return validateSessionEvent(value);
}
