/**
 * Outbound webhooks end to end (core/src/webhooks): session status events of real turns are
 * delivered to receivers that verify EVERY request with the official SDK's
 * `client.beta.webhooks.unwrap` (test/kit/fixtures/webhookReceiver.ts), to a tenant's endpoint
 * (its own secret) and to the deployment endpoint (SVC_MANAGED_AGENTS_WEBHOOK_* settings).
 * Retries are driven by the due-time scan with an injected instant
 * (`platform.webhooks.sweep(nowMs)`, WEBHOOK_SCAN_MS=0), so nothing sleeps through a backoff;
 * scans racing for one due attempt send it once (the claim is a compare-and-swap).
 * Endpoint CRUD, bad input and secret handling: test/e2e/webhooks/webhooks-endpoints.test.ts; restart
 * mid-backoff: test/e2e/webhooks/webhooks-restart.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { runTurn } from '../../kit/turnHelpers.js';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../../kit/fixtures/webhookReceiver.js';

const DEPLOYMENT_KEY = `whsec_${randomBytes(24).toString('base64')}`;
let t: TestPlatform;
let dep: WebhookReceiver;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  dep = await startWebhookReceiver(DEPLOYMENT_KEY);
  for (let i = 0; i < 8; i++) receivers.push(await startWebhookReceiver());
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      WEBHOOK_SCAN_MS: '0',
      // Each receiver's port is opened; any other loopback port stays refused.
      EGRESS_ALLOW_PRIVATE_HOSTS: [dep, ...receivers].map((r) => new URL(r.url).host).join(','),
      SVC_MANAGED_AGENTS_WEBHOOK_URL: dep.url,
      SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY: DEPLOYMENT_KEY,
      SVC_MANAGED_AGENTS_ORGANIZATION_ID: 'org_webhook_test',
    },
  });
});
afterAll(async () => {
  await t?.close();
  for (const r of [dep, ...receivers]) await r?.close();
});

type Tenant = Awaited<ReturnType<TestPlatform['newTenant']>>;

async function endpointFor(a: Tenant, r: WebhookReceiver, body: Record<string, unknown> = {}) {
  const res = await t.http('/v1/svc/webhook_endpoints', {
    method: 'POST',
    key: a.apiKey,
    headers: BETA,
    json: { url: r.url, ...body },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const ep = (await res.json()) as { id: string; secret: string };
  r.key = ep.secret;
  return ep;
}

async function deliveriesOf(a: Tenant, epId: string): Promise<any[]> {
  const res = await t.http(`/v1/svc/webhook_endpoints/${epId}/deliveries`, {
    key: a.apiKey,
    headers: BETA,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: any[] }).data;
}

async function sessionOf(a: Tenant): Promise<string> {
  const env = await a.client.beta.environments.create({ name: 'hooks' });
  const agent = await a.client.beta.agents.create({ name: 'hooks', model: 'claude-sonnet-4-5' });
  return (await a.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}

/** The delivery, once its attempt `n` is recorded and it waits for the next one. */
const awaitingRetry = (a: Tenant, epId: string, n: number) =>
  waitFor(async () => {
    const [d] = await deliveriesOf(a, epId);
    return d?.state === 'pending' && d.attempts === n && d.next_attempt_at ? d : null;
  });

/**
 * Delivery order is not promised (spec: an out-of-order webhook is harmless; each event is its
 * own delivery, sent concurrently). So a receiver's requests are compared as a set, and the
 * emission order is checked where a receiver would read it: the events' `created_at`.
 */
function inEmissionOrder(received: ReceivedWebhook[], expected: Array<[string, string]>) {
  const key = (x: ReceivedWebhook) => `${x.event!.data.type} ${x.event!.data.id}`;
  expect(received.map(key).sort()).toEqual(expected.map(([type, id]) => `${type} ${id}`).sort());
  const at = new Map(received.map((x) => [key(x), Date.parse(x.event!.created_at)]));
  const stamps = expected.map(([type, id]) => at.get(`${type} ${id}`)!);
  expect(stamps).toEqual([...stamps].sort((p, q) => p - q));
}

const IDLED = { event_types: ['session.status_idled'] };
const sweep = (at: string) => t.server.platform.webhooks.sweep(Date.parse(at));

describe('webhook delivery', () => {
  it("a turn's idle reaches the tenant endpoint and the deployment endpoint, signed and verified", async () => {
    const a = await t.newTenant('hooks-a');
    const r = receivers[0]!;
    const ep = await endpointFor(a, r, { event_types: ['session.status_idled'] });
    const sid = await sessionOf(a);
    await runTurn(a.client, sid, 'hello');

    const [got] = await r.waitFor(1);
    expect(got!.verifyError).toBeNull();
    expect(got!.answered).toBe(200);
    expect(got!.event).toMatchObject({
      type: 'event',
      data: {
        type: 'session.status_idled',
        id: sid,
        workspace_id: a.tenantId,
        organization_id: 'org_webhook_test',
      },
    });
    expect(got!.event!.id).toMatch(/^evt_/);
    expect(got!.headers['webhook-id']).toMatch(/^msg_/);
    // The payload names the object; the receiver fetches it.
    expect((await a.client.beta.sessions.retrieve(sid)).id).toBe(sid);

    // The deployment endpoint got the same event, signed with the configured key.
    const atDep = await waitFor(async () =>
      dep.received.find((x) => x.event?.data.id === sid && x.event.id === got!.event!.id),
    );
    expect(atDep.verifyError).toBeNull();
    expect(atDep.body).toBe(got!.body);

    const [d] = await deliveriesOf(a, ep.id);
    expect(d).toMatchObject({ state: 'succeeded', attempts: 1, last_status: 200 });
    expect(d.event_id).toBe(got!.event!.id);
    expect(d.message_id).toBe(got!.headers['webhook-id']);
  });

  it('an endpoint created after events went nowhere gets the next one (no stale endpoint list)', async () => {
    const a = await t.newTenant('hooks-late');
    const sid = await sessionOf(a);
    // The idle finds no endpoint of this tenant (the embedded store keeps that lookup).
    await runTurn(a.client, sid, 'before');
    await waitFor(async () => dep.received.some((x) => x.event?.data.id === sid));
    const r = receivers[7]!;
    const ep = await endpointFor(a, r, { event_types: ['session.status_idled'] });
    await runTurn(a.client, sid, 'after');
    const [got] = await r.waitFor(1);
    expect(got!.event!.data).toMatchObject({ type: 'session.status_idled', id: sid });
    expect(await deliveriesOf(a, ep.id)).toHaveLength(1);
  });

  it('500 twice then 200: three attempts, same id and body, fresh timestamp and signature each', async () => {
    const a = await t.newTenant('hooks-retry');
    const r = receivers[1]!;
    r.answers = [500, 500];
    const ep = await endpointFor(a, r, IDLED);
    await runTurn(a.client, await sessionOf(a), 'retry me');
    await r.waitFor(1);

    const first = await awaitingRetry(a, ep.id, 1);
    expect(first.last_status).toBe(500);
    // Jittered exponential backoff: the second attempt is due 5 to 7.5 s after the first.
    const delay1 = Date.parse(first.next_attempt_at) - Date.parse(first.created_at);
    expect(delay1).toBeGreaterThanOrEqual(5_000);
    expect(delay1).toBeLessThan(7_500 + 5_000);
    expect((await sweep(first.next_attempt_at)).outcomes.retrying).toBe(1);
    const second = await awaitingRetry(a, ep.id, 2);
    const delay2 = Date.parse(second.next_attempt_at) - Date.parse(first.next_attempt_at);
    expect(delay2).toBeGreaterThanOrEqual(10_000);
    expect(delay2).toBeLessThanOrEqual(15_000);
    expect((await sweep(second.next_attempt_at)).outcomes.succeeded).toBe(1);

    expect(r.received.map((x) => x.answered)).toEqual([500, 500, 200]);
    for (const x of r.received) expect(x.verifyError).toBeNull();
    const ids = new Set(r.received.map((x) => x.headers['webhook-id']));
    const bodies = new Set(r.received.map((x) => x.body));
    const stamps = new Set(r.received.map((x) => x.headers['webhook-timestamp']));
    const sigs = new Set(r.received.map((x) => x.headers['webhook-signature']));
    expect([ids.size, bodies.size, stamps.size, sigs.size]).toEqual([1, 1, 3, 3]);
    const [d] = await deliveriesOf(a, ep.id);
    expect(d).toMatchObject({ state: 'succeeded', attempts: 3, last_status: 200 });
  });

  it('three failed attempts leave the delivery failed with the last answer recorded', async () => {
    const a = await t.newTenant('hooks-fail');
    const r = receivers[2]!;
    r.defaultStatus = 503;
    const ep = await endpointFor(a, r, IDLED);
    let release!: () => void;
    r.gate = new Promise<void>((resolve) => (release = resolve));
    await runTurn(a.client, await sessionOf(a), 'fail me');
    await r.waitFor(1);
    // The first attempt is in flight (its answer held): counted, and no next attempt is due yet.
    expect(await deliveriesOf(a, ep.id)).toMatchObject([
      { state: 'pending', attempts: 1, next_attempt_at: null, last_status: null },
    ]);
    r.gate = null;
    release();
    // Two scans racing for the same due attempt: it is claimed once and sent once.
    const due = (await awaitingRetry(a, ep.id, 1)).next_attempt_at;
    const raced = await Promise.all([sweep(due), sweep(due), sweep(due)]);
    expect(raced.reduce((n, x) => n + x.outcomes.retrying, 0)).toBe(1);
    expect(r.received).toHaveLength(2);
    const second = await awaitingRetry(a, ep.id, 2);
    expect((await sweep(second.next_attempt_at)).outcomes.failed).toBe(1);
    const [d] = await deliveriesOf(a, ep.id);
    expect(d).toMatchObject({
      state: 'failed',
      attempts: 3,
      last_status: 503,
      next_attempt_at: null,
    });
    expect(d.last_error).toContain('503');
    expect(d.completed_at).toBeTruthy();
    // Nothing is due any more, however late the scan runs.
    await t.server.platform.webhooks.sweep(Date.now() + 3_600_000);
    expect(r.received.length).toBe(3);
    for (const x of r.received) expect(x.verifyError).toBeNull();
  });

  it('a 3xx is not retried and disables the endpoint, which says why; an update re-enables it', async () => {
    const a = await t.newTenant('hooks-redirect');
    const r = receivers[3]!;
    r.answers = [302];
    const ep = await endpointFor(a, r, IDLED);
    const sid = await sessionOf(a);
    await runTurn(a.client, sid, 'redirect');
    await r.waitFor(1);
    const [d] = await waitFor(async () => {
      const list = await deliveriesOf(a, ep.id);
      return list[0]?.state === 'failed' ? list : null;
    });
    expect(d).toMatchObject({ attempts: 1, last_status: 302 });
    const got = (await (
      await t.http(`/v1/svc/webhook_endpoints/${ep.id}`, { key: a.apiKey, headers: BETA })
    ).json()) as any;
    expect(got).toMatchObject({
      disabled: true,
      disabled_reason: { type: 'redirect', status: 302, delivery_id: d.id },
    });
    expect(got.disabled_reason.message).toContain('302');
    await t.server.platform.webhooks.sweep(Date.now() + 3_600_000);

    // While disabled, a new event makes no delivery to it (the deployment endpoint still gets it).
    const seenAtDep = dep.received.length;
    await runTurn(a.client, sid, 'while disabled');
    await waitFor(async () =>
      dep.received
        .slice(seenAtDep)
        .some((x) => JSON.parse(x.body).data.workspace_id === a.tenantId),
    );
    expect(await deliveriesOf(a, ep.id)).toHaveLength(1);
    expect(r.received).toHaveLength(1);

    const res = await t.http(`/v1/svc/webhook_endpoints/${ep.id}`, {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { disabled: false },
    });
    expect(await res.json()).toMatchObject({ disabled: false, disabled_reason: null });
    await runTurn(a.client, sid, 'enabled again');
    const [, again] = await r.waitFor(2);
    expect(again!.verifyError).toBeNull();
    expect(again!.answered).toBe(200);
  });

  it('event_types filters: a terminated-only endpoint gets the delete, an unfiltered one both', async () => {
    const a = await t.newTenant('hooks-filter');
    const only = receivers[4]!;
    const all = receivers[5]!;
    const epOnly = await endpointFor(a, only, { event_types: ['session.status_terminated'] });
    await endpointFor(a, all);
    const sid = await sessionOf(a);
    await runTurn(a.client, sid, 'filter');
    await a.client.beta.sessions.delete(sid);
    // The unfiltered endpoint gets every type (session.created, … too: webhooks-types.test.ts).
    const status = () =>
      all.received.filter((x) => x.event?.data.type.startsWith('session.status_'));
    await waitFor(async () => status().length >= 2);
    await only.waitFor(1);
    inEmissionOrder(status(), [
      ['session.status_idled', sid],
      ['session.status_terminated', sid],
    ]);
    expect(only.received.map((x) => x.event?.data.type)).toEqual(['session.status_terminated']);
    expect(await deliveriesOf(a, epOnly.id)).toHaveLength(1);
    for (const x of [...all.received, ...only.received]) expect(x.verifyError).toBeNull();
  });

  it('a name resolving to a private address is refused at send time (egress policy)', async () => {
    const a = await t.newTenant('hooks-egress');
    // https and a name: valid at create; localhost:4443 is not an opened host:port.
    const res = await t.http('/v1/svc/webhook_endpoints', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { url: 'https://localhost:4443/hook' },
    });
    expect(res.status).toBe(200);
    const ep = (await res.json()) as { id: string };
    await runTurn(a.client, await sessionOf(a), 'egress');
    const [d] = await waitFor(async () => {
      const list = await deliveriesOf(a, ep.id);
      return list[0]?.state === 'failed' ? list : null;
    });
    expect(d.attempts).toBe(1);
    expect(d.last_status).toBeNull();
    expect(d.last_error).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
  });

  it('vault and credential lifecycle events, in order, with the owning vault named', async () => {
    const a = await t.newTenant('hooks-vaults');
    const r = receivers[6]!;
    await endpointFor(a, r, {
      event_types: [
        'vault.created',
        'vault.archived',
        'vault.deleted',
        'vault_credential.created',
        'vault_credential.archived',
        'vault_credential.deleted',
      ],
    });
    const vault = await a.client.beta.vaults.create({ display_name: 'hooked' });
    const cred = await a.client.beta.vaults.credentials.create(vault.id, {
      auth: {
        type: 'static_bearer',
        token: 'tok-hooked',
        mcp_server_url: 'https://mcp.example.com/',
      },
    });
    await a.client.beta.vaults.credentials.archive(cred.id, { vault_id: vault.id });
    await a.client.beta.vaults.credentials.delete(cred.id, { vault_id: vault.id });
    await a.client.beta.vaults.archive(vault.id);
    await a.client.beta.vaults.delete(vault.id);
    await r.waitFor(6);
    for (const x of r.received) expect(x.verifyError).toBeNull();
    inEmissionOrder(r.received, [
      ['vault.created', vault.id],
      ['vault_credential.created', cred.id],
      ['vault_credential.archived', cred.id],
      ['vault_credential.deleted', cred.id],
      ['vault.archived', vault.id],
      ['vault.deleted', vault.id],
    ]);
    for (const x of r.received.filter((y) => y.event!.data.type.startsWith('vault_credential.')))
      expect((x.event!.data as { vault_id?: string }).vault_id).toBe(vault.id);
    expect(r.received.map((x) => x.body).join('')).not.toContain('tok-hooked');
  });
});
