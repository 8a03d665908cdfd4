/**
 * A session's runtime status, derived on every read and never stored: from the session document,
 * its run record and, while a turn looks live, the events past the log head.
 * Proved by test/e2e/sessions/session-log-head.test.ts ("…reads idle before the head update lands") and
 * test/e2e/turns/rescheduling.test.ts.
 */
import type { RuntimeStatus } from '@agentfleet/schemas';
import type { Collections } from '../store/collections.js';
import type { RunDoc, SessionDoc } from './records.js';

/**
 * Derived, never stored: terminated if a terminated timestamp is set; rescheduling if the run
 * record was orphaned (its worker died) and waits to be resumed; running if a run record exists;
 * else idle. Rescheduling is proved by test/e2e/turns/rescheduling.test.ts.
 */
export function deriveStatus(
  s: Pick<SessionDoc, 'terminated_at'>,
  hasRun: boolean | 'rescheduling',
): RuntimeStatus {
  if (s.terminated_at) return 'terminated';
  if (hasRun === 'rescheduling') return 'rescheduling';
  return hasRun ? 'running' : 'idle';
}

/**
 * A run record counts once it started after the session's last session.status_idle: the turn
 * appends its idle event (its head update records `idle_seq`) before it deletes the record.
 * The event and the head are two writes, so a reader can see the idle event while the session
 * document still holds the previous `idle_seq`; `liveRuns` closes that window.
 */
export const runIsLive = (
  s: Pick<SessionDoc, 'idle_seq'>,
  run: Pick<RunDoc, 'start_seq' | 'rescheduled_at'> | null | undefined,
): boolean | 'rescheduling' =>
  !!run && run.start_seq > (s.idle_seq ?? 0) && (run.rescheduled_at ? 'rescheduling' : true);

/**
 * `runIsLive`, and for a run that looks live, whether its session.status_idle is already in
 * the log past the head this reader saw (appended, head update not yet visible): then the
 * turn has ended, so a client that read the idle event never sees the session running.
 * Usually no event lies past the head, so the check reads at most a few rows.
 */
export function liveRuns(
  c: Collections,
  tenant: string,
  pairs: Array<[SessionDoc, RunDoc | null | undefined]>,
): Promise<Array<boolean | 'rescheduling'>> {
  return Promise.all(
    pairs.map(async ([s, run]) => {
      const live = runIsLive(s, run);
      if (!live) return live;
      const ended = await c.events.findOne(tenant, {
        session_id: s._id,
        seq: { $gt: Math.max(s.last_seq, run!.start_seq - 1) },
        type: 'session.status_idle',
      });
      return ended ? false : live;
    }),
  );
}

/**
 * SDK `stats`: `active_seconds` sums the finished turns' running time (a turn counts when it
 * ends); `duration_seconds` runs from creation to now, frozen at termination.
 * Proved by test/e2e/sessions/session-stats.test.ts.
 */
export function renderStats(s: Pick<SessionDoc, 'active_ms' | 'terminated_at' | 'created_at'>) {
  const end = s.terminated_at ? Date.parse(s.terminated_at) : Date.now();
  return {
    active_seconds: (s.active_ms ?? 0) / 1000,
    duration_seconds: Math.max(0, end - Date.parse(s.created_at)) / 1000,
  };
}
