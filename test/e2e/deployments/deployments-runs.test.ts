/**
 * Deployment runs (core/src/deployments/{scheduler,firing}.ts) through the official TypeScript
 * SDK, with time moved by the platform's injectable clock (`platform.deployments.setClock`) and
 * the scheduler's tick called directly (`platform.deployments.tick()`, what the worker's timer
 * calls); nothing sleeps for minutes:
 * - "one-minute schedule": `* * * * *` fires once per minute at minute boundaries, not twice for
 *   a minute, not before creation; paused minutes are not backfilled after unpause; after an
 *   outage only the newest missed minute fires (once); a timezone schedule fires on its wall
 *   clock; schedule.last_run_at and upcoming_runs_at follow; the worker's own timer fires too;
 * - "failed runs": each error type we can provoke (agent_archived_error (and the auto-pause it
 *   causes on a scheduled fire), vault_not_found_error, vault_archived_error,
 *   environment_archived_error, environment_not_found_error, file_not_found_error (resource and
 *   initial event block), session_rate_limited_error (the schedule keeps going), unknown_error
 *   for a run whose worker died mid-fire); has_error and trigger_type filters, newest first,
 *   paging;
 * - "exactly once": several schedulers over one store tick the same minute concurrently → one
 *   run and one session; on the real adapters (REAL), two platform instances sharing MongoDB and
 *   Redis do the same.
 */
import { toFile } from '@anthropic-ai/sdk';
import type Anthropic from '@anthropic-ai/sdk';
import { createLogger, DeploymentService } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REAL,
  realAdapterEnv,
  startPlatform,
  waitFor,
  type TestPlatform,
} from '../../kit/harness.js';

const ENV = { SANDBOX_DRIVER: 'none', DEPLOYMENT_TICK_MS: '0', RATE_LIMIT_PER_MINUTE: '300' };
let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: ENV });
});
afterAll(async () => {
  await t?.close();
});

const hello = [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'go' }] }];
const at = (iso: string) => Date.parse(iso);
/** The platform's clock, moved by the test; `tick` answers the runs it fired for `tenantId`. */
function clockOf(p: TestPlatform, startIso: string, tenantId: string) {
  let now = at(startIso);
  p.server.platform.deployments.setClock(() => now);
  return {
    set: (iso: string) => (now = at(iso)),
    tick: async (iso?: string) => {
      if (iso) now = at(iso);
      const { fired } = await p.server.platform.deployments.tick();
      return fired.filter((r) => r.tenant_id === tenantId);
    },
  };
}

async function setup(c: Anthropic) {
  const env = await c.beta.environments.create({ name: 'runs-env' });
  const agent = await c.beta.agents.create({ name: 'runs-agent', model: 'claude-sonnet-4-5' });
  return { env, agent };
}
const everyMinute = { type: 'cron' as const, expression: '* * * * *', timezone: 'UTC' };

async function allRuns(c: Anthropic, q: Record<string, unknown>) {
  const out: Anthropic.Beta.DeploymentRuns.BetaManagedAgentsDeploymentRun[] = [];
  for await (const r of c.beta.deploymentRuns.list(q)) out.push(r);
  return out;
}

describe('deployment runs', () => {
  it('one-minute schedule: fires at minute boundaries, no backfill after unpause, newest missed minute after an outage', async () => {
    const { client: c, tenantId } = await t.newTenant('sched');
    const clock = clockOf(t, '2031-01-01T10:00:20Z', tenantId);
    const { env, agent } = await setup(c);
    const d = await c.beta.deployments.create({
      name: 'every minute',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      schedule: everyMinute,
    });
    expect(d.schedule!.upcoming_runs_at!.slice(0, 2)).toEqual([
      '2031-01-01T10:01:00.000Z',
      '2031-01-01T10:02:00.000Z',
    ]);
    // 10:00 is before the deployment existed: never fired.
    expect(await clock.tick()).toEqual([]);
    const first = await clock.tick('2031-01-01T10:01:00Z');
    expect(first).toHaveLength(1);
    expect(first[0]!.trigger_context).toEqual({
      type: 'schedule',
      scheduled_at: '2031-01-01T10:01:00.000Z',
    });
    expect(first[0]!.session_id).toMatch(/^sess_/);
    expect(await clock.tick('2031-01-01T10:01:59Z')).toEqual([]);
    expect(await clock.tick('2031-01-01T10:02:00Z')).toHaveLength(1);
    const after2 = await c.beta.deployments.retrieve(d.id);
    expect(after2.schedule!.last_run_at).toBe('2031-01-01T10:02:00.000Z');
    expect(after2.schedule!.upcoming_runs_at![0]).toBe('2031-01-01T10:03:00.000Z');

    clock.set('2031-01-01T10:02:10Z');
    await c.beta.deployments.pause(d.id);
    expect(await clock.tick('2031-01-01T10:03:00Z')).toEqual([]);
    expect(await clock.tick('2031-01-01T10:04:00Z')).toEqual([]);
    // A manual run while paused works and leaves last_run_at alone.
    const manual = await c.beta.deployments.run(d.id);
    expect(manual.session_id).toMatch(/^sess_/);
    clock.set('2031-01-01T10:04:30Z');
    await c.beta.deployments.unpause(d.id);
    // 10:03 and 10:04 were missed while paused: not backfilled.
    expect(await clock.tick('2031-01-01T10:04:45Z')).toEqual([]);
    expect(await clock.tick('2031-01-01T10:05:00Z')).toHaveLength(1);
    // Outage: nobody ticked 10:06–10:09; the tick at 10:09:30 fires 10:09 once, nothing older.
    const late = await clock.tick('2031-01-01T10:09:30Z');
    expect(late.map((r) => r.trigger_context)).toEqual([
      { type: 'schedule', scheduled_at: '2031-01-01T10:09:00.000Z' },
    ]);
    expect(late[0]!.created_at).toBe('2031-01-01T10:09:30.000Z');
    expect(await clock.tick('2031-01-01T10:09:50Z')).toEqual([]);

    const scheduled = await allRuns(c, { deployment_id: d.id, trigger_type: 'schedule' });
    expect(scheduled.map((r) => (r.trigger_context as any).scheduled_at)).toEqual([
      '2031-01-01T10:09:00.000Z',
      '2031-01-01T10:05:00.000Z',
      '2031-01-01T10:02:00.000Z',
      '2031-01-01T10:01:00.000Z',
    ]);
    const every = await allRuns(c, { deployment_id: d.id });
    expect(every.map((r) => r.id)).toEqual([
      scheduled[0]!.id,
      scheduled[1]!.id,
      manual.id,
      scheduled[2]!.id,
      scheduled[3]!.id,
    ]);
    // Paged like every list: two pages of two and one of one, same order.
    const paged: string[] = [];
    let page = await c.beta.deploymentRuns.list({ deployment_id: d.id, limit: 2 });
    for (;;) {
      paged.push(...page.data.map((r) => r.id));
      if (!page.hasNextPage()) break;
      page = await page.getNextPage();
    }
    expect(paged).toEqual(every.map((r) => r.id));
    // Each run's session is a real session of this tenant with the deployment's agent.
    const sessions = await Promise.all(every.map((r) => c.beta.sessions.retrieve(r.session_id!)));
    expect(new Set(sessions.map((s) => s.id)).size).toBe(5);
    for (const s of sessions) expect(s.agent.id).toBe(agent.id);
    expect(
      (await c.beta.deploymentRuns.list({ 'created_at[gte]': '2031-01-01T10:05:00Z' })).data.map(
        (r) => r.id,
      ),
    ).toEqual([scheduled[0]!.id, scheduled[1]!.id]);
  });

  it('a schedule fires on the wall clock of its timezone', async () => {
    const { client: c, tenantId } = await t.newTenant('tz');
    const clock = clockOf(t, '2031-01-02T03:00:00Z', tenantId);
    const { env, agent } = await setup(c);
    const d = await c.beta.deployments.create({
      name: 'kolkata',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      schedule: { type: 'cron', expression: '30 9 * * *', timezone: 'Asia/Kolkata' },
    });
    // 09:30 in Kolkata (UTC+05:30) is 04:00 UTC.
    expect(d.schedule!.upcoming_runs_at![0]).toBe('2031-01-02T04:00:00.000Z');
    expect(await clock.tick('2031-01-02T03:59:59Z')).toEqual([]);
    const fired = await clock.tick('2031-01-02T04:00:00Z');
    expect(fired.map((r) => r.deployment_id)).toEqual([d.id]);
  });

  it("the worker's own timer fires a due minute", async () => {
    const p = await startPlatform({ env: { ...ENV, DEPLOYMENT_TICK_MS: '100' } });
    try {
      const { client: c } = await p.newTenant('timer');
      let now = at('2031-02-01T08:00:10Z');
      p.server.platform.deployments.setClock(() => now);
      const { env, agent } = await setup(c);
      const d = await c.beta.deployments.create({
        name: 'timer',
        agent: agent.id,
        environment_id: env.id,
        initial_events: hello,
        schedule: everyMinute,
      });
      now = at('2031-02-01T08:01:00Z');
      const runs = await waitFor(async () => {
        const r = await c.beta.deploymentRuns.list({ deployment_id: d.id });
        return r.data.length ? r.data : null;
      });
      expect(runs.map((r) => (r.trigger_context as any).scheduled_at)).toEqual([
        '2031-02-01T08:01:00.000Z',
      ]);
    } finally {
      await p.close();
    }
  });

  it('failed runs carry the SDK error types; has_error filters them', async () => {
    const { client: c, apiKey, tenantId } = await t.newTenant('errors');
    const clock = clockOf(t, '2031-03-01T00:00:30Z', tenantId);
    const { env, agent } = await setup(c);
    const make = async (extra: Record<string, unknown> = {}) =>
      c.beta.deployments.create({
        name: 'e',
        agent: agent.id,
        environment_id: env.id,
        initial_events: hello,
        ...extra,
      });
    const ok = await c.beta.deployments.run((await make()).id);
    expect(ok.error).toBeNull();

    const v1 = await c.beta.vaults.create({ display_name: 'gone' });
    const dv1 = await make({ vault_ids: [v1.id] });
    await c.beta.vaults.delete(v1.id);
    const v2 = await c.beta.vaults.create({ display_name: 'archived' });
    const dv2 = await make({ vault_ids: [v2.id] });
    await c.beta.vaults.archive(v2.id);

    const file = await c.beta.files.upload({ file: await toFile(Buffer.from('x'), 'a.txt') });
    const df = await make({ resources: [{ type: 'file', file_id: file.id }] });
    const img = await c.beta.files.upload({
      file: await toFile(Buffer.from('img'), 'a.png', { type: 'image/png' }),
    });
    const di = await make({
      initial_events: [
        {
          type: 'user.message',
          content: [{ type: 'image', source: { type: 'file', file_id: img.id } }],
        },
      ],
    });
    await c.beta.files.delete(file.id);
    await c.beta.files.delete(img.id);

    const env2 = await c.beta.environments.create({ name: 'archived-env' });
    const de1 = await make({ environment_id: env2.id });
    await c.beta.environments.archive(env2.id);
    const env3 = await c.beta.environments.create({ name: 'deleted-env' });
    const de2 = await make({ environment_id: env3.id });
    await c.beta.environments.delete(env3.id);

    const failures: Array<[string, string]> = [
      [dv1.id, 'vault_not_found_error'],
      [dv2.id, 'vault_archived_error'],
      [df.id, 'file_not_found_error'],
      [di.id, 'file_not_found_error'],
      [de1.id, 'environment_archived_error'],
      [de2.id, 'environment_not_found_error'],
    ];
    for (const [id, type] of failures) {
      const run = await c.beta.deployments.run(id);
      expect([run.error?.type, run.session_id], id).toEqual([type, null]);
      expect(run.error!.message.length).toBeGreaterThan(0);
      expect(await c.beta.deploymentRuns.retrieve(run.id)).toEqual(run);
    }

    // A scheduled fire of an archived agent's deployment fails and pauses the deployment.
    const agent2 = await c.beta.agents.create({ name: 'retiring', model: 'claude-sonnet-4-5' });
    const da = await make({ agent: agent2.id, schedule: everyMinute });
    await c.beta.agents.archive(agent2.id);
    const [archivedRun] = await clock.tick('2031-03-01T00:01:00Z');
    expect(archivedRun!.error).toMatchObject({ type: 'agent_archived_error' });
    expect(await c.beta.deployments.retrieve(da.id)).toMatchObject({
      status: 'paused',
      paused_reason: { type: 'error', error: { type: 'agent_archived_error' } },
    });
    expect(await clock.tick('2031-03-01T00:02:00Z')).toEqual([]);
    expect((await c.beta.deployments.run(da.id)).error?.type).toBe('agent_archived_error');

    const failed = await allRuns(c, { has_error: true });
    expect(failed.map((r) => r.error!.type).sort()).toEqual(
      [...failures.map(([, ty]) => ty), 'agent_archived_error', 'agent_archived_error'].sort(),
    );
    expect(failed.every((r) => r.session_id === null)).toBe(true);
    const succeeded = await allRuns(c, { has_error: false });
    expect(succeeded.map((r) => r.id)).toEqual([ok.id]);
    const ids = (await allRuns(c, {})).map((r) => r.id);
    expect(ids).toEqual([...ids].sort().reverse());

    // The tenant over its rate limit: the scheduled fire records session_rate_limited_error and
    // the schedule keeps going. (The fixed window may roll over between the requests and the
    // tick; then the fire succeeds and the next minute tries again.)
    const dr = await make({ schedule: everyMinute });
    let limited: any = null;
    for (let minute = 3; minute < 7 && !limited; minute++) {
      for (let i = 0; i < 400; i++) {
        const res = await t.http('/v1/deployments?limit=1', { key: apiKey });
        if (res.status === 429) break;
      }
      const fired = await clock.tick(`2031-03-01T00:0${minute}:00Z`);
      limited = fired.find((r) => r.deployment_id === dr.id && r.error) ?? null;
    }
    expect(limited?.error?.type).toBe('session_rate_limited_error');
    const platform = t.server.platform;
    expect((await platform.deployments.get(tenantId, dr.id)).status).toBe('active');
    expect((await platform.deployments.getRun(tenantId, limited._id)).error).toMatchObject({
      type: 'session_rate_limited_error',
    });
  });

  it('a run whose worker died mid-fire is closed as unknown_error, never retried', async () => {
    const { client: c, tenantId } = await t.newTenant('stale');
    const clock = clockOf(t, '2031-04-01T00:00:30Z', tenantId);
    const { env, agent } = await setup(c);
    const d = await c.beta.deployments.create({
      name: 'crashy',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
    });
    // What a worker killed between recording the run and creating its session leaves behind.
    await t.server.platform.collections.deploymentRuns.insert(tenantId, {
      _id: 'drun_00000000000000000000000000',
      deployment_id: d.id,
      agent: { id: agent.id, version: agent.version },
      trigger_context: { type: 'manual' },
      state: 'firing',
      session_id: null,
      error: null,
      created_at: '2031-04-01T00:00:30.000Z',
    });
    expect((await c.beta.deploymentRuns.list({ deployment_id: d.id })).data).toEqual([]);
    clock.set('2031-04-01T00:03:00Z');
    expect((await t.server.platform.deployments.tick()).closedStale).toBe(0);
    clock.set('2031-04-01T00:06:00Z');
    expect((await t.server.platform.deployments.tick()).closedStale).toBe(1);
    const [run] = (await c.beta.deploymentRuns.list({ deployment_id: d.id })).data;
    expect(run).toMatchObject({ session_id: null, error: { type: 'unknown_error' } });
    expect((await c.beta.sessions.list()).data).toEqual([]);
  });

  it('exactly once: schedulers over one store ticking the same minute concurrently → one run', async () => {
    const { client: c, tenantId } = await t.newTenant('once');
    const clock = clockOf(t, '2031-05-01T00:00:30Z', tenantId);
    const { env, agent } = await setup(c);
    const d = await c.beta.deployments.create({
      name: 'once',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      schedule: everyMinute,
    });
    const p = t.server.platform;
    // Five more schedulers (as on five more worker replicas) over the same store.
    const replicas = Array.from({ length: 5 }, () => {
      const s = new DeploymentService(
        {
          c: p.collections,
          sessions: p.sessions,
          rateLimiter: p.coordination.rateLimiter,
          ratePerMinute: p.config.rateLimit.perMinute,
          webhooks: () => undefined,
          log: createLogger('error'),
        },
        () => true,
      );
      s.setClock(() => at('2031-05-01T00:01:00Z'));
      return s;
    });
    clock.set('2031-05-01T00:01:00Z');
    const results = await Promise.all([p.deployments.tick(), ...replicas.map((s) => s.tick())]);
    const fired = results.flatMap((r) => r.fired.filter((x) => x.deployment_id === d.id));
    expect(fired).toHaveLength(1);
    const runs = await allRuns(c, { deployment_id: d.id });
    expect(runs.map((r) => r.id)).toEqual([fired[0]!._id]);
    expect((await c.beta.sessions.list()).data.map((s) => s.id)).toEqual([runs[0]!.session_id]);
  });

  it.runIf(REAL)('exactly once across two platform instances sharing the real store', async () => {
    const shared = realAdapterEnv();
    const a = await startPlatform({ env: { ...ENV, ...shared } });
    const b = await startPlatform({ env: { ...ENV, ...shared, API_KEY: a.operatorKey } });
    try {
      const { client: c } = await a.newTenant('fleet');
      const now = { v: at('2031-06-01T00:00:30Z') };
      for (const p of [a, b]) p.server.platform.deployments.setClock(() => now.v);
      const { env, agent } = await setup(c);
      const d = await c.beta.deployments.create({
        name: 'fleet',
        agent: agent.id,
        environment_id: env.id,
        initial_events: hello,
        schedule: everyMinute,
      });
      for (const minute of ['01', '02']) {
        now.v = at(`2031-06-01T00:${minute}:00Z`);
        const ticks = await Promise.all(
          [a, b, a, b].map((p) => p.server.platform.deployments.tick()),
        );
        expect(ticks.flatMap((r) => r.fired)).toHaveLength(1);
      }
      const runs = await allRuns(c, { deployment_id: d.id });
      expect(runs.map((r) => (r.trigger_context as any).scheduled_at)).toEqual([
        '2031-06-01T00:02:00.000Z',
        '2031-06-01T00:01:00.000Z',
      ]);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
