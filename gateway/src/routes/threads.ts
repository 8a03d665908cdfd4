/**
 * Session threads (SDK `client.beta.sessions.threads` and `threads.events`):
 * `GET /v1/sessions/:id/threads`, `GET …/threads/:thread_id`, `POST …/threads/:thread_id/archive`,
 * `GET …/threads/:thread_id/events` (list; SSE with Accept: text/event-stream) and the stream,
 * `GET …/threads/:thread_id/stream` (the SDK's path) or `…/events/stream` (the session route's
 * shape). A thread's events are its own log (the primary's is
 * the session's); the routes check the session first, so another tenant's or session's ids are
 * a 404 (core/src/threads). Proved by test/e2e/threads/threads.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ThreadListQuery } from '@agentfleet/schemas';
import { tenantOf, queryOf } from '../http.js';
import { streamSession, type StreamServices } from '../sessionStream.js';
import type { StreamSlots } from '../sse.js';
import { listEvents } from './sessions.js';

const listQuery = queryOf(ThreadListQuery);
type ThreadReq = FastifyRequest<{ Params: { id: string; thread_id: string } }>;

export function threadRoutes(app: FastifyInstance, p: StreamServices, streams: StreamSlots) {
  /** The session (404 if not the tenant's) and its primary thread's status. */
  const root = async (req: FastifyRequest<{ Params: { id: string } }>) => {
    const tenant = tenantOf(req);
    const doc = await p.sessions.getDoc(tenant, req.params.id);
    return { tenant, doc, status: await p.sessions.status(tenant, doc) };
  };

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/threads', async (req) => {
    const { tenant, doc, status } = await root(req);
    return p.sessions.threads.list(tenant, doc, status, listQuery(req));
  });
  app.get('/v1/sessions/:id/threads/:thread_id', async (req: ThreadReq) => {
    const { tenant, doc, status } = await root(req);
    return p.sessions.threads.get(tenant, doc, status, req.params.thread_id);
  });
  app.post('/v1/sessions/:id/threads/:thread_id/archive', async (req: ThreadReq) => {
    const { tenant, doc, status } = await root(req);
    return p.sessions.threads.archive(tenant, doc, status, req.params.thread_id);
  });

  const logOf = async (req: ThreadReq) => {
    const tenant = tenantOf(req);
    const doc = await p.sessions.getDoc(tenant, req.params.id);
    return p.sessions.threads.logOf(tenant, doc, req.params.thread_id);
  };
  app.get('/v1/sessions/:id/threads/:thread_id/events', async (req: ThreadReq, reply) => {
    const log = await logOf(req);
    if (String(req.headers.accept ?? '').includes('text/event-stream'))
      return streamSession(p, streams, req, reply, log);
    return listEvents(p, req, log);
  });
  // The SDK's threads.events.stream asks for …/stream; …/events/stream mirrors the session's route.
  for (const path of [
    '/v1/sessions/:id/threads/:thread_id/stream',
    '/v1/sessions/:id/threads/:thread_id/events/stream',
  ])
    app.get(path, async (req: ThreadReq, reply) =>
      streamSession(p, streams, req, reply, await logOf(req)),
    );
}
