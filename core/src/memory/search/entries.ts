/**
 * What memory search persists, per tenant and store (in the tenant's document store, so it
 * follows the tenant's shard or database):
 * - `memory_search_entries`: one document per memory ever indexed (`_id` = memory id): its
 *   path, the sha256 of the content it describes, the embedding (base64 f32) and the model it
 *   came from (`model_key`; null vector = not embedded yet: no model, or the endpoint failed),
 *   a `deleted` tombstone, and `seq`, the store's change number of its last write.
 * - `memory_search_state`: per store, `seq`, the change counter every entry write increments
 *   first. A process holding an open index compares it with what it applied and reads only the
 *   entries written since (`seq` greater than its watermark), so an index in any process
 *   catches up with writes made through any other (fleet mode: every gateway process).
 *
 * A re-embed happens only when the content hash or the model changed: an entry whose hash and
 * model match keeps its vector. Writes are single-document (the Store port has nothing more).
 */
import type { CollectionSpec, Filter } from '../../store/port.js';
import { TenantCollection, type StoreRouter } from '../../store/collections.js';

export interface SearchEntryDoc {
  _id: string;
  tenant_id: string;
  store_id: string;
  path: string;
  content_sha256: string;
  deleted: boolean;
  model_key: string | null;
  vector: string | null;
  seq: number;
}

export interface SearchStateDoc {
  _id: string;
  tenant_id: string;
  seq: number;
}

export const SEARCH_COLLECTIONS = {
  entries: {
    name: 'memory_search_entries',
    indexes: [{ fields: { tenant_id: 1, store_id: 1, seq: 1 } }],
  },
  state: { name: 'memory_search_state', indexes: [{ fields: { tenant_id: 1, _id: 1 } }] },
} as const satisfies Record<string, CollectionSpec>;

/** Page size when an index is built from the persisted entries (bounds peak memory). */
const PAGE = 2_000;

export class SearchEntries {
  readonly entries: TenantCollection<SearchEntryDoc>;
  readonly state: TenantCollection<SearchStateDoc>;

  constructor(router: StoreRouter) {
    this.entries = new TenantCollection<SearchEntryDoc>(SEARCH_COLLECTIONS.entries, router);
    this.state = new TenantCollection<SearchStateDoc>(SEARCH_COLLECTIONS.state, router);
  }

  /** The store's change counter (0 before any write). */
  async counter(tenant: string, storeId: string): Promise<number> {
    return (await this.state.get(tenant, storeId))?.seq ?? 0;
  }

  /** Takes the next change number of the store. */
  private async nextSeq(tenant: string, storeId: string): Promise<number> {
    const after = await this.state.findOneAndUpdate(
      tenant,
      { _id: storeId },
      { $inc: { seq: 1 } },
      { upsert: true, returnDocument: 'after' },
    );
    return after!.seq;
  }

  /** Records a live memory's path and hash, with its vector when there is one. */
  async put(
    tenant: string,
    storeId: string,
    e: Pick<SearchEntryDoc, '_id' | 'path' | 'content_sha256' | 'model_key' | 'vector'>,
  ): Promise<void> {
    const seq = await this.nextSeq(tenant, storeId);
    await this.entries.updateOne(
      tenant,
      { _id: e._id },
      { $set: { ...e, store_id: storeId, deleted: false, seq } },
      { upsert: true },
    );
  }

  /**
   * Stores a vector computed for exactly this content: written only while the entry still
   * describes that hash (a newer write is never overwritten by an older embedding). It takes a
   * change number too, so other processes' indexes pick the vector up instead of re-embedding.
   */
  async putVector(
    tenant: string,
    storeId: string,
    id: string,
    sha: string,
    modelKey: string,
    vector: string,
  ): Promise<void> {
    const seq = await this.nextSeq(tenant, storeId);
    await this.entries.updateOne(
      tenant,
      { _id: id, store_id: storeId, content_sha256: sha, deleted: false },
      { $set: { model_key: modelKey, vector, seq } },
    );
  }

  /** Marks a memory deleted (a tombstone, so other processes' indexes drop it too). */
  async tombstone(tenant: string, storeId: string, id: string): Promise<void> {
    const seq = await this.nextSeq(tenant, storeId);
    await this.entries.updateOne(
      tenant,
      { _id: id },
      {
        $set: {
          store_id: storeId,
          deleted: true,
          vector: null,
          model_key: null,
          path: '',
          content_sha256: '',
          seq,
        },
      },
      { upsert: true },
    );
  }

  /** Forgets a deleted store: its entries and its counter. */
  async drop(tenant: string, storeId: string): Promise<void> {
    await this.entries.deleteMany(tenant, { store_id: storeId });
    await this.state.deleteOne(tenant, { _id: storeId });
  }

  /** Entries of the store written after `afterSeq` (all of them from 0), in pages. */
  async *since(tenant: string, storeId: string, afterSeq: number): AsyncGenerator<SearchEntryDoc> {
    let lastId = '';
    for (;;) {
      const filter: Filter = { store_id: storeId, seq: { $gt: afterSeq } };
      if (lastId) filter._id = { $gt: lastId };
      const page = await this.entries.find(tenant, filter, { sort: { _id: 1 }, limit: PAGE });
      yield* page;
      if (page.length < PAGE) return;
      lastId = page[page.length - 1]!._id;
    }
  }

  async liveCount(tenant: string, storeId: string): Promise<number> {
    return this.entries.count(tenant, { store_id: storeId, deleted: false });
  }
}
