import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  EventListQuery,
  EXTENSION_CANONICAL_TYPES,
  MessagesBody,
  SendEventsBody,
  SessionCreate,
  SessionListQuery,
  SessionUpdate,
  StreamQuery,
} from '@agentfleet/schemas';
import {
  ApiError,
  createdAtBounds,
  decodeCursor,
  encodeCursor,
  cascadeSessionDelete,
  followSession,
  refuseUnbuiltEvents,
  renderEvent,
  type Logger,
  type Platform,
  type StreamItem,
} from '@agentfleet/core';
import { bodyOf, optionalBody, queryOf, tenantOf } from '../http.js';
import { SseWriter } from '../sse.js';

const createBody = bodyOf(SessionCreate);
const updateBody = optionalBody(SessionUpdate);
const listQuery = queryOf(SessionListQuery);
const eventsQuery = queryOf(EventListQuery);
const streamQuery = queryOf(StreamQuery);
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
      return stream(p, req, reply);
    return listEvents(p, req);
  });
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/events/stream', (req: IdReq, reply) =>
    stream(p, req, reply),
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
      const [msg] = await p.sessions.send(tenant, req.params.id, [
        { type: 'user.message', content },
      ]);
      const sse = new SseWriter(req, reply);
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
        write(sse, item, { chunks: true, deltas: new Set() });
        const seq = (item as { seq?: number }).seq ?? 0;
        if (item.type === 'session.status_running' && seq > msg!.seq) running = true;
        if (item.type === 'session.status_idle' && running) break;
      }
      sse.close();
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
  const has_more = rows.length > limit;
  // Spilled payloads (> 500 KB) are served whole (core/src/domain/eventSpill.ts).
  const data = (await p.events.hydrate(rows.slice(0, limit))).map(renderEvent);
  const last = data[data.length - 1];
  return {
    data,
    has_more,
    next_page: has_more && last ? encodeCursor({ k: last.seq, d: 'next' }) : null,
    first_id: data[0]?.id ?? null,
    last_id: last?.id ?? null,
  };
}

interface StreamMode {
  chunks: boolean;
  deltas: Set<string>;
}

/**
 * SSE: by default only the spec's event union from now on. `?include=chunks` adds extension
 * events; `?replay=1` replays history; `Last-Event-ID: <seq>` replays only seq > N. The SDK's
 * `event_deltas[]` turns message/thinking chunks into its `event_start`/`event_delta` frames.
 */
async function stream(p: Platform, req: IdReq, reply: FastifyReply) {
  const tenant = tenantOf(req);
  const q = streamQuery(req);
  await p.sessions.getDoc(tenant, req.params.id);
  const lastId = req.headers['last-event-id'];
  let afterSeq: number | null = null;
  if (lastId !== undefined) {
    const n = Number(lastId);
    if (!Number.isInteger(n) || n < 0)
      throw new ApiError(
        'invalid_request',
        'Last-Event-ID: must be a non-negative integer event seq',
      );
    afterSeq = n;
  } else if (q.replay === '1' || q.replay === 'true') afterSeq = 0;
  const mode: StreamMode = { chunks: !!q.include, deltas: new Set(q.event_deltas ?? []) };
  const abort = new AbortController();
  req.raw.once('close', () => abort.abort());
  let sse: SseWriter | null = null;
  // Headers go out only once the live subscription is in place (onReady).
  const open = () => {
    sse = new SseWriter(req, reply);
    sse.signal.addEventListener('abort', () => abort.abort(), { once: true });
  };
  try {
    for await (const item of followSession(
      p.collections,
      p.events,
      p.coordination.pubsub,
      tenant,
      req.params.id,
      {
        afterSeq,
        includeLive: mode.chunks || mode.deltas.size > 0,
        signal: abort.signal,
        onReady: open,
      },
    )) {
      write(sse!, item, mode);
    }
  } finally {
    (sse as SseWriter | null)?.close();
  }
}

function write(sse: SseWriter, item: StreamItem, mode: StreamMode): void {
  if ('ephemeral' in item && item.ephemeral) {
    const { ephemeral: _e, ...ev } = item;
    if (mode.chunks) sse.frame(ev.type, ev);
    const sdk = toSdkDelta(ev, mode.deltas);
    if (sdk) sse.frame(String(sdk.type), sdk);
    return;
  }
  const ev = item as { type: string; seq: number };
  if (!mode.chunks && EXTENSION_CANONICAL_TYPES.has(ev.type)) return;
  sse.frame(ev.type, ev, ev.seq);
}

/**
 * The SDK's preview frames (BetaManagedAgentsStartEvent / DeltaEvent): an agent.message preview
 * opens once (its first block) and streams `content_delta` fragments whose `index` is the block's
 * position in the message's content; an agent.thinking preview is start-only: no delta follows,
 * the buffered agent.thinking concludes it. Proven by test/event-deltas.test.ts.
 */
function toSdkDelta(ev: Record<string, any>, deltas: Set<string>): Record<string, unknown> | null {
  if (ev.type === 'agent.thinking_stream_start' && deltas.has('agent.thinking'))
    return { type: 'event_start', event: { id: ev.thinking_id, type: 'agent.thinking' } };
  if (!ev.type.startsWith('agent.message') || !deltas.has('agent.message')) return null;
  const index = typeof ev.index === 'number' ? ev.index : 0;
  if (ev.type === 'agent.message_stream_start' && index === 0)
    return { type: 'event_start', event: { id: ev.message_id, type: 'agent.message' } };
  if (ev.type === 'agent.message_chunk')
    return {
      type: 'event_delta',
      event_id: ev.message_id,
      delta: { type: 'content_delta', content: { type: 'text', text: ev.delta }, index },
    };
  return null;
}
