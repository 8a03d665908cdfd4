/**
 * Deployments (core/src/deployments, gateway/src/routes/deployments.ts) through the official
 * TypeScript SDK (`client.beta.deployments.*`, `client.beta.deploymentRuns.*`) against an
 * in-process platform:
 * - CRUD: create pins the agent's current version (an object pins an older one), retrieve,
 *   update (POST; metadata patch, schedule replace and clear), list (newest first, paged,
 *   agent_id and status filters, include_archived);
 * - pause / unpause / archive: status and paused_reason, archive is final (update, pause, run
 *   refused), an archived deployment has no upcoming runs and is listed only with include_archived;
 * - a manual run creates a session with the pinned agent, environment, vaults and the initial
 *   events as its first input events and its budget, also while paused; the session carries `deployment_id`
 *   and the sessions list filters by it;
 * - bad input: invalid cron (field count, extended syntax, out of range), unknown timezone,
 *   unknown/archived agent, unknown environment, unknown vault, bad initial events
 *   (system.message not last, user.define_outcome unsupported, none), bad resources, a bad
 *   budget, and on a self_hosted environment an agent with a sandbox tool or any resource —
 *   each a 400 naming the field; a run on a self_hosted environment queues the session's Work item;
 * - tenant isolation: another tenant's deployment and run ids are 404.
 * Scheduled firing, failed runs and exactly-once: test/e2e/deployments/deployments-runs.test.ts.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', DEPLOYMENT_TICK_MS: '0', RATE_LIMIT_PER_MINUTE: '100000' },
  });
});
afterAll(async () => {
  await t?.close();
});

const hello = [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'hi' }] }];

async function badRequest(p: Promise<unknown>, field: string): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `expected a 400 naming ${field}`).toBeInstanceOf(Anthropic.BadRequestError);
  const message = (err as any).error.error.message as string;
  expect(message).toContain(field);
  return message;
}

async function setup(c: Anthropic) {
  const env = await c.beta.environments.create({ name: 'dep-env' });
  const agent = await c.beta.agents.create({ name: 'dep-agent', model: 'claude-sonnet-4-5' });
  return { env, agent };
}

describe('deployments', () => {
  it('create, retrieve, update, list, pause, unpause, archive (final)', async () => {
    const { client: c } = await t.newTenant('crud');
    const { env, agent } = await setup(c);
    const v2 = await c.beta.agents.update(agent.id, { version: agent.version, system: 'v2' });
    const d = await c.beta.deployments.create({
      name: 'nightly',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      metadata: { team: 'ops' },
      schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'America/Los_Angeles' },
    });
    expect(d).toMatchObject({
      type: 'deployment',
      name: 'nightly',
      agent: { id: agent.id, type: 'agent', version: v2.version },
      environment_id: env.id,
      status: 'active',
      paused_reason: null,
      archived_at: null,
      description: null,
      vault_ids: [],
      resources: [],
      metadata: { team: 'ops' },
      initial_events: hello,
      schedule: {
        type: 'cron',
        expression: '0 9 * * 1-5',
        timezone: 'America/Los_Angeles',
        last_run_at: null,
      },
    });
    expect(d.id).toMatch(/^depl_/);
    expect('budget' in d).toBe(false);
    // 09:00 in Los Angeles on weekdays: 16:00 or 17:00 UTC, never a weekend.
    const upcoming = d.schedule!.upcoming_runs_at!;
    expect(upcoming).toHaveLength(5);
    for (const at of upcoming) {
      const when = new Date(at);
      expect([16, 17]).toContain(when.getUTCHours());
      expect(when.getUTCMinutes()).toBe(0);
      const local = when.toLocaleDateString('en-US', {
        timeZone: 'America/Los_Angeles',
        weekday: 'short',
      });
      expect(['Sat', 'Sun']).not.toContain(local);
    }
    expect(await c.beta.deployments.retrieve(d.id)).toEqual(d);

    // An agent object pins an older version.
    const pinned = await c.beta.deployments.create({
      name: 'pinned',
      agent: { type: 'agent', id: agent.id, version: agent.version },
      environment_id: env.id,
      initial_events: hello,
    });
    expect(pinned.agent.version).toBe(agent.version);
    expect(pinned.schedule).toBeNull();

    const u = await c.beta.deployments.update(d.id, {
      name: 'renamed',
      description: 'does things',
      metadata: { team: null, tier: 'gold' },
      schedule: { type: 'cron', expression: '*/15 * * * *', timezone: 'UTC' },
    });
    expect(u).toMatchObject({
      name: 'renamed',
      description: 'does things',
      metadata: { tier: 'gold' },
      schedule: { expression: '*/15 * * * *', timezone: 'UTC' },
    });
    for (const at of u.schedule!.upcoming_runs_at!)
      expect(new Date(at).getUTCMinutes() % 15).toBe(0);
    const cleared = await c.beta.deployments.update(pinned.id, { description: '' });
    expect(cleared.description).toBeNull();

    // List: newest first, paged, filters.
    const all = await c.beta.deployments.list();
    expect(all.data.map((x) => x.id)).toEqual([pinned.id, d.id]);
    const page1 = await c.beta.deployments.list({ limit: 1 });
    expect(page1.data.map((x) => x.id)).toEqual([pinned.id]);
    const page2 = await page1.getNextPage();
    expect(page2.data.map((x) => x.id)).toEqual([d.id]);
    expect((await c.beta.deployments.list({ agent_id: 'agent_none' })).data).toEqual([]);

    const paused = await c.beta.deployments.pause(d.id);
    expect(paused).toMatchObject({ status: 'paused', paused_reason: { type: 'manual' } });
    expect(paused.schedule!.upcoming_runs_at!.length).toBe(5);
    expect((await c.beta.deployments.list({ status: 'paused' })).data.map((x) => x.id)).toEqual([
      d.id,
    ]);
    expect((await c.beta.deployments.list({ status: 'active' })).data.map((x) => x.id)).toEqual([
      pinned.id,
    ]);
    expect(await c.beta.deployments.pause(d.id)).toMatchObject({ status: 'paused' });
    const resumed = await c.beta.deployments.unpause(d.id);
    expect(resumed).toMatchObject({ status: 'active', paused_reason: null });

    const archived = await c.beta.deployments.archive(d.id);
    expect(archived.archived_at).not.toBeNull();
    expect(archived.status).toBe('active');
    expect(archived.schedule!.upcoming_runs_at).toEqual([]);
    expect((await c.beta.deployments.list()).data.map((x) => x.id)).toEqual([pinned.id]);
    expect(
      (await c.beta.deployments.list({ include_archived: true })).data.map((x) => x.id),
    ).toEqual([pinned.id, d.id]);
    await badRequest(
      c.beta.deployments.list({ include_archived: true, status: 'active' }),
      'status',
    );
    // Final: nothing changes an archived deployment.
    await badRequest(c.beta.deployments.update(d.id, { name: 'again' }), 'deployment_id');
    await badRequest(c.beta.deployments.pause(d.id), 'deployment_id');
    await badRequest(c.beta.deployments.unpause(d.id), 'deployment_id');
    await badRequest(c.beta.deployments.run(d.id), 'deployment_id');
    expect((await c.beta.deployments.archive(d.id)).archived_at).toBe(archived.archived_at);
    expect((await c.beta.deployments.retrieve(d.id)).name).toBe('renamed');
  });

  it('a manual run creates a session like POST /v1/sessions, also while paused', async () => {
    const { client: c } = await t.newTenant('manual');
    const { env, agent } = await setup(c);
    const vault = await c.beta.vaults.create({ display_name: 'v' });
    const budget = {
      type: 'limit' as const,
      max_list_cost: { amount: '2500', currency: 'USD' as const },
    };
    const d = await c.beta.deployments.create({
      name: 'manual',
      agent: agent.id,
      environment_id: env.id,
      vault_ids: [vault.id],
      budget,
      initial_events: [
        { type: 'user.message', content: [{ type: 'text', text: 'start the report' }] },
        { type: 'system.message', content: [{ type: 'text', text: 'be brief' }] },
      ],
      schedule: { type: 'cron', expression: '0 0 1 1 *', timezone: 'UTC' },
    });
    expect(d.budget).toEqual(budget);
    await c.beta.deployments.pause(d.id);
    const run = await c.beta.deployments.run(d.id);
    expect(run).toMatchObject({
      type: 'deployment_run',
      deployment_id: d.id,
      agent: { id: agent.id, type: 'agent', version: agent.version },
      error: null,
      trigger_context: { type: 'manual' },
    });
    expect(run.id).toMatch(/^drun_/);
    expect(run.session_id).toMatch(/^sess_/);
    expect(await c.beta.deploymentRuns.retrieve(run.id)).toEqual(run);

    const s = await c.beta.sessions.retrieve(run.session_id!);
    expect(s).toMatchObject({
      agent: { id: agent.id, version: agent.version },
      environment_id: env.id,
      vault_ids: [vault.id],
      title: 'manual',
      budget,
    });
    // The session names its deployment, and the sessions list filters by it.
    expect((s as { deployment_id?: string }).deployment_id).toBe(d.id);
    const own = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    expect('deployment_id' in own).toBe(false);
    expect((await c.beta.sessions.list({ deployment_id: d.id })).data.map((x) => x.id)).toEqual([
      run.session_id,
    ]);
    expect((await c.beta.sessions.list({ deployment_id: 'depl_other' })).data).toEqual([]);
    // The initial events are the session's first input events, in order.
    const events: any[] = [];
    for await (const e of c.beta.sessions.events.list(run.session_id!)) events.push(e);
    const inputs = events.filter((e) => e.type === 'user.message' || e.type === 'system.message');
    expect(inputs.slice(0, 2).map((e) => [e.type, e.content[0].text])).toEqual([
      ['user.message', 'start the report'],
      ['system.message', 'be brief'],
    ]);
    // Manual runs do not count as scheduled ones.
    expect((await c.beta.deployments.retrieve(d.id)).schedule!.last_run_at).toBeNull();
    const listed = await c.beta.deploymentRuns.list({ deployment_id: d.id });
    expect(listed.data.map((r) => r.id)).toEqual([run.id]);
    expect((await c.beta.deploymentRuns.list({ trigger_type: 'schedule' })).data).toEqual([]);
  });

  it("bad input is a 400 naming the field; another tenant's ids are 404", async () => {
    const { client: c } = await t.newTenant('bad');
    const { env, agent } = await setup(c);
    const base = { name: 'x', agent: agent.id, environment_id: env.id, initial_events: hello };
    const cron = (expression: string, timezone = 'UTC') => ({
      ...base,
      schedule: { type: 'cron' as const, expression, timezone },
    });
    await badRequest(c.beta.deployments.create(cron('* * * *')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('0 * * * * *')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('@daily')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('0 0 L * *')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('0 0 * * MON#2')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('61 * * * *')), 'schedule.expression');
    await badRequest(c.beta.deployments.create(cron('0 25 * * *')), 'schedule.expression');
    await badRequest(
      c.beta.deployments.create(cron('* * * * *', 'Mars/Olympus')),
      'schedule.timezone',
    );
    await badRequest(
      c.beta.deployments.create(cron('* * * * *', 'PST8PDT-nope')),
      'schedule.timezone',
    );
    expect((await c.beta.deployments.create(cron('0 9 * JAN-MAR MON-FRI'))).schedule).toMatchObject(
      {
        expression: '0 9 * JAN-MAR MON-FRI',
      },
    );
    await badRequest(c.beta.deployments.create({ ...base, agent: 'agent_nope' }), 'agent');
    await badRequest(
      c.beta.deployments.create({ ...base, agent: { type: 'agent', id: agent.id, version: 9 } }),
      'agent.version',
    );
    await badRequest(
      c.beta.deployments.create({ ...base, environment_id: 'env_nope' }),
      'environment_id',
    );
    await badRequest(
      c.beta.deployments.create({ ...base, vault_ids: ['vlt_nope'] }),
      'vault_ids[0]',
    );
    await badRequest(c.beta.deployments.create({ ...base, initial_events: [] }), 'initial_events');
    await badRequest(
      c.beta.deployments.create({
        ...base,
        initial_events: [
          { type: 'system.message', content: [{ type: 'text', text: 'alone' }] },
          ...hello,
        ],
      }),
      'initial_events[0].type',
    );
    await badRequest(
      c.beta.deployments.create({
        ...base,
        initial_events: [
          { type: 'user.define_outcome', description: 'd', rubric: { type: 'text', content: 'r' } },
        ],
      } as any),
      'initial_events[0].type',
    );
    await badRequest(
      c.beta.deployments.create({ ...base, resources: [{ type: 'file', file_id: 'file_nope' }] }),
      'resources[0].file_id',
    );
    await badRequest(
      c.beta.deployments.create({
        ...base,
        resources: [{ type: 'github_repository', url: 'https://github.com/a/b' } as any],
      }),
      'resources[0].type',
    );
    await badRequest(c.beta.deployments.create({ ...base, name: '' }), 'name');
    const badBudget = {
      type: 'limit' as const,
      max_list_cost: { amount: '1.5', currency: 'USD' as const },
    };
    await badRequest(c.beta.deployments.create({ ...base, budget: badBudget }), 'budget');
    // A self_hosted environment runs no platform sandbox and mounts nothing, as session create says.
    const selfHosted = await c.beta.environments.create({
      name: 'mine',
      config: { type: 'self_hosted' },
    } as any);
    const sandboxTool = await c.beta.agents.create({
      name: 'tooled',
      model: 'claude-sonnet-4-5',
      tools: [
        {
          type: 'custom',
          name: 'script',
          description: 'runs in the sandbox',
          input_schema: { type: 'object' },
          execution: { type: 'sandbox', command: 'cat' },
        } as any,
      ],
    });
    await badRequest(
      c.beta.deployments.create({ ...base, agent: sandboxTool.id, environment_id: selfHosted.id }),
      'agent.tools[0].execution',
    );
    const file = await c.beta.files.upload({ file: await toFile(Buffer.from('x'), 'x.txt') });
    await badRequest(
      c.beta.deployments.create({
        ...base,
        environment_id: selfHosted.id,
        resources: [{ type: 'file', file_id: file.id }],
      }),
      'resources',
    );
    const onSelfHosted = await c.beta.deployments.create({
      ...base,
      environment_id: selfHosted.id,
    });
    await badRequest(
      c.beta.deployments.update(onSelfHosted.id, { agent: sandboxTool.id }),
      'agent.tools[0].execution',
    );
    // A run on it creates the session as POST /v1/sessions does: one Work item is queued.
    const shRun = await c.beta.deployments.run(onSelfHosted.id);
    expect(shRun.session_id).toMatch(/^sess_/);
    expect(await c.beta.environments.work.stats(selfHosted.id)).toMatchObject({ depth: 1 });
    const archivedAgent = await c.beta.agents.create({ name: 'old', model: 'claude-sonnet-4-5' });
    await c.beta.agents.archive(archivedAgent.id);
    await badRequest(c.beta.deployments.create({ ...base, agent: archivedAgent.id }), 'agent');
    const d = await c.beta.deployments.create(base);
    await badRequest(
      c.beta.deployments.update(d.id, {
        schedule: { type: 'cron', expression: 'nope', timezone: 'UTC' },
      }),
      'schedule.expression',
    );
    await badRequest(c.beta.deployments.update(d.id, { vault_ids: ['vlt_x'] }), 'vault_ids[0]');
    await badRequest(
      c.beta.deployments.update(d.id, { environment_id: 'env_x' }),
      'environment_id',
    );
    const run = await c.beta.deployments.run(d.id);

    // Another tenant: every id of this one is "not found".
    const { client: other } = await t.newTenant('other');
    const notFound = async (p: Promise<unknown>) =>
      expect(
        await p.then(
          () => null,
          (e) => e,
        ),
      ).toBeInstanceOf(Anthropic.NotFoundError);
    await notFound(other.beta.deployments.retrieve(d.id));
    await notFound(other.beta.deployments.update(d.id, { name: 'mine' }));
    await notFound(other.beta.deployments.pause(d.id));
    await notFound(other.beta.deployments.unpause(d.id));
    await notFound(other.beta.deployments.archive(d.id));
    await notFound(other.beta.deployments.run(d.id));
    await notFound(other.beta.deploymentRuns.retrieve(run.id));
    expect((await other.beta.deployments.list()).data).toEqual([]);
    expect((await other.beta.deploymentRuns.list({ deployment_id: d.id })).data).toEqual([]);
    // Nor can a deployment bind another tenant's agent or environment.
    const mine = await setup(other);
    await badRequest(
      other.beta.deployments.create({ ...base, environment_id: mine.env.id }),
      'agent',
    );
    await badRequest(
      other.beta.deployments.create({ ...base, agent: mine.agent.id }),
      'environment_id',
    );
    expect((await c.beta.deployments.retrieve(d.id)).name).toBe('x');
  });
});
