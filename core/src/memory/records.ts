/**
 * Stored shapes of memory stores, memories and memory versions (collections memoryStores,
 * memories, memoryVersions in core/src/store/collections.ts). A memory document exists only
 * while the memory is live: deleting a memory deletes its document (so the unique
 * (tenant_id, store_id, path) index covers live memories only) and leaves its versions.
 */

/** Who made a change (SDK BetaManagedAgentsActor): an API key, or a session's mounted store. */
export type MemoryActor =
  { type: 'api_actor'; api_key_id: string } | { type: 'session_actor'; session_id: string };

export interface MemoryStoreDoc {
  _id: string;
  tenant_id: string;
  name: string;
  description: string;
  metadata: Record<string, string>;
  /** Spec: the agent the store belongs to (list filter), or null. */
  agent_id: string | null;
  /** Spec: the embedding model for search (null: the platform setting). */
  embedding_model: string | null;
  /** Spec: the name of the store's vector index (M2 keeps the index under it). */
  vector_index: string;
  /**
   * The `update_existing` dream that may write this store (core/src/dreams/hold.ts): taken by a
   * compare-and-swap from null (or from a stopped holder), so at most one such dream runs per
   * store. Absent or null: none. Never served.
   */
  dream_hold?: string | null;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface MemoryDoc {
  _id: string;
  tenant_id: string;
  store_id: string;
  path: string;
  content: string;
  content_sha256: string;
  content_size_bytes: number;
  /** The version holding the current content; every write replaces it (the CAS key). */
  version_id: string;
  created_at: string;
  updated_at: string;
}

export type MemoryVersionOperation = 'created' | 'modified' | 'deleted';

export interface MemoryVersionDoc {
  _id: string;
  tenant_id: string;
  store_id: string;
  memory_id: string;
  operation: MemoryVersionOperation;
  /** Null when the operation is `deleted` or the version was redacted. */
  content: string | null;
  content_sha256: string | null;
  content_size_bytes: number | null;
  /** Null only once redacted. */
  path: string | null;
  created_by: MemoryActor | null;
  redacted_at: string | null;
  redacted_by: MemoryActor | null;
  created_at: string;
  /** created_at in epoch ms, for the retention sweep's range scan. */
  created_ms: number;
}

export const MEMORY_STORE_PREFIX = 'memstore_';
export const MEMORY_PREFIX = 'mem_';
export const MEMORY_VERSION_PREFIX = 'memver_';
