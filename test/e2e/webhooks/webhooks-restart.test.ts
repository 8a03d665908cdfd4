/**
 * Webhook delivery survives a restart mid-backoff (core/src/webhooks: the delivery record, not
 * memory, holds the attempt count and the due time): the first attempt gets a 500, the platform
 * is closed, a new one starts on the same data dir, and its due-time scan (`sweep(nowMs)` with
 * the due instant injected, WEBHOOK_SCAN_MS=0) sends the second attempt with the same event id,
 * message id and body, freshly signed; the receiver verifies both with the SDK's `unwrap`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { runTurn } from '../../kit/turnHelpers.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../kit/fixtures/webhookReceiver.js';

let t: TestPlatform;
let r: WebhookReceiver;
beforeAll(async () => {
  r = await startWebhookReceiver();
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      WEBHOOK_SCAN_MS: '0',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(r.url).host,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await r?.close();
});

it('a delivery waiting for its retry is completed by the next platform on the same data dir', async () => {
  const a = await t.newTenant('hooks-restart');
  const res = await t.http('/v1/svc/webhook_endpoints', {
    method: 'POST',
    key: a.apiKey,
    headers: BETA,
    json: { url: r.url, event_types: ['session.status_idled'] },
  });
  expect(res.status).toBe(200);
  const ep = (await res.json()) as { id: string; secret: string };
  r.key = ep.secret;
  r.answers = [500];
  const env = await a.client.beta.environments.create({ name: 'restart' });
  const agent = await a.client.beta.agents.create({ name: 'restart', model: 'claude-sonnet-4-5' });
  const sid = (await a.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  await runTurn(a.client, sid, 'before the restart');
  await r.waitFor(1);

  const deliveries = async () =>
    (
      (await (
        await t.http(`/v1/svc/webhook_endpoints/${ep.id}/deliveries`, {
          key: a.apiKey,
          headers: BETA,
        })
      ).json()) as { data: any[] }
    ).data;
  const waiting = await waitFor(async () => {
    const [d] = await deliveries();
    return d?.state === 'pending' && d.attempts === 1 && d.next_attempt_at ? d : null;
  });

  await t.restart();
  const sweep = await t.server.platform.webhooks.sweep(Date.parse(waiting.next_attempt_at));
  expect(sweep.outcomes.succeeded).toBe(1);

  const [first, second] = r.received;
  expect(r.received).toHaveLength(2);
  for (const x of r.received) expect(x.verifyError).toBeNull();
  expect([first!.answered, second!.answered]).toEqual([500, 200]);
  expect(second!.body).toBe(first!.body);
  expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
  expect(second!.headers['webhook-timestamp']).not.toBe(first!.headers['webhook-timestamp']);
  expect(second!.headers['webhook-signature']).not.toBe(first!.headers['webhook-signature']);
  expect(second!.event).toMatchObject({
    type: 'event',
    data: { type: 'session.status_idled', id: sid },
  });
  const [done] = await deliveries();
  expect(done).toMatchObject({ id: waiting.id, state: 'succeeded', attempts: 2, last_status: 200 });
});
