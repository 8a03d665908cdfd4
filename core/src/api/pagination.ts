import { invalid } from '../errors.js';
import type { Filter } from '../store/port.js';
import type { TenantCollection } from '../store/collections.js';

/** Opaque cursors: base64url JSON of the boundary key and direction. */
export interface Cursor {
  k: string | number;
  d: 'next' | 'prev';
}

export const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
export function decodeCursor(s: string, field = 'page'): Cursor {
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
    if ((typeof c.k === 'string' || typeof c.k === 'number') && (c.d === 'next' || c.d === 'prev'))
      return c;
  } catch {
    /* fall through */
  }
  throw invalid(field, 'is not a valid page cursor');
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_page: string | null;
  prev_page: string | null;
  first_id: string | null;
  last_id: string | null;
}

/**
 * Builds a page from rows fetched with limit+1 in the requested direction, ordered by `key`.
 * `forward` says whether the rows run in display order (true) or were fetched backwards from a
 * `prev` cursor (false) and must be reversed.
 */
export function makePage<T>(
  rows: T[],
  limit: number,
  key: (t: T) => string | number,
  id: (t: T) => string,
  opts: { hadCursor: boolean; backwards: boolean },
): Page<T> {
  const more = rows.length > limit;
  let data = rows.slice(0, limit);
  if (opts.backwards) data = data.reverse();
  const first = data[0];
  const last = data[data.length - 1];
  const hasNext = opts.backwards ? opts.hadCursor : more;
  const hasPrev = opts.backwards ? more : opts.hadCursor;
  return {
    data,
    has_more: opts.backwards ? more : more,
    next_page: hasNext && last ? encodeCursor({ k: key(last), d: 'next' }) : null,
    prev_page: hasPrev && first ? encodeCursor({ k: key(first), d: 'prev' }) : null,
    first_id: first ? id(first) : null,
    last_id: last ? id(last) : null,
  };
}

/**
 * One page over a tenant collection in `_id` order (ids are time-ordered, so this is creation
 * order), newest first by default; `page` (SDK) or `cursor` (spec) continue in either direction.
 */
export async function pageById<T extends { _id: string; tenant_id: string }>(
  coll: TenantCollection<T>,
  tenant: string,
  filter: Filter,
  q: { limit?: number; page?: string; cursor?: string },
  order: 'asc' | 'desc' = 'desc',
): Promise<Page<T>> {
  const limit = q.limit ?? 20;
  const token = q.page ?? q.cursor;
  const cur = token ? decodeCursor(token, q.page !== undefined ? 'page' : 'cursor') : null;
  const backwards = cur?.d === 'prev';
  const descending = (order === 'desc') !== backwards;
  const f: Filter = { ...filter };
  if (cur) f._id = descending ? { $lt: cur.k } : { $gt: cur.k };
  const rows = await coll.find(tenant, f, { sort: { _id: descending ? -1 : 1 }, limit: limit + 1 });
  return makePage(
    rows,
    limit,
    (r) => r._id,
    (r) => r._id,
    { hadCursor: !!cur, backwards },
  );
}

/** RFC 3339 date-time: full date, `T` (or space), time with optional fraction, `Z` or offset. */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const BOUND_OPS = ['gt', 'gte', 'lt', 'lte'] as const;

/**
 * `created_at[gt|gte|lt|lte]` query bounds parsed as RFC 3339 instants and turned into a store
 * filter on the stored ISO strings (`toISOString()`, millisecond precision, UTC — so comparing the
 * normalised strings compares instants). A bound finer than a millisecond is rounded so the
 * comparison stays exact (`gte …49.3285Z` → `gt …49.328Z`). A value that is not an RFC 3339
 * date-time is a 400 naming the parameter. Returns undefined when no bound is given.
 * Tested in test/e2e/api/list-filters.test.ts.
 */
export function createdAtBounds(
  q: Record<string, unknown>,
  field = 'created_at',
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const op of BOUND_OPS) {
    const name = `${field}[${op}]`;
    const raw = q[name];
    if (raw === undefined || raw === null || raw === '') continue;
    const m = typeof raw === 'string' ? RFC3339.exec(raw) : null;
    const ms = m ? Date.parse(raw as string) : NaN;
    if (!m || Number.isNaN(ms) || Number(m[2]) > 12 || Number(m[3]) > 31)
      throw invalid(name, 'must be an RFC 3339 date-time, e.g. 2026-04-01T08:57:49Z');
    const iso = new Date(ms).toISOString();
    const subMs = /[1-9]/.test((m[7] ?? '').slice(4));
    const key = !subMs ? op : op === 'gte' ? 'gt' : op === 'lt' ? 'lte' : op;
    out[`$${key}`] = iso;
  }
  return Object.keys(out).length ? out : undefined;
}
