/**
 * Deployments (SDK `client.beta.deployments`) and their runs (`client.beta.deploymentRuns`):
 * a deployment binds a pinned agent, an environment, vault_ids, file resources, initial events,
 * an optional budget and an optional cron schedule (./cron.ts).
 *
 * Guarantees:
 * - Every query is tenant-scoped: another tenant's deployment or run id is a 404.
 * - Bad input is a 400 naming the field (./bindings.ts, ./cron.ts).
 * - Pause suppresses the schedule (status `paused`, paused_reason `{type: 'manual'}`); unpause
 *   restarts it from the unpause instant: minutes missed while paused never fire (no backfill).
 * - Archive is final: update, pause, unpause and run are then refused (400 naming
 *   `deployment_id`); archived deployments report status `active` with `archived_at` set and no
 *   upcoming runs, and are listed only with `include_archived`.
 * - `run` fires now even while paused (trigger `manual`); scheduled firing is ./scheduler.ts.
 * - Runs are listed newest first (ids are time-ordered), paged like every list, filtered by
 *   deployment_id, has_error, trigger_type and created_at bounds.
 * - Webhooks: deployment.created/updated/paused/unpaused/archived once the change is stored,
 *   never for a refused or no-op call (test/e2e/webhooks/webhooks-types.test.ts).
 * - Time comes from an injectable clock (`setClock`), which the scheduler shares, so tests move
 *   time without sleeping.
 * Proved by test/e2e/deployments/deployments.test.ts, test/e2e/deployments/deployments-runs.test.ts and
 * test/e2e/sdk/sdk_suite/test_deployments.py.
 */
import type {
  DeploymentCreate,
  DeploymentListQuery,
  DeploymentRunListQuery,
  DeploymentUpdate,
} from '@agentfleet/schemas';
import { invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import { applyMetadataPatch } from '../api/metadata.js';
import { createdAtBounds, pageById, type Page } from '../api/pagination.js';
import type { Filter } from '../store/port.js';
import {
  checkAgentOnEnvironment,
  checkCreateBudget,
  checkInitialEvents,
  checkResources,
  checkVaultIds,
  resolveAgent,
  resolveEnvironment,
} from './bindings.js';
import { checkSchedule, upcomingOccurrences } from './cron.js';
import type { DeploymentDoc, DeploymentRunDoc } from './records.js';
import { fireDeployment, manualRunId, type FiringContext } from './firing.js';
import { tickSchedules, type TickResult } from './scheduler.js';

export const DEPLOYMENT_PREFIX = 'depl_';
type DeploymentWebhook = `deployment.${'created' | 'updated' | 'paused' | 'unpaused' | 'archived'}`;

export class DeploymentService {
  private clock: () => number = Date.now;

  constructor(
    private readonly ctx: FiringContext,
    private readonly hasVendorFallback: () => boolean,
  ) {}

  private get c(): Collections {
    return this.ctx.c;
  }

  /** The clock every deployment decision reads (tests inject one; default Date.now). */
  setClock(clock: () => number): void {
    this.clock = clock;
  }
  now(): number {
    return this.clock();
  }

  /**
   * Fires every scheduled minute due at `nowMs` (default: the clock) across all tenants; safe to
   * call from any number of replicas at once (one run per deployment and minute).
   */
  tick(nowMs: number = this.clock()): Promise<TickResult> {
    return tickSchedules(this.ctx, nowMs);
  }

  private async doc(tenant: string, id: string): Promise<DeploymentDoc> {
    const d = await this.c.deployments.get(tenant, id);
    if (!d) throw notFound('deployment', id);
    return d;
  }
  private async live(tenant: string, id: string): Promise<DeploymentDoc> {
    const d = await this.doc(tenant, id);
    if (d.archived_at)
      throw invalid(
        'deployment_id',
        `deployment ${id} is archived; archived deployments are final`,
      );
    return d;
  }

  async create(tenant: string, b: DeploymentCreate) {
    const agent = await resolveAgent(this.c, tenant, b.agent);
    const env = await resolveEnvironment(this.c, tenant, b.environment_id);
    checkAgentOnEnvironment(agent.spec, env);
    await checkVaultIds(this.c, tenant, b.vault_ids);
    const resources = await checkResources(this.c, tenant, env, b.resources ?? []);
    await checkInitialEvents(this.c, tenant, b.initial_events);
    await checkCreateBudget(this.c, tenant, b.budget, agent.modelId, this.hasVendorFallback());
    const schedule = b.schedule ? checkSchedule(b.schedule) : null;
    const now = new Date(this.clock()).toISOString();
    const doc: Omit<DeploymentDoc, 'tenant_id'> = {
      _id: newId(DEPLOYMENT_PREFIX),
      name: b.name,
      description: b.description ?? null,
      agent: { id: agent.id, version: agent.version },
      environment_id: env._id,
      initial_events: b.initial_events,
      metadata: b.metadata ?? {},
      resources,
      vault_ids: b.vault_ids ?? [],
      budget: b.budget ?? null,
      schedule,
      schedule_from: now,
      last_scheduled_at: null,
      last_run_at: null,
      paused_reason: null,
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.c.deployments.insert(tenant, doc);
    await this.emit(tenant, 'deployment.created', doc._id);
    return this.get(tenant, doc._id);
  }

  async get(tenant: string, id: string) {
    return renderDeployment(await this.doc(tenant, id), this.clock());
  }

  async list(
    tenant: string,
    q: DeploymentListQuery,
  ): Promise<Page<ReturnType<typeof renderDeployment>>> {
    if (q.include_archived && q.status)
      throw invalid('status', 'cannot be combined with include_archived');
    const filter: Filter = {};
    if (!q.include_archived) filter.archived_at = null;
    if (q.agent_id) filter['agent.id'] = q.agent_id;
    if (q.status === 'active') filter.paused_reason = null;
    if (q.status === 'paused') filter.paused_reason = { $ne: null };
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    const page = await pageById(this.c.deployments, tenant, filter, q, 'desc');
    const now = this.clock();
    return { ...page, data: page.data.map((d) => renderDeployment(d, now)) };
  }

  async update(tenant: string, id: string, b: DeploymentUpdate) {
    const d = await this.live(tenant, id);
    const set: Record<string, unknown> = {};
    const now = new Date(this.clock()).toISOString();
    const agent = b.agent !== undefined ? await resolveAgent(this.c, tenant, b.agent) : null;
    if (agent) set.agent = { id: agent.id, version: agent.version };
    if (b.environment_id !== undefined || b.resources !== undefined || agent) {
      const env = await resolveEnvironment(this.c, tenant, b.environment_id ?? d.environment_id);
      if (agent || b.environment_id !== undefined) {
        const pinned = agent ?? (await resolveAgent(this.c, tenant, { type: 'agent', ...d.agent }));
        checkAgentOnEnvironment(pinned.spec, env);
      }
      if (b.environment_id !== undefined) set.environment_id = env._id;
      const params = b.resources !== undefined ? (b.resources ?? []) : d.resources;
      set.resources = await checkResources(this.c, tenant, env, params);
    }
    if (b.vault_ids !== undefined) {
      await checkVaultIds(this.c, tenant, b.vault_ids ?? undefined);
      set.vault_ids = b.vault_ids ?? [];
    }
    if (b.initial_events !== undefined) {
      await checkInitialEvents(this.c, tenant, b.initial_events);
      set.initial_events = b.initial_events;
    }
    if (b.budget !== undefined || agent) {
      const budget = b.budget !== undefined ? b.budget : (d.budget as never);
      const modelId = (agent ?? (await resolveAgent(this.c, tenant, { type: 'agent', ...d.agent })))
        .modelId;
      await checkCreateBudget(this.c, tenant, budget, modelId, this.hasVendorFallback());
      if (b.budget !== undefined) set.budget = b.budget;
    }
    if (b.schedule !== undefined) {
      set.schedule = b.schedule ? checkSchedule(b.schedule) : null;
      // A changed schedule counts from now: nothing of the old or new one is backfilled.
      set.schedule_from = now;
    }
    if (b.name !== undefined) set.name = b.name;
    if (b.description !== undefined) set.description = b.description || null;
    if (b.metadata !== undefined) set.metadata = applyMetadataPatch(d.metadata, b.metadata);
    set.updated_at = now;
    const r = await this.c.deployments.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: set },
    );
    if (r.matched) await this.emit(tenant, 'deployment.updated', id);
    return this.get(tenant, id);
  }

  async archive(tenant: string, id: string) {
    await this.doc(tenant, id);
    const now = new Date(this.clock()).toISOString();
    const r = await this.c.deployments.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.emit(tenant, 'deployment.archived', id);
    return this.get(tenant, id);
  }

  async pause(tenant: string, id: string) {
    await this.live(tenant, id);
    const now = new Date(this.clock()).toISOString();
    const r = await this.c.deployments.updateOne(
      tenant,
      { _id: id, archived_at: null, paused_reason: null },
      { $set: { paused_reason: { type: 'manual' }, updated_at: now } },
    );
    if (r.modified) await this.emit(tenant, 'deployment.paused', id);
    return this.get(tenant, id);
  }

  /** Clears any paused_reason (manual or error); the schedule counts from now (no backfill). */
  async unpause(tenant: string, id: string) {
    await this.live(tenant, id);
    const now = new Date(this.clock()).toISOString();
    const r = await this.c.deployments.updateOne(
      tenant,
      { _id: id, archived_at: null, paused_reason: { $ne: null } },
      { $set: { paused_reason: null, schedule_from: now, updated_at: now } },
    );
    if (r.modified) await this.emit(tenant, 'deployment.unpaused', id);
    return this.get(tenant, id);
  }

  /** deployment.* once the change is stored (a no-op pause, unpause or archive emits nothing). */
  private emit(tenant: string, type: DeploymentWebhook, id: string): Promise<void> {
    return this.ctx.webhooks()?.emit(tenant, type, { id }) ?? Promise.resolve();
  }

  /** A manual run now (even while paused): the run, with its session_id or error. */
  async run(tenant: string, id: string) {
    const d = await this.live(tenant, id);
    const now = this.clock();
    const run = await fireDeployment(this.ctx, d, { type: 'manual' }, manualRunId(now), now);
    return renderRun(run!);
  }

  async getRun(tenant: string, id: string) {
    const r = await this.c.deploymentRuns.get(tenant, id);
    if (!r || r.state !== 'done') throw notFound('deployment_run', id);
    return renderRun(r);
  }

  async listRuns(
    tenant: string,
    q: DeploymentRunListQuery,
  ): Promise<Page<ReturnType<typeof renderRun>>> {
    const filter: Filter = { state: 'done' };
    if (q.deployment_id) filter.deployment_id = q.deployment_id;
    if (q.has_error === true) filter.error = { $ne: null };
    if (q.has_error === false) filter.error = null;
    if (q.trigger_type) filter['trigger_context.type'] = q.trigger_type;
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    const page = await pageById(this.c.deploymentRuns, tenant, filter, q, 'desc');
    return { ...page, data: page.data.map(renderRun) };
  }
}

/** SDK BetaManagedAgentsDeployment. */
export function renderDeployment(d: DeploymentDoc, nowMs: number) {
  const paused = !d.archived_at && d.paused_reason ? d.paused_reason : null;
  return {
    id: d._id,
    type: 'deployment' as const,
    agent: { id: d.agent.id, type: 'agent' as const, version: d.agent.version },
    archived_at: d.archived_at,
    created_at: d.created_at,
    description: d.description,
    environment_id: d.environment_id,
    initial_events: d.initial_events,
    metadata: d.metadata,
    name: d.name,
    paused_reason: paused,
    resources: d.resources,
    schedule: d.schedule
      ? {
          type: 'cron' as const,
          expression: d.schedule.expression,
          timezone: d.schedule.timezone,
          last_run_at: d.last_run_at,
          upcoming_runs_at: d.archived_at ? [] : upcomingOccurrences(d.schedule, nowMs),
        }
      : null,
    status: paused ? ('paused' as const) : ('active' as const),
    updated_at: d.updated_at,
    vault_ids: d.vault_ids,
    ...(d.budget ? { budget: d.budget } : {}),
  };
}

/** SDK BetaManagedAgentsDeploymentRun. */
export function renderRun(r: DeploymentRunDoc) {
  return {
    id: r._id,
    type: 'deployment_run' as const,
    agent: { id: r.agent.id, type: 'agent' as const, version: r.agent.version },
    created_at: r.created_at,
    deployment_id: r.deployment_id,
    error: r.error,
    session_id: r.session_id,
    trigger_context: r.trigger_context,
  };
}
