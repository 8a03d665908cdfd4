/**
 * The event-log hook for finished turns: `fn` runs after each append that holds a
 * `session.status_idle`, with the last one, once the events are durable and in whichever
 * process appended them. The integrations' replies (core/src/integrations/conversations.ts)
 * and the eval runner's judging (core/src/evals/work.ts) hang on it; a lost call is theirs to
 * recover (both have a scan or a later idle).
 */
import type { EventLog } from './log.js';
import type { EventDoc } from './records.js';

export function onSessionIdle(
  events: Pick<EventLog, 'onAppended'>,
  fn: (tenant: string, sessionId: string, idle: EventDoc) => Promise<void>,
): void {
  events.onAppended(async (tenant, sessionId, written) => {
    const idle = written.filter((e) => e.type === 'session.status_idle').at(-1);
    if (idle) await fn(tenant, sessionId, idle);
  });
}
