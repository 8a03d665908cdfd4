/**
 * One page of a session's persisted events: the single query behind REST
 * `GET /v1/sessions/:id/events` and GraphQL `sessionEvents` (each keeps only its wire format:
 * which query fields it reads and how it decodes a cursor).
 *
 * Guarantees:
 * - events are ordered by seq, ascending unless `order` is 'desc'; `afterSeq` keeps only
 *   seq > afterSeq, `types` only those types, `createdAt` the store bounds of
 *   createdAtBounds (../api/pagination.ts);
 * - a cursor continues after the seq it names: a forward cursor in the list's order, a
 *   backwards one (`prev`) towards the start; `next_page` / `prev_page` are the
 *   ../api/pagination.ts cursors `{k: seq, d}`, so a page cursor of either caller works in the
 *   other (test/e2e/graphql/graphql.test.ts "The REST cursor works here");
 * - at most `limit` events, fewer when their spilled payloads are over a page's budget
 *   (./spill.ts servedPrefix): a page cut short says `has_more` and carries the cursor on;
 * - spilled payloads are served whole (./spill.ts hydrate), events in their served shape.
 * Proved by test/e2e/sessions/sessions-events.test.ts (limit, order, after_seq, types, pages
 * both ways), test/e2e/api/list-filters.test.ts (created_at), test/e2e/events/event-spill*.test.ts
 * (page budget) and test/e2e/graphql/graphql.test.ts (prevPage, REST cursors).
 */
import type { SessionEventOut } from '@agentfleet/schemas';
import { makePage, type Page } from '../api/pagination.js';
import type { Collections } from '../store/collections.js';
import { renderEvent, type EventLog } from './log.js';

/** Where a page continues: the boundary seq of the page before and the direction. */
export interface EventCursor {
  seq: number;
  /** True for a `prev` cursor: the page before the boundary, still shown in the list's order. */
  backwards: boolean;
}

export interface EventListOptions {
  limit: number;
  order: 'asc' | 'desc';
  afterSeq?: number;
  types?: string[];
  /** Store bounds on created_at (createdAtBounds). */
  createdAt?: Record<string, string>;
  cursor?: EventCursor | null;
}

export async function listSessionEvents(
  c: Pick<Collections, 'events'>,
  log: Pick<EventLog, 'servedPrefix' | 'hydrate'>,
  tenant: string,
  sessionId: string,
  o: EventListOptions,
): Promise<Page<SessionEventOut>> {
  const cur = o.cursor ?? null;
  const backwards = cur?.backwards ?? false;
  // Rows are fetched from the cursor outwards: descending seq when walking a DESC list forward
  // or an ASC list back.
  const down = (o.order === 'desc') !== backwards;
  let gt = o.afterSeq;
  let lt: number | undefined;
  if (cur) {
    if (down) lt = cur.seq;
    else gt = gt === undefined ? cur.seq : Math.max(gt, cur.seq);
  }
  const seq: Record<string, number> = {};
  if (gt !== undefined) seq.$gt = gt;
  if (lt !== undefined) seq.$lt = lt;
  const filter: Record<string, unknown> = { session_id: sessionId };
  if (Object.keys(seq).length) filter.seq = seq;
  if (o.types?.length) filter.type = { $in: o.types };
  if (o.createdAt) filter.created_at = o.createdAt;
  const rows = await c.events.find(tenant, filter, {
    sort: { seq: down ? -1 : 1 },
    limit: o.limit + 1,
  });
  const served = await log.servedPrefix(rows.slice(0, o.limit));
  const page = makePage(
    rows.slice(0, served + 1),
    served,
    (r) => r.seq,
    (r) => r._id,
    { hadCursor: !!cur, backwards },
  );
  return { ...page, data: (await log.hydrate(page.data)).map(renderEvent) };
}
