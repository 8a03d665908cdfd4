/**
 * The served shapes: SDK BetaManagedAgentsMemoryStore (plus the spec's agent_id,
 * embedding_model and vector_index), BetaManagedAgentsMemory and BetaManagedAgentsMemoryVersion.
 * `view: 'basic'` serves `content: null` (size and hash stay set); a redacted or `deleted`
 * version serves null content, hash and size, and a redacted one a null path.
 */
import type { MemoryDoc, MemoryStoreDoc, MemoryVersionDoc } from './records.js';

export type View = 'basic' | 'full';

export function renderStore(s: MemoryStoreDoc) {
  return {
    type: 'memory_store' as const,
    id: s._id,
    name: s.name,
    description: s.description,
    metadata: s.metadata,
    archived_at: s.archived_at,
    created_at: s.created_at,
    updated_at: s.updated_at,
    agent_id: s.agent_id,
    embedding_model: s.embedding_model,
    vector_index: s.vector_index,
  };
}
export type MemoryStore = ReturnType<typeof renderStore>;

export function renderMemory(m: MemoryDoc, view: View = 'full') {
  return {
    type: 'memory' as const,
    id: m._id,
    memory_store_id: m.store_id,
    path: m.path,
    content: view === 'full' ? m.content : null,
    content_sha256: m.content_sha256,
    content_size_bytes: m.content_size_bytes,
    memory_version_id: m.version_id,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}
export type Memory = ReturnType<typeof renderMemory>;

export function renderVersion(v: MemoryVersionDoc, view: View = 'full') {
  return {
    type: 'memory_version' as const,
    id: v._id,
    memory_id: v.memory_id,
    memory_store_id: v.store_id,
    operation: v.operation,
    content: view === 'full' ? v.content : null,
    content_sha256: v.content_sha256,
    content_size_bytes: v.content_size_bytes,
    path: v.path,
    created_at: v.created_at,
    created_by: v.created_by,
    redacted_at: v.redacted_at,
    redacted_by: v.redacted_by,
  };
}
export type MemoryVersion = ReturnType<typeof renderVersion>;
