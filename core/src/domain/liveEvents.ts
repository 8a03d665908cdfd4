import type { SessionEventOut } from '@agentfleet/schemas';
import type { PubSub } from '../ports/coordination.js';
import type { Collections } from './collections.js';
import { renderEvent, sessionChannel, type EventLog } from './eventLog.js';

export type StreamItem = SessionEventOut | { type: string; ephemeral: true; [k: string]: unknown };

export interface FollowOptions {
  /** Replay persisted events with seq > afterSeq first; null = no replay (tail from now). */
  afterSeq: number | null;
  includeLive: boolean;
  signal: AbortSignal;
  /**
   * Called once the live subscription is established and the starting point fixed, before
   * anything is yielded. An SSE response sends its headers here: a client that sees the
   * stream open can rely on every later event reaching it.
   */
  onReady?: () => void;
}

const PAGE = 500;

/**
 * Follows a session's log: subscribe to the live channel first, then read history from the
 * store, then drain live events with seq > last sent. A live event that arrives ahead of the
 * next expected seq (a publish was lost, or arrived out of order) is backfilled from the
 * store, so the consumer sees every canonical event exactly once, in seq order.
 */
export async function* followSession(
  c: Collections,
  log: EventLog,
  pubsub: PubSub,
  tenant: string,
  sessionId: string,
  opts: FollowOptions,
): AsyncGenerator<StreamItem> {
  const queue: StreamItem[] = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const unsubscribe = await pubsub.subscribe(sessionChannel(sessionId), (m) => {
    queue.push(m as StreamItem);
    notify();
  });
  const onAbort = () => notify();
  opts.signal.addEventListener('abort', onAbort);
  try {
    let last: number;
    if (opts.afterSeq === null) {
      const s = await c.sessions.get(tenant, sessionId);
      last = s?.last_seq ?? 0;
      opts.onReady?.();
    } else {
      opts.onReady?.();
      last = opts.afterSeq;
      for (;;) {
        const rows = await log.range(tenant, sessionId, last, PAGE);
        for (const r of rows) {
          yield renderEvent(r);
          last = r.seq;
        }
        if (rows.length < PAGE || opts.signal.aborted) break;
      }
    }
    while (!opts.signal.aborted) {
      const item = queue.shift();
      if (!item) {
        await new Promise<void>((r) => {
          wake = r;
        });
        continue;
      }
      if ('ephemeral' in item && item.ephemeral) {
        if (opts.includeLive) yield item;
        continue;
      }
      const seq = (item as SessionEventOut).seq;
      if (seq <= last) continue;
      if (seq > last + 1) {
        for (const r of await log.range(tenant, sessionId, last, seq - last - 1, seq - 1)) {
          yield renderEvent(r);
          last = r.seq;
        }
      }
      yield item;
      last = seq;
    }
  } finally {
    opts.signal.removeEventListener('abort', onAbort);
    await unsubscribe();
  }
}
