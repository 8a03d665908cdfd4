/**
 * The pending-queue lifecycle events (spec "Extension events": `system.user_message_pending`,
 * `_promoted`, `_cancelled`), delivered only with `?include=chunks` (./eventTypes.ts
 * EXTENSION_CANONICAL_TYPES): their payloads as appended and their served schemas, merged into
 * the session event catalog. Each names the `user.message` it is about. Behaviour:
 * core/src/sessions/pendingQueue.ts (pending, at send), workers/src/turn/pending.ts (promoted and
 * cancelled, by the turn runner); proved by test/e2e/turns/pending-queue.test.ts.
 */
import { Type } from '@sinclair/typebox';
import { Id } from './common.js';
import { eventOf } from './eventEnvelope.js';

const about = { user_message_id: Id('sevt_') };

export const PENDING_QUEUE_EVENT_PAYLOADS = {
  /** The message arrived while a turn was running: it waits for the next turn. */
  'system.user_message_pending': about,
  /** A turn took the message into its input: the model sees it from that turn on. */
  'system.user_message_promoted': about,
  /** An interrupt cancelled the message while it waited: no turn takes it. */
  'system.user_message_cancelled': about,
} as const;

export const PENDING_QUEUE_EVENT_TYPES = [
  'system.user_message_pending',
  'system.user_message_promoted',
  'system.user_message_cancelled',
] as const;

const P = PENDING_QUEUE_EVENT_PAYLOADS;
export const PENDING_QUEUE_EVENT_SCHEMAS = {
  'system.user_message_pending': eventOf(
    'system.user_message_pending',
    P['system.user_message_pending'],
  ),
  'system.user_message_promoted': eventOf(
    'system.user_message_promoted',
    P['system.user_message_promoted'],
  ),
  'system.user_message_cancelled': eventOf(
    'system.user_message_cancelled',
    P['system.user_message_cancelled'],
  ),
};
