/**
 * Duplicate-key failures as the port's DuplicateKeyError(collection, index name, key,
 * insertedCount). MongoDB reports code 11000 and names the index in the message ("... index:
 * email_1 dup key: ..."); FerretDB does so only for inserts. On updates FerretDB passes its
 * backend's error through: SQLite's "UNIQUE constraint failed: index '<table>_<index>'", or
 * PostgreSQL's 'duplicate key value violates unique constraint "<table>_<index>_<fnv32a of the
 * index name, 8 hex>_idx"' (FerretDB v1's PostgreSQL index naming), matched by that hash. Otherwise the index is found by looking up the document that
 * already holds the key of the document being written. With ordered inserts, insertedCount is
 * the number inserted before the failing one. Proved by core/test/store.contract.ts ("enforces
 * unique indexes on insert, update and upsert, …", "enforces compound unique indexes such as
 * (session_id, seq)", "insertMany is ordered: …") and core/test/store.mongo.test.ts ("names the
 * violated index like MongoDB and carries the key").
 */
import type mongoose from 'mongoose';
import { DuplicateKeyError } from '../port.js';
import { isObject, type MongoDoc } from './queryTranslation.js';

interface UniqueIndex {
  name: string;
  fields: string[];
}

interface DuplicateInfo {
  index?: string;
  sqliteIndex?: string;
  pgIndex?: string;
  keyValue?: unknown;
  insertedCount: number;
}

/**
 * `err` as a DuplicateKeyError on collection `c` when it is a duplicate-key failure, else `err`
 * unchanged. `candidate` gives the document being written (for finding the index by its key).
 */
export async function toDuplicateKeyError(
  c: mongoose.mongo.Collection<MongoDoc>,
  collectionName: string,
  err: unknown,
  candidate?: (err: unknown) => MongoDoc | undefined,
): Promise<unknown> {
  const info = duplicateInfo(err);
  if (!info) return err;
  const doc = candidate?.(err);
  const indexes = await uniqueIndexes(c).catch(() => [] as UniqueIndex[]);
  let ix: UniqueIndex | undefined;
  if (info.index) ix = indexes.find((i) => i.name === info.index);
  else if (info.sqliteIndex) {
    ix = indexes
      .filter((i) => info.sqliteIndex === i.name || info.sqliteIndex!.endsWith(`_${i.name}`))
      .sort((a, b) => b.name.length - a.name.length)[0];
  } else if (info.pgIndex) {
    ix = indexes.find((i) => info.pgIndex!.endsWith(`_${fnv1a32Hex(i.name)}_idx`));
  }
  if (!ix && doc) ix = await holderIndex(c, doc, indexes).catch(() => undefined);
  const name = ix?.name ?? info.index ?? (indexes.length === 1 ? indexes[0].name : 'unknown');
  const key =
    info.keyValue ??
    (ix && doc
      ? Object.fromEntries(ix.fields.map((f) => [f, getPath(doc, f) ?? null]))
      : undefined);
  const dup = new DuplicateKeyError(collectionName, name, key, info.insertedCount);
  (dup as { cause?: unknown }).cause = err;
  return dup;
}

async function uniqueIndexes(c: mongoose.mongo.Collection<MongoDoc>): Promise<UniqueIndex[]> {
  const list = await c.listIndexes().toArray();
  return list
    .filter((i) => i.name === '_id_' || i.unique === true)
    .map((i) => ({ name: String(i.name), fields: Object.keys(i.key as object) }));
}

/** The unique index under which another document already holds `doc`'s key. */
async function holderIndex(
  c: mongoose.mongo.Collection<MongoDoc>,
  doc: MongoDoc,
  indexes: UniqueIndex[],
): Promise<UniqueIndex | undefined> {
  const ordered = [...indexes].sort(
    (a, b) => Number(b.name === '_id_') - Number(a.name === '_id_'),
  );
  for (const ix of ordered) {
    const q: MongoDoc = {};
    for (const f of ix.fields) q[f] = getPath(doc, f) ?? null;
    if (await c.findOne(q, { projection: { _id: 1 } })) return ix;
  }
  return undefined;
}

/** The first write error of a bulk write failure (its `index` is the failing document's). */
export function firstWriteError(
  err: unknown,
): { index: number; code?: number; errmsg?: string } | undefined {
  if (!isObject(err) || !Array.isArray(err.writeErrors) || err.writeErrors.length === 0)
    return undefined;
  return err.writeErrors[0] as { index: number; code?: number; errmsg?: string };
}

function duplicateInfo(err: unknown): DuplicateInfo | null {
  if (!isObject(err)) return null;
  const we = firstWriteError(err);
  const code = we?.code ?? err.code;
  const msg = String(we?.errmsg ?? err.errmsg ?? err.message ?? '');
  // With ordered inserts the failing document's position is the number inserted before it.
  const insertedCount = we ? we.index : 0;
  if (code === 11000 || code === 11001) {
    const index = /\bindex: (\S+) dup key/.exec(msg)?.[1];
    const keyValue = isObject(err.keyValue) ? err.keyValue : undefined;
    return { index, keyValue, insertedCount };
  }
  const sqlite = /UNIQUE constraint failed: index '([^']+)'/.exec(msg);
  if (sqlite) return { sqliteIndex: sqlite[1], insertedCount };
  const pg = /duplicate key value violates unique constraint "([^"]+)"/.exec(msg);
  if (pg) return { pgIndex: pg[1], insertedCount };
  return null;
}

/** 32-bit FNV-1a of the UTF-8 bytes of `s`, as 8 lowercase hex digits (Go's hash/fnv New32a). */
function fnv1a32Hex(s: string): string {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

function getPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}
