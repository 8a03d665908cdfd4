/**
 * Where session status events become webhooks: a hook on the event log's append
 * (core/src/events/log.ts), so every writer of these events (turn runner, recovery scan,
 * termination) emits without knowing about webhooks. It runs after the events are durable.
 *
 * - session.status_idle → `session.status_idled`, and the session's state: `session.idled`, or
 *   `session.requires_action` when the turn stopped for the client (stop reason
 *   requires_action); a stop reason budget_reached also emits `session.budget_reached`.
 * - session.status_running → `session.running`.
 * - session.status_rescheduled and session.status_terminated → the same name.
 * - span.outcome_evaluation_end (an outcome's evaluation cycle ended) →
 *   `session.outcome_evaluation_ended`.
 * - a coordinator's thread events in the primary's log (core/src/threads):
 *   session.thread_created → `session.thread_created`, session.thread_status_idle →
 *   `session.thread_idled`, session.thread_status_terminated → `session.thread_terminated`,
 *   each with the thread's `session_thread_id`.
 * A child thread's own status events emit nothing (core/src/threads: its session's status is
 * its primary's). The session event's id (with the type, for the second and later types of one event) is the
 * emit key, so an append retried under the same event id emits once. `session.status_run_started`
 * is emitted where Work is enqueued (core/src/work). Proved by test/e2e/webhooks/webhooks.test.ts ("a turn's
 * idle") and test/e2e/webhooks/webhooks-types.test.ts.
 */
import type { WebhookEventName } from '@agentfleet/schemas';
import type { EventLog } from '../events/log.js';
import type { EventDoc } from '../events/records.js';
import type { WebhookService } from './webhooks.js';
import { isThreadId } from '../threads/records.js';

const STATUS_WEBHOOKS: Readonly<Record<string, WebhookEventName>> = {
  'session.status_idle': 'session.status_idled',
  'session.status_rescheduled': 'session.status_rescheduled',
  'session.status_terminated': 'session.status_terminated',
  'session.status_running': 'session.running',
  'span.outcome_evaluation_end': 'session.outcome_evaluation_ended',
  'session.thread_created': 'session.thread_created',
  'session.thread_status_idle': 'session.thread_idled',
  'session.thread_status_terminated': 'session.thread_terminated',
};

/** The webhook types one session event emits, the first keyed by the event id alone. */
function typesOf(e: EventDoc): WebhookEventName[] {
  const first = STATUS_WEBHOOKS[e.type];
  if (!first) return [];
  if (e.type !== 'session.status_idle') return [first];
  const stop = (e.payload as { stop_reason?: { type?: string } } | undefined)?.stop_reason?.type;
  const types: WebhookEventName[] = [first];
  types.push(stop === 'requires_action' ? 'session.requires_action' : 'session.idled');
  if (stop === 'budget_reached') types.push('session.budget_reached');
  return types;
}

/** The thread a session.thread_* event is about. */
const threadOf = (e: EventDoc) =>
  e.type.startsWith('session.thread_')
    ? String((e.payload as { session_thread_id?: unknown }).session_thread_id)
    : undefined;

export function emitSessionStatusWebhooks(events: EventLog, webhooks: WebhookService): void {
  events.onAppended(async (tenant, sessionId, written) => {
    if (isThreadId(sessionId)) return; // a child thread's log: its session's status is the primary's
    for (const e of written)
      for (const [i, type] of typesOf(e).entries())
        await webhooks.emit(
          tenant,
          type,
          threadOf(e) ? { id: sessionId, session_thread_id: threadOf(e) } : { id: sessionId },
          { key: i ? `${e._id}:${type}` : e._id },
        );
  });
}
