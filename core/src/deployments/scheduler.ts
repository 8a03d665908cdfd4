/**
 * The deployment scheduler: a tick that fires every scheduled minute now due, run by a timer on
 * every worker (DEPLOYMENT_TICK_MS; workers/src/jobs/deploymentScheduler.ts) and callable
 * directly with an injected instant (`platform.deployments.tick(now)`, what the tests do).
 *
 * Guarantees:
 * - Exactly one run per deployment and scheduled minute, across any number of replicas ticking
 *   at once: the run id is derived from (deployment id, minute) (./firing.ts scheduledRunId) and
 *   inserted with a unique `_id` before any session is created, so every replica but one loses
 *   the insert and creates nothing. The store's single-document atomicity is all it needs (no
 *   lease, no clock agreement between replicas).
 * - Paused and archived deployments do not fire; minutes before `schedule_from` (create,
 *   unpause, schedule change) never fire, so nothing missed while paused is backfilled.
 * - After an outage (no replica ticked for a while), only the newest missed minute fires, once;
 *   the older missed minutes are skipped and leave no run. That newest minute fires however late
 *   the tick is (its run's `created_at` shows how late; `scheduled_at` is the minute).
 * - A scheduled run whose error is one of the SDK's pausing errors (every run error but
 *   session_rate_limited_error and session_creation_rejected_error) pauses the deployment with
 *   `paused_reason: {type: 'error', error: {type}}` and emits deployment.paused; a rate-limited
 *   fire keeps the schedule going.
 * - `schedule.last_run_at` is the start of the newest scheduled run; manual runs leave it alone.
 * Proved by test/e2e/deployments/deployments-runs.test.ts ("one-minute schedule", "exactly once").
 */
import { AUTO_PAUSING_RUN_ERRORS } from '@agentfleet/schemas';
import { latestOccurrence } from './cron.js';
import type { DeploymentDoc, DeploymentRunDoc } from './records.js';
import { closeStaleFirings, fireDeployment, scheduledRunId, type FiringContext } from './firing.js';

export interface TickResult {
  /** Runs this caller recorded (another replica's runs for the same minutes are not here). */
  fired: DeploymentRunDoc[];
  /** Firing records of dead workers closed as unknown_error. */
  closedStale: number;
}

/** The minute of `d` due at `nowMs`, or null (none, already claimed, or before schedule_from). */
export function dueMinute(d: DeploymentDoc, nowMs: number): number | null {
  if (!d.schedule || d.archived_at || d.paused_reason) return null;
  const m = latestOccurrence(d.schedule, nowMs);
  if (m === null || m <= Date.parse(d.schedule_from)) return null;
  if (d.last_scheduled_at && m <= Date.parse(d.last_scheduled_at)) return null;
  return m;
}

async function fireScheduled(
  ctx: FiringContext,
  d: DeploymentDoc,
  minute: number,
  nowMs: number,
): Promise<DeploymentRunDoc | null> {
  const scheduledAt = new Date(minute).toISOString();
  const run = await fireDeployment(
    ctx,
    d,
    { type: 'schedule', scheduled_at: scheduledAt },
    scheduledRunId(d._id, minute),
    nowMs,
  );
  if (!run) return null;
  const now = new Date(nowMs).toISOString();
  await ctx.c.deployments.updateOne(
    d.tenant_id,
    { _id: d._id },
    { $max: { last_scheduled_at: scheduledAt, last_run_at: now } },
  );
  if (run.error && AUTO_PAUSING_RUN_ERRORS.has(run.error.type)) {
    const r = await ctx.c.deployments.updateOne(
      d.tenant_id,
      { _id: d._id, archived_at: null, paused_reason: null },
      {
        $set: {
          paused_reason: { type: 'error', error: { type: run.error.type } },
          updated_at: now,
        },
      },
    );
    // Keyed by the run: a redriven fire pauses, and emits, once.
    if (r.modified)
      await ctx
        .webhooks()
        ?.emit(d.tenant_id, 'deployment.paused', { id: d._id }, { key: `${run._id}:paused` });
  }
  return run;
}

export async function tickSchedules(ctx: FiringContext, nowMs: number): Promise<TickResult> {
  const scheduled = await ctx.c.deployments.scanAll({
    archived_at: null,
    paused_reason: null,
    schedule: { $ne: null },
  });
  const fired: DeploymentRunDoc[] = [];
  await Promise.all(
    scheduled.map(async (d) => {
      const minute = dueMinute(d, nowMs);
      if (minute === null) return;
      try {
        const run = await fireScheduled(ctx, d, minute, nowMs);
        if (run) fired.push(run);
      } catch (err) {
        ctx.log.warn('deployment scheduler: fire failed', {
          tenant_id: d.tenant_id,
          deployment_id: d._id,
          error: (err as Error).message,
        });
      }
    }),
  );
  const closedStale = await closeStaleFirings(ctx, nowMs);
  return { fired, closedStale };
}
