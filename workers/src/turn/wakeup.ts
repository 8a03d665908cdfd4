/**
 * The turn runner's `span.wakeup_scheduled` events (schemas/src/wakeupEvents.ts, reason
 * `recovery`): what its recovery re-drives, told once per wake in the woken session's log,
 * in the same append as what the wake causes (fenced by the drain's lease):
 * - `orphaned`: a turn whose worker died, resumed by ./runner.ts `recover` — the event goes
 *   first in the reconciliation's append (./recovery.ts reconciliationDrafts), so each resume
 *   has exactly one; a recovery whose turn had already ended, or that forces the session idle
 *   past the recovery limit, resumes nothing and has none. `scheduled_at` is when the recovery
 *   scan found the run orphaned (its `rescheduled_at`), else the wake instant.
 * - `pendingInput`: input no worker had taken (its turn command lost, or a drain that failed),
 *   whose turn the recovery scan's command (`reason: 'recovery'`) started: the event goes
 *   right after that turn's session.status_running. `scheduled_at` is when the scan published
 *   the command. A scan command races the gateway's own for input appended moments before it
 *   (the scan sees pending input before the turn's worker holds the lease): input younger than
 *   LOST_INPUT_MS when the scan published is taken as on its way, not woken (no event).
 * Each command arms at most one wake (a drain re-driven for later input is not the alarm's);
 * a redelivered command whose input was processed starts no turn and gets none.
 * Proved by test/e2e/turns/wakeup-scheduled.test.ts.
 */
import {
  nowIso,
  wakeupScheduled,
  type EventDraft,
  type RunDoc,
  type SessionDoc,
} from '@agentfleet/core';
import type { CommandEnvelope } from '@agentfleet/schemas';

/** How old input must have been when the scan published its command to count as stranded. */
export const LOST_INPUT_MS = 1_000;
const REMEMBERED = 1_000;

/** The run record of an orphaned turn, as the drain reads it. */
export type OrphanRun = Pick<RunDoc, 'run_id' | 'rescheduled_at' | 'start_seq' | 'input_to'>;

export class Wakeups {
  /** The recovery scan's command that started a session's drain (its publish instant). */
  private readonly armed = new Map<string, string>();
  /** Command ids already armed (bounded): a re-driven or repeated handle arms nothing again. */
  private readonly seen = new Set<string>();

  /** Called by the drain's handler, under the lease, with the command that started it. */
  arm(sid: string, cmd: CommandEnvelope<'session.turn.requested'>): void {
    if (cmd.payload.reason !== 'recovery' || this.seen.has(cmd.id)) return;
    this.seen.add(cmd.id);
    if (this.seen.size > REMEMBERED) this.seen.delete(this.seen.values().next().value!);
    this.armed.set(sid, cmd.published_at);
  }

  /** The drain ended: what it did not use is dropped. */
  forget(sid: string): void {
    this.armed.delete(sid);
  }

  /** The drafts that go right after a fresh turn's session.status_running (none, or one). */
  pendingInput(s: Pick<SessionDoc, '_id' | 'updated_at'>): EventDraft[] {
    const published = this.armed.get(s._id);
    this.armed.delete(s._id);
    if (!published) return [];
    if (Date.parse(published) - Date.parse(s.updated_at) < LOST_INPUT_MS) return [];
    const at = nowIso();
    return [
      wakeupScheduled({
        reason: 'recovery',
        detail: 'pending_input',
        scheduled_at: published,
        woken_at: at,
      }),
    ];
  }

  /** The draft that goes first in an orphaned turn's reconciliation. */
  orphaned(sid: string, run: Pick<RunDoc, 'run_id' | 'rescheduled_at'>): EventDraft {
    this.armed.delete(sid);
    const at = nowIso();
    return wakeupScheduled({
      reason: 'recovery',
      detail: 'orphaned_turn',
      run_id: run.run_id,
      scheduled_at: run.rescheduled_at ?? at,
      woken_at: at,
    });
  }
}
