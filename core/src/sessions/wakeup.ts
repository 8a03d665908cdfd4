/**
 * The `span.wakeup_scheduled` extension event (schemas/src/wakeupEvents.ts): one per wake of a
 * session by an alarm. Written by a scheduled deployment fire (../deployments/firing.ts, in the
 * same append as, right after, the initial events it sends: SessionService.send `extra`)
 * and by the turn runner's recovery (workers/src/turn/wakeup.ts). Proved by
 * test/e2e/turns/wakeup-scheduled.test.ts.
 */
import type { EventDraft } from '../events/log.js';

export const WAKEUP_SCHEDULED = 'span.wakeup_scheduled';

export interface Wakeup {
  reason: 'deployment' | 'recovery';
  /** When the alarm was due (ISO). */
  scheduled_at: string;
  /** When it woke the session (ISO). */
  woken_at: string;
  deployment_id?: string;
  deployment_run_id?: string;
  run_id?: string;
  detail?: 'orphaned_turn' | 'pending_input';
}

/** The draft of one wake. */
export const wakeupScheduled = (w: Wakeup): EventDraft => ({
  type: WAKEUP_SCHEDULED,
  payload: { ...w },
});
