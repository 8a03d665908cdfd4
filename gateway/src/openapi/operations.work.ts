/**
 * OpenAPI entries of the Environment Work API (gateway/src/routes/work.ts): the SDK's
 * BetaSelfHostedWork, its heartbeat answer, queue stats and list page.
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import { Type } from '@sinclair/typebox';
import { Id, Metadata, MetadataPatch, Nullable } from '@agentfleet/schemas';
import { EnvId, json, type OperationDoc } from './operationHelpers.js';

const tag = 'work';
const State = Type.Union(
  ['queued', 'starting', 'active', 'stopping', 'stopped'].map((s) => Type.Literal(s)),
);
const Time = Nullable(Type.String({ format: 'date-time' }));
const Work = Type.Object({
  type: Type.Literal('work'),
  id: Id('work_'),
  environment_id: EnvId,
  data: Type.Object({ type: Type.Literal('session'), id: Id('sess_') }),
  state: State,
  metadata: Metadata,
  secret: Nullable(
    Type.String({
      description: 'base64url JSON {sessions_token}: only in a poll answer, null elsewhere',
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
  acknowledged_at: Time,
  started_at: Time,
  latest_heartbeat_at: Time,
  stop_requested_at: Time,
  stopped_at: Time,
});
const Heartbeat = Type.Object({
  type: Type.Literal('work_heartbeat'),
  last_heartbeat: Type.String(),
  lease_extended: Type.Boolean(),
  state: State,
  ttl_seconds: Type.Integer(),
});
const Stats = Type.Object({
  type: Type.Literal('work_queue_stats'),
  depth: Type.Integer(),
  pending: Type.Integer(),
  oldest_queued_at: Time,
  workers_polling: Nullable(Type.Integer()),
});
const WorkPage = Type.Object({ data: Type.Array(Work), next_page: Nullable(Type.String()) });
const params = { id: EnvId };
const itemParams = { id: EnvId, work_id: Id('work_') };
const one = { description: 'The work item (secret null).', content: json(Work) };
const base = '/v1/environments/:id/work';

export const WORK_OPERATIONS: Record<string, OperationDoc> = {
  [`GET ${base}/poll`]: {
    operationId: 'pollWork',
    summary:
      'Claim the oldest claimable work item (environment service key as Bearer); null when none arrives within block_ms',
    tag,
    params,
    query: Type.Object({
      block_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 999 })),
      reclaim_older_than_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400_000 })),
    }),
    ok: {
      description: 'The claimed item with its secret (base64url {sessions_token}), or null.',
      content: json(Nullable(Work)),
    },
    conflict: true,
  },
  [`GET ${base}`]: {
    operationId: 'listWork',
    summary: 'List the environment’s work items (newest first)',
    tag,
    params,
    query: Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
      page: Type.Optional(Type.String()),
    }),
    ok: { description: 'A page of work items.', content: json(WorkPage) },
  },
  [`GET ${base}/stats`]: {
    operationId: 'workStats',
    summary: 'Queue depth, pending (polled, not acknowledged), oldest queued, workers polling',
    tag,
    params,
    ok: { description: 'The queue statistics.', content: json(Stats) },
  },
  [`GET ${base}/:work_id`]: {
    operationId: 'getWork',
    summary: 'Retrieve a work item',
    tag,
    params: itemParams,
    ok: one,
  },
  [`POST ${base}/:work_id`]: {
    operationId: 'updateWork',
    summary: 'Update a work item’s metadata (merge patch; null deletes a key)',
    tag,
    params: itemParams,
    body: {
      schema: Type.Object({ metadata: MetadataPatch }, { additionalProperties: false }),
      required: true,
      example: { metadata: { rack: 'r1' } },
    },
    ok: one,
    conflict: true,
  },
  [`POST ${base}/:work_id/ack`]: {
    operationId: 'ackWork',
    summary: 'Acknowledge a polled work item: starting, its heartbeat lease taken',
    tag,
    params: itemParams,
    ok: one,
    conflict: true,
  },
  [`POST ${base}/:work_id/heartbeat`]: {
    operationId: 'heartbeatWork',
    summary:
      'Renew the work item’s lease; 412 heartbeat_precondition_failed from a replaced claim or a stale expected_last_heartbeat',
    tag,
    params: itemParams,
    query: Type.Object({
      desired_ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
      expected_last_heartbeat: Type.Optional(Type.String({ maxLength: 64 })),
    }),
    ok: { description: 'The lease as renewed.', content: json(Heartbeat) },
    more: {
      412: {
        description:
          'heartbeat_precondition_failed: details.current_state is the lease as the server holds it.',
        content: json(Type.Unknown()),
      },
    },
    conflict: true,
  },
  [`POST ${base}/:work_id/stop`]: {
    operationId: 'stopWork',
    summary: 'Stop a work item: stopping (graceful) or stopped (force); 409 when already stopped',
    tag,
    params: itemParams,
    body: {
      schema: Type.Object(
        { force: Type.Optional(Type.Boolean()) },
        { additionalProperties: false },
      ),
      example: { force: true },
    },
    ok: one,
    conflict: true,
  },
};
