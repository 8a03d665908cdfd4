import { EventListQuery, type SessionEventOut } from '@agentfleet/schemas';
import { decodeCursor, invalid, type EventLog } from '@agentfleet/core';
import type { GatewayServices } from '../services.js';
import { argsOf } from './mappers.js';

const listArgs = argsOf(EventListQuery, {
  afterSeq: 'after_seq',
  limit: 'limit',
  order: 'order',
  page: 'page',
  types: 'types',
});

/**
 * One page of a session's persisted events (core/src/events/list.ts), ordered by seq (ASC unless
 * order: DESC). Cursors are the REST ones (`next_page` of GET /v1/sessions/:id/events works here
 * and back), plus `prevPage` to walk back. Validation is the REST EventListQuery's. With
 * `threadId` (Query threadEvents): that thread's log (core/src/threads logOf), after the session
 * check, so another session's thread id is NOT_FOUND.
 */
export async function listEvents(
  p: Pick<GatewayServices, 'sessions' | 'events'>,
  tenant: string,
  args: Record<string, unknown>,
) {
  const q = listArgs({
    ...args,
    order: typeof args.order === 'string' ? args.order.toLowerCase() : args.order,
  });
  const sessionId = String(args.sessionId);
  const doc = await p.sessions.getDoc(tenant, sessionId); // NOT_FOUND for another tenant's or an unknown session
  const logId =
    args.threadId == null
      ? sessionId
      : await p.sessions.threads.logOf(tenant, doc, String(args.threadId));
  const cur = q.page ? decodeCursor(q.page, 'page') : null;
  const seq = cur ? Number(cur.k) : undefined;
  if (cur && !Number.isInteger(seq)) throw invalid('page', 'is not a valid page cursor');
  return p.events.list(tenant, logId, {
    limit: q.limit ?? 100,
    order: q.order === 'desc' ? 'desc' : 'asc',
    afterSeq: q.after_seq,
    types: q.types,
    cursor: cur ? { seq: seq!, backwards: cur.d === 'prev' } : null,
  });
}

/**
 * The subscription's event source: followSession (subscribe, replay seq > afterSeq, then live,
 * no gaps or duplicates) with live-only chunk events left out. `return()` (client gone,
 * operation completed, server closing) aborts the follower at once, even while it waits for the
 * next live event, so its pubsub subscription is released. `active` holds the abort handles of
 * the open subscriptions, for shutdown.
 */
export function followEvents(
  events: Pick<EventLog, 'follow'>,
  tenant: string,
  sessionId: string,
  afterSeq: number,
  active: Set<AbortController>,
): AsyncIterableIterator<SessionEventOut> {
  const ac = new AbortController();
  active.add(ac);
  const source = events.follow(tenant, sessionId, {
    afterSeq,
    includeLive: false,
    signal: ac.signal,
  });
  const stop = () => {
    ac.abort();
    active.delete(ac);
  };
  const done = { done: true as const, value: undefined };
  const it: AsyncIterableIterator<SessionEventOut> = {
    async next() {
      for (;;) {
        const r = await source.next();
        if (r.done) {
          stop();
          return done;
        }
        if ('ephemeral' in r.value && r.value.ephemeral) continue;
        return { done: false, value: r.value as SessionEventOut };
      }
    },
    async return() {
      stop();
      await source.return(undefined);
      return done;
    },
    async throw(err?: unknown) {
      stop();
      await source.return(undefined);
      throw err;
    },
    [Symbol.asyncIterator]() {
      return it;
    },
  };
  return it;
}
