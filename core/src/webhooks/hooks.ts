/**
 * Where session status events become webhooks: a hook on the event log's append
 * (core/src/domain/eventLog.ts), so every writer of these events (turn runner, recovery scan,
 * termination) emits without knowing about webhooks.
 *
 * session.status_idle → `session.status_idled`, session.status_rescheduled and
 * session.status_terminated → the same name. The session event's id is the emit key, so an
 * append retried under the same event id emits once. `session.status_run_started` is emitted
 * where Work is enqueued (core/src/work). Proved by test/webhooks.test.ts ("a turn's idle").
 */
import type { EventLog } from '../domain/eventLog.js';
import type { WebhookEventType, WebhookService } from './service.js';

const STATUS_WEBHOOKS: Readonly<Record<string, WebhookEventType>> = {
  'session.status_idle': 'session.status_idled',
  'session.status_rescheduled': 'session.status_rescheduled',
  'session.status_terminated': 'session.status_terminated',
};

export function emitSessionStatusWebhooks(events: EventLog, webhooks: WebhookService): void {
  events.onAppended(async (tenant, sessionId, written) => {
    for (const e of written) {
      const type = STATUS_WEBHOOKS[e.type];
      if (type) await webhooks.emit(tenant, type, { id: sessionId }, { key: e._id });
    }
  });
}
