/**
 * The Environment Work API (SDK 1.12 `client.beta.environments.work`), a thin adapter over
 * WorkService (core/src/work/work.ts, whose header describes the EnvironmentWorker flow):
 *
 *   GET  /v1/environments/:id/work/poll            block_ms, reclaim_older_than_ms, Anthropic-Worker-ID
 *   GET  /v1/environments/:id/work                 limit, page (newest first)
 *   GET  /v1/environments/:id/work/stats
 *   GET  /v1/environments/:id/work/:work_id
 *   POST /v1/environments/:id/work/:work_id        {metadata} (merge patch)
 *   POST /v1/environments/:id/work/:work_id/ack
 *   POST /v1/environments/:id/work/:work_id/heartbeat   desired_ttl_seconds, expected_last_heartbeat
 *   POST /v1/environments/:id/work/:work_id/stop   {force?}
 *
 * Credentials: the tenant's API key, the environment's service key (Bearer only) and, on ack,
 * heartbeat and stop of its own item, the claim's sessions token (gateway/src/claimedSession.ts).
 * A poll with nothing to claim answers 200 `null` (both SDKs read it as no work).
 * Proved by test/e2e/work/work-api.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid } from '@agentfleet/core';
import { tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

type EnvReq = FastifyRequest<{ Params: { id: string } }>;
type ItemReq = FastifyRequest<{ Params: { id: string; work_id: string } }>;

export const WORK_BASE = '/v1/environments/:id/work';
const WORKER_ID_MAX = 256;

const queryOf = (req: FastifyRequest) => (req.query ?? {}) as Record<string, unknown>;

function workerId(req: FastifyRequest): string | undefined {
  const v = req.headers['anthropic-worker-id'];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > WORKER_ID_MAX)
    throw invalid('Anthropic-Worker-ID', `must be a string of 1 to ${WORKER_ID_MAX} characters`);
  return v;
}

function stopForce(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('body', 'must be an object');
  const b = body as Record<string, unknown>;
  const extra = Object.keys(b).find((k) => k !== 'force');
  if (extra) throw invalid(extra, 'is not a known field');
  if (b.force !== undefined && b.force !== null && typeof b.force !== 'boolean')
    throw invalid('force', 'must be a boolean');
  return b.force === true;
}

export function workRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'work'>): void {
  const w = p.work;
  app.get(`${WORK_BASE}/poll`, async (req: EnvReq, reply) => {
    const q = queryOf(req);
    const item = await w.poll(tenantOf(req), req.params.id, {
      block_ms: q.block_ms,
      reclaim_older_than_ms: q.reclaim_older_than_ms,
      worker_id: workerId(req),
    });
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(item));
  });
  app.get(WORK_BASE, async (req: EnvReq) => {
    const q = queryOf(req);
    return w.list(tenantOf(req), req.params.id, { limit: q.limit, page: q.page });
  });
  app.get(`${WORK_BASE}/stats`, async (req: EnvReq) => w.stats(tenantOf(req), req.params.id));
  app.get(`${WORK_BASE}/:work_id`, async (req: ItemReq) =>
    w.retrieve(tenantOf(req), req.params.id, req.params.work_id),
  );
  app.post(`${WORK_BASE}/:work_id`, async (req: ItemReq) =>
    w.update(tenantOf(req), req.params.id, req.params.work_id, req.body),
  );
  app.post(`${WORK_BASE}/:work_id/ack`, async (req: ItemReq) =>
    w.ack(tenantOf(req), req.params.id, req.params.work_id, req.principal.claim),
  );
  app.post(`${WORK_BASE}/:work_id/heartbeat`, async (req: ItemReq) => {
    const q = queryOf(req);
    return w.heartbeat(
      tenantOf(req),
      req.params.id,
      req.params.work_id,
      {
        desired_ttl_seconds: q.desired_ttl_seconds,
        expected_last_heartbeat: q.expected_last_heartbeat,
      },
      req.principal.claim,
    );
  });
  app.post(`${WORK_BASE}/:work_id/stop`, async (req: ItemReq) =>
    w.stop(
      tenantOf(req),
      req.params.id,
      req.params.work_id,
      stopForce(req.body),
      req.principal.claim,
    ),
  );
}
