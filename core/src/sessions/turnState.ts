/**
 * The session's turn state, and every transition of it. The fields, on the session document:
 * - `input_seq`: seq of the newest input event (anything but `user.interrupt`) in the log;
 * - `pending`: input was appended that no worker has consumed yet (the recovery scan's index);
 * - `processed_seq`: the worker consumed the log up to here (its turn ended idle or was dropped);
 * - `interrupt_seq`: seq of the newest `user.interrupt` (input before it is cancelled by it);
 * - `idle_seq`: seq of the newest `session.status_idle` the worker wrote (a run record started
 *   after it is a live turn, ./status.ts);
 * - `fence`: the newest lease token that drained the session; an append carrying an older token
 *   is refused (events/log.ts), so a worker that lost its lease cannot write;
 * - `recoveries`: orphaned-turn recoveries since the last idle (reset by the idle).
 *
 * Guarantees: these fields are written only here (test/repo-shape.test.ts checks every source
 * file); `input_seq`, `processed_seq`, `interrupt_seq`, `idle_seq` and `fence` only grow
 * (`$max`), so a late or repeated write never moves them back; `pending` is cleared only by a
 * compare-and-set on `input_seq`, so input appended after a turn's read is never lost (proved by
 * test/e2e/turns/turn-final-write, test/e2e/turns/recovery-scan, test/e2e/server/crash-recovery,
 * test/e2e/work/work-race and workers/test/turn-control).
 * Transitions that travel with an event append are returned as the append's `sessionUpdate`
 * (applied in the same write as the log head); the others are applied by {@link TurnState}.
 */
import type { InputEvent } from '@agentfleet/schemas';
import type { TenantCollection } from '../store/collections.js';
import type { SessionDoc } from './records.js';
import type { Update } from '../store/port.js';

/** The turn state of a session that has just been created: nothing appended, no lease yet. */
export const initialTurnState = () => ({
  input_seq: 0,
  processed_seq: 0,
  fence: 0,
  recoveries: 0,
});

/** What a new session document (or child thread, core/src/threads) starts with besides its own fields. */
export const freshSession = (now: string) => ({
  last_seq: 0,
  ...initialTurnState(),
  usage: {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  },
  terminated_at: null,
  archived_at: null,
  deleted_at: null,
  created_at: now,
  updated_at: now,
});

/**
 * Input appended (`SessionService.send`), `first` being the seq of the first event written:
 * input moves `input_seq` and sets `pending`; a batch of interrupts only moves `interrupt_seq`.
 */
export function inputAppended(
  events: readonly (Pick<InputEvent, 'type'> & { toChild?: boolean })[],
  first: number,
): Update {
  // Input routed to a child thread (`toChild`: an interrupt of it, an answer to its call) is
  // not the primary's input (core/src/threads).
  const lastInput = events.reduce(
    (acc, e, i) => (e.type !== 'user.interrupt' && !e.toChild ? first + i : acc),
    0,
  );
  if (lastInput) return { $max: { input_seq: lastInput }, $set: { pending: true } };
  // An interrupt of one child thread (`toChild`, core/src/threads/interrupts.ts) leaves the primary's turn alone.
  const lastInterrupt = events.map((e) => (e.toChild ? '' : e.type)).lastIndexOf('user.interrupt');
  return lastInterrupt >= 0 ? { $max: { interrupt_seq: first + lastInterrupt } } : { $max: {} };
}

/** A child thread's input from its coordinator (core/src/threads), its last event at `last`. */
export const threadInputAppended = (last: number): Update => ({
  $max: { input_seq: last },
  $set: { pending: true },
});

/** An interrupt that does not come from the user (cancel), written at `seq`. */
export const interruptAppended = (seq: number): Update => ({ $max: { interrupt_seq: seq } });

/**
 * The idle that ends a turn (appended at `idleSeq`): input up to `processed` is consumed,
 * recoveries reset; `clearPending` (decided on the document the append read) clears the flag in
 * the same write. `extra` carries the turn's other session fields (usage, budget).
 */
export function turnIdle(
  processed: number,
  idleSeq: number,
  clearPending: boolean | undefined,
  extra?: { $inc?: Update['$inc']; $set?: Update['$set'] },
): Update {
  return {
    ...(extra?.$inc ? { $inc: extra.$inc } : {}),
    $max: { processed_seq: processed, idle_seq: idleSeq },
    $set: { ...extra?.$set, recoveries: 0, ...(clearPending ? { pending: false } : {}) },
  };
}

/** An idle re-emitted for the calls still awaiting an answer: the input up to `inputTo` is read. */
export const remainderIdle = (inputTo: number, idleSeq: number): Update => ({
  $max: { processed_seq: inputTo, idle_seq: idleSeq },
});

/** Whether the idle being appended may clear `pending` on `current` (see {@link turnIdle}). */
export const idleClearsPending = (current: Readonly<SessionDoc> | undefined, processed: number) =>
  current ? current.input_seq <= processed : undefined;

/** The transitions applied on their own, to one tenant's sessions. */
export class TurnState {
  constructor(private readonly sessions: TenantCollection<SessionDoc>) {}

  /** Moves the fence to the lease's token (never back); answers the document after the move. */
  fence(tenant: string, sid: string, token: number): Promise<SessionDoc | null> {
    return this.sessions.findOneAndUpdate(
      tenant,
      { _id: sid },
      { $max: { fence: token } },
      { returnDocument: 'after' },
    );
  }

  /** Input up to `upTo` is consumed, and `pending` cleared unless newer input arrived. */
  async markProcessed(tenant: string, sid: string, upTo: number): Promise<boolean> {
    await this.sessions.updateOne(tenant, { _id: sid }, { $max: { processed_seq: upTo } });
    return this.clearPending(tenant, sid, upTo);
  }

  /** Clears `pending` only if no input newer than `upTo` arrived (compare-and-set): true then. */
  async clearPending(tenant: string, sid: string, upTo: number): Promise<boolean> {
    const r = await this.sessions.updateOne(
      tenant,
      { _id: sid, input_seq: { $lte: upTo } },
      { $set: { pending: false } },
    );
    return r.matched > 0;
  }

  /** Clears a stale `pending` (nothing newer than `inputSeq` to run) unless input arrived. */
  async clearStalePending(tenant: string, sid: string, inputSeq: number): Promise<void> {
    await this.sessions.updateOne(
      tenant,
      { _id: sid, input_seq: inputSeq },
      { $set: { pending: false } },
    );
  }

  /** Counts one more recovery of an orphaned turn. */
  async countRecovery(tenant: string, sid: string, recoveries: number): Promise<void> {
    await this.sessions.updateOne(tenant, { _id: sid }, { $set: { recoveries } });
  }
}
