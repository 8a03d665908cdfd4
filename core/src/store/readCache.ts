/**
 * An in-process read cache of one tenant collection's documents by id, exact only where this
 * process is the store's only writer: the embedded store, which holds its data dir's lock
 * (`Adapters.exclusiveStore`, set by server/src/components.ts). With a shared store (MongoDB,
 * FerretDB, several gateway processes) it is not used: a write by another process could not
 * invalidate it.
 *
 * Guarantees (tested through HTTP in test/e2e/agents/agent-cache.test.ts):
 * - every write through the collection (insert, update, findOneAndUpdate, delete, whatever its
 *   filter) drops the written id (or, for a filter not on one `_id`, every entry) AFTER the
 *   write settled, so a read that follows an acknowledged write misses and reads the store;
 * - a read that missed stores its result only if no write settled while it was reading (a
 *   generation counter), so a value read before a write can never be cached after it;
 * - only found documents are cached (an unknown or another tenant's id is read each time); the
 *   key is the (tenant, id) pair, so a tenant never reads another tenant's document;
 * - cached documents are deep-frozen: a caller cannot change what the next reader gets;
 * - at most `max` entries (LRU).
 * QueryReadCache (below) keeps query results instead, and also serves shared stores, where
 * writes are announced over pub/sub and results expire.
 * The collection refuses `handle()` (raw transaction access, whose writes it could not see),
 * and at construction checks that every method of TenantCollection is classified as a read or
 * an invalidating write here, so a method added later cannot write around the cache.
 */
import { LRUCache } from 'lru-cache';
import type { Doc, Filter, SortSpec, Update } from './port.js';
import { TenantCollection, type StoreRouter } from './collections.js';
import type { CollectionSpec } from './port.js';
import type { PubSub } from '../coordination/port.js';
import { deepFreeze } from '../util.js';

/** Agents held by the embedded deployment's agent cache, at most. */
export const AGENT_CACHE_MAX = 1000;

export class DocReadCache<T extends object> {
  private readonly docs: LRUCache<string, T>;
  private generation = 0;
  constructor(max: number) {
    this.docs = new LRUCache<string, T>({ max });
  }

  /** Entries held (the agentfleet_agent_cache_entries gauge). */
  get size(): number {
    return this.docs.size;
  }

  /** The cached document, or `load()`'s (deep-frozen), cached unless a write settled meanwhile. */
  async read(tenant: string, id: string, load: () => Promise<T | null>): Promise<T | null> {
    const key = `${tenant}\u0000${id}`;
    const hit = this.docs.get(key);
    if (hit) return hit;
    const generation = this.generation;
    const doc = await load();
    if (!doc) return null;
    deepFreeze(doc);
    if (generation === this.generation) this.docs.set(key, doc);
    return doc;
  }

  /** A write settled: drop `id` of `tenant` (or everything when the write was not on one id). */
  written(tenant: string, id: unknown): void {
    this.generation++;
    if (typeof id === 'string') this.docs.delete(`${tenant}\u0000${id}`);
    else this.docs.clear();
  }
}

/**
 * Results of a collection's reads by a key of the caller's (a filter, a list), "none" (null)
 * included, per tenant; any write to the collection drops them all, with the same generation
 * rule as DocReadCache. Results are deep-frozen. For small collections written rarely and read
 * on every turn: model cards (the turn's model lookup), webhook endpoints (where an event goes).
 * - Exclusive store (embedded): exact, like DocReadCache.
 * - Shared store (MongoDB, several processes): every write through the collection also
 *   announces itself on the coordination pub/sub (`announceWrites`), and every process's cache
 *   empties on the announcement, so another process's write applies there as soon as it is
 *   delivered; a result is kept at most `ttlMs` (SHARED_QUERY_CACHE_TTL_MS), which bounds the
 *   staleness if an announcement is lost (Redis reconnecting), as with API keys (../auth/auth.ts).
 */
export class QueryReadCache<V extends object> {
  private static readonly NONE = Symbol('none');
  private readonly results: LRUCache<string, V | typeof QueryReadCache.NONE>;
  private generation = 0;
  constructor(max: number, ttlMs?: number) {
    this.results = new LRUCache({ max, ...(ttlMs ? { ttl: ttlMs } : {}) });
  }

  get size(): number {
    return this.results.size;
  }

  async read(tenant: string, key: string, load: () => Promise<V | null>): Promise<V | null> {
    const k = `${tenant}\u0000${key}`;
    const hit = this.results.get(k);
    if (hit !== undefined) return hit === QueryReadCache.NONE ? null : (hit as V);
    const generation = this.generation;
    const value = await load();
    if (value !== null) deepFreeze(value);
    if (generation === this.generation) this.results.set(k, value ?? QueryReadCache.NONE);
    return value;
  }

  /** A write to the collection settled (whichever tenant or document): every result goes. */
  written(_tenant?: string, _id?: unknown): void {
    this.generation++;
    this.results.clear();
  }
}

/** How long a shared store's query cache keeps a result without hearing of a write. */
export const SHARED_QUERY_CACHE_TTL_MS = 2_000;

/**
 * On a shared store: `cache` empties when any process announces a write to `collection`, and
 * the returned function announces this process's writes (InvalidatingCollection `onWritten`).
 * Resolves to the announcer and the unsubscribe.
 */
export async function announceWrites(
  pubsub: PubSub,
  collection: string,
  cache: QueryReadCache<object>,
): Promise<{ announce: () => void; stop: () => Promise<void> }> {
  const channel = `store-written:${collection}`;
  const stop = await pubsub.subscribe(channel, () => cache.written());
  return {
    // A lost announcement is bounded by the TTL; the write itself already settled.
    announce: () => void pubsub.publish(channel, 1).catch(() => {}),
    stop,
  };
}

/** Results kept by the model card and webhook endpoint caches, at most. */
export const QUERY_CACHE_MAX = 1000;

/** TenantCollection's methods that only read (everything else must be overridden below). */
const READS = new Set(['constructor', 'on', 'c', 'get', 'findOne', 'find', 'count', 'scanAll']);
const WRITES = new Set([
  'insert',
  'insertMany',
  'updateOne',
  'findOneAndUpdate',
  'deleteOne',
  'deleteMany',
]);

/** Raw store access for transactions: writes there would bypass the cache, so it is refused. */
const REFUSED = new Set(['handle']);

const idOf = (filter: Filter): unknown => (filter as { _id?: unknown })._id;

/** A tenant collection whose every write invalidates `cache` once it settled. */
export class InvalidatingCollection<
  T extends Doc & { tenant_id: string },
> extends TenantCollection<T> {
  constructor(
    spec: CollectionSpec,
    router: StoreRouter,
    readonly cache: DocReadCache<T> | QueryReadCache<object>,
    /** Called after each write settled, with the cache emptied (QueryReadCache on a shared store). */
    private readonly onWritten?: () => void,
  ) {
    super(spec, router);
    for (const name of Object.getOwnPropertyNames(TenantCollection.prototype)) {
      if (REFUSED.has(name))
        Object.defineProperty(this, name, {
          value: () =>
            Promise.reject(
              new Error(
                `${spec.name}: a read-cached collection refuses ${name}() (its writes would bypass the cache)`,
              ),
            ),
        });
      else if (!READS.has(name) && !WRITES.has(name))
        throw new Error(
          `TenantCollection.${name} is neither a read nor an invalidating write of docReadCache.ts: classify it there`,
        );
    }
  }

  private async settle<R>(tenant: string, id: unknown, write: () => Promise<R>): Promise<R> {
    try {
      return await write();
    } finally {
      this.cache.written(tenant, id);
      this.onWritten?.();
    }
  }

  override insert(tenant: string, doc: Omit<T, 'tenant_id'>) {
    return this.settle(tenant, doc._id, () => super.insert(tenant, doc));
  }
  override insertMany(tenant: string, docs: Array<Omit<T, 'tenant_id'>>) {
    return this.settle(tenant, undefined, () => super.insertMany(tenant, docs));
  }
  override updateOne(
    tenant: string,
    filter: Filter,
    update: Update,
    options?: { upsert?: boolean },
  ) {
    return this.settle(tenant, idOf(filter), () =>
      super.updateOne(tenant, filter, update, options),
    );
  }
  override findOneAndUpdate(
    tenant: string,
    filter: Filter,
    update: Update,
    options?: { returnDocument?: 'before' | 'after'; upsert?: boolean; sort?: SortSpec },
  ) {
    return this.settle(tenant, idOf(filter), () =>
      super.findOneAndUpdate(tenant, filter, update, options),
    );
  }
  override deleteOne(tenant: string, filter: Filter) {
    return this.settle(tenant, idOf(filter), () => super.deleteOne(tenant, filter));
  }
  override deleteMany(tenant: string, filter: Filter) {
    return this.settle(tenant, idOf(filter), () => super.deleteMany(tenant, filter));
  }

  /** The document by id through the cache (deep-frozen), or null. */
  getCached(tenant: string, id: string): Promise<T | null> {
    if (!(this.cache instanceof DocReadCache)) return this.get(tenant, id);
    return this.cache.read(tenant, id, () => this.get(tenant, id));
  }
}

/**
 * `load()`'s result through the collection's QueryReadCache under `key` (deep-frozen), or read
 * afresh where the collection has none.
 */
export function readThrough<V extends object>(
  collection: object,
  tenant: string,
  key: string,
  load: () => Promise<V | null>,
): Promise<V | null> {
  if (collection instanceof InvalidatingCollection && collection.cache instanceof QueryReadCache)
    return (collection.cache as unknown as QueryReadCache<V>).read(tenant, key, load);
  return load();
}
