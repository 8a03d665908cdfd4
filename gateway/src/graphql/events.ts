import { EventListQuery, type SessionEventOut } from '@agentfleet/schemas';
import {
  decodeCursor,
  followSession,
  invalid,
  makePage,
  renderEvent,
  type Platform,
} from '@agentfleet/core';
import { argsOf } from './mappers.js';

const listArgs = argsOf(EventListQuery, {
  afterSeq: 'after_seq',
  limit: 'limit',
  order: 'order',
  page: 'page',
  types: 'types',
});

/**
 * One page of a session's persisted events, ordered by seq (ASC unless order: DESC). Cursors
 * are the REST ones (`next_page` of GET /v1/sessions/:id/events works here and back), plus
 * `prevPage` to walk back. Validation is the REST EventListQuery's.
 */
export async function listEvents(p: Platform, tenant: string, args: Record<string, unknown>) {
  const q = listArgs({
    ...args,
    order: typeof args.order === 'string' ? args.order.toLowerCase() : args.order,
  });
  const sessionId = String(args.sessionId);
  await p.sessions.getDoc(tenant, sessionId); // NOT_FOUND for another tenant's or an unknown session
  const limit = q.limit ?? 100;
  const desc = q.order === 'desc';
  const cur = q.page ? decodeCursor(q.page, 'page') : null;
  const backwards = cur?.d === 'prev';
  // Rows are fetched from the cursor outwards: descending seq when walking a DESC list forward or an ASC list back.
  const down = desc !== backwards;
  let gt = q.after_seq;
  let lt: number | undefined;
  if (cur) {
    const k = Number(cur.k);
    if (!Number.isInteger(k)) throw invalid('page', 'is not a valid page cursor');
    if (down) lt = k;
    else gt = Math.max(gt ?? -1, k);
  }
  const seq: Record<string, number> = {};
  if (gt !== undefined) seq.$gt = gt;
  if (lt !== undefined) seq.$lt = lt;
  const filter: Record<string, unknown> = { session_id: sessionId };
  if (Object.keys(seq).length) filter.seq = seq;
  if (q.types?.length) filter.type = { $in: q.types };
  const rows = await p.collections.events.find(tenant, filter, {
    sort: { seq: down ? -1 : 1 },
    limit: limit + 1,
  });
  // A page's spilled payloads are bounded in total (core/src/events/spill.ts servedPrefix):
  // a page cut short is a shorter page with a next cursor.
  const served = await p.events.servedPrefix(rows.slice(0, limit));
  const page = makePage(
    rows.slice(0, served + 1),
    served,
    (r) => r.seq,
    (r) => r._id,
    { hadCursor: !!cur, backwards },
  );
  // Spilled payloads (> 500 KB) are served whole (core/src/events/spill.ts).
  return { ...page, data: (await p.events.hydrate(page.data)).map(renderEvent) };
}

/**
 * The subscription's event source: followSession (subscribe, replay seq > afterSeq, then live,
 * no gaps or duplicates) with live-only chunk events left out. `return()` (client gone,
 * operation completed, server closing) aborts the follower at once, even while it waits for the
 * next live event, so its pubsub subscription is released. `active` holds the abort handles of
 * the open subscriptions, for shutdown.
 */
export function followEvents(
  p: Platform,
  tenant: string,
  sessionId: string,
  afterSeq: number,
  active: Set<AbortController>,
): AsyncIterableIterator<SessionEventOut> {
  const ac = new AbortController();
  active.add(ac);
  const source = followSession(p.collections, p.events, p.coordination.pubsub, tenant, sessionId, {
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
