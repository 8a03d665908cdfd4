import { Type } from '@sinclair/typebox';
import { Id, Nullable } from './common.js';
import { eventOf } from './eventEnvelope.js';

/**
 * Extension (worker recovery): an interrupted model stream or an orphaned tool call; (outputs
 * sync) a file in /mnt/session/outputs that was not stored, with the reason.
 */
export const SessionWarningEvent = Type.Union([
  eventOf('session.warning', {
    warning: Type.Literal('interrupted_stream'),
    message: Type.String(),
    model_request_start_id: Id('sevt_'),
  }),
  eventOf('session.warning', {
    warning: Type.Literal('orphan_tool_use'),
    message: Type.String(),
    tool_use_id: Id('sevt_'),
  }),
  eventOf('session.warning', {
    warning: Type.Literal('output_skipped'),
    message: Type.String(),
    filename: Type.String(),
    reason: Type.Union([
      Type.Literal('file_too_large'),
      Type.Literal('session_quota_exceeded'),
      Type.Literal('invalid_name'),
      Type.Literal('not_a_regular_file'),
    ]),
  }),
  // A mounted memory store's write-back at idle (core/src/memory/session/writeBack.ts).
  eventOf('session.warning', {
    warning: Type.Literal('memory_conflict'),
    message: Type.String(),
    memory_store_id: Type.String(),
    path: Type.String(),
    mounted_sha256: Nullable(Type.String()),
    current_sha256: Nullable(Type.String()),
    agent_sha256: Nullable(Type.String()),
    saved_path: Nullable(Type.String()),
  }),
  eventOf('session.warning', {
    warning: Type.Literal('memory_not_written'),
    message: Type.String(),
    memory_store_id: Type.String(),
    path: Type.String(),
    reason: Type.Union([
      Type.Literal('read_only'),
      Type.Literal('invalid'),
      Type.Literal('too_large'),
      Type.Literal('binary'),
      Type.Literal('unreadable'),
    ]),
  }),
]);
