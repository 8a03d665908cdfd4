/**
 * Live-only session events (chunks), as served on SSE (`?include=chunks`, /messages), and the
 * SDK's preview frames made from them. Never persisted: no id, no seq (spec Events rule 1).
 * Moved out of ./events.ts (the persisted catalog), which re-exports it; validated by
 * `validateChunkEvent` / `validateStreamFrame` there (test/e2e/events/event-deltas.test.ts,
 * test/e2e/sessions/sessions-events.test.ts).
 */
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { Id, Obj } from './common.js';
import type { ChunkEventType } from './eventTypes.js';

const TextOut = Obj({ type: Type.Literal('text'), text: Type.String() });

/** A live event's frame: its payload plus `type` and `session_id` (never persisted: no id, no seq). */
const chunkOf = <T extends string, P extends TProperties>(type: T, payload: P) =>
  Obj({ ...payload, type: Type.Literal(type), session_id: Id('sess_') });

/** Chunk events correlate with the canonical event that follows them by its pre-allocated id. */
const MessageId = { message_id: Id('sevt_') };
/** A message chunk's block position in the agent.message's content array (SDK content_delta). */
const BlockIndex = { index: Type.Optional(Type.Integer({ minimum: 0 })) };
const ThinkingId = { thinking_id: Id('sevt_') };
const ToolUseId = { tool_use_id: Id('sevt_') };
export const AgentMessageStreamStartEvent = chunkOf('agent.message_stream_start', {
  ...MessageId,
  ...BlockIndex,
});
export const AgentMessageChunkEvent = chunkOf('agent.message_chunk', {
  ...MessageId,
  ...BlockIndex,
  delta: Type.String(),
});
export const AgentMessageStreamEndEvent = chunkOf('agent.message_stream_end', {
  ...MessageId,
  ...BlockIndex,
});
export const AgentThinkingStreamStartEvent = chunkOf('agent.thinking_stream_start', ThinkingId);
export const AgentThinkingChunkEvent = chunkOf('agent.thinking_chunk', {
  ...ThinkingId,
  delta: Type.String(),
});
export const AgentThinkingStreamEndEvent = chunkOf('agent.thinking_stream_end', ThinkingId);
export const AgentToolUseInputStreamStartEvent = chunkOf('agent.tool_use_input_stream_start', {
  ...ToolUseId,
  name: Type.String(),
});
/** `delta` is a fragment of the tool input's JSON text. */
export const AgentToolUseInputChunkEvent = chunkOf('agent.tool_use_input_chunk', {
  ...ToolUseId,
  delta: Type.String(),
});
export const AgentToolUseInputStreamEndEvent = chunkOf(
  'agent.tool_use_input_stream_end',
  ToolUseId,
);
export const SpanModelFirstTokenEvent = chunkOf('span.model_first_token', {});

export const CHUNK_EVENT_SCHEMAS = {
  'agent.message_stream_start': AgentMessageStreamStartEvent,
  'agent.message_chunk': AgentMessageChunkEvent,
  'agent.message_stream_end': AgentMessageStreamEndEvent,
  'agent.thinking_stream_start': AgentThinkingStreamStartEvent,
  'agent.thinking_chunk': AgentThinkingChunkEvent,
  'agent.thinking_stream_end': AgentThinkingStreamEndEvent,
  'agent.tool_use_input_stream_start': AgentToolUseInputStreamStartEvent,
  'agent.tool_use_input_chunk': AgentToolUseInputChunkEvent,
  'agent.tool_use_input_stream_end': AgentToolUseInputStreamEndEvent,
  'span.model_first_token': SpanModelFirstTokenEvent,
} satisfies Record<ChunkEventType, TSchema>;

export const ChunkEvent = Type.Union(
  Object.values(CHUNK_EVENT_SCHEMAS) as Array<
    (typeof CHUNK_EVENT_SCHEMAS)[keyof typeof CHUNK_EVENT_SCHEMAS]
  >,
);
export type ChunkEvent = Static<typeof ChunkEvent>;

/** The SDK's preview frames (`?event_deltas[]=agent.message|agent.thinking`), made from chunks. */
export const StreamStartEvent = Obj({
  type: Type.Literal('event_start'),
  event: Obj({
    id: Id('sevt_'),
    type: Type.Union([Type.Literal('agent.message'), Type.Literal('agent.thinking')]),
  }),
});
export const StreamDeltaEvent = Obj({
  type: Type.Literal('event_delta'),
  event_id: Id('sevt_'),
  delta: Obj({
    type: Type.Literal('content_delta'),
    content: TextOut,
    index: Type.Integer({ minimum: 0 }),
  }),
});
export const STREAM_DELTA_SCHEMAS = {
  event_start: StreamStartEvent,
  event_delta: StreamDeltaEvent,
};
