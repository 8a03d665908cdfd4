/**
 * Pure evaluation of the Store port's filter, update and sort languages (a MongoDB subset).
 * Shared by adapters that evaluate queries in process (the embedded SQLite store's JS fallback
 * and update application, the MongoDB adapter's validation). No function here mutates its inputs.
 *
 * Semantics kept from MongoDB:
 * - dotted paths traverse objects and fan out over arrays of objects (`a.b` on `{a: [{b: 1}]}`);
 *   a numeric segment indexes an array;
 * - equality against an array field matches the whole array or any element; `null` matches
 *   null and missing; embedded-object equality is exact, field order included;
 * - `$gt/$gte/$lt/$lte` only match values of the operand's type class (numbers vs strings);
 * - sort order: missing = null < numbers < strings < objects < arrays < booleans; an array
 *   sorts by its smallest element ascending and its largest descending;
 * - an unknown operator throws an Error naming it, whether or not any document is examined.
 * Strings compare by UTF-16 code units (MongoDB uses UTF-8 bytes; they differ only between
 * astral characters and U+E000..U+FFFF).
 */
import type { Filter, SortSpec, Update } from '../port.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deep copy of a JSON-like value; non-plain objects fall back to structuredClone. */
export function clone<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(clone) as T;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return structuredClone(v);
  const out: Obj = {};
  for (const k of Object.keys(v)) out[k] = clone((v as Obj)[k]);
  return out as T;
}

/** Deepest nesting of objects and arrays a document may have (SQLite's JSON depth limit). */
export const MAX_DOCUMENT_DEPTH = 1000;

/**
 * Copy of `v` restricted to what every adapter stores identically: plain objects, arrays,
 * strings, finite numbers, booleans and null, nested at most {@link MAX_DOCUMENT_DEPTH} levels.
 * Object properties that are `undefined` are dropped (array slots become null); anything else
 * (Date, Map, NaN, bigint...) throws a TypeError naming the path. The copy is made without
 * building paths; only a refused value is walked again to name where it is.
 */
export function storable(v: unknown, at = 'document', depth = 1): unknown {
  try {
    return copyStorable(v, depth);
  } catch (err) {
    if (err !== REFUSED) throw err;
    explain(v, at, depth);
    throw new TypeError(`cannot store ${at}: only JSON values are supported`);
  }
}

const REFUSED = new Error('refused');

function copyStorable(v: unknown, depth: number): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw REFUSED;
    return v === 0 ? 0 : v;
  }
  if (depth > MAX_DOCUMENT_DEPTH) throw REFUSED;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++)
      out[i] = v[i] === undefined ? null : copyStorable(v[i], depth + 1);
    return out;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      const out: Obj = {};
      for (const k of Object.keys(v)) {
        const e = (v as Obj)[k];
        if (e !== undefined) out[k] = copyStorable(e, depth + 1);
      }
      return out;
    }
  }
  throw REFUSED;
}

/** The slow walk of a refused value: throws the TypeError naming its path. */
function explain(v: unknown, at: string, depth: number): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError(`cannot store non-finite number at ${at}`);
    return v;
  }
  if ((Array.isArray(v) || (typeof v === 'object' && v !== null)) && depth > MAX_DOCUMENT_DEPTH)
    throw new TypeError(
      `cannot store ${at.length > 120 ? `${at.slice(0, 120)}…` : at}: the document nests deeper than ${MAX_DOCUMENT_DEPTH} levels`,
    );
  if (Array.isArray(v)) {
    v.forEach((e, i) => e !== undefined && explain(e, `${at}.${i}`, depth + 1));
    return v;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      for (const k of Object.keys(v)) {
        const e = (v as Obj)[k];
        if (e !== undefined) explain(e, `${at}.${k}`, depth + 1);
      }
      return v;
    }
  }
  const kind = typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v;
  throw new TypeError(`cannot store ${kind} at ${at}: only JSON values are supported`);
}

/** Values reached by a (dotted) path; `undefined` stands for missing. */
export function getPath(doc: unknown, path: string): unknown[] {
  if (!path.includes('.')) return [isObj(doc) ? doc[path] : undefined];
  let cur: unknown[] = [doc];
  for (const part of path.split('.')) {
    const next: unknown[] = [];
    const index = /^\d+$/.test(part) ? Number(part) : -1;
    for (const v of cur) {
      if (Array.isArray(v)) {
        if (index >= 0) next.push(v[index]);
        else for (const e of v) next.push(isObj(e) ? e[part] : undefined);
      } else next.push(isObj(v) ? v[part] : undefined);
    }
    cur = next;
  }
  return cur;
}

/** Exact structural equality, object field order included (as MongoDB compares documents). */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((e, i) => valuesEqual(e, bb[i]));
  }
  const ka = Object.keys(a),
    kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k, i) => k === kb[i] && valuesEqual((a as Obj)[k], (b as Obj)[k]));
}

function rank(v: unknown): number {
  if (v === undefined || v === null) return 1;
  switch (typeof v) {
    case 'number':
      return 2;
    case 'string':
      return 3;
    case 'object':
      return Array.isArray(v) ? 5 : 4;
    case 'boolean':
      return 6;
    default:
      return 7;
  }
}

/** Total order over stored values (MongoDB's BSON order restricted to JSON types). */
export function compareValues(a: unknown, b: unknown): number {
  const ra = rank(a),
    rb = rank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (ra === 2 || ra === 3)
    return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  if (ra === 6) return Number(a) - Number(b);
  if (ra === 5) {
    const x = a as unknown[],
      y = b as unknown[];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = compareValues(x[i], y[i]);
      if (c) return c;
    }
    return Math.sign(x.length - y.length);
  }
  if (ra === 4) {
    const x = Object.entries(a as Obj),
      y = Object.entries(b as Obj);
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = compareValues(x[i][0], y[i][0]) || compareValues(x[i][1], y[i][1]);
      if (c) return c;
    }
    return Math.sign(x.length - y.length);
  }
  return 0;
}

function isOperatorObject(cond: unknown): cond is Obj {
  if (!isObj(cond)) return false;
  const keys = Object.keys(cond);
  const ops = keys.filter((k) => k.startsWith('$')).length;
  if (ops > 0 && ops < keys.length)
    throw new Error(`cannot mix operators and fields in ${JSON.stringify(cond)}`);
  return ops > 0;
}

function eqAny(values: unknown[], want: unknown): boolean {
  for (const v of values) {
    if (want === null) {
      if (v === null || v === undefined || (Array.isArray(v) && v.includes(null))) return true;
    } else if (valuesEqual(v, want) || (Array.isArray(v) && v.some((e) => valuesEqual(e, want)))) {
      return true;
    }
  }
  return false;
}

function cmpAny(values: unknown[], arg: unknown, ok: (c: number) => boolean): boolean {
  const r = rank(arg);
  for (const v of values) {
    for (const e of Array.isArray(v) ? v : [v])
      if (rank(e) === r && ok(compareValues(e, arg))) return true;
  }
  return false;
}

const RANGE: Record<string, (c: number) => boolean> = {
  $gt: (c) => c > 0,
  $gte: (c) => c >= 0,
  $lt: (c) => c < 0,
  $lte: (c) => c <= 0,
};

function compileOp(op: string, arg: unknown): (values: unknown[]) => boolean {
  switch (op) {
    case '$eq':
      return (vs) => eqAny(vs, arg);
    case '$ne':
      return (vs) => !eqAny(vs, arg);
    case '$in':
    case '$nin': {
      if (!Array.isArray(arg)) throw new Error(`${op} requires an array`);
      const inSet = (vs: unknown[]) => arg.some((a) => eqAny(vs, a));
      return op === '$in' ? inSet : (vs) => !inSet(vs);
    }
    case '$exists': {
      const want = Boolean(arg);
      return (vs) => vs.some((v) => v !== undefined) === want;
    }
    default: {
      const ok = RANGE[op];
      if (!ok) throw new Error(`unsupported query operator ${op}`);
      return (vs) => cmpAny(vs, arg, ok);
    }
  }
}

/** Validates `filter` (throwing on unknown operators) and returns its predicate. */
export function compileFilter(filter: Filter): (doc: unknown) => boolean {
  if (!isObj(filter)) throw new TypeError('filter must be an object');
  const tests: Array<(doc: unknown) => boolean> = [];
  for (const [key, cond] of Object.entries(filter)) {
    if (key === '$or') {
      if (!Array.isArray(cond) || cond.length === 0)
        throw new Error('$or requires a non-empty array');
      const alts = cond.map((f) => compileFilter(f as Filter));
      tests.push((d) => alts.some((t) => t(d)));
    } else if (key.startsWith('$')) {
      throw new Error(`unsupported query operator ${key}`);
    } else if (isOperatorObject(cond)) {
      const preds = Object.entries(cond).map(([op, arg]) => compileOp(op, arg));
      tests.push((d) => {
        const vs = getPath(d, key);
        return preds.every((p) => p(vs));
      });
    } else {
      tests.push((d) => eqAny(getPath(d, key), cond));
    }
  }
  return (d) => {
    for (const t of tests) if (!t(d)) return false;
    return true;
  };
}

export function matches(doc: unknown, filter: Filter): boolean {
  return compileFilter(filter)(doc);
}

function sortKey(doc: unknown, path: string, dir: 1 | -1): unknown {
  let best: unknown,
    found = false;
  for (const v of getPath(doc, path)) {
    for (const e of Array.isArray(v) ? (v.length ? v : [undefined]) : [v]) {
      if (!found || compareValues(e, best) * dir < 0) [best, found] = [e, true];
    }
  }
  return best;
}

export function compareBy(sort: SortSpec): (a: unknown, b: unknown) => number {
  const keys = Object.entries(sort);
  for (const [f, d] of keys)
    if (d !== 1 && d !== -1) throw new Error(`sort direction for ${f} must be 1 or -1`);
  return (a, b) => {
    for (const [f, d] of keys) {
      const c = compareValues(sortKey(a, f, d), sortKey(b, f, d));
      if (c) return c * d;
    }
    return 0;
  };
}

const UPDATE_OPS = new Set(['$set', '$unset', '$inc', '$max', '$setOnInsert']);

/** Throws on unknown operators, non-object operands, empty updates and conflicting paths. */
export function validateUpdate(update: Update): void {
  if (!isObj(update)) throw new TypeError('update must be an object');
  const ops = Object.keys(update);
  if (ops.length === 0) throw new Error('update requires at least one operator');
  const paths: string[] = [];
  for (const op of ops) {
    if (!UPDATE_OPS.has(op)) throw new Error(`unsupported update operator ${op}`);
    const fields = (update as Obj)[op];
    if (!isObj(fields)) throw new Error(`${op} requires an object`);
    for (const [p, v] of Object.entries(fields)) {
      if (op === '$inc' && typeof v !== 'number') throw new Error(`$inc on ${p} requires a number`);
      const clash = paths.find((q) => q === p || q.startsWith(`${p}.`) || p.startsWith(`${q}.`));
      if (clash !== undefined) throw new Error(`update paths ${clash} and ${p} conflict`);
      paths.push(p);
    }
  }
}

function getOne(doc: Obj, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (Array.isArray(cur)) cur = cur[Number(part)];
    else if (isObj(cur)) cur = cur[part];
    else return undefined;
  }
  return cur;
}

function setPath(doc: Obj, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur: Obj | unknown[] = doc;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i],
      last = i === parts.length - 1;
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(part)) throw new Error(`cannot create field ${part} of array at ${path}`);
      const idx = Number(part);
      while (cur.length < idx) cur.push(null);
      if (last) cur[idx] = value;
      else if (cur[idx] === undefined) cur[idx] = {};
      if (!last) cur = cur[idx] as Obj;
    } else {
      if (last) cur[part] = value;
      else if (cur[part] === undefined) cur[part] = {};
      if (!last) cur = cur[part] as Obj;
    }
    if (!last && typeof cur !== 'object')
      throw new Error(`cannot create field ${parts[i + 1]} in a non-object at ${path}`);
    if (!last && cur === null)
      throw new Error(`cannot create field ${parts[i + 1]} in null at ${path}`);
  }
}

function unsetPath(doc: Obj, path: string): void {
  const parts = path.split('.');
  const parent = parts.length === 1 ? doc : getOne(doc, parts.slice(0, -1).join('.'));
  const leaf = parts[parts.length - 1];
  if (Array.isArray(parent)) {
    if (/^\d+$/.test(leaf) && Number(leaf) < parent.length) parent[Number(leaf)] = null;
  } else if (isObj(parent)) delete parent[leaf];
}

/**
 * Returns a new document: `doc` with `update` applied (`$setOnInsert` only when `isInsert`).
 * Dotted paths create intermediate objects. Changing `_id` of an existing document throws.
 */
export function applyUpdate<T extends object>(doc: T, update: Update, isInsert: boolean): T {
  validateUpdate(update);
  const out = clone(doc) as Obj;
  for (const [op, fields] of Object.entries(update) as Array<[string, Obj]>) {
    for (const [path, value] of Object.entries(fields)) {
      if (op === '$set' || (op === '$setOnInsert' && isInsert)) setPath(out, path, clone(value));
      else if (op === '$unset') unsetPath(out, path);
      else if (op === '$inc') {
        const cur = getOne(out, path);
        if (cur !== undefined && typeof cur !== 'number')
          throw new Error(`cannot $inc non-numeric field ${path}`);
        setPath(out, path, ((cur as number | undefined) ?? 0) + (value as number));
      } else if (op === '$max') {
        const cur = getOne(out, path);
        if (cur === undefined || compareValues(value, cur) > 0) setPath(out, path, clone(value));
      }
    }
  }
  if (!isInsert && !valuesEqual(out._id, (doc as Obj)._id)) {
    throw new Error(`update would modify the immutable field _id`);
  }
  return out as T;
}

/**
 * `update` applied to `doc` in place, for a caller that owns `doc` (a document just parsed from
 * storage, so already storable) and has validated `update` (validateUpdate). Returns whether
 * any value changed, or `null`, touching nothing, when an operand is `undefined` (the caller
 * then takes applyUpdate's copying path, which drops such fields). Same result and the same
 * errors as `storable(applyUpdate(doc, update, false))` compared with valuesEqual against
 * `doc`, without copying or comparing the whole document: only the values set are copied
 * (through storable, at their depth) and compared. On a throw `doc` may be half changed.
 * Tests: core/test/query.update.test.ts (equivalence with applyUpdate on random documents).
 */
export function updateInPlace(doc: Obj, update: Update): boolean | null {
  for (const op of ['$set', '$max'] as const)
    for (const v of Object.values(update[op] ?? {})) if (v === undefined) return null;
  const id = doc._id;
  let changed = false;
  for (const [op, fields] of Object.entries(update) as Array<[string, Obj]>) {
    if (op === '$setOnInsert') continue;
    for (const [path, value] of Object.entries(fields)) {
      const depth = path.split('.').length + 1;
      const at = `document.${path}`;
      const cur = getOne(doc, path);
      if (op === '$set') {
        const v = storable(value, at, depth);
        if (cur === undefined || !valuesEqual(cur, v)) changed = true;
        setPath(doc, path, v);
      } else if (op === '$unset') {
        unsetPath(doc, path);
        if (cur !== getOne(doc, path)) changed = true;
      } else if (op === '$inc') {
        if (cur !== undefined && typeof cur !== 'number')
          throw new Error(`cannot $inc non-numeric field ${path}`);
        const v = storable(((cur as number | undefined) ?? 0) + (value as number), at, depth);
        if (cur === undefined || v !== cur) changed = true;
        setPath(doc, path, v);
      } else if (op === '$max') {
        if (cur === undefined || compareValues(value, cur) > 0) {
          setPath(doc, path, storable(value, at, depth));
          changed = true;
        }
      }
    }
  }
  if (!valuesEqual(doc._id, id)) throw new Error(`update would modify the immutable field _id`);
  return changed;
}

/** The document an upsert starts from: the filter's equality conditions (top level and `$eq`). */
export function upsertSeed(filter: Filter): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith('$')) continue;
    if (!isOperatorObject(v)) setPath(out, k, clone(v));
    else if ('$eq' in v) setPath(out, k, clone(v.$eq));
  }
  return out;
}
