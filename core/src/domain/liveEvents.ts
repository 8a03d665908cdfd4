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

interface SharedChannel {
  listeners: Set<(message: unknown) => void>;
  /** Settles once the one pubsub subscription of this channel is in place. */
  ready: Promise<() => Promise<void>>;
}
const shared = new WeakMap<PubSub, Map<string, SharedChannel>>();

/**
 * One pubsub subscription per channel per process, however many followers: every local
 * follower receives the SAME message object (decoded once; followers and their writers treat
 * it as read-only, so an SSE writer can cache the frame it encodes for it). Resolves once the
 * subscription is in place, like PubSub.subscribe. Proven by test/sse-fanout.test.ts.
 */
export async function sharedSubscribe(
  pubsub: PubSub,
  channel: string,
  listener: (message: unknown) => void,
): Promise<() => Promise<void>> {
  let channels = shared.get(pubsub);
  if (!channels) shared.set(pubsub, (channels = new Map()));
  let ch = channels.get(channel);
  if (!ch) {
    const listeners = new Set<(message: unknown) => void>();
    const created: SharedChannel = {
      listeners,
      ready: pubsub.subscribe(channel, (m) => {
        // A snapshot: a follower leaving from inside its listener does not disturb this delivery.
        for (const l of [...listeners]) l(m);
      }),
    };
    ch = created;
    channels.set(channel, created);
    created.ready.catch(() => {
      if (channels.get(channel) === created) channels.delete(channel);
    });
  }
  const entry = (m: unknown) => listener(m);
  ch.listeners.add(entry);
  let unsubscribeChannel: () => Promise<void>;
  try {
    unsubscribeChannel = await ch.ready;
  } catch (err) {
    ch.listeners.delete(entry);
    throw err;
  }
  const own = ch;
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    own.listeners.delete(entry);
    if (own.listeners.size > 0) return;
    // The last local follower left: forget the channel now (a new follower starts a fresh
    // subscription), then release the pubsub one.
    if (channels.get(channel) === own) channels.delete(channel);
    await unsubscribeChannel();
  };
}

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
  const unsubscribe = await sharedSubscribe(pubsub, sessionChannel(sessionId), (m) => {
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
