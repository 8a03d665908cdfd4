/**
 * Tenant placement for the GridFS object store: every key is `<kind>/<tenant>/...` (files,
 * outputs, snapshots), and its object lives in the database that holds the tenant's documents
 * (its STORE_BACKENDS backend; with PER_TENANT_DB_ENABLED its own database there), so a tenant
 * placed on another backend has its bytes there too. Keys without a tenant segment stay in the
 * control database. A list whose prefix does not name a whole tenant segment (`snapshots/`, the
 * sandbox manager's sweep) merges every database's keys, in key order.
 *
 * Tested by test/e2e/fleet/objects-shared.test.ts ("a tenant placed on another backend keeps its files
 * there"); each database's store is the GridFS adapter of objectStore.ts.
 */
import type { ObjectInfo, ObjectStore } from '../port.js';
import { validateObjectKey } from '../keys.js';

export interface TenantObjectRouting {
  /** The store for keys without a tenant segment. */
  control: ObjectStore;
  /** The store of the database holding `tenant`'s documents. */
  forTenant(tenant: string): Promise<ObjectStore>;
  /** Every distinct store that may hold objects (control included or not: duplicates are dropped). */
  all(): Promise<ObjectStore[]>;
}

/** The tenant segment of a key or of a prefix naming it whole; null when there is none. */
function tenantOf(keyOrPrefix: string): string | null {
  const parts = keyOrPrefix.split('/');
  return parts.length >= 3 && parts[1] ? parts[1] : null;
}

export function tenantRoutedObjectStore(routing: TenantObjectRouting): ObjectStore {
  const storeFor = async (key: string) => {
    validateObjectKey(key);
    const tenant = tenantOf(key);
    return tenant ? routing.forTenant(tenant) : routing.control;
  };
  return {
    async put(key, data, options) {
      await (await storeFor(key)).put(key, data, options);
    },
    async putStream(key, data, options) {
      return (await storeFor(key)).putStream(key, data, options);
    },
    async get(key) {
      return (await storeFor(key)).get(key);
    },
    async getStream(key) {
      return (await storeFor(key)).getStream(key);
    },
    async head(key) {
      return (await storeFor(key)).head(key);
    },
    async delete(key) {
      await (await storeFor(key)).delete(key);
    },
    async list(prefix) {
      const tenant = tenantOf(prefix);
      if (tenant) return (await routing.forTenant(tenant)).list(prefix);
      const stores = [...new Set([routing.control, ...(await routing.all())])];
      const merged: ObjectInfo[] = [];
      const seen = new Set<string>();
      for (const s of stores) {
        for (const o of await s.list(prefix)) {
          if (seen.has(o.key)) continue;
          seen.add(o.key);
          merged.push(o);
        }
      }
      return merged.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
  };
}
