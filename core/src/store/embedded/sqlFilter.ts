/**
 * Translation of the Store port's filter and sort languages (core/src/store/port.ts) to SQL
 * over a collection table `(_id TEXT PRIMARY KEY, doc TEXT)`, so SQLite's expression indexes
 * on `json_extract(doc,'$.field')` serve the query, and sort + skip + limit run in SQL.
 *
 * Exactness: a condition is pushed only when SQL gives MongoDB's answer for it, that is on a
 * PLAIN field — `_id`, or a field of a declared index whose values in every document of the
 * collection are only strings, numbers, null or missing (no arrays anywhere along the path, no
 * booleans, no objects: documentStore.ts tracks this per field). On plain fields SQLite's order
 * (NULL < numbers < text) is MongoDB's (null < numbers < strings), `null` matches missing through
 * `IS NULL`, and ranges keep MongoDB's type brackets with the `'' ` bound (every number sorts
 * below the empty string, every string at or above it). Equality with a string, number or
 * boolean is also pushed on other fields, type-checked with json_type (guardedEq: through the
 * index when the field is indexed and never held an array, with a json_each branch for arrays
 * on top-level fields). Anything else is left to the JS
 * predicate (query.ts compileFilter): the pushed part is then a superset prefilter, `exact` is
 * false and the caller sorts, skips and limits in JS.
 * Strings compare by UTF-8 bytes in SQL (as MongoDB does) and by UTF-16 code units in the JS
 * fallback; the two differ only between astral characters and U+E000..U+FFFF.
 * Tests: core/test/store.contract.ts (through store.embedded.test.ts), and
 * store.embedded.test.ts "pushes the events page down onto the (session_id, seq) index".
 */
import type { Filter, SortSpec } from '../port.js';

/** Segments SQLite's JSON path takes unquoted; other field names are never indexed or pushed. */
const SEGMENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const indexableField = (field: string): boolean =>
  field === '_id' || field.split('.').every((s) => SEGMENT.test(s));

export const jsonPath = (field: string): string => `$.${field}`;

/** A field read from the JSON (queries read an indexed field from its column: FieldInfo.expr). */
export const fieldExpr = (field: string): string =>
  field === '_id' ? '_id' : `json_extract(doc,'${jsonPath(field)}')`;

export interface SqlWhere {
  sql: string;
  params: unknown[];
  /** True when `sql` selects exactly the filter's matches. */
  exact: boolean;
}

type Part = { sql: string; params: unknown[] } | null;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const scalar = (v: unknown): v is string | number =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
const isOps = (c: unknown): c is Record<string, unknown> =>
  isObj(c) && Object.keys(c).some((k) => k.startsWith('$'));

function eq(e: string, v: unknown): Part {
  if (v === null) return { sql: `${e} IS NULL`, params: [] };
  return scalar(v) ? { sql: `${e} = ?`, params: [v] } : null;
}

function inList(e: string, list: unknown, negate: boolean): Part {
  if (!Array.isArray(list) || !list.every((v) => v === null || scalar(v))) return null;
  const vals = list.filter((v) => v !== null);
  const hasNull = vals.length < list.length;
  const marks = vals.map(() => '?').join(',');
  if (!negate) {
    const alts = [
      ...(vals.length ? [`${e} IN (${marks})`] : []),
      ...(hasNull ? [`${e} IS NULL`] : []),
    ];
    return { sql: alts.length ? `(${alts.join(' OR ')})` : '0', params: vals };
  }
  if (!vals.length) return { sql: hasNull ? `${e} IS NOT NULL` : '1', params: [] };
  return {
    sql: hasNull
      ? `(${e} IS NOT NULL AND ${e} NOT IN (${marks}))`
      : `(${e} IS NULL OR ${e} NOT IN (${marks}))`,
    params: vals,
  };
}

const RANGE: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

function op(field: string, e: string, name: string, arg: unknown): Part {
  switch (name) {
    case '$eq':
      return eq(e, arg);
    case '$ne': {
      if (arg === null) return { sql: `${e} IS NOT NULL`, params: [] };
      return scalar(arg) ? { sql: `(${e} IS NULL OR ${e} <> ?)`, params: [arg] } : null;
    }
    case '$in':
      return inList(e, arg, false);
    case '$nin':
      return inList(e, arg, true);
    case '$exists': {
      if (field === '_id') return { sql: arg ? '1' : '0', params: [] };
      const t = `json_type(doc,'${jsonPath(field)}')`;
      return { sql: `${t} IS ${arg ? 'NOT ' : ''}NULL`, params: [] };
    }
    default: {
      const cmp = RANGE[name];
      if (!cmp || !scalar(arg)) return null;
      // Type bracket: numbers sort below '' and strings at or above it.
      const bracket = typeof arg === 'number' ? `${e} < ''` : `${e} >= ''`;
      return { sql: `(${e} ${cmp} ? AND ${bracket})`, params: [arg] };
    }
  }
}

/** Numbers anywhere in a condition (`_id` has TEXT affinity, which would turn 5 into '5'). */
const hasNumber = (v: unknown): boolean =>
  typeof v === 'number' ||
  (typeof v === 'object' && v !== null && Object.values(v).some(hasNumber));

/** What the collection knows about its fields (tables.ts). */
export interface FieldInfo {
  /** `_id`, or an indexed field holding only strings, numbers, null or missing. */
  plain(field: string): boolean;
  /** `_id`, or an indexed field that never held an array (anywhere along its path). */
  arrayFree(field: string): boolean;
  /** The field's SQL expression: `_id`, an indexed field's column, or fieldExpr. */
  expr(field: string): string;
}

const TYPES = {
  string: "('text')",
  number: "('integer','real')",
  true: "('true')",
  false: "('false')",
};

/**
 * Equality with a string, number or boolean (or `$in` of one such kind) on a field that is not plain (e.g. `tenant_id`,
 * which every tenant-scoped query adds, or a boolean flag): the value itself, type checked —
 * through the index when the field is indexed and array-free — or, on a top-level field, also
 * an element of an array held there.
 */
function guardedEq(field: string, cond: unknown, info: FieldInfo): Part {
  const ops = isOps(cond) ? cond : undefined;
  const only = ops && Object.keys(ops).length === 1 ? Object.keys(ops)[0] : undefined;
  if (ops && only !== '$eq' && only !== '$in') return null;
  const vals = ops ? (only === '$in' ? ops.$in : [ops.$eq]) : [cond];
  if (!Array.isArray(vals) || vals.length === 0) return null;
  // One type class per condition (a $in mixing strings and numbers stays in JS).
  const kind = typeof vals[0] === 'boolean' ? `${vals[0]}` : typeof vals[0];
  const same = (v: unknown) => (typeof v === 'boolean' ? `${v}` : typeof v) === kind;
  if (!vals.every((v) => (scalar(v) || typeof v === 'boolean') && same(v))) return null;
  const types = TYPES[kind as keyof typeof TYPES];
  const bound = vals.map((v) => (typeof v === 'boolean' ? Number(v) : v));
  const list = bound.length === 1 ? '= ?' : `IN (${bound.map(() => '?').join(',')})`;
  const p = jsonPath(field);
  const self = `${info.expr(field)} ${list} AND json_type(doc,'${p}') IN ${types}`;
  if (info.arrayFree(field)) return { sql: `(${self})`, params: bound };
  if (field.includes('.') || !SEGMENT.test(field)) return null;
  return {
    sql: `((${self}) OR (json_type(doc,'${p}') = 'array' AND EXISTS (SELECT 1 FROM json_each(doc,'${p}') WHERE value ${list} AND type IN ${types})))`,
    params: [...bound, ...bound],
  };
}

function condition(field: string, cond: unknown, info: FieldInfo): Part {
  if (field === '_id' && hasNumber(cond)) return null;
  if (!info.plain(field)) return guardedEq(field, cond, info);
  const e = info.expr(field);
  if (!isOps(cond)) return eq(e, cond) ?? guardedEq(field, cond, info);
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [name, arg] of Object.entries(cond)) {
    const p = op(field, e, name, arg);
    if (!p) return null;
    parts.push(p.sql);
    params.push(...p.params);
  }
  return { sql: parts.join(' AND '), params };
}

/**
 * WHERE clause for `filter` (already validated by compileFilter), for a collection whose
 * fields `info` describes.
 */
export function toWhere(filter: Filter, info: FieldInfo): SqlWhere {
  const parts: string[] = [];
  const params: unknown[] = [];
  let exact = true;
  for (const [key, cond] of Object.entries(filter)) {
    let p: Part;
    if (key === '$or') {
      const alts = (cond as Filter[]).map((f) => toWhere(f, info));
      p = alts.every((a) => a.exact)
        ? {
            sql: `(${alts.map((a) => `(${a.sql})`).join(' OR ')})`,
            params: alts.flatMap((a) => a.params),
          }
        : null;
    } else p = condition(key, cond, info);
    if (!p) {
      exact = false;
      continue;
    }
    parts.push(p.sql);
    params.push(...p.params);
  }
  return { sql: parts.length ? parts.join(' AND ') : '1', params, exact };
}

/** ORDER BY clause for `sort` when every sort field is plain; null otherwise (sort in JS). */
export function toOrderBy(sort: SortSpec | undefined, info: FieldInfo): string | null {
  const keys = Object.entries(sort ?? {});
  if (!keys.length) return '';
  if (!keys.every(([f]) => info.plain(f))) return null;
  return ` ORDER BY ${keys.map(([f, d]) => `${info.expr(f)} ${d === -1 ? 'DESC' : 'ASC'}`).join(', ')}`;
}
