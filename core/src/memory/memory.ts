/**
 * Memory stores and their memories (SDK `client.beta.memoryStores` and `.memories`; the spec's
 * `/v1/memory_stores` with `agent_id`, `embedding_model` and `/entries`), on the store port.
 *
 * Guarantees:
 * - Tenant-scoped everywhere: another tenant's store, memory or version id is a 404, exactly
 *   like a missing one; a memory or version of another store of the same tenant is a 404 too.
 * - Every write (create, modify, rename, delete) adds one version (./versions.ts); an update
 *   that changes nothing adds none and returns the memory as it is.
 * - A live memory's path is unique in its store (unique index on (tenant_id, store_id, path));
 *   a create or rename onto a used path, or onto an ancestor or descendant of another memory's
 *   path, is a 409 carrying `conflicting_path` and `conflicting_memory_id` (./errors.ts). Two
 *   concurrent creates of overlapping paths: the older id keeps its path, the newer is refused.
 * - `content_sha256` preconditions (update) and `expected_content_sha256` (delete) are real
 *   compare-and-swaps: every update is a findOneAndUpdate on the memory's current version id,
 *   so of two concurrent writers with the same precondition exactly one wins and the other gets
 *   the 409 `memory_precondition_failed_error`. An update whose requested content and path are
 *   already the memory's succeeds whatever the precondition (SDK).
 * - At most 100 kB (102,400 UTF-8 bytes) per memory: 400 naming `content`. Paths: ./paths.ts.
 * - An archived store refuses memory creates and updates and store updates (400 naming
 *   `memory_store_id`); reads, memory deletes, redaction and store deletion still work (SDK).
 * - Deleting a store deletes its memories and versions, then drops its search index (hook).
 * - The search hook (M2) is called after each committed write and never fails the write.
 * - A crash between a memory's write and its version's insert leaves the memory written and
 *   that one version record missing (single-document atomicity; no transactions).
 * Proved by test/e2e/memory/memory-stores.test.ts and test/e2e/sdk/sdk_suite/test_memory.py.
 */
import { createHash } from 'node:crypto';
import {
  MAX_MEMORY_BYTES,
  type MemoryListQuery,
  type MemoryStoreCreate,
  type MemoryStoreListQuery,
  type MemoryStoreUpdate,
  type MemoryVersionListQuery,
} from '@agentfleet/schemas';
import { conflict, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { LifecycleWebhooks } from '../webhooks/port.js';
import type { Collections } from '../store/collections.js';
import { applyMetadataPatch } from '../api/metadata.js';
import { refuseVectorIndex } from '../api/unsupported.js';
import { createdAtBounds, pageById, type Page } from '../api/pagination.js';
import { DuplicateKeyError, type Filter } from '../store/port.js';
import {
  MEMORY_PREFIX,
  MEMORY_STORE_PREFIX,
  type MemoryActor,
  type MemoryDoc,
  type MemoryStoreDoc,
} from './records.js';
import { pathConflict, preconditionFailed } from './errors.js';
import { listMemoryPage, type MemoryListItem } from './listing.js';
import { ancestorsOf, checkMemoryPath, checkWellFormed, underPrefix } from './paths.js';
import { renderMemory, renderStore, type Memory, type MemoryStore, type View } from './render.js';
import { sweepVersions } from './sweep.js';
import { MemoryVersions, type VersionWrite } from './versions.js';

/** M2's search index: told of every committed write; its failures are logged, never thrown. */
export interface MemorySearchHook {
  upsert(
    tenant: string,
    storeId: string,
    m: { id: string; path: string; content: string },
  ): Promise<void>;
  remove(tenant: string, storeId: string, memoryId: string): Promise<void>;
  dropStore(tenant: string, storeId: string): Promise<void>;
}

/** A store's `embedding_model` at create/update: throws a 400 naming the field when unusable. */
export type EmbeddingModelCheck = (tenant: string, name: string) => Promise<void>;

export interface MemoryUpdateInput {
  path?: string | null;
  content?: string | null;
  /** Compare-and-swap: the update applies only while the memory's content has this hash. */
  content_sha256?: string;
}

export const sha256Hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
/** Rounds of re-read and compare-and-swap an update tries before answering 409. */
const MAX_CAS_ROUNDS = 20;

function checkContent(content: string): number {
  checkWellFormed(content, 'content');
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > MAX_MEMORY_BYTES)
    throw invalid(
      'content',
      `is ${bytes} bytes; a memory holds at most ${MAX_MEMORY_BYTES} bytes (100 kB)`,
    );
  return bytes;
}

export class MemoryService {
  private clock: () => number = Date.now;
  private hook: MemorySearchHook | null = null;
  private checkEmbeddingModel: EmbeddingModelCheck = async () => {};
  readonly versions: MemoryVersions;
  /** Lifecycle webhooks memory_store.* (platform wiring: platform.webhooks). */
  webhooks: LifecycleWebhooks | null = null;

  constructor(
    private readonly c: Collections,
    private readonly log: Logger,
  ) {
    this.versions = new MemoryVersions(c, () => this.clock());
  }

  /** The clock writes and the sweep read (tests inject one; default Date.now). */
  setClock(clock: () => number): void {
    this.clock = clock;
  }
  now(): number {
    return this.clock();
  }
  setSearchHook(hook: MemorySearchHook): void {
    this.hook = hook;
  }
  setEmbeddingModelCheck(check: EmbeddingModelCheck): void {
    this.checkEmbeddingModel = check;
  }
  private nowIso(): string {
    return new Date(this.clock()).toISOString();
  }
  private async tellSearch(what: string, f: (h: MemorySearchHook) => Promise<void>): Promise<void> {
    if (!this.hook) return;
    try {
      await f(this.hook);
    } catch (err) {
      this.log.warn('memory search hook failed', { op: what, error: String(err) });
    }
  }

  // ---- stores ----

  private async storeDoc(tenant: string, id: string): Promise<MemoryStoreDoc> {
    const s = await this.c.memoryStores.get(tenant, id);
    if (!s) throw notFound('memory_store', id);
    return s;
  }
  private async liveStore(tenant: string, id: string): Promise<MemoryStoreDoc> {
    const s = await this.storeDoc(tenant, id);
    if (s.archived_at)
      throw invalid(
        'memory_store_id',
        `memory store ${id} is archived; its memories are read-only`,
      );
    return s;
  }

  async createStore(tenant: string, b: MemoryStoreCreate): Promise<MemoryStore> {
    checkWellFormed(b.name, 'name');
    checkWellFormed(b.description ?? '', 'description');
    refuseVectorIndex(b.vector_index);
    if (b.embedding_model) await this.checkEmbeddingModel(tenant, b.embedding_model);
    const now = this.nowIso();
    const id = newId(MEMORY_STORE_PREFIX);
    const doc: Omit<MemoryStoreDoc, 'tenant_id'> = {
      _id: id,
      name: b.name,
      description: b.description ?? '',
      metadata: b.metadata ?? {},
      agent_id: b.agent_id ?? null,
      embedding_model: b.embedding_model ?? null,
      vector_index: `memidx_${id.slice(MEMORY_STORE_PREFIX.length)}`,
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.c.memoryStores.insert(tenant, doc);
    await this.webhooks?.emit(tenant, 'memory_store.created', { id });
    return renderStore({ ...doc, tenant_id: tenant });
  }

  async getStore(tenant: string, id: string): Promise<MemoryStore> {
    return renderStore(await this.storeDoc(tenant, id));
  }

  async listStores(tenant: string, q: MemoryStoreListQuery): Promise<Page<MemoryStore>> {
    const filter: Filter = {};
    if (!q.include_archived) filter.archived_at = null;
    if (q.agent_id) filter.agent_id = q.agent_id;
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    const page = await pageById(this.c.memoryStores, tenant, filter, q, 'desc');
    return { ...page, data: page.data.map(renderStore) };
  }

  async updateStore(tenant: string, id: string, b: MemoryStoreUpdate): Promise<MemoryStore> {
    const s = await this.liveStore(tenant, id);
    refuseVectorIndex(b.vector_index);
    checkWellFormed(b.name ?? '', 'name');
    checkWellFormed(b.description ?? '', 'description');
    const set: Record<string, unknown> = {};
    if (b.name !== undefined && b.name !== null) set.name = b.name;
    if (b.description !== undefined) set.description = b.description ?? '';
    if (b.metadata !== undefined) set.metadata = applyMetadataPatch(s.metadata, b.metadata);
    if (b.embedding_model !== undefined) {
      // null (or empty) returns the store to the platform default; a change re-embeds lazily.
      if (b.embedding_model) await this.checkEmbeddingModel(tenant, b.embedding_model);
      set.embedding_model = b.embedding_model || null;
    }
    if (Object.keys(set).length === 0) return renderStore(s);
    set.updated_at = this.nowIso();
    const after = await this.c.memoryStores.findOneAndUpdate(
      tenant,
      { _id: id, archived_at: null },
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!after) await this.liveStore(tenant, id);
    return renderStore(after ?? (await this.storeDoc(tenant, id)));
  }

  /** Final: an archived store stays archived; archiving again returns it unchanged. */
  async archiveStore(tenant: string, id: string): Promise<MemoryStore> {
    await this.storeDoc(tenant, id);
    const now = this.nowIso();
    const r = await this.c.memoryStores.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.webhooks?.emit(tenant, 'memory_store.archived', { id });
    return this.getStore(tenant, id);
  }

  /** Deletes the store, then its memories and versions, then its search index. */
  async deleteStore(tenant: string, id: string) {
    await this.storeDoc(tenant, id);
    const deleted = await this.c.memoryStores.deleteOne(tenant, { _id: id });
    await this.c.memories.deleteMany(tenant, { store_id: id });
    await this.c.memoryVersions.deleteMany(tenant, { store_id: id });
    await this.tellSearch('dropStore', (h) => h.dropStore(tenant, id));
    if (deleted) await this.webhooks?.emit(tenant, 'memory_store.deleted', { id });
    return { type: 'memory_store_deleted' as const, id };
  }

  // ---- memories ----

  /** The live memory at `path`, or another memory's path it would overlap, other than `self`. */
  private async overlapping(
    tenant: string,
    storeId: string,
    path: string,
    self: string | null,
  ): Promise<MemoryDoc | null> {
    const not = self ? { _id: { $ne: self } } : {};
    const exactOrAncestor = await this.c.memories.findOne(tenant, {
      store_id: storeId,
      path: { $in: [path, ...ancestorsOf(path)] },
      ...not,
    });
    if (exactOrAncestor) return exactOrAncestor;
    return this.c.memories.findOne(
      tenant,
      { store_id: storeId, path: underPrefix(path + '/'), ...not },
      { sort: { path: 1 } },
    );
  }
  private async refuseOverlap(tenant: string, storeId: string, path: string, self: string | null) {
    const other = await this.overlapping(tenant, storeId, path, self);
    if (other) throw pathConflict(other.path, other._id, path);
  }
  private async conflictAt(tenant: string, storeId: string, path: string) {
    const other = await this.c.memories.findOne(tenant, { store_id: storeId, path });
    return pathConflict(path, other?._id ?? '', path);
  }

  /** Create at a path: 409 when the path (or an overlapping one) is taken. */
  async createMemory(
    tenant: string,
    storeId: string,
    b: { path: string; content: string | null },
    actor: MemoryActor | null = null,
  ): Promise<Memory> {
    await this.liveStore(tenant, storeId);
    const path = checkMemoryPath(b.path);
    const content = b.content ?? '';
    const size = checkContent(content);
    await this.refuseOverlap(tenant, storeId, path, null);
    const now = this.nowIso();
    const id = newId(MEMORY_PREFIX);
    const write: VersionWrite = { operation: 'created', content, path, actor };
    const versionId = this.versions.newVersionId();
    const doc: Omit<MemoryDoc, 'tenant_id'> = {
      _id: id,
      store_id: storeId,
      path,
      content,
      content_sha256: sha256Hex(content),
      content_size_bytes: size,
      version_id: versionId,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.c.memories.insert(tenant, doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw await this.conflictAt(tenant, storeId, path);
      throw err;
    }
    // A concurrent create of an ancestor or descendant path: the older id keeps its path.
    const other = await this.overlapping(tenant, storeId, path, id);
    if (other && other._id < id) {
      await this.c.memories.deleteOne(tenant, { _id: id, version_id: versionId });
      throw pathConflict(other.path, other._id, path);
    }
    await this.versions.record(tenant, storeId, id, versionId, write, now);
    await this.tellSearch('upsert', (h) => h.upsert(tenant, storeId, { id, path, content }));
    return renderMemory({ ...doc, tenant_id: tenant });
  }

  private async memoryDoc(tenant: string, storeId: string, id: string): Promise<MemoryDoc> {
    await this.storeDoc(tenant, storeId);
    const m = await this.c.memories.findOne(tenant, { _id: id, store_id: storeId });
    if (!m) throw notFound('memory', id);
    return m;
  }

  async getMemory(tenant: string, storeId: string, id: string, view: View = 'full') {
    return renderMemory(await this.memoryDoc(tenant, storeId, id), view);
  }

  /** The live memory at exactly `path`, or null. */
  async getMemoryByPath(tenant: string, storeId: string, path: string): Promise<Memory | null> {
    await this.storeDoc(tenant, storeId);
    const m = await this.c.memories.findOne(tenant, { store_id: storeId, path });
    return m ? renderMemory(m) : null;
  }

  /** Memories in path order, below `path_prefix`; `depth` ≥ 1 rolls deeper ones into prefixes. */
  async listMemories(
    tenant: string,
    storeId: string,
    q: MemoryListQuery = {},
  ): Promise<Page<MemoryListItem>> {
    await this.storeDoc(tenant, storeId);
    return listMemoryPage(this.c, tenant, storeId, q);
  }

  /** The spec's recent entries: the store's most recently changed memories, with content. */
  async recentEntries(tenant: string, storeId: string, limit = 20) {
    await this.storeDoc(tenant, storeId);
    const rows = await this.c.memories.find(
      tenant,
      { store_id: storeId },
      { sort: { updated_at: -1, _id: -1 }, limit },
    );
    return { data: rows.map((m) => renderMemory(m)) };
  }

  /**
   * Update content and/or path. `content_sha256` given → compare-and-swap: a mismatch is 409
   * (atomic on the store: of two concurrent writers, one wins).
   */
  async updateMemory(
    tenant: string,
    storeId: string,
    id: string,
    b: MemoryUpdateInput,
    actor: MemoryActor | null = null,
  ): Promise<Memory> {
    await this.liveStore(tenant, storeId);
    const wantPath = b.path == null ? null : checkMemoryPath(b.path);
    const wantContent = b.content ?? null;
    const size = wantContent === null ? null : checkContent(wantContent);
    for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
      const cur = await this.memoryDoc(tenant, storeId, id);
      const content = wantContent ?? cur.content;
      const path = wantPath ?? cur.path;
      if (content === cur.content && path === cur.path) return renderMemory(cur);
      if (b.content_sha256 !== undefined && b.content_sha256 !== cur.content_sha256)
        throw preconditionFailed(id);
      if (path !== cur.path) await this.refuseOverlap(tenant, storeId, path, id);
      const now = this.nowIso();
      const versionId = this.versions.newVersionId();
      const set: Partial<MemoryDoc> = { path, version_id: versionId, updated_at: now };
      if (content !== cur.content)
        Object.assign(set, {
          content,
          content_sha256: sha256Hex(content),
          content_size_bytes: size ?? Buffer.byteLength(content, 'utf8'),
        });
      let after: MemoryDoc | null;
      try {
        after = await this.c.memories.findOneAndUpdate(
          tenant,
          { _id: id, store_id: storeId, version_id: cur.version_id },
          { $set: set },
          { returnDocument: 'after' },
        );
      } catch (err) {
        if (err instanceof DuplicateKeyError) throw await this.conflictAt(tenant, storeId, path);
        throw err;
      }
      if (!after) continue; // another writer got there first: re-read and decide again
      const write: VersionWrite = { operation: 'modified', content, path, actor };
      await this.versions.record(tenant, storeId, id, versionId, write, now);
      await this.tellSearch('upsert', (h) => h.upsert(tenant, storeId, { id, path, content }));
      return renderMemory(after);
    }
    throw conflict(`memory ${id} is changing too fast; retry`);
  }

  /** Deletes the live memory (its versions stay, plus a `deleted` one). */
  async deleteMemory(
    tenant: string,
    storeId: string,
    id: string,
    opts: { expected_content_sha256?: string } = {},
    actor: MemoryActor | null = null,
  ) {
    const cur = await this.memoryDoc(tenant, storeId, id);
    const expected = opts.expected_content_sha256;
    if (expected !== undefined && expected !== cur.content_sha256)
      throw preconditionFailed(id, 'expected_content_sha256');
    const filter: Filter = { _id: id, store_id: storeId };
    if (expected !== undefined) filter.content_sha256 = expected;
    if ((await this.c.memories.deleteOne(tenant, filter)) === 0) {
      await this.memoryDoc(tenant, storeId, id); // gone meanwhile: 404
      throw preconditionFailed(id, 'expected_content_sha256');
    }
    const write: VersionWrite = { operation: 'deleted', content: null, path: cur.path, actor };
    const versionId = this.versions.newVersionId();
    await this.versions.record(tenant, storeId, id, versionId, write, this.nowIso());
    await this.tellSearch('remove', (h) => h.remove(tenant, storeId, id));
    return { type: 'memory_deleted' as const, id };
  }

  // ---- versions ----

  async listVersions(tenant: string, storeId: string, q: MemoryVersionListQuery = {}) {
    await this.storeDoc(tenant, storeId);
    return this.versions.list(tenant, storeId, q);
  }
  async getVersion(tenant: string, storeId: string, versionId: string, view: View = 'full') {
    await this.storeDoc(tenant, storeId);
    return this.versions.get(tenant, storeId, versionId, view);
  }
  /** Removes a version's content (and path, hash, size), keeping its record. */
  async redactVersion(
    tenant: string,
    storeId: string,
    versionId: string,
    actor: MemoryActor | null = null,
  ) {
    await this.storeDoc(tenant, storeId);
    return this.versions.redact(tenant, storeId, versionId, actor);
  }

  /** Daily retention (03:00 UTC): keep each memory's newest version, prune older ones > 30 days. */
  sweepVersions(nowMs: number = this.clock()): Promise<{ pruned: number }> {
    return sweepVersions(this.c, nowMs);
  }
}
