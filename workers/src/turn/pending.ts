/**
 * The turn runner's side of the pending-message queue (core/src/sessions/pendingQueue.ts): a
 * `user.message` marked `system.user_message_pending` (sent while a turn was live) is resolved
 * exactly once, in send order, by the drain that holds the session's lease (fenced appends):
 * - `cancel`, before a turn is considered and before the idle of a turn an interrupt ended
 *   (`cancelAtInterrupt`): every message still queued before the newest
 *   `user.interrupt` gets `system.user_message_cancelled`; the interrupt ended the turn it was
 *   sent to, and what was queued for it is dropped (no turn starts for it, ./input.ts, and the
 *   history leaves it out, ./history.ts). A message sent after the interrupt stays queued.
 * - `promote`, right after a turn's `session.status_running` (where the history folds the
 *   waiting input into the conversation, ./history.ts): every message still queued before it
 *   gets `system.user_message_promoted`. A recovered turn promotes what its crashed worker
 *   had not (`recovered`), then what its own resumed `session.status_running` folds in
 *   (`resume`): the log says what was promoted, so nothing is promoted twice.
 * Proved by test/e2e/turns/pending-queue.test.ts and test/e2e/turns/pending-queue-crash.test.ts.
 */
import {
  queuedMessages,
  USER_MESSAGE_CANCELLED,
  USER_MESSAGE_PROMOTED,
  type EventDoc,
  type EventDraft,
  type EventLog,
  type Lease,
  type SessionDoc,
} from '@agentfleet/core';
import type { SessionAppends } from './appends.js';
import type { SessionLogCache } from './sessionLogCache.js';

const about = (type: string, id: string): EventDraft => ({
  type,
  payload: { user_message_id: id },
});

export class PendingQueue {
  constructor(
    private readonly events: Pick<EventLog, 'range'>,
    private readonly appends: SessionAppends,
    private readonly logs: SessionLogCache,
    private readonly sessions: { session(tenant: string, sid: string): Promise<SessionDoc | null> },
  ) {}

  /**
   * Cancels what an interrupt that ended the turn left queued, before the turn's idle (which
   * marks the input up to the interrupt processed, so no later drain would see it).
   */
  async cancelAtInterrupt(tenant: string, sid: string, lease: Lease): Promise<void> {
    const s = await this.sessions.session(tenant, sid);
    if (s) await this.cancel(tenant, s, lease);
  }

  /**
   * Cancels the messages queued before `s`'s newest interrupt; answers the log read through
   * `s`'s head (every event up to the turn's input, for ./input.ts turnInputReady).
   */
  async cancel(tenant: string, s: SessionDoc, lease: Lease): Promise<readonly EventDoc[]> {
    const log = await this.logs.all(tenant, s._id, s.last_seq);
    const interruptSeq = s.interrupt_seq ?? 0;
    const cancelled = queuedMessages(log)
      .filter((m) => m.seq < interruptSeq)
      .map((m) => about(USER_MESSAGE_CANCELLED, m.id));
    if (cancelled.length) await this.appends.append(tenant, s._id, lease, cancelled);
    return log;
  }

  /**
   * Promotes the messages still queued before the turn's `session.status_running` at
   * `runningSeq`, reading the log through `head` at least (the session's head for a recovered
   * turn, where an earlier worker's promotions are).
   */
  async promote(tenant: string, sid: string, lease: Lease, runningSeq: number, head = 0) {
    const through = Math.max(this.appends.lastSeq(sid) ?? 0, runningSeq, head);
    const log = await this.logs.all(tenant, sid, through);
    const promoted = queuedMessages(log)
      .filter((m) => m.seq < runningSeq)
      .map((m) => about(USER_MESSAGE_PROMOTED, m.id));
    if (promoted.length) await this.appends.append(tenant, sid, lease, promoted);
  }

  /**
   * Reads the orphaned turn of session `s` that started at `startSeq` (its events, ascending)
   * and promotes what its crashed worker had not: what that worker promoted is in the log
   * through `s`'s head, so nothing is promoted twice.
   */
  async recovered(tenant: string, s: SessionDoc, lease: Lease, startSeq: number) {
    const turn = await this.events.range(tenant, s._id, startSeq - 1, 100_000);
    const running = turn.find((e) => e.type === 'session.status_running');
    if (running) await this.promote(tenant, s._id, lease, running.seq, s.last_seq);
    return turn;
  }

  /**
   * Appends a recovered turn's reconciliation (./recovery.ts, ending with the
   * `session.status_running` the turn resumes at, where the history folds what waited) and
   * promotes what is still queued before that event.
   */
  async resume(tenant: string, sid: string, lease: Lease, drafts: EventDraft[]): Promise<void> {
    const written = await this.appends.append(tenant, sid, lease, drafts);
    const running = written.find((e) => e.type === 'session.status_running');
    if (running) await this.promote(tenant, sid, lease, running.seq);
  }
}
