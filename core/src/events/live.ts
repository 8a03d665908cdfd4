import type { SessionEventOut } from '@agentfleet/schemas';
import type { PubSub } from '../coordination/port.js';
import type { Collections } from '../store/collections.js';
import { renderEvent, sessionChannel, type EventLog } from './log.js';

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
  /** Called once the replay is over (at once without one), before the first live batch. */
  onLive?: () => void;
}

const PAGE = 500;

type BatchListener = (batch: readonly unknown[]) => void;

interface SharedChannel {
  listeners: Set<BatchListener>;
  /** Settles once the one pubsub subscription of this channel is in place. */
  ready: Promise<() => Promise<void>>;
}
const shared = new WeakMap<PubSub, Map<string, SharedChannel>>();

/**
 * One pubsub subscription per channel per process, however many followers. Messages are
 * delivered in batches: everything that arrived during one event-loop turn goes, in publish
 * order, to every local follower in ONE call on the next `setImmediate`, as the SAME array of
 * the SAME message objects (decoded once; followers and their writers treat both as read-only,
 * so an SSE writer can cache the frames it encodes for a message or a whole batch). Resolves
 * once the subscription is in place, like PubSub.subscribe. Proven by
 * core/test/liveEvents.shared.test.ts and test/e2e/events/sse-fanout.test.ts.
 */
export async function sharedSubscribe(
  pubsub: PubSub,
  channel: string,
  listener: BatchListener,
): Promise<() => Promise<void>> {
  let channels = shared.get(pubsub);
  if (!channels) shared.set(pubsub, (channels = new Map()));
  let ch = channels.get(channel);
  if (!ch) {
    const listeners = new Set<BatchListener>();
    let pending: unknown[] | null = null;
    const deliver = () => {
      const batch = Object.freeze(pending!);
      pending = null;
      // A snapshot: a follower leaving from inside its listener does not disturb this delivery.
      for (const l of [...listeners]) l(batch);
    };
    const created: SharedChannel = {
      listeners,
      ready: pubsub.subscribe(channel, (m) => {
        if (!pending) {
          pending = [];
          setImmediate(deliver);
        }
        pending.push(m);
      }),
    };
    ch = created;
    channels.set(channel, created);
    created.ready.catch(() => {
      if (channels.get(channel) === created) channels.delete(channel);
    });
  }
  const entry: BatchListener = (batch) => listener(batch);
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
 * One item at a time; followSessionBatches is the same sequence in batches.
 */
export async function* followSession(
  c: Collections,
  log: EventLog,
  pubsub: PubSub,
  tenant: string,
  sessionId: string,
  opts: FollowOptions,
): AsyncGenerator<StreamItem> {
  for await (const batch of followSessionBatches(c, log, pubsub, tenant, sessionId, opts))
    yield* batch;
}

/**
 * followSession's sequence (same guarantees), in batches: a replay page, or every live event
 * that arrived since the consumer last resumed (with any backfill in its place). A live batch
 * this follower takes whole is yielded as the very array sharedSubscribe delivered (read-only). A consumer
 * that writes a batch at once (SSE) pays one generator step per batch rather than per event.
 * Batches are never empty. Proven by test/e2e/sessions/sessions-events.test.ts (replay, Last-Event-ID,
 * live), test/e2e/graphql/graphql-subscriptions.test.ts (no gaps or duplicates) and test/e2e/events/sse-fanout.test.ts.
 */
export async function* followSessionBatches(
  c: Collections,
  log: EventLog,
  pubsub: PubSub,
  tenant: string,
  sessionId: string,
  opts: FollowOptions,
): AsyncGenerator<readonly StreamItem[]> {
  let queue: Array<readonly StreamItem[]> = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const unsubscribe = await sharedSubscribe(pubsub, sessionChannel(sessionId), (batch) => {
    queue.push(batch as readonly StreamItem[]);
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
        if (rows.length) {
          last = rows[rows.length - 1]!.seq;
          yield rows.map(renderEvent);
        }
        if (rows.length < PAGE || opts.signal.aborted) break;
      }
    }
    opts.onLive?.();
    while (!opts.signal.aborted) {
      if (queue.length === 0) {
        await new Promise<void>((r) => {
          wake = r;
        });
        continue;
      }
      const arrived = queue;
      queue = [];
      const out: StreamItem[] = [];
      // Unchanged: the one shared batch passes through as is (its identity lets writers share
      // the encoding); anything left out or backfilled makes a batch of this follower's own.
      let unchanged = arrived.length === 1;
      for (const batch of arrived)
        for (const item of batch) {
          if ('ephemeral' in item && item.ephemeral) {
            if (opts.includeLive) out.push(item);
            else unchanged = false;
            continue;
          }
          const seq = (item as SessionEventOut).seq;
          if (seq <= last) {
            unchanged = false;
            continue;
          }
          if (seq > last + 1) {
            unchanged = false;
            for (const r of await log.range(tenant, sessionId, last, seq - last - 1, seq - 1)) {
              out.push(renderEvent(r));
              last = r.seq;
            }
          }
          out.push(item);
          last = seq;
        }
      if (out.length) yield unchanged ? arrived[0]! : out;
    }
  } finally {
    opts.signal.removeEventListener('abort', onAbort);
    await unsubscribe();
  }
}
