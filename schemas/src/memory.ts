/**
 * Memory stores, memories and memory versions (SDK 1.12 `client.beta.memoryStores`,
 * `.memories`, `.memoryVersions`; the spec's `/v1/memory_stores` with `agent_id` and
 * `embedding_model`): request bodies and queries as the SDKs send them. Checks the schema cannot
 * express (path grammar, NFC, byte sizes, overlap) are in core/src/memory/. Proved by
 * test/e2e/memory/memory-stores.test.ts and test/e2e/sdk/sdk_suite/test_memory.py.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Metadata, MetadataPatch, Nullable, Obj } from './common.js';

/** SDK: 1–255 characters, no control characters. */
const StoreName = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
});
const StoreDescription = Type.String({ maxLength: 1024 });
/** The spec's embedding model: a model card id (or a provider model name) for M2's search. */
const EmbeddingModel = Type.String({ minLength: 1, maxLength: 256 });

export const MemoryStoreCreate = Obj({
  name: StoreName,
  description: Type.Optional(StoreDescription),
  metadata: Type.Optional(Metadata),
  /** Spec: the agent the store belongs to (`GET /v1/memory_stores?agent_id=`). */
  agent_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 128 }))),
  /** Spec: defaults to the platform setting. */
  embedding_model: Type.Optional(Nullable(EmbeddingModel)),
  /** Spec: the index name; chosen by the platform, any other value refused (core unsupported.ts). */
  vector_index: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
});
export type MemoryStoreCreate = Static<typeof MemoryStoreCreate>;

export const MemoryStoreUpdate = Obj({
  name: Type.Optional(Nullable(StoreName)),
  description: Type.Optional(Nullable(StoreDescription)),
  metadata: Type.Optional(Nullable(MetadataPatch)),
  /** Spec: validated like create; null returns the store to the platform default. */
  embedding_model: Type.Optional(Nullable(EmbeddingModel)),
  /** As on create: refused unless null. */
  vector_index: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
});
export type MemoryStoreUpdate = Static<typeof MemoryStoreUpdate>;

export const MemoryStoreListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  'created_at[gte]': Type.Optional(Type.String({ maxLength: 64 })),
  'created_at[lte]': Type.Optional(Type.String({ maxLength: 64 })),
  include_archived: Type.Optional(Type.Boolean()),
  agent_id: Type.Optional(Type.String({ maxLength: 256 })),
});
export type MemoryStoreListQuery = Static<typeof MemoryStoreListQuery>;

export const MemoryView = Type.Union([Type.Literal('basic'), Type.Literal('full')]);
export type MemoryView = Static<typeof MemoryView>;
export const MemoryViewQuery = Obj({ view: Type.Optional(MemoryView) });
export type MemoryViewQuery = Static<typeof MemoryViewQuery>;

/** Paths are checked by core/src/memory/paths.ts (400 naming `path`); this bounds the string. */
const MemoryPath = Type.String({ maxLength: 4096, pattern: '^/' });
/** Content is bounded in bytes by the service (100 kB); this bounds the string first. */
const MemoryContent = Type.String({ maxLength: 1_000_000 });

export const MemoryCreate = Obj({ path: MemoryPath, content: Nullable(MemoryContent) });
export type MemoryCreate = Static<typeof MemoryCreate>;

export const MemoryPrecondition = Obj({
  type: Type.Literal('content_sha256'),
  content_sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
});
export const MemoryUpdate = Obj({
  path: Type.Optional(Nullable(MemoryPath)),
  content: Type.Optional(Nullable(MemoryContent)),
  precondition: Type.Optional(MemoryPrecondition),
});
export type MemoryUpdate = Static<typeof MemoryUpdate>;

export const MemoryListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 20 })),
  path_prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  view: Type.Optional(MemoryView),
});
export type MemoryListQuery = Static<typeof MemoryListQuery>;

export const MemoryDeleteQuery = Obj({
  expected_content_sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
});
export type MemoryDeleteQuery = Static<typeof MemoryDeleteQuery>;

export const MemoryVersionOperation = Type.Union([
  Type.Literal('created'),
  Type.Literal('modified'),
  Type.Literal('deleted'),
]);
export const MemoryVersionListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  'created_at[gte]': Type.Optional(Type.String({ maxLength: 64 })),
  'created_at[lte]': Type.Optional(Type.String({ maxLength: 64 })),
  memory_id: Type.Optional(Type.String({ maxLength: 256 })),
  operation: Type.Optional(MemoryVersionOperation),
  api_key_id: Type.Optional(Type.String({ maxLength: 256 })),
  session_id: Type.Optional(Type.String({ maxLength: 256 })),
  service_account_id: Type.Optional(Type.String({ maxLength: 256 })),
  view: Type.Optional(MemoryView),
});
export type MemoryVersionListQuery = Static<typeof MemoryVersionListQuery>;

/** The spec's recent entries: `GET /v1/memory_stores/:id/entries?limit=`. */
export const MemoryEntriesQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
});
export type MemoryEntriesQuery = Static<typeof MemoryEntriesQuery>;

/** At most 100 kB (102,400 bytes) of UTF-8 per memory (SDK). */
export const MAX_MEMORY_BYTES = 102_400;

// ---- served shapes (the OpenAPI document's responses) ----

const Time = Type.String({ format: 'date-time' });
const Sha = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Actor = Type.Union([
  Obj({ type: Type.Literal('api_actor'), api_key_id: Type.String() }),
  Obj({ type: Type.Literal('session_actor'), session_id: Type.String() }),
]);

/** SDK BetaManagedAgentsMemoryStore plus the spec's agent_id, embedding_model, vector_index. */
export const MemoryStore = Obj({
  type: Type.Literal('memory_store'),
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  metadata: Type.Record(Type.String(), Type.String()),
  archived_at: Nullable(Time),
  created_at: Time,
  updated_at: Time,
  agent_id: Nullable(Type.String()),
  embedding_model: Nullable(Type.String()),
  vector_index: Type.String(),
});
/** SDK BetaManagedAgentsMemory (`content` null in view=basic). */
export const Memory = Obj({
  type: Type.Literal('memory'),
  id: Type.String(),
  memory_store_id: Type.String(),
  path: Type.String(),
  content: Nullable(Type.String()),
  content_sha256: Sha,
  content_size_bytes: Type.Integer({ minimum: 0 }),
  memory_version_id: Type.String(),
  created_at: Time,
  updated_at: Time,
});
/** SDK BetaManagedAgentsMemoryPrefix (List Memories with depth ≥ 1). */
export const MemoryPrefix = Obj({ type: Type.Literal('memory_prefix'), path: Type.String() });
/** SDK BetaManagedAgentsMemoryVersion. */
export const MemoryVersion = Obj({
  type: Type.Literal('memory_version'),
  id: Type.String(),
  memory_id: Type.String(),
  memory_store_id: Type.String(),
  operation: MemoryVersionOperation,
  content: Nullable(Type.String()),
  content_sha256: Nullable(Sha),
  content_size_bytes: Nullable(Type.Integer({ minimum: 0 })),
  path: Nullable(Type.String()),
  created_at: Time,
  created_by: Nullable(Actor),
  redacted_at: Nullable(Time),
  redacted_by: Nullable(Actor),
});
