/**
 * A tenant's webhook endpoints, /v1/svc/webhook_endpoints (core/src/webhooks/endpoints.ts):
 * - create, list, retrieve, update (POST and PATCH), delete; another tenant's id is a 404 on
 *   every route, and its list does not show them;
 * - bad input is a 400 in the error shape naming the field (url: not https outside the hosts
 *   EGRESS_ALLOW_PRIVATE_HOSTS opens, a private literal, credentials; event_types[i]: unknown
 *   type; unknown fields);
 * - the secret is served by create (and rotate_secret) only: never by reads, updates, lists or
 *   deliveries, never written in clear to the data dir, never logged (stderr captured with
 *   LOG_LEVEL=debug); after a rotation deliveries verify with the new secret only;
 * - the deployment endpoint settings are checked at start-up without echoing the key.
 */
import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { loadConfig } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { describeFindings, findSecrets, readTree, type Secret } from '../../kit/secretsScan.js';
import { runTurn } from '../../kit/turnHelpers.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../kit/fixtures/webhookReceiver.js';

let t: TestPlatform;
let r: WebhookReceiver;
const logged: string[] = [];
const realWrite = process.stderr.write.bind(process.stderr);

beforeAll(async () => {
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    logged.push(String(chunk));
    return (realWrite as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  r = await startWebhookReceiver();
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      WEBHOOK_SCAN_MS: '0',
      LOG_LEVEL: 'debug',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(r.url).host,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await r?.close();
  process.stderr.write = realWrite;
});

type Tenant = Awaited<ReturnType<TestPlatform['newTenant']>>;
/** A Response whose json() is untyped (the tests assert its shape). */
type JsonResponse = Omit<Response, 'json'> & { json(): Promise<any> };
const call = (a: Tenant, method: string, path: string, json?: unknown): Promise<JsonResponse> =>
  t.http(`/v1/svc/webhook_endpoints${path}`, {
    method,
    key: a.apiKey,
    headers: BETA,
    ...(json === undefined ? {} : { json }),
  });

describe('webhook endpoints', () => {
  it('create, list, retrieve, update, delete; another tenant gets 404 for every route', async () => {
    const a = await t.newTenant('ep-a');
    const b = await t.newTenant('ep-b');
    const one = await (await call(a, 'POST', '', { url: 'https://hooks.example.com/1' })).json();
    const res2 = await call(a, 'POST', '', {
      url: 'https://hooks.example.com/2',
      event_types: ['session.status_terminated', 'deployment_run.failed'],
      description: 'second',
    });
    expect(res2.status).toBe(200);
    const two = await res2.json();
    expect(two).toMatchObject({
      type: 'webhook_endpoint',
      url: 'https://hooks.example.com/2',
      event_types: ['session.status_terminated', 'deployment_run.failed'],
      description: 'second',
      disabled: false,
      disabled_reason: null,
    });
    expect(two.id).toMatch(/^whep_/);
    const list = await (await call(a, 'GET', '')).json();
    expect(list.data.map((e: any) => e.id)).toEqual([two.id, one.id]);
    expect((await (await call(a, 'GET', `/${one.id}`)).json()).url).toBe(
      'https://hooks.example.com/1',
    );
    const updated = await (
      await call(a, 'POST', `/${one.id}`, { event_types: ['session.status_idled'] })
    ).json();
    expect(updated).toMatchObject({ event_types: ['session.status_idled'], description: null });
    const patched = await (await call(a, 'PATCH', `/${one.id}`, { description: 'p' })).json();
    expect(patched).toMatchObject({ description: 'p', event_types: ['session.status_idled'] });

    for (const [method, path, body] of [
      ['GET', `/${one.id}`, undefined],
      ['POST', `/${one.id}`, { description: 'hijack' }],
      ['PATCH', `/${one.id}`, { disabled: true }],
      ['DELETE', `/${one.id}`, undefined],
      ['POST', `/${one.id}/rotate_secret`, undefined],
      ['GET', `/${one.id}/deliveries`, undefined],
    ] as const) {
      const res = await call(b, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as any).error.type).toBe('not_found');
    }
    expect((await (await call(b, 'GET', '')).json()).data).toEqual([]);
    expect((await (await call(a, 'GET', `/${one.id}`)).json()).description).toBe('p');

    expect(await (await call(a, 'DELETE', `/${one.id}`)).json()).toEqual({
      id: one.id,
      type: 'webhook_endpoint_deleted',
    });
    expect((await call(a, 'GET', `/${one.id}`)).status).toBe(404);
  });

  it('bad input is a 400 naming the field', async () => {
    const a = await t.newTenant('ep-bad');
    const cases: Array<[unknown, string]> = [
      [{}, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://hooks.example.com/x' }, 'url'],
      [{ url: 'http://hooks.example.com/x' }, 'url'],
      [{ url: 'https://10.1.2.3/x' }, 'url'],
      [{ url: 'https://169.254.169.254/latest' }, 'url'],
      [{ url: 'https://user:pw@hooks.example.com/x' }, 'url'],
      [
        { url: 'https://hooks.example.com/x', event_types: ['session.status_idled', 'nope'] },
        'event_types[1]',
      ],
      [{ url: 'https://hooks.example.com/x', event_types: 'session.status_idled' }, 'event_types'],
      [{ url: 'https://hooks.example.com/x', secret: 'whsec_mine' }, 'secret'],
    ];
    for (const [body, field] of cases) {
      const res = await call(a, 'POST', '', body);
      const text = await res.text();
      expect(res.status, `${JSON.stringify(body)}: ${text}`).toBe(400);
      const err = JSON.parse(text).error;
      expect(err.type).toBe('invalid_request');
      expect(err.message, JSON.stringify(body)).toContain(field);
    }
    // Plain http is fine for a host:port the operator opened.
    expect((await call(a, 'POST', '', { url: r.url })).status).toBe(200);
    const ep = await (await call(a, 'POST', '', { url: 'https://hooks.example.com/ok' })).json();
    for (const [body, field] of [
      [{ url: 'http://hooks.example.com/x' }, 'url'],
      [{ event_types: ['user_profile.program_status_updated'] }, 'event_types[0]'],
      [{ disabled: 'no' }, 'disabled'],
    ] as const) {
      const res = await call(a, 'POST', `/${ep.id}`, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.message).toContain(field);
    }
    expect((await (await call(a, 'GET', `/${ep.id}`)).json()).url).toBe(
      'https://hooks.example.com/ok',
    );
  });

  it('the secret is served once, sealed at rest, never logged; a rotation takes effect at once', async () => {
    const a = await t.newTenant('ep-secret');
    const created = await (await call(a, 'POST', '', { url: r.url })).json();
    const secret: string = created.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    expect(created.secret_hint).toBe(`…${secret.slice(-4)}`);
    const rotated = await (await call(a, 'POST', `/${created.id}/rotate_secret`)).json();
    const secret2: string = rotated.secret;
    expect(secret2).toMatch(/^whsec_/);
    expect(secret2).not.toBe(secret);
    r.key = secret2;

    const env = await a.client.beta.environments.create({ name: 'secret' });
    const agent = await a.client.beta.agents.create({ name: 'secret', model: 'claude-sonnet-4-5' });
    const sid = (await a.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;
    await runTurn(a.client, sid, 'sign with the new secret');
    const [got] = await r.waitFor(1);
    expect(got!.verifyError).toBeNull();
    const headers = Object.fromEntries(
      Object.entries(got!.headers).filter(([, v]) => typeof v === 'string'),
    ) as Record<string, string>;
    const sdk = new Anthropic({ apiKey: 'unused', baseURL: 'http://127.0.0.1:9' });
    expect(() => sdk.beta.webhooks.unwrap(got!.body, { headers, key: secret })).toThrow();

    const secrets: Secret[] = [
      { name: 'endpoint secret', value: secret, allowedIn: (l) => l === 'create' },
      { name: 'rotated secret', value: secret2, allowedIn: (l) => l === 'rotate' },
    ];
    const served: Array<[string, string]> = [
      ['create', JSON.stringify(created)],
      ['rotate', JSON.stringify(rotated)],
      ['retrieve', await (await call(a, 'GET', `/${created.id}`)).text()],
      ['list', await (await call(a, 'GET', '')).text()],
      ['update', await (await call(a, 'POST', `/${created.id}`, { description: 'x' })).text()],
      ['deliveries', await (await call(a, 'GET', `/${created.id}/deliveries`)).text()],
      ['webhook body', got!.body],
      ['webhook headers', JSON.stringify(got!.headers)],
    ];
    const findings = served.flatMap(([label, text]) => findSecrets(secrets, text, label));
    for (const f of readTree(t.dataDir))
      findings.push(...findSecrets(secrets, f.bytes, `data dir ${f.path}`));
    findings.push(...findSecrets(secrets, logged.join(''), 'log'));
    expect(describeFindings(findings)).toEqual('');
    expect(logged.join('')).toContain('webhook delivered');
  });

  it('the deployment endpoint settings are checked at start-up, without echoing the key', () => {
    const base = { DATA_DIR: '/tmp/agentfleet-webhook-config-test' };
    const key = `whsec_${randomBytes(24).toString('base64')}`;
    expect(
      loadConfig('all', {
        ...base,
        SVC_MANAGED_AGENTS_WEBHOOK_URL: 'https://hooks.example.com/ops',
        SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY: key,
      }).webhooks,
    ).toMatchObject({
      deploymentEndpoint: { url: 'https://hooks.example.com/ops', signingKey: key },
      organizationId: null,
    });
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig('all', { ...base, ...env });
        return '';
      } catch (err) {
        return String((err as Error).message);
      }
    };
    expect(problems({ SVC_MANAGED_AGENTS_WEBHOOK_URL: 'https://hooks.example.com/ops' })).toContain(
      'SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY',
    );
    const badKey = 'not-a-whsec-key-0123456789';
    const msg = problems({
      SVC_MANAGED_AGENTS_WEBHOOK_URL: 'ftp://hooks.example.com/ops',
      SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY: badKey,
    });
    expect(msg).toContain('SVC_MANAGED_AGENTS_WEBHOOK_URL must be an http(s) URL');
    expect(msg).toContain('SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY must be whsec_');
    expect(msg).not.toContain(badKey);
  });
});
