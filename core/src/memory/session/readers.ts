/**
 * The session mount's view of the memory collections: a tenant-scoped store lookup (another
 * tenant's store is null, like a missing one) and the full read of a store's live memories for
 * the warmup (path order). Writes never come through here: they go through platform.memory
 * (versions, compare-and-swap), see ./writeBack.ts.
 */
import type { Collections } from '../../store/collections.js';
import type { MemoryReader } from './mount.js';
import type { StoreLookup } from './resources.js';

export const memoryStoreLookup =
  (c: Pick<Collections, 'memoryStores'>): StoreLookup =>
  async (tenant, storeId) => {
    const s = await c.memoryStores.get(tenant, storeId);
    return s ? { name: s.name, description: s.description, archived_at: s.archived_at } : null;
  };

export const memoryReader = (c: Pick<Collections, 'memoryStores' | 'memories'>): MemoryReader => ({
  async readAll(tenant, storeId) {
    const store = await c.memoryStores.get(tenant, storeId);
    if (!store) throw new Error(`memory store ${storeId} not found (deleted?)`);
    const rows = await c.memories.find(tenant, { store_id: storeId }, { sort: { path: 1 } });
    return rows.map((m) => ({ id: m._id, path: m.path, content: m.content }));
  },
});
