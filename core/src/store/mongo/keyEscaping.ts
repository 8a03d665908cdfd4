/**
 * Stored form of the platform's JSON documents on MongoDB/FerretDB. Object keys the server
 * cannot store (a `.` anywhere, a leading `$`, a NUL: tenant-chosen metadata keys, JSON Schema
 * `$schema`, tool settings) are stored percent-escaped (`%2E`, `%24`, `%00`, and `%` itself as
 * `%25`) and unescaped on read. An array directly inside an array (FerretDB v1 refuses nested
 * arrays) is stored wrapped as `{"%a": [...]}`, a key no escaped user key can equal, and
 * unwrapped on read. Round trips are exact, key order kept, so documents read back as on the
 * embedded store. Proved by core/test/store.contract.ts ("stores any object key: dots, a leading
 * $, NUL and % round-trip …", "stores arrays inside arrays …"), run on FerretDB by
 * core/test/store.mongo.test.ts.
 */

/** Keys MongoDB/FerretDB refuse in stored documents, plus `%` (the escape character). */
const UNSAFE_KEY = /[.%\0]|^\$/;
const escapeKey = (k: string): string =>
  UNSAFE_KEY.test(k)
    ? k.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\0/g, '%00').replace(/^\$/, '%24')
    : k;
const unescapeKey = (k: string): string =>
  k.includes('%')
    ? k.replace(/%(25|2E|00|24)/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : k;

/** The wrapper of an array inside an array: `%` alone never starts an escaped key's `%XX`. */
const NESTED_ARRAY = '%a';

/** A deep copy of a JSON value whose object keys are escaped (`escapeKey`) and inner arrays wrapped. */
export function escapeKeys(v: unknown): unknown {
  if (Array.isArray(v))
    return v.map((x) => (Array.isArray(x) ? { [NESTED_ARRAY]: escapeKeys(x) } : escapeKeys(x)));
  if (!isPlainObject(v)) return v === undefined ? v : structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[escapeKey(k)] = escapeKeys(x);
  return out;
}

/** The inverse of escapeKeys (key order kept). */
export function unescapeKeys<V>(v: V): V {
  if (Array.isArray(v)) {
    return v.map((x) => {
      const inner = isPlainObject(x) && Object.keys(x).length === 1 ? x[NESTED_ARRAY] : undefined;
      return unescapeKeys(Array.isArray(inner) ? inner : x);
    }) as V;
  }
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[unescapeKey(k)] = unescapeKeys(x);
  return out as V;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
