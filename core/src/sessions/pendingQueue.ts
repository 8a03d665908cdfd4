/**
 * The pending-message queue, as the log records it (spec extension events
 * `system.user_message_pending`, `_promoted`, `_cancelled`).
 * Guarantees:
 * - a `user.message` sent while a turn is live (its run record started after the last idle,
 *   ./status.ts runIsLive, or waits to be rescheduled) is appended with a
 *   `system.user_message_pending {user_message_id}` in the same append, after the request's own
 *   events (so the request's seqs and `input_seq` are unchanged, and the marker is never lost);
 * - a message waiting with no promoted or cancelled marker is resolved by the worker
 *   (workers/src/turn/pending.ts): `system.user_message_promoted` when a turn takes it into its
 *   input, `system.user_message_cancelled` when a `user.interrupt` after it comes first; each at
 *   most once, in send order (the log is the record of what was resolved).
 * Proved by test/e2e/turns/pending-queue.test.ts and test/e2e/turns/pending-queue-crash.test.ts.
 */
import type { EventDraft } from '../events/log.js';
import type { EventDoc } from '../events/records.js';
import { newId, PREFIX } from '../ids.js';
import type { Collections } from '../store/collections.js';
import type { SessionDoc } from './records.js';
import { runIsLive } from './status.js';

export const USER_MESSAGE_PENDING = 'system.user_message_pending';
export const USER_MESSAGE_PROMOTED = 'system.user_message_promoted';
export const USER_MESSAGE_CANCELLED = 'system.user_message_cancelled';

/**
 * `drafts` as appended: when a turn of session `s` is live, each `user.message` gets an id and
 * its marker, the markers after the request's events in their order.
 */
export async function withPendingMarkers(
  runs: Pick<Collections['runs'], 'get'>,
  tenant: string,
  s: Pick<SessionDoc, '_id' | 'idle_seq'>,
  drafts: readonly EventDraft[],
): Promise<EventDraft[]> {
  if (!drafts.some((d) => d.type === 'user.message')) return [...drafts];
  if (!runIsLive(s, await runs.get(tenant, s._id))) return [...drafts];
  const ided = drafts.map((d) =>
    d.type === 'user.message' ? { ...d, id: d.id ?? newId(PREFIX.event) } : d,
  );
  const markers = ided
    .filter((d) => d.type === 'user.message')
    .map((d) => ({ type: USER_MESSAGE_PENDING, payload: { user_message_id: d.id } }));
  return [...ided, ...markers];
}

/** A queued message: pending, neither promoted nor cancelled yet. */
export interface QueuedMessage {
  id: string;
  seq: number;
}

/** The messages still queued in `log` (ascending by seq), in send order. */
export function queuedMessages(log: readonly EventDoc[]): QueuedMessage[] {
  const seqOf = new Map<string, number>();
  const queued = new Map<string, QueuedMessage>();
  for (const e of log) {
    if (e.type === 'user.message') seqOf.set(e._id, e.seq);
    else if (e.type === USER_MESSAGE_PENDING) {
      const id = String(e.payload.user_message_id);
      const seq = seqOf.get(id);
      if (seq !== undefined) queued.set(id, { id, seq });
    } else if (e.type === USER_MESSAGE_PROMOTED || e.type === USER_MESSAGE_CANCELLED)
      queued.delete(String(e.payload.user_message_id));
  }
  return [...queued.values()].sort((a, b) => a.seq - b.seq);
}
