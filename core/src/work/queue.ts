/**
 * The Work queue's documents and read side: a new item, the list page, queue stats, and the
 * shapes of a heartbeat answer and of its 412. Used by WorkService (./work.ts).
 *
 * Guarantees (test/e2e/work/work-api.test.ts): stats count `depth` (queued, never polled), `pending`
 * (polled, not acknowledged), the oldest queued item, and the workers that polled with an
 * `Anthropic-Worker-ID` within POLLING_WINDOW_MS; a list page never carries a secret; the 412
 * names `heartbeat_precondition_failed` with the lease as the server holds it, the shape the SDK
 * maps to BetaHeartbeatPreconditionFailedError.
 */
import { ApiError, invalid } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import { pageById } from '../api/pagination.js';
import { POLLING_WINDOW_MS, renderWork, type WorkDoc } from './records.js';
import { intArg } from './waiters.js';

export function newWorkDoc(
  s: { id: string; environment_id: string },
  now: string,
): Omit<WorkDoc, 'tenant_id'> {
  return {
    _id: newId('work_'),
    environment_id: s.environment_id,
    session_id: s.id,
    state: 'queued',
    metadata: {},
    open: s.id,
    generation: 0,
    rev: 0,
    claimed_ms: null,
    worker_id: null,
    token_hash: null,
    token_expires_ms: null,
    lease_token: null,
    lease_ttl_s: null,
    lease_expires_ms: null,
    created_at: now,
    updated_at: now,
    acknowledged_at: null,
    started_at: null,
    latest_heartbeat_at: null,
    stop_requested_at: null,
    stopped_at: null,
  };
}

export async function listWork(
  c: Collections,
  tenant: string,
  envId: string,
  q: { limit?: unknown; page?: unknown },
) {
  const limit = intArg(q.limit, 'limit', 1, 1000) ?? 20;
  if (q.page !== undefined && typeof q.page !== 'string') throw invalid('page', 'must be a string');
  const page = await pageById(
    c.work,
    tenant,
    { environment_id: envId },
    { limit, ...(q.page ? { page: q.page } : {}) },
  );
  return { data: page.data.map((d) => renderWork(d)), next_page: page.next_page };
}

export async function workStats(c: Collections, tenant: string, envId: string, now: number) {
  const [depth, pending, oldest, polling] = await Promise.all([
    c.work.count(tenant, { environment_id: envId, state: 'queued', generation: 0 }),
    c.work.count(tenant, { environment_id: envId, state: 'queued', generation: { $gt: 0 } }),
    c.work.findOne(tenant, { environment_id: envId, state: 'queued' }, { sort: { _id: 1 } }),
    c.workPollers.count(tenant, {
      environment_id: envId,
      last_poll_ms: { $gte: now - POLLING_WINDOW_MS },
    }),
  ]);
  return {
    type: 'work_queue_stats' as const,
    depth,
    pending,
    oldest_queued_at: oldest?.created_at ?? null,
    workers_polling: polling,
  };
}

/** 412 `heartbeat_precondition_failed` with `current_state`: the lease as the server holds it. */
export function preconditionFailed(d: WorkDoc, why: string): ApiError {
  return new ApiError('precondition_failed', `work ${d._id}: ${why}`, {
    error_code: 'heartbeat_precondition_failed',
    current_state: {
      last_heartbeat: d.latest_heartbeat_at,
      lease_extended: false,
      state: d.state,
      ttl_seconds: d.lease_ttl_s ?? 0,
    },
  });
}

/** SDK BetaSelfHostedWorkHeartbeatResponse. */
export const beat = (last: string, extended: boolean, state: WorkDoc['state'], ttl: number) => ({
  type: 'work_heartbeat' as const,
  last_heartbeat: last,
  lease_extended: extended,
  state,
  ttl_seconds: ttl,
});
