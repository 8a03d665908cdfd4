/**
 * Memory versions (SDK `client.beta.memoryStores.memoryVersions`): one record per write, kept
 * after the memory is deleted, listed newest first. Redaction removes a version's content,
 * hash, size and path and keeps the record (`redacted_at`, `redacted_by`); redacting again
 * returns it unchanged. The version that holds a live memory's current content cannot be
 * redacted (409): update or delete the memory first, so redaction always removes the content
 * from the store. Proved by test/e2e/memory/memory-stores.test.ts ("versions").
 */
import type { MemoryVersionListQuery } from '@agentfleet/schemas';
import { conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import { createdAtBounds, pageById } from '../api/pagination.js';
import type { Filter } from '../store/port.js';
import {
  MEMORY_VERSION_PREFIX,
  type MemoryActor,
  type MemoryVersionDoc,
  type MemoryVersionOperation,
} from './records.js';
import { renderVersion, type View } from './render.js';
import { createHash } from 'node:crypto';

export interface VersionWrite {
  operation: MemoryVersionOperation;
  /** Null for `deleted`. */
  content: string | null;
  path: string;
  actor: MemoryActor | null;
}

/** With `view=full`, list pages hold at most 20 items (SDK). */
const FULL_VIEW_MAX = 20;

export class MemoryVersions {
  constructor(
    private readonly c: Collections,
    private readonly clock: () => number,
  ) {}

  newVersionId(): string {
    return newId(MEMORY_VERSION_PREFIX);
  }

  async record(
    tenant: string,
    storeId: string,
    memoryId: string,
    versionId: string,
    w: VersionWrite,
    createdAt: string,
  ): Promise<void> {
    const content = w.content;
    await this.c.memoryVersions.insert(tenant, {
      _id: versionId,
      store_id: storeId,
      memory_id: memoryId,
      operation: w.operation,
      content,
      content_sha256:
        content === null ? null : createHash('sha256').update(content, 'utf8').digest('hex'),
      content_size_bytes: content === null ? null : Buffer.byteLength(content, 'utf8'),
      path: w.path,
      created_by: w.actor,
      redacted_at: null,
      redacted_by: null,
      created_at: createdAt,
      created_ms: Date.parse(createdAt),
    });
  }

  async list(tenant: string, storeId: string, q: MemoryVersionListQuery) {
    const filter: Filter = { store_id: storeId };
    if (q.memory_id) filter.memory_id = q.memory_id;
    if (q.operation) filter.operation = q.operation;
    if (q.api_key_id) filter['created_by.api_key_id'] = q.api_key_id;
    if (q.session_id) filter['created_by.session_id'] = q.session_id;
    // No service accounts here: nothing was written by one.
    if (q.service_account_id) filter._id = { $in: [] };
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    const view: View = q.view ?? 'basic';
    const limit = view === 'full' ? Math.min(q.limit ?? FULL_VIEW_MAX, FULL_VIEW_MAX) : q.limit;
    const page = await pageById(this.c.memoryVersions, tenant, filter, { ...q, limit }, 'desc');
    return { ...page, data: page.data.map((v) => renderVersion(v, view)) };
  }

  private async doc(tenant: string, storeId: string, id: string): Promise<MemoryVersionDoc> {
    const v = await this.c.memoryVersions.findOne(tenant, { _id: id, store_id: storeId });
    if (!v) throw notFound('memory_version', id);
    return v;
  }

  async get(tenant: string, storeId: string, id: string, view: View = 'full') {
    return renderVersion(await this.doc(tenant, storeId, id), view);
  }

  async redact(tenant: string, storeId: string, id: string, actor: MemoryActor | null) {
    const v = await this.doc(tenant, storeId, id);
    if (v.redacted_at) return renderVersion(v);
    const live = await this.c.memories.findOne(tenant, { _id: v.memory_id, store_id: storeId });
    if (live && live.version_id === id)
      throw conflict(
        `memory version ${id} holds memory ${v.memory_id}'s current content; update or delete the memory first, then redact`,
        { field: 'memory_version_id' },
      );
    const now = new Date(this.clock()).toISOString();
    const after = await this.c.memoryVersions.findOneAndUpdate(
      tenant,
      { _id: id, store_id: storeId, redacted_at: null },
      {
        $set: {
          content: null,
          content_sha256: null,
          content_size_bytes: null,
          path: null,
          redacted_at: now,
          redacted_by: actor,
        },
      },
      { returnDocument: 'after' },
    );
    return renderVersion(after ?? (await this.doc(tenant, storeId, id)));
  }
}
