/**
 * Memory store routes: the SDK's paths (`client.beta.memoryStores`: create, retrieve, update
 * (POST), list, delete, archive; `.memories`: create, retrieve, update (POST), list, delete;
 * `.memoryVersions`: list, retrieve, redact) and the spec's `/v1/memory_stores` (list filtered by
 * `agent_id`, create with `agent_id`/`embedding_model`, `GET …/entries`, `DELETE` dropping the
 * index), every handler tenant-scoped through core/src/memory/service.ts. Writes record the
 * calling API key as the version's `created_by` (`api_actor`). `view` defaults to `basic` on
 * memory create, update and list, and to `full` on retrieve (SDK). The search route is
 * ./memorySearch.ts. Proved by test/e2e/memory/memory-stores.test.ts and test/e2e/sdk/sdk_suite/test_memory.py.
 * The two updates need a body: none at all is a 400 naming `body`, while `{}` (what the Python
 * SDK sends for an update without fields) changes nothing and answers the object
 * (test/e2e/memory/memory-update-body.test.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  MemoryCreate,
  MemoryDeleteQuery,
  MemoryEntriesQuery,
  MemoryListQuery,
  MemoryStoreCreate,
  MemoryStoreListQuery,
  MemoryStoreUpdate,
  MemoryUpdate,
  MemoryVersionListQuery,
  MemoryViewQuery,
} from '@agentfleet/schemas';
import type { Memory, MemoryActor } from '@agentfleet/core';
import { bodyOf, queryOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

const storeCreateBody = bodyOf(MemoryStoreCreate);
const storeUpdateBody = bodyOf(MemoryStoreUpdate);
const storeListQuery = queryOf(MemoryStoreListQuery);
const entriesQuery = queryOf(MemoryEntriesQuery);
const memoryCreateBody = bodyOf(MemoryCreate);
const memoryUpdateBody = bodyOf(MemoryUpdate);
const memoryListQuery = queryOf(MemoryListQuery);
const viewQuery = queryOf(MemoryViewQuery);
const deleteQuery = queryOf(MemoryDeleteQuery);
const versionListQuery = queryOf(MemoryVersionListQuery);

type StoreReq = FastifyRequest<{ Params: { id: string } }>;
type MemoryReq = FastifyRequest<{ Params: { id: string; memory_id: string } }>;
type VersionReq = FastifyRequest<{ Params: { id: string; version_id: string } }>;

const actorOf = (req: FastifyRequest): MemoryActor =>
  req.principal.claim
    ? { type: 'session_actor', session_id: req.principal.claim.sessionId }
    : { type: 'api_actor', api_key_id: req.principal.keyId };

/** A memory as served in `view` (basic: content null; hash and size stay). */
const inView = (m: Memory, view: 'basic' | 'full') =>
  view === 'full' ? m : { ...m, content: null };

export function memoryStoreRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'memory'>) {
  const m = p.memory;
  // ---- stores ----
  app.post('/v1/memory_stores', async (req) => m.createStore(tenantOf(req), storeCreateBody(req)));
  app.get('/v1/memory_stores', async (req) => m.listStores(tenantOf(req), storeListQuery(req)));
  app.get('/v1/memory_stores/:id', async (req: StoreReq) =>
    m.getStore(tenantOf(req), req.params.id),
  );
  app.post('/v1/memory_stores/:id', async (req: StoreReq) =>
    m.updateStore(tenantOf(req), req.params.id, storeUpdateBody(req)),
  );
  app.delete('/v1/memory_stores/:id', async (req: StoreReq) =>
    m.deleteStore(tenantOf(req), req.params.id),
  );
  app.post('/v1/memory_stores/:id/archive', async (req: StoreReq) =>
    m.archiveStore(tenantOf(req), req.params.id),
  );
  app.get('/v1/memory_stores/:id/entries', async (req: StoreReq) =>
    m.recentEntries(tenantOf(req), req.params.id, entriesQuery(req).limit),
  );

  // ---- memories ----
  app.post('/v1/memory_stores/:id/memories', async (req: StoreReq) => {
    const { view } = viewQuery(req);
    const created = await m.createMemory(
      tenantOf(req),
      req.params.id,
      memoryCreateBody(req),
      actorOf(req),
    );
    return inView(created, view ?? 'basic');
  });
  app.get('/v1/memory_stores/:id/memories', async (req: StoreReq) =>
    m.listMemories(tenantOf(req), req.params.id, memoryListQuery(req)),
  );
  app.get('/v1/memory_stores/:id/memories/:memory_id', async (req: MemoryReq) => {
    const { view } = viewQuery(req);
    return m.getMemory(tenantOf(req), req.params.id, req.params.memory_id, view ?? 'full');
  });
  app.post('/v1/memory_stores/:id/memories/:memory_id', async (req: MemoryReq) => {
    const { view } = viewQuery(req);
    const b = memoryUpdateBody(req);
    const updated = await m.updateMemory(
      tenantOf(req),
      req.params.id,
      req.params.memory_id,
      {
        path: b.path,
        content: b.content,
        ...(b.precondition?.content_sha256 !== undefined
          ? { content_sha256: b.precondition.content_sha256 }
          : {}),
      },
      actorOf(req),
    );
    return inView(updated, view ?? 'basic');
  });
  app.delete('/v1/memory_stores/:id/memories/:memory_id', async (req: MemoryReq) =>
    m.deleteMemory(
      tenantOf(req),
      req.params.id,
      req.params.memory_id,
      deleteQuery(req),
      actorOf(req),
    ),
  );

  // ---- versions ----
  app.get('/v1/memory_stores/:id/memory_versions', async (req: StoreReq) =>
    m.listVersions(tenantOf(req), req.params.id, versionListQuery(req)),
  );
  app.get('/v1/memory_stores/:id/memory_versions/:version_id', async (req: VersionReq) => {
    const { view } = viewQuery(req);
    return m.getVersion(tenantOf(req), req.params.id, req.params.version_id, view ?? 'full');
  });
  app.post('/v1/memory_stores/:id/memory_versions/:version_id/redact', async (req: VersionReq) =>
    m.redactVersion(tenantOf(req), req.params.id, req.params.version_id, actorOf(req)),
  );
}
