/**
 * One firing of a deployment (scheduled or manual): a run record, then a session created
 * exactly as POST /v1/sessions creates one (SessionService.create with the deployment's
 * pinned agent, environment, vault_ids, resources and budget), then the initial events sent as
 * the session's first input events (SessionService.send), then the outcome recorded on the run.
 *
 * Guarantees:
 * - At most one run per id: the run record is inserted first with a unique `_id`, so of any
 *   number of callers firing the same id (scheduler replicas, one scheduled minute) exactly one
 *   inserts it and only that one creates a session; the others get null.
 * - A served run has exactly one of `session_id` and `error` (SDK BetaManagedAgentsDeploymentRun):
 *   a record is `firing` (never served) until its outcome is written. A firing record older than
 *   STALE_FIRING_MS (its worker died mid-fire) is closed by the scheduler as `unknown_error`
 *   without a retry (a session may exist; a second one would break "one run per minute").
 * - Errors are the SDK's run error types: the agent archived → agent_archived_error, a vault
 *   deleted → vault_not_found_error (archived → vault_archived_error), the environment deleted or
 *   archived → environment_not_found_error / environment_archived_error, a file resource (or a file an
 *   initial event's block names) deleted → file_not_found_error, resources on a self_hosted environment →
 *   self_hosted_resources_unsupported_error, the tenant over its rate limit (scheduled fires
 *   take one token of the tenant's per-minute limit, as the session create request would) or a
 *   429 from the create path → session_rate_limited_error, any other 4xx of the create path →
 *   session_creation_rejected_error, anything else → unknown_error.
 * - A scheduled run's session gets one span.wakeup_scheduled (reason `deployment`, the minute,
 *   the firing instant, the deployment and run ids) with its initial events
 *   (../sessions/wakeup.ts).
 * - Webhooks: deployment_run.started once the run is recorded, then deployment_run.succeeded or
 *   deployment_run.failed, each `{id: run id, deployment_id}`.
 * Proved by test/e2e/deployments/deployments.test.ts and test/e2e/deployments/deployments-runs.test.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { DeploymentRunErrorType } from '@agentfleet/schemas';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RateLimiter } from '../coordination/port.js';
import { DuplicateKeyError } from '../store/port.js';
import type { Collections } from '../store/collections.js';
import type { SessionService } from '../sessions/sessions.js';
import { checkInputEvents } from '../sessions/inputEvents.js';
import type { LifecycleWebhooks } from '../webhooks/port.js';
import type { DeploymentDoc, DeploymentRunDoc } from './records.js';
import type { EventDraft } from '../events/log.js';
import { wakeupScheduled } from '../sessions/wakeup.js';

export const STALE_FIRING_MS = 5 * 60_000;

export type DeploymentRunWebhook =
  'deployment_run.started' | 'deployment_run.succeeded' | 'deployment_run.failed';
/** The webhooks port (platform.webhooks): deployment_run.* here, deployment.* in ./deployments.ts. */
export type WebhookEmitter = LifecycleWebhooks;

export interface FiringContext {
  c: Collections;
  sessions: SessionService;
  rateLimiter: RateLimiter;
  ratePerMinute: number;
  webhooks: () => WebhookEmitter | undefined;
  log: Logger;
}

type Outcome =
  { session_id: string } | { error: { type: DeploymentRunErrorType; message: string } };

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** ULID layout (10 chars of ms time, 16 of 80 bits), so `_id` order is time order for lists. */
function idOf(timeMs: number, bits80: Buffer): string {
  let out = '';
  let t = Math.max(0, Math.floor(timeMs));
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  let b = 0n;
  for (const x of bits80.subarray(0, 10)) b = (b << 8n) | BigInt(x);
  let r = '';
  for (let i = 0; i < 16; i++) {
    r = ALPHABET[Number(b & 31n)] + r;
    b >>= 5n;
  }
  return `drun_${out}${r}`;
}

/** The one id a scheduled minute of a deployment can have: every replica derives the same. */
export const scheduledRunId = (deploymentId: string, minuteMs: number) =>
  idOf(minuteMs, createHash('sha256').update(`${deploymentId}\n${minuteMs}`).digest());
export const manualRunId = (nowMs: number) => idOf(nowMs, randomBytes(10));

const fail = (type: DeploymentRunErrorType, message: string): Outcome => ({
  error: { type, message },
});

/** What stops a session from being created for this deployment now, checked before creating one. */
async function preflight(
  ctx: FiringContext,
  tenant: string,
  d: DeploymentDoc,
  scheduled: boolean,
): Promise<Outcome | null> {
  const { c } = ctx;
  const agent = await c.agents.get(tenant, d.agent.id);
  if (!agent)
    return fail('session_resource_not_found_error', `agent ${d.agent.id} no longer exists`);
  if (agent.archived_at) return fail('agent_archived_error', `agent ${d.agent.id} is archived`);
  const env = await c.environments.get(tenant, d.environment_id);
  if (!env)
    return fail('environment_not_found_error', `environment ${d.environment_id} no longer exists`);
  if (env.archived_at)
    return fail('environment_archived_error', `environment ${d.environment_id} is archived`);
  if (d.vault_ids.length) {
    const vaults = new Map(
      (await c.vaults.find(tenant, { _id: { $in: d.vault_ids } })).map((v) => [v._id, v]),
    );
    for (const id of d.vault_ids) {
      const v = vaults.get(id);
      if (!v) return fail('vault_not_found_error', `vault ${id} no longer exists`);
      if (v.archived_at) return fail('vault_archived_error', `vault ${id} is archived`);
    }
  }
  if (d.resources.length && env.kind === 'self_hosted')
    return fail(
      'self_hosted_resources_unsupported_error',
      `environment ${env._id} is self_hosted and cannot mount the deployment's resources`,
    );
  for (const r of d.resources) {
    if (!(await c.files.get(tenant, r.file_id)))
      return fail('file_not_found_error', `file ${r.file_id} no longer exists`);
  }
  try {
    await checkInputEvents(c, tenant, d.initial_events);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const gone = /file \S+ not found/.test(err.message);
    return fail(gone ? 'file_not_found_error' : 'session_creation_rejected_error', err.message);
  }
  if (scheduled) {
    // The session create request a scheduled fire stands for takes its token of the tenant's limit.
    const rl = await ctx.rateLimiter.consume(`rl:${tenant}`, ctx.ratePerMinute, 60_000);
    if (!rl.allowed)
      return fail(
        'session_rate_limited_error',
        `session creation rate limited: the tenant is over ${rl.limit} requests per minute`,
      );
  }
  return null;
}

/**
 * The outcome of creating the session; never throws. A scheduled fire's `wake`
 * (span.wakeup_scheduled) goes in the same append as the initial events it sends.
 */
async function createSession(
  ctx: FiringContext,
  tenant: string,
  d: DeploymentDoc,
  wake: EventDraft | null,
): Promise<Outcome> {
  try {
    const blocked = await preflight(ctx, tenant, d, !!wake);
    if (blocked) return blocked;
    const session = await ctx.sessions.create(tenant, {
      agent: { type: 'agent', id: d.agent.id, version: d.agent.version },
      environment_id: d.environment_id,
      title: d.name,
      vault_ids: d.vault_ids,
      resources: d.resources,
      ...(d.budget ? { budget: d.budget as never } : {}),
    });
    // The SDK's session.deployment_id (and the sessions list's deployment_id filter).
    await ctx.c.sessions.updateOne(tenant, { _id: session.id }, { $set: { deployment_id: d._id } });
    try {
      await ctx.sessions.send(tenant, session.id, d.initial_events, wake ? [wake] : []);
    } catch (err) {
      return fail(
        'unknown_error',
        `session ${session.id} was created but its initial events were refused: ${(err as Error).message}`,
      );
    }
    return { session_id: session.id };
  } catch (err) {
    if (err instanceof ApiError) {
      if (err.type === 'rate_limited') return fail('session_rate_limited_error', err.message);
      if (err.status >= 400 && err.status < 500)
        return fail('session_creation_rejected_error', err.message);
    }
    ctx.log.warn('deployment run: session creation failed', {
      tenant_id: tenant,
      deployment_id: d._id,
      error: (err as Error).message,
    });
    return fail('unknown_error', 'session creation failed unexpectedly');
  }
}

async function emit(
  ctx: FiringContext,
  tenant: string,
  type: DeploymentRunWebhook,
  run: Pick<DeploymentRunDoc, '_id' | 'deployment_id'>,
): Promise<void> {
  try {
    // Keyed by run and type: a redriven emit records one event.
    await ctx
      .webhooks()
      ?.emit(
        tenant,
        type,
        { id: run._id, deployment_id: run.deployment_id },
        { key: `${run._id}:${type}` },
      );
  } catch (err) {
    ctx.log.warn('deployment run: webhook emit failed', { type, error: (err as Error).message });
  }
}

/**
 * Fires `d` as run `runId`; null when that run id already exists (another replica fired it).
 * `nowMs` is the firing instant (the run's created_at).
 */
export async function fireDeployment(
  ctx: FiringContext,
  d: DeploymentDoc,
  trigger: DeploymentRunDoc['trigger_context'],
  runId: string,
  nowMs: number,
): Promise<DeploymentRunDoc | null> {
  const tenant = d.tenant_id;
  const run: DeploymentRunDoc = {
    _id: runId,
    tenant_id: tenant,
    deployment_id: d._id,
    agent: { id: d.agent.id, version: d.agent.version },
    trigger_context: trigger,
    state: 'firing',
    session_id: null,
    error: null,
    created_at: new Date(nowMs).toISOString(),
  };
  try {
    await ctx.c.deploymentRuns.insert(tenant, run);
  } catch (err) {
    if (err instanceof DuplicateKeyError) return null;
    throw err;
  }
  await emit(ctx, tenant, 'deployment_run.started', run);
  // A scheduled minute is an alarm (one wake per run: only the run's inserter gets here).
  const wake =
    trigger.type === 'schedule'
      ? wakeupScheduled({
          reason: 'deployment',
          scheduled_at: trigger.scheduled_at,
          woken_at: run.created_at,
          deployment_id: d._id,
          deployment_run_id: runId,
        })
      : null;
  const outcome = await createSession(ctx, tenant, d, wake);
  const done: DeploymentRunDoc = {
    ...run,
    state: 'done',
    session_id: 'session_id' in outcome ? outcome.session_id : null,
    error: 'error' in outcome ? outcome.error : null,
  };
  await ctx.c.deploymentRuns.updateOne(
    tenant,
    { _id: runId, state: 'firing' },
    { $set: { state: 'done', session_id: done.session_id, error: done.error } },
  );
  await emit(ctx, tenant, done.error ? 'deployment_run.failed' : 'deployment_run.succeeded', run);
  return done;
}

/** Closes firing records whose worker died mid-fire (older than STALE_FIRING_MS) as unknown_error. */
export async function closeStaleFirings(ctx: FiringContext, nowMs: number): Promise<number> {
  const before = new Date(nowMs - STALE_FIRING_MS).toISOString();
  const stale = await ctx.c.deploymentRuns.scanAll({
    state: 'firing',
    created_at: { $lt: before },
  });
  let closed = 0;
  for (const r of stale) {
    const error = {
      type: 'unknown_error' as const,
      message: 'the worker firing this run stopped before recording its outcome; not retried',
    };
    const res = await ctx.c.deploymentRuns.updateOne(
      r.tenant_id,
      { _id: r._id, state: 'firing' },
      { $set: { state: 'done', error } },
    );
    if (res.modified) {
      closed++;
      await emit(ctx, r.tenant_id, 'deployment_run.failed', r);
    }
  }
  return closed;
}
