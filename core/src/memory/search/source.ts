/**
 * Memory search's MemorySource (./search.ts) on the platform's collections: the tenant's store,
 * its live memories by id, their count and id-ordered pages, all scoped to (tenant, store).
 * Proved by test/e2e/memory/memory-search.test.ts.
 */
import type { Collections } from '../../store/collections.js';
import type { MemorySource } from './search.js';

export function collectionsMemorySource(c: Collections): MemorySource {
  return {
    store: (tenant, id) => c.memoryStores.get(tenant, id),
    memories: (tenant, storeId, ids) =>
      c.memories.find(tenant, { store_id: storeId, _id: { $in: ids } }),
    count: (tenant, storeId) => c.memories.count(tenant, { store_id: storeId }),
    page: (tenant, storeId, afterId, limit) =>
      c.memories.find(
        tenant,
        { store_id: storeId, _id: { $gt: afterId } },
        { sort: { _id: 1 }, limit },
      ),
  };
}
