/**
 * The input events as served (`user.message`, `user.interrupt`, `user.custom_tool_result`,
 * `user.tool_confirmation`, `user.tool_result`, `system.message`): their payloads as appended
 * and their served schemas, merged first into the session event catalog (./events.ts
 * EVENT_PAYLOADS, SESSION_EVENT_SCHEMAS). What a client may send is ./sessions.ts (`InputEvent`);
 * what is checked at send time is core/src/sessions/inputEvents.ts. Proved by
 * test/e2e/sessions/sessions-events.test.ts, test/e2e/events/system-message.test.ts and
 * test/e2e/api/contract-shapes.test.ts.
 */
import { Type } from '@sinclair/typebox';
import {
  ContentBlock,
  DocumentBlock,
  Id,
  ImageBlock,
  Nullable,
  SearchResultBlock,
  TextBlock,
} from './common.js';
import { eventOf } from './eventEnvelope.js';

export const INPUT_EVENT_PAYLOADS = {
  /** POST …/events, POST …/messages and initial_events: the request's content, verbatim. */
  'user.message': { content: Type.Array(ContentBlock, { minItems: 1 }) },
  /** `source: 'cancel'` marks an interrupt appended by POST …/cancel rather than sent by the user. */
  'user.interrupt': {
    session_thread_id: Type.Optional(Nullable(Type.String())),
    source: Type.Optional(Type.Literal('cancel')),
  },
  'user.custom_tool_result': {
    custom_tool_use_id: Type.String(),
    content: Type.Optional(Type.Array(Type.Union([TextBlock, ImageBlock, DocumentBlock]))),
    is_error: Type.Optional(Nullable(Type.Boolean())),
  },
  /** SDK BetaManagedAgentsUserToolConfirmationEvent: the client's answer to an always_ask call. */
  'user.tool_confirmation': {
    tool_use_id: Id('sevt_'),
    result: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
    deny_message: Type.Optional(Nullable(Type.String())),
  },
  /** SDK BetaManagedAgentsUserToolResultEvent: a self-hosted worker's result, verbatim. */
  'user.tool_result': {
    tool_use_id: Id('sevt_'),
    content: Type.Optional(
      Type.Array(Type.Union([TextBlock, ImageBlock, DocumentBlock, SearchResultBlock])),
    ),
    is_error: Type.Optional(Nullable(Type.Boolean())),
  },
  /** SDK BetaManagedAgentsSystemMessageEvent: text-only system content, verbatim. */
  'system.message': { content: Type.Array(TextBlock, { minItems: 1 }) },
};

const P = INPUT_EVENT_PAYLOADS;
export const UserMessageEvent = eventOf('user.message', P['user.message']);
export const UserInterruptEvent = eventOf('user.interrupt', P['user.interrupt']);
export const UserCustomToolResultEvent = eventOf(
  'user.custom_tool_result',
  P['user.custom_tool_result'],
);
export const UserToolConfirmationEvent = eventOf(
  'user.tool_confirmation',
  P['user.tool_confirmation'],
);
export const UserToolResultEvent = eventOf('user.tool_result', P['user.tool_result']);
export const SystemMessageEvent = eventOf('system.message', P['system.message']);

export const INPUT_EVENT_SCHEMAS = {
  'user.message': UserMessageEvent,
  'user.interrupt': UserInterruptEvent,
  'user.custom_tool_result': UserCustomToolResultEvent,
  'user.tool_confirmation': UserToolConfirmationEvent,
  'user.tool_result': UserToolResultEvent,
  'system.message': SystemMessageEvent,
};
