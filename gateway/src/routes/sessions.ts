import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  EventListQuery,
  MessagesBody,
  SendEventsBody,
  SessionCreate,
  SessionListQuery,
  SessionResourceAdd,
  SessionResourceListQuery,
  SessionResourceUpdate,
  SessionUpdate,
} from '@agentfleet/schemas';
import {
  createdAtBounds,
  decodeCursor,
  refuseUnbuiltEvents,
  renderEvent,
  type Logger,
} from '@agentfleet/core';
import { bodyOf, optionalBody, queryOf, tenantOf } from '../http.js';
import { streamSession, writeItem, type StreamServices } from '../sessionStream.js';
import { SseWriter, type StreamSlots } from '../sse.js';
import type { GatewayServices } from '../services.js';

const createBody = bodyOf(SessionCreate);
const updateBody = optionalBody(SessionUpdate);
const listQuery = queryOf(SessionListQuery);
const eventsQuery = queryOf(EventListQuery);
const sendBody = bodyOf(SendEventsBody);
const messagesBody = bodyOf(MessagesBody);
const resourceAdd = bodyOf(SessionResourceAdd);
const resourceUpdate = bodyOf(SessionResourceUpdate);
const resourceList = queryOf(SessionResourceListQuery);
type ResourceReq = FastifyRequest<{ Params: { id: string; resource_id: string } }>;

type IdReq = FastifyRequest<{ Params: { id: string } }>;

export type SessionRouteServices = StreamServices & Pick<GatewayServices, 'files'>;

export function sessionRoutes(
  app: FastifyInstance,
  p: SessionRouteServices,
  streams: StreamSlots,
  log: Logger,
) {
  app.post('/v1/sessions', async (req) => p.sessions.create(tenantOf(req), createBody(req)));
  app.get('/v1/sessions', async (req) => p.sessions.list(tenantOf(req), listQuery(req)));
  app.get<{ Params: { id: string } }>('/v1/sessions/:id', async (req) =>
    p.sessions.get(tenantOf(req), req.params.id),
  );
  app.post<{ Params: { id: string } }>('/v1/sessions/:id', async (req) =>
    p.sessions.update(tenantOf(req), req.params.id, updateBody(req)),
  );
  app.patch<{ Params: { id: string } }>('/v1/sessions/:id', async (req) =>
    p.sessions.update(tenantOf(req), req.params.id, updateBody(req)),
  );
  // Spec retention table: stop the runtime, then cascade session files and the output prefix;
  // a failed blob delete is logged for reconciliation, never a 5xx (test/e2e/sessions/session-delete.test.ts).
  app.delete<{ Params: { id: string } }>('/v1/sessions/:id', async (req) => {
    const tenant = tenantOf(req);
    const id = req.params.id;
    const deleted = await p.sessions.remove(tenant, id);
    const { failedKeys } = await p.files.cascadeSessionDelete(tenant, id);
    for (const key of failedKeys)
      log.warn('session delete: blob delete failed; left for reconciliation', {
        tenant_id: tenant,
        session_id: id,
        object_key: key,
      });
    return deleted;
  });
  // sessions.resources (core/src/sessions/sessionResources.ts).
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/resources', async (req) =>
    p.sessions.resources.list(tenantOf(req), req.params.id, resourceList(req)),
  );
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/resources', async (req) =>
    p.sessions.resources.add(tenantOf(req), req.params.id, resourceAdd(req)),
  );
  app.get('/v1/sessions/:id/resources/:resource_id', async (req: ResourceReq) =>
    p.sessions.resources.get(tenantOf(req), req.params.id, req.params.resource_id),
  );
  app.post('/v1/sessions/:id/resources/:resource_id', async (req: ResourceReq) =>
    p.sessions.resources.update(
      tenantOf(req),
      req.params.id,
      req.params.resource_id,
      resourceUpdate(req),
    ),
  );
  app.delete('/v1/sessions/:id/resources/:resource_id', async (req: ResourceReq) =>
    p.sessions.resources.remove(tenantOf(req), req.params.id, req.params.resource_id),
  );
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/archive', async (req) =>
    p.sessions.archive(tenantOf(req), req.params.id),
  );
  app.post<{ Params: { id: string } }>(
    '/v1/sessions/:id/cancel',
    { config: { beta: true } },
    async (req) => p.sessions.cancel(tenantOf(req), req.params.id),
  );

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/events', async (req, reply) => {
    refuseUnbuiltEvents(req.body);
    const written = await p.sessions.send(tenantOf(req), req.params.id, sendBody(req).events);
    // The spec answers 202; the SDK reads `{data}`: both are served.
    return reply.code(202).send({ data: written.map(renderEvent) });
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/events', async (req: IdReq, reply) => {
    if (String(req.headers.accept ?? '').includes('text/event-stream'))
      return streamSession(p, streams, req, reply);
    return listEvents(p, req);
  });
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/events/stream', (req: IdReq, reply) =>
    streamSession(p, streams, req, reply),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/sessions/:id/log',
    { config: { beta: true } },
    async (req) => {
      await p.sessions.getDoc(tenantOf(req), req.params.id);
      return (await p.events.all(tenantOf(req), req.params.id)).map(renderEvent);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/sessions/:id/messages',
    { config: { beta: true } },
    async (req: IdReq, reply) => {
      const tenant = tenantOf(req);
      const body = messagesBody(req);
      const content =
        typeof body.content === 'string'
          ? [{ type: 'text' as const, text: body.content }]
          : body.content;
      const head = (await p.sessions.getDoc(tenant, req.params.id)).last_seq;
      // A stream slot first (sse.ts StreamSlots): a refused stream appends no message.
      const giveSlot = streams.take(tenant, reply);
      try {
        const [msg] = await p.sessions.send(tenant, req.params.id, [
          { type: 'user.message', content },
        ]);
        const sse = new SseWriter(req, reply, p.config.sseMaxBufferedBytes);
        let running = false;
        // Replays from the head read before the append, so nothing between append and subscribe is lost.
        for await (const item of p.events.follow(tenant, req.params.id, {
          afterSeq: head,
          includeLive: true,
          signal: sse.signal,
        })) {
          writeItem(sse, item, { chunks: true, deltas: new Set() });
          const seq = (item as { seq?: number }).seq ?? 0;
          if (item.type === 'session.status_running' && seq > msg!.seq) running = true;
          if (item.type === 'session.status_idle' && running) break;
        }
        sse.close();
      } finally {
        giveSlot();
      }
    },
  );
}

/**
 * The REST page of a session's events (core/src/events/list.ts): `page` (SDK) or `cursor`
 * (spec) continues forward only, whatever direction the cursor names; the answer carries
 * `next_page` and no `prev_page`.
 */
/** A session's events (or, `logId`, a thread's: core/src/threads, checked by the caller). */
export async function listEvents(
  p: Pick<GatewayServices, 'sessions' | 'events'>,
  req: IdReq,
  logId?: string,
) {
  const tenant = tenantOf(req);
  const q = eventsQuery(req);
  if (!logId) await p.sessions.getDoc(tenant, req.params.id);
  const token = q.page ?? q.cursor;
  const cur = token ? decodeCursor(token, q.page ? 'page' : 'cursor') : null;
  const page = await p.events.list(tenant, logId ?? req.params.id, {
    limit: q.limit ?? 100,
    order: q.order === 'desc' ? 'desc' : 'asc',
    afterSeq: q.after_seq,
    types: q.types,
    createdAt: createdAtBounds(q),
    cursor: cur ? { seq: Number(cur.k), backwards: false } : null,
  });
  return {
    data: page.data,
    has_more: page.has_more,
    next_page: page.next_page,
    first_id: page.first_id,
    last_id: page.last_id,
  };
}
