/**
 * The port's filters, updates and find options as MongoDB driver arguments. The port's
 * languages are a MongoDB subset, so operators and paths pass through unchanged once validated
 * against the embedded adapter's rules (both adapters reject the same operators); the values an
 * update writes are documents and are stored escaped (keyEscaping.ts), while filter and update
 * paths are the platform's own field names and are not escaped. Upserts whose filter has no
 * `_id` equality get a generated string `_id` through `$setOnInsert`. Proved by
 * core/test/store.contract.ts ("rejects unknown operators", "upserts from the filter
 * equalities, …") and core/test/store.mongo.test.ts ("stores plain JSON: undefined fields are
 * dropped, generated upsert ids are strings").
 */
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import type { Filter, FindOptions, Update } from '../port.js';
import { applyUpdate, compileFilter, upsertSeed, validateUpdate } from '../embedded/query.js';
import { escapeKeys } from './keyEscaping.js';

export type MongoDoc = mongoose.mongo.Document;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null;

/** A string id like an ObjectId's hex: seconds since the epoch, then 8 random bytes. */
const newId = () =>
  Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0') + randomBytes(8).toString('hex');

export function checkId(collection: string, doc: MongoDoc): void {
  if (typeof doc._id !== 'string') throw new TypeError(`${collection}: _id must be a string`);
}

/** Validates against the port's filter language (throws naming an unknown operator). */
export function checkFilter(filter: Filter): MongoDoc {
  compileFilter(filter);
  return structuredClone(filter) as MongoDoc;
}

/**
 * `$inc` by an integer is sent as a 64-bit integer: a counter created by a small increment would
 * otherwise be stored as a 32-bit integer, and FerretDB v1 wraps it on overflow where MongoDB
 * promotes it (e.g. a session's list cost in nano-dollars passes 2^31 at $2.15). Reads get plain
 * numbers back (the driver promotes longs that fit). Tested in core/test/store.mongo.test.ts.
 */
const int64 = (v: unknown) =>
  typeof v === 'number' && Number.isSafeInteger(v) ? mongoose.mongo.Long.fromNumber(v) : v;

/** Validates the update; an upsert without an `_id` equality in the filter gets a string `_id`. */
export function prepareUpdate(filter: MongoDoc, update: Update, upsert: boolean): MongoDoc {
  validateUpdate(update);
  // Operators and paths are the platform's; the values they write are documents (escaped).
  const u = Object.fromEntries(
    Object.entries(update).map(([op, fields]) => [
      op,
      Object.fromEntries(
        Object.entries(fields as Record<string, unknown>).map(([path, v]) => [
          path,
          op === '$inc' ? int64(v) : escapeKeys(v),
        ]),
      ),
    ]),
  ) as Record<string, Record<string, unknown>>;
  if (
    upsert &&
    !hasIdEquality(filter) &&
    !(u.$set && '_id' in u.$set) &&
    !(u.$setOnInsert && '_id' in u.$setOnInsert)
  ) {
    u.$setOnInsert = { ...u.$setOnInsert, _id: newId() };
  }
  return u;
}

function hasIdEquality(filter: MongoDoc): boolean {
  if (!('_id' in filter)) return false;
  const v = filter._id;
  return (
    !isObject(v) || Array.isArray(v) || !Object.keys(v).some((k) => k.startsWith('$')) || '$eq' in v
  );
}

/** The document an upsert would insert (for naming the index it collided on). */
export function upsertCandidate(filter: MongoDoc, update: MongoDoc): MongoDoc | undefined {
  try {
    return applyUpdate(upsertSeed(filter as Filter), update as Update, true) as MongoDoc;
  } catch {
    return undefined;
  }
}

export function findOptions(o: FindOptions): mongoose.mongo.FindOptions {
  const out: mongoose.mongo.FindOptions = {};
  if (o.sort && Object.keys(o.sort).length) out.sort = o.sort;
  if (o.skip && o.skip > 0) out.skip = o.skip;
  if (o.limit && o.limit > 0) out.limit = o.limit;
  return out;
}
