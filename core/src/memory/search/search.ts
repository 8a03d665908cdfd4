/**
 * Memory search (`POST /v1/memory_stores/:id/search {query, limit}`): semantic over the store's
 * embedding model (embeddings.ts) with a usearch HNSW index (vectorIndex.ts), else lexical
 * (minisearch, lexicalIndex.ts). The answer says which (`mode`, and `embedding_model`).
 *
 * Guarantees (proved by test/e2e/memory/memory-search.test.ts and test/e2e/memory/memory-search-defaults.test.ts):
 * - Results are scoped to the tenant and the store: indexes are per (tenant, store), built
 *   from that tenant's entries of that store only; another tenant's store is a 404.
 * - The memory service tells this module of every committed write (MemoryService
 *   setSearchHook): `upsert` records the path and content hash at once (its vector follows in
 *   the background); `remove` leaves a tombstone; `dropStore` forgets the store. An embedding
 *   failure is logged and never fails the write: the memory stays `pending` and the next
 *   search embeds it (at most MAX_EMBED_PER_SEARCH per search; the answer counts the rest as
 *   `unindexed`). A memory is re-embedded only when its content hash or the model changed.
 * - How the index is stored, embedded and fleet mode alike: vectors persist in the store
 *   (entries.ts); the in-process index is built lazily per (tenant, store) from them and,
 *   before every search, brought up to date with the entries written since (the store's change
 *   counter), whichever process wrote them. Embedded mode has one process; in fleet mode each
 *   gateway process holds its own indexes, all correct because they follow the same entries.
 *   A fresh process (or one that evicted the index) rebuilds it from the persisted vectors
 *   without calling the embedding endpoint again. When a process first opens a store it
 *   reconciles the entries with the memories if their counts differ (a write whose hook never
 *   ran is indexed; test/e2e/memory/memory-search-defaults.test.ts).
 * - Deleting a store (MemoryService.deleteStore → dropStore) removes its entries and counter.
 * - Memory is bounded: at most MEMORY_SEARCH_MAX_OPEN_INDEXES stores are open per process
 *   (least recently searched evicted first).
 * - Every lexical answer says why (`fallback_reason`): no embedding model configured, the
 *   store's (or the platform default's) model no longer usable (card deleted or changed), or the
 *   embedding endpoint failing at search time. A store's `embedding_model` is validated at
 *   create/update (`checkEmbeddingModel`: a 400 naming `embedding_model` listing what is
 *   available; test/e2e/memory/memory-search.test.ts › 'embedding_model is validated').
 */
import { sha256 } from '../../crypto.js';
import type { StoreRouter } from '../../store/collections.js';
import { notFound } from '../../errors.js';
import type { Logger } from '../../log.js';
import {
  checkEmbeddingModel,
  chooseEmbeddingModel,
  EmbeddingError,
  resolveEmbeddingModel,
  type EmbeddingDeps,
  type EmbeddingModel,
} from './embeddings.js';
import { SearchEntries } from './entries.js';
import { LexicalFollower, OpenStore, VectorFollower } from './followers.js';
import { encodeVector } from './vectorIndex.js';

/**
 * What search reads of the memory service's documents (./source.ts on the collections, wired in
 * server/src/platform.ts).
 */
export interface MemorySource {
  /** The store of this tenant, or null when there is none. */
  store(tenant: string, storeId: string): Promise<{ embedding_model: string | null } | null>;
  /** Live memories of the store with the given ids (missing ones are left out). */
  memories(tenant: string, storeId: string, ids: string[]): Promise<SourceMemory[]>;
  /** How many live memories the store holds. */
  count(tenant: string, storeId: string): Promise<number>;
  /** Live memories of the store in id order, after `afterId`, at most `limit`. */
  page(tenant: string, storeId: string, afterId: string, limit: number): Promise<SourceMemory[]>;
}

export interface SourceMemory {
  _id: string;
  path: string;
  content: string;
  content_sha256: string;
}

export interface MemorySearchHit {
  memory_id: string;
  path: string;
  score: number;
  snippet: string;
}

export interface MemorySearchAnswer {
  data: MemorySearchHit[];
  mode: 'semantic' | 'lexical';
  /** The model card (model_id) that embedded the query, in semantic mode. */
  embedding_model?: string;
  /** Why the store was searched lexically (set on every lexical answer). */
  fallback_reason?: string;
  /** Live memories not in the semantic index yet (embedding pending). */
  unindexed?: number;
}

export interface MemorySearchOptions {
  router: StoreRouter;
  source: MemorySource;
  embedding: EmbeddingDeps;
  maxOpenIndexes: number;
  log: Logger;
}

/** Pending memories embedded by one search (the rest wait for the next one). */
export const MAX_EMBED_PER_SEARCH = 512;
const RECONCILE_PAGE = 500;
const SNIPPET_CHARS = 240;

/** The text embedded for a memory: its path, then its content. */
export const embeddingText = (path: string, content: string) => `${path}\n${content}`;

export class MemorySearchService {
  readonly entries: SearchEntries;
  private readonly open = new Map<string, OpenStore>();
  private readonly background = new Set<Promise<void>>();

  /** `o`: the options, public so a second, independent index holder (another gateway process) can be made in tests. */
  constructor(readonly o: MemorySearchOptions) {
    this.entries = new SearchEntries(o.router);
  }

  /** The hook handed to MemoryService.setSearchHook. */
  readonly hook = {
    upsert: async (
      tenant: string,
      storeId: string,
      m: { id: string; path: string; content: string },
    ) => {
      const sha = sha256(m.content);
      await this.entries.put(tenant, storeId, {
        _id: m.id,
        path: m.path,
        content_sha256: sha,
        model_key: null,
        vector: null,
      });
      this.track(this.embedOne(tenant, storeId, m, sha));
    },
    remove: async (tenant: string, storeId: string, memoryId: string) => {
      await this.entries.tombstone(tenant, storeId, memoryId);
    },
    dropStore: async (tenant: string, storeId: string) => {
      this.open.delete(`${tenant}/${storeId}`);
      await this.entries.drop(tenant, storeId);
    },
  };

  /** Handed to MemoryService.setEmbeddingModelCheck. */
  readonly checkEmbeddingModel = (tenant: string, name: string) =>
    checkEmbeddingModel(this.o.embedding, tenant, name);

  private track(p: Promise<void>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  /** Waits for the background embeddings of earlier writes (tests; shutdown). */
  async idle(): Promise<void> {
    while (this.background.size) await Promise.allSettled([...this.background]);
  }

  /** Embeds one written memory in the background; a failure leaves it pending (logged). */
  private async embedOne(
    tenant: string,
    storeId: string,
    m: { id: string; path: string; content: string },
    sha: string,
  ): Promise<void> {
    try {
      const store = await this.o.source.store(tenant, storeId);
      if (!store) return;
      const model = await resolveEmbeddingModel(this.o.embedding, tenant, store.embedding_model);
      if (!model) return;
      const [v] = await model.embed([embeddingText(m.path, m.content)]);
      await this.entries.putVector(tenant, storeId, m.id, sha, model.key, encodeVector(v!));
    } catch (err) {
      this.o.log.warn('memory embedding failed; it is retried at the next search', {
        tenant_id: tenant,
        memory_store_id: storeId,
        memory_id: m.id,
        error: err instanceof Error ? err.message : 'unknown error',
      });
    }
  }

  /** The open structures of a store, most recently used last; the oldest evicted past the bound. */
  private openStore(tenant: string, storeId: string): OpenStore {
    const key = `${tenant}/${storeId}`;
    let s = this.open.get(key);
    if (s) this.open.delete(key);
    else s = new OpenStore();
    this.open.set(key, s);
    while (this.open.size > this.o.maxOpenIndexes) this.open.delete(this.open.keys().next().value!);
    return s;
  }

  /** How many stores this process holds open (bounded by maxOpenIndexes). */
  get openCount(): number {
    return this.open.size;
  }

  async search(
    tenant: string,
    storeId: string,
    query: string,
    limit: number,
  ): Promise<MemorySearchAnswer> {
    const store = await this.o.source.store(tenant, storeId);
    if (!store) throw notFound('memory_store', storeId);
    const choice = await chooseEmbeddingModel(this.o.embedding, tenant, store.embedding_model);
    const model = choice.model;
    const s = this.openStore(tenant, storeId);
    // The query is embedded while earlier searches of the store finish (outside the queue).
    const queryVector = model?.embed([query]).then((v) => v[0]!);
    queryVector?.catch(() => {});
    return s.serial(async () => {
      if (!s.reconciled) {
        await this.reconcile(tenant, storeId);
        s.reconciled = true;
      }
      if (model) {
        try {
          return await this.semantic(s, tenant, storeId, model, queryVector!, query, limit);
        } catch (err) {
          if (!(err instanceof EmbeddingError)) throw err;
          this.o.log.warn('memory search fell back to lexical', {
            tenant_id: tenant,
            memory_store_id: storeId,
            error: err.message,
          });
          const answer = await this.lexical(s, tenant, storeId, query, limit);
          return { ...answer, fallback_reason: `embedding model '${model.name}': ${err.message}` };
        }
      }
      const answer = await this.lexical(s, tenant, storeId, query, limit);
      return { ...answer, fallback_reason: 'reason' in choice ? choice.reason : 'none' };
    });
  }

  /**
   * When a store is first opened in this process: if the entries do not count as many live
   * memories as the store holds (a write whose hook never ran, e.g. the process died between
   * the memory write and the entry write), entries are written for the memories without a
   * current one and tombstones for entries without a memory. Counts equal: nothing is read.
   */
  private async reconcile(tenant: string, storeId: string): Promise<void> {
    const [entries, live] = await Promise.all([
      this.entries.liveCount(tenant, storeId),
      this.o.source.count(tenant, storeId),
    ]);
    if (entries === live) return;
    const seen = new Set<string>();
    for (let after = ''; ;) {
      const page = await this.o.source.page(tenant, storeId, after, RECONCILE_PAGE);
      const have = new Map(
        (
          await this.entries.entries.find(tenant, {
            store_id: storeId,
            _id: { $in: page.map((m) => m._id) },
          })
        ).map((e) => [e._id, e]),
      );
      for (const m of page) {
        seen.add(m._id);
        const e = have.get(m._id);
        if (!e || e.deleted || e.content_sha256 !== m.content_sha256 || e.path !== m.path)
          await this.entries.put(tenant, storeId, {
            _id: m._id,
            path: m.path,
            content_sha256: m.content_sha256,
            model_key: null,
            vector: null,
          });
      }
      if (page.length < RECONCILE_PAGE) break;
      after = page[page.length - 1]!._id;
    }
    for await (const e of this.entries.since(tenant, storeId, 0))
      if (!e.deleted && !seen.has(e._id)) await this.entries.tombstone(tenant, storeId, e._id);
  }

  private async semantic(
    s: OpenStore,
    tenant: string,
    storeId: string,
    model: EmbeddingModel,
    queryVector: Promise<Float32Array>,
    query: string,
    limit: number,
  ): Promise<MemorySearchAnswer> {
    if (s.vector?.modelKey !== model.key) s.vector = new VectorFollower(model.key);
    const f = s.vector;
    await f.sync(this.entries, tenant, storeId);
    await this.embedPending(f, tenant, storeId, model);
    const hits = f.index?.search(await queryVector, limit) ?? [];
    const data = await this.render(tenant, storeId, hits, query);
    return { data, mode: 'semantic', embedding_model: model.name, unindexed: f.pending.size };
  }

  /** Embeds up to MAX_EMBED_PER_SEARCH pending memories and persists their vectors. */
  private async embedPending(
    f: VectorFollower,
    tenant: string,
    storeId: string,
    model: EmbeddingModel,
  ): Promise<void> {
    if (!f.pending.size) return;
    const ids = [...f.pending].slice(0, MAX_EMBED_PER_SEARCH);
    const mems = await this.o.source.memories(tenant, storeId, ids);
    const found = new Set(mems.map((m) => m._id));
    // Gone from the store without a tombstone (a write whose hook did not run): drop them.
    for (const id of ids) if (!found.has(id)) f.pending.delete(id);
    if (!mems.length) return;
    const vectors = await model.embed(mems.map((m) => embeddingText(m.path, m.content)));
    for (const [i, m] of mems.entries()) {
      const v = vectors[i]!;
      f.addVector(m._id, v);
      const entry = f.live.get(m._id);
      if (entry?.sha === m.content_sha256)
        await this.entries.putVector(
          tenant,
          storeId,
          m._id,
          m.content_sha256,
          model.key,
          encodeVector(v),
        );
      else
        await this.entries.put(tenant, storeId, {
          _id: m._id,
          path: m.path,
          content_sha256: m.content_sha256,
          model_key: model.key,
          vector: encodeVector(v),
        });
    }
  }

  private async lexical(
    s: OpenStore,
    tenant: string,
    storeId: string,
    query: string,
    limit: number,
  ): Promise<MemorySearchAnswer> {
    s.lexical ??= new LexicalFollower(this.o.source);
    await s.lexical.sync(this.entries, tenant, storeId);
    const hits = s.lexical.index.search(query, limit);
    return { data: await this.render(tenant, storeId, hits, query), mode: 'lexical' };
  }

  /** Hits with their memory's current path and a snippet; memories gone meanwhile are left out. */
  private async render(
    tenant: string,
    storeId: string,
    hits: Array<{ id: string; score: number }>,
    query: string,
  ): Promise<MemorySearchHit[]> {
    if (!hits.length) return [];
    const mems = new Map(
      (
        await this.o.source.memories(
          tenant,
          storeId,
          hits.map((h) => h.id),
        )
      ).map((m) => [m._id, m]),
    );
    return hits.flatMap((h) => {
      const m = mems.get(h.id);
      if (!m) return [];
      return [
        { memory_id: m._id, path: m.path, score: h.score, snippet: snippet(m.content, query) },
      ];
    });
  }
}

/** Up to SNIPPET_CHARS of the content around the first query word found in it, else its start. */
export function snippet(content: string, query: string): string {
  const lower = content.toLowerCase();
  const words = query
    .toLowerCase()
    .split(/\W+/u)
    .filter((w) => w.length > 2);
  const at = words.map((w) => lower.indexOf(w)).find((i) => i >= 0) ?? 0;
  const start = Math.max(0, at - SNIPPET_CHARS / 4);
  return content.slice(start, start + SNIPPET_CHARS);
}
