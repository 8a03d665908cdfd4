/**
 * OpenAPI entries of the memory store routes (gateway/src/routes/memoryStores.ts): stores,
 * memories and memory versions. test/e2e/api/openapi.test.ts fails when a route lacks an entry or an
 * entry names no route.
 */
import { Type } from '@sinclair/typebox';
import {
  Deleted,
  Id,
  ListPage,
  Memory,
  MemoryCreate,
  MemoryDeleteQuery,
  MemoryEntriesQuery,
  MemoryListQuery,
  MemoryPrefix,
  MemoryStore,
  MemoryStoreCreate,
  MemoryStoreListQuery,
  MemoryStoreUpdate,
  MemoryUpdate,
  MemoryVersion,
  MemoryVersionListQuery,
  MemoryViewQuery,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'memory';
const store = { id: Id('memstore_') };
const memory = { ...store, memory_id: Id('mem_') };
const version = { ...store, version_id: Id('memver_') };
const oneStore = { description: 'The memory store.', content: json(MemoryStore) };
const oneMemory = {
  description: 'The memory (`content` null with view=basic).',
  content: json(Memory),
};
const oneVersion = { description: 'The memory version.', content: json(MemoryVersion) };

export const MEMORY_STORE_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/memory_stores': {
    operationId: 'createMemoryStore',
    summary: 'Create a memory store',
    tag,
    body: {
      schema: MemoryStoreCreate,
      required: true,
      example: { name: 'team notes', description: 'What the team learned' },
    },
    ok: oneStore,
  },
  'GET /v1/memory_stores': {
    operationId: 'listMemoryStores',
    summary: 'List memory stores (newest first; `agent_id` filters per agent)',
    tag,
    query: MemoryStoreListQuery,
    ok: { description: 'A page of memory stores.', content: json(ListPage(MemoryStore)) },
  },
  'GET /v1/memory_stores/:id': {
    operationId: 'getMemoryStore',
    summary: 'Retrieve a memory store',
    tag,
    params: store,
    ok: oneStore,
  },
  'POST /v1/memory_stores/:id': {
    operationId: 'updateMemoryStore',
    summary: 'Update a memory store (refused once archived)',
    tag,
    params: store,
    body: { schema: MemoryStoreUpdate, required: true, example: { name: 'renamed' } },
    ok: oneStore,
  },
  'DELETE /v1/memory_stores/:id': {
    operationId: 'deleteMemoryStore',
    summary: 'Delete a memory store, its memories, versions and search index',
    tag,
    params: store,
    ok: { description: 'Deleted.', content: json(Deleted('memory_store_deleted')) },
  },
  'POST /v1/memory_stores/:id/archive': {
    operationId: 'archiveMemoryStore',
    summary: 'Archive a memory store (final: its memories become read-only)',
    tag,
    params: store,
    ok: oneStore,
  },
  'GET /v1/memory_stores/:id/entries': {
    operationId: 'listMemoryStoreEntries',
    summary: "The store's most recently changed memories, with content",
    tag,
    params: store,
    query: MemoryEntriesQuery,
    ok: {
      description: 'Recent entries, newest change first.',
      content: json(Type.Object({ data: Type.Array(Memory) }, { additionalProperties: false })),
    },
  },
  'POST /v1/memory_stores/:id/memories': {
    operationId: 'createMemory',
    summary: 'Create a memory at a path (409 on a path conflict)',
    tag,
    params: store,
    query: MemoryViewQuery,
    body: {
      schema: MemoryCreate,
      required: true,
      example: { path: '/notes/todo.md', content: 'Check the deploy runbook.' },
    },
    ok: oneMemory,
    conflict: true,
  },
  'GET /v1/memory_stores/:id/memories': {
    operationId: 'listMemories',
    summary: 'List memories in path order (depth ≥ 1 rolls deeper ones into prefixes)',
    tag,
    params: store,
    query: MemoryListQuery,
    ok: {
      description: 'A page of memories and memory prefixes.',
      content: json(ListPage(Type.Union([Memory, MemoryPrefix]))),
    },
  },
  'GET /v1/memory_stores/:id/memories/:memory_id': {
    operationId: 'getMemory',
    summary: 'Retrieve a memory',
    tag,
    params: memory,
    query: MemoryViewQuery,
    ok: oneMemory,
  },
  'POST /v1/memory_stores/:id/memories/:memory_id': {
    operationId: 'updateMemory',
    summary: 'Update or rename a memory (content_sha256 precondition: compare-and-swap)',
    tag,
    params: memory,
    query: MemoryViewQuery,
    body: { schema: MemoryUpdate, required: true, example: { content: 'Updated.' } },
    ok: oneMemory,
    conflict: true,
  },
  'DELETE /v1/memory_stores/:id/memories/:memory_id': {
    operationId: 'deleteMemory',
    summary: 'Delete a memory (its versions stay)',
    tag,
    params: memory,
    query: MemoryDeleteQuery,
    ok: { description: 'Deleted.', content: json(Deleted('memory_deleted')) },
    conflict: true,
  },
  'GET /v1/memory_stores/:id/memory_versions': {
    operationId: 'listMemoryVersions',
    summary: "List a store's memory versions (newest first)",
    tag,
    params: store,
    query: MemoryVersionListQuery,
    ok: { description: 'A page of memory versions.', content: json(ListPage(MemoryVersion)) },
  },
  'GET /v1/memory_stores/:id/memory_versions/:version_id': {
    operationId: 'getMemoryVersion',
    summary: 'Retrieve a memory version',
    tag,
    params: version,
    query: MemoryViewQuery,
    ok: oneVersion,
  },
  'POST /v1/memory_stores/:id/memory_versions/:version_id/redact': {
    operationId: 'redactMemoryVersion',
    summary:
      'Redact a memory version (its content, hash, size and path are removed; the record stays)',
    tag,
    params: version,
    ok: oneVersion,
    conflict: true,
  },
};
