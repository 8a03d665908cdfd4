/**
 * The session-thread events of the SDK ("multi-agent coordination": session.thread_created,
 * session.thread_status_running / _idle / _rescheduled / _terminated,
 * agent.thread_message_sent / _received): their payloads as appended and their served schemas,
 * merged into the session event catalog (./events.ts). They are SDK events, so the default SSE
 * stream carries them. Behaviour: workers/src/turn/threads.ts (the coordinator's tools and the
 * delivery of replies) and core/src/threads; proved by test/e2e/threads/threads.test.ts.
 */
import { Type, type TProperties } from '@sinclair/typebox';
import { DocumentBlock, ImageBlock, Nullable, TextBlock } from './common.js';
import { eventOf } from './eventEnvelope.js';
import { StopReason } from './stopReason.js';

const ThreadId = Type.String({ pattern: '^sthr_' });
const Content = Type.Array(
  Type.Union([
    TextBlock,
    ImageBlock,
    DocumentBlock,
    Type.Object({ type: Type.Literal('redacted') }, { additionalProperties: true }),
  ]),
);
const status = { agent_name: Type.String(), session_thread_id: ThreadId };

export const THREAD_EVENT_PAYLOADS = {
  /** In the primary's log when the coordinator starts a child thread. */
  'session.thread_created': {
    agent_name: Type.String(),
    session_thread_id: ThreadId,
    workflow_run_id: Nullable(Type.String()),
  },
  'session.thread_status_running': status,
  'session.thread_status_idle': {
    ...status,
    stop_reason: StopReason,
    stop_details: Type.Null(),
  },
  'session.thread_status_rescheduled': status,
  'session.thread_status_terminated': status,
  /** In the sender's log; `to_agent_name` absent when sent to the primary. */
  'agent.thread_message_sent': {
    to_session_thread_id: ThreadId,
    to_agent_name: Type.Optional(Nullable(Type.String())),
    content: Content,
  },
  /** In the receiver's log (its input); `from_agent_name` absent when from the primary. */
  'agent.thread_message_received': {
    from_session_thread_id: ThreadId,
    from_agent_name: Type.Optional(Nullable(Type.String())),
    content: Content,
  },
} satisfies Record<string, TProperties>;

export const THREAD_EVENT_TYPES = [
  'session.thread_created',
  'session.thread_status_running',
  'session.thread_status_idle',
  'session.thread_status_rescheduled',
  'session.thread_status_terminated',
  'agent.thread_message_sent',
  'agent.thread_message_received',
] as const;

const P = THREAD_EVENT_PAYLOADS;
export const THREAD_EVENT_SCHEMAS = {
  'session.thread_created': eventOf('session.thread_created', P['session.thread_created']),
  'session.thread_status_running': eventOf(
    'session.thread_status_running',
    P['session.thread_status_running'],
  ),
  'session.thread_status_idle': eventOf(
    'session.thread_status_idle',
    P['session.thread_status_idle'],
  ),
  'session.thread_status_rescheduled': eventOf(
    'session.thread_status_rescheduled',
    P['session.thread_status_rescheduled'],
  ),
  'session.thread_status_terminated': eventOf(
    'session.thread_status_terminated',
    P['session.thread_status_terminated'],
  ),
  'agent.thread_message_sent': eventOf('agent.thread_message_sent', P['agent.thread_message_sent']),
  'agent.thread_message_received': eventOf(
    'agent.thread_message_received',
    P['agent.thread_message_received'],
  ),
};
