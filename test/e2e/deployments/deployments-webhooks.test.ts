/**
 * Deployment run webhooks (core/src/deployments/firing.ts → platform.webhooks): every run emits
 * `deployment_run.started`, then `deployment_run.succeeded` or `deployment_run.failed`, each
 * naming the run (`data.id`) and its deployment; a receiver verifies every delivery with the
 * official SDK's `client.beta.webhooks.unwrap` (test/kit/fixtures/webhookReceiver.ts) and fetches
 * the run it names. A scheduled minute fired by two concurrent schedulers sends one started and
 * one outcome event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../kit/fixtures/webhookReceiver.js';

let t: TestPlatform;
let r: WebhookReceiver;
beforeAll(async () => {
  r = await startWebhookReceiver();
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      DEPLOYMENT_TICK_MS: '0',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(r.url).host,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await r?.close();
});

const hello = [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'go' }] }];
const RUN_EVENTS = ['deployment_run.started', 'deployment_run.succeeded', 'deployment_run.failed'];

describe('deployment run webhooks', () => {
  it('started then succeeded or failed, verified with unwrap, naming the run', async () => {
    const a = await t.newTenant('dep-hooks');
    const res = await t.http('/v1/svc/webhook_endpoints', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { url: r.url, event_types: RUN_EVENTS },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    r.key = ((await res.json()) as { secret: string }).secret;

    const c = a.client;
    const env = await c.beta.environments.create({ name: 'hooks-env' });
    const agent = await c.beta.agents.create({ name: 'hooks-agent', model: 'claude-sonnet-4-5' });
    const vault = await c.beta.vaults.create({ display_name: 'soon gone' });
    const ok = await c.beta.deployments.create({
      name: 'ok',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    });
    const bad = await c.beta.deployments.create({
      name: 'bad',
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      vault_ids: [vault.id],
    });
    await c.beta.vaults.delete(vault.id);

    const good = await c.beta.deployments.run(ok.id);
    const failed = await c.beta.deployments.run(bad.id);
    // A scheduled minute ticked by two schedulers at once: one run, so one pair of events.
    let now = Date.parse('2032-01-01T00:00:30Z');
    const p = t.server.platform;
    p.deployments.setClock(() => now);
    await c.beta.deployments.update(ok.id, {
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    });
    now = Date.parse('2032-01-01T00:01:00Z');
    const ticks = await Promise.all([p.deployments.tick(), p.deployments.tick()]);
    const [scheduled] = ticks.flatMap((x) => x.fired.filter((f) => f.deployment_id === ok.id));
    expect(scheduled).toBeDefined();

    const got = await r.waitFor(6);
    for (const x of got) expect(x.verifyError).toBeNull();
    const seen = got.map((x) => [x.event!.data.type, x.event!.data.id]);
    expect(seen.sort()).toEqual(
      [
        ['deployment_run.started', good.id],
        ['deployment_run.succeeded', good.id],
        ['deployment_run.started', failed.id],
        ['deployment_run.failed', failed.id],
        ['deployment_run.started', scheduled!._id],
        ['deployment_run.succeeded', scheduled!._id],
      ].sort(),
    );
    for (const x of got) {
      const data = x.event!.data as unknown as {
        id: string;
        deployment_id: string;
        workspace_id: string;
      };
      // The receiver fetches the object the event names.
      const run = await c.beta.deploymentRuns.retrieve(data.id);
      expect(run.deployment_id).toBe(data.deployment_id);
      expect(data.workspace_id).toBe(a.tenantId);
    }
    expect((await c.beta.deploymentRuns.retrieve(failed.id)).error?.type).toBe(
      'vault_not_found_error',
    );
  });
});
