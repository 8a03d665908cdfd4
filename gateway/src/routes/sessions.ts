import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  EventListQuery,
  MessagesBody,
  SendEventsBody,
  SessionCreate,
  SessionListQuery,
  SessionUpdate,
} from '@agentfleet/schemas';
import {
  createdAtBounds,
  decodeCursor,
  encodeCursor,
  cascadeSessionDelete,
  followSession,
  refuseUnbuiltEvents,
  renderEvent,
  type Logger,
  type Platform,
} from '@agentfleet/core';
import { bodyOf, optionalBody, queryOf, tenantOf } from '../http.js';
import { streamSession, writeItem } from '../sessionStream.js';
import { SseWriter, takeStreamSlot } from '../sse.js';

const createBody = bodyOf(SessionCreate);
const updateBody = optionalBody(SessionUpdate);
const listQuery = queryOf(SessionListQuery);
const eventsQuery = queryOf(EventListQuery);
const sendBody = bodyOf(SendEventsBody);
const messagesBody = bodyOf(MessagesBody);

type IdReq = FastifyRequest<{ Params: { id: string } }>;

export function sessionRoutes(app: FastifyInstance, p: Platform, log: Logger) {
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
  // a failed blob delete is logged for reconciliation, never a 5xx (test/session-delete.test.ts).
  app.delete<{ Params: { id: string } }>('/v1/sessions/:id', async (req) => {
    const tenant = tenantOf(req);
    const id = req.params.id;
    const deleted = await p.sessions.remove(tenant, id);
    const { failedKeys } = await cascadeSessionDelete(p.collections, p.objects, tenant, id);
    for (const key of failedKeys)
      log.warn('session delete: blob delete failed; left for reconciliation', {
        tenant_id: tenant,
        session_id: id,
        object_key: key,
      });
    return deleted;
  });
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
      return streamSession(p, req, reply);
    return listEvents(p, req);
  });
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/events/stream', (req: IdReq, reply) =>
    streamSession(p, req, reply),
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
      // A stream slot first (sse.ts takeStreamSlot): a refused stream appends no message.
      const giveSlot = takeStreamSlot(p, tenant, reply);
      try {
        const [msg] = await p.sessions.send(tenant, req.params.id, [
          { type: 'user.message', content },
        ]);
        const sse = new SseWriter(req, reply, p.config.sseMaxBufferedBytes);
        let running = false;
        // Replays from the head read before the append, so nothing between append and subscribe is lost.
        for await (const item of followSession(
          p.collections,
          p.events,
          p.coordination.pubsub,
          tenant,
          req.params.id,
          { afterSeq: head, includeLive: true, signal: sse.signal },
        )) {
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

async function listEvents(p: Platform, req: IdReq) {
  const tenant = tenantOf(req);
  const q = eventsQuery(req);
  await p.sessions.getDoc(tenant, req.params.id);
  const limit = q.limit ?? 100;
  const desc = q.order === 'desc';
  const token = q.page ?? q.cursor;
  const cur = token ? decodeCursor(token, q.page ? 'page' : 'cursor') : null;
  const seq: Record<string, number> = {};
  if (q.after_seq !== undefined) seq.$gt = q.after_seq;
  if (cur) seq[desc ? '$lt' : '$gt'] = Number(cur.k);
  const filter: Record<string, unknown> = { session_id: req.params.id };
  if (Object.keys(seq).length) filter.seq = seq;
  if (q.types?.length) filter.type = { $in: q.types };
  const created = createdAtBounds(q);
  if (created) filter.created_at = created;
  const rows = await p.collections.events.find(tenant, filter, {
    sort: { seq: desc ? -1 : 1 },
    limit: limit + 1,
  });
  // Spilled payloads (> 500 KB) are served whole, a page's total bounded: a page cut short
  // says has_more (core/src/events/spill.ts servedPrefix).
  const served = await p.events.servedPrefix(rows.slice(0, limit));
  const has_more = rows.length > served;
  const data = (await p.events.hydrate(rows.slice(0, served))).map(renderEvent);
  const last = data[data.length - 1];
  return {
    data,
    has_more,
    next_page: has_more && last ? encodeCursor({ k: last.seq, d: 'next' }) : null,
    first_id: data[0]?.id ?? null,
    last_id: last?.id ?? null,
  };
}
