/**
 * Model cards at the trust boundary, through HTTP and the SDK against an in-process platform:
 * - a tenant's base_url on a private address is refused with a 400 naming base_url, before
 *   any connection, so the answer is the same for an open and a closed port (the probe is no
 *   port scanner); names resolving to loopback and every literal form are refused too;
 * - the operator's tenant may point cards anywhere; a tenant reaches a private host only when
 *   the operator opened it with EGRESS_ALLOW_PRIVATE_HOSTS (the harness opens the scripted
 *   model's host:port);
 * - a tenant card stored before the policy, pointing at an unopened private address, fails its
 *   turns with a session.error and never connects;
 * - custom_headers are sealed: no create/get/list/update response carries a value (names only,
 *   masked), yet the provider receives them; a masked value sent back keeps the stored one;
 *   cards stored in clear before sealing are sealed at start.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
/** A loopback "internal service" the operator did not open; counts every request it gets. */
let internal: http.Server;
let internalPort: number;
let internalHits = 0;
let closedPort: number;

beforeAll(async () => {
  internal = http.createServer((req, res) => {
    internalHits++;
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"error":"internal service"}');
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', () => r()));
  internalPort = (internal.address() as AddressInfo).port;
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
  internal.closeAllConnections();
  await new Promise((r) => internal.close(r));
});

const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });
const createCard = async (key: string, body: Record<string, unknown>) =>
  json(
    await t.http('/v1/svc/model_cards', {
      method: 'POST',
      key,
      headers: BETA,
      json: { provider: 'anthropic', model: 'm', api_key: 'sk-tenant', ...body },
    }),
  );

describe('model card base_url under the egress policy', () => {
  it('refuses a tenant base_url on loopback with the same 400 whether the port is open or closed, without connecting', async () => {
    const tenant = await t.newTenant('scanner');
    const open = await createCard(tenant.apiKey, {
      model_id: 'open',
      base_url: `http://127.0.0.1:${internalPort}`,
    });
    const closed = await createCard(tenant.apiKey, {
      model_id: 'closed',
      base_url: `http://127.0.0.1:${closedPort}`,
    });
    expect(open.status).toBe(400);
    expect(closed.status).toBe(400);
    expect(open.body.error).toEqual(closed.body.error); // (request ids differ)
    expect(open.body.error.type).toBe('invalid_request');
    expect(open.body.error.message).toBe(
      'base_url: private addresses are not allowed unless the operator opens them (EGRESS_ALLOW_PRIVATE_HOSTS)',
    );
    expect(internalHits).toBe(0);
  });

  it('refuses every private form and names resolving to loopback; an update cannot sneak one in', async () => {
    const tenant = await t.newTenant('forms');
    const p = internalPort;
    for (const base_url of [
      `http://localhost:${p}`,
      `http://[::1]:${p}`,
      `http://[::ffff:127.0.0.1]:${p}`,
      `http://[::ffff:7f00:1]:${p}`,
      `http://2130706433:${p}`,
      `http://0x7f.0.0.1:${p}`,
      `http://0177.0.0.1:${p}`,
      'http://169.254.169.254/latest',
      'http://[fd00:ec2::254]',
      'http://10.0.0.1:8080',
      'http://100.64.0.1',
      'http://[64:ff9b::7f00:1]',
      'http://[2002:7f00:1::]',
      'http://0.0.0.0',
    ]) {
      const r = await createCard(tenant.apiKey, { model_id: 'f', base_url });
      expect(r.status, base_url).toBe(400);
      expect(r.body.error.message, base_url).toMatch(
        /^base_url: private addresses are not allowed/,
      );
    }
    const ok = await createCard(tenant.apiKey, { model_id: 'movable', base_url: t.model.url });
    expect(ok.status).toBe(200);
    const moved = await json(
      await t.http(`/v1/svc/model_cards/${ok.body.id}`, {
        method: 'POST',
        key: tenant.apiKey,
        headers: BETA,
        json: { base_url: `http://localhost:${p}` },
      }),
    );
    expect(moved.status).toBe(400);
    expect(moved.body.error.message).toMatch(/^base_url: private addresses/);
    expect(internalHits).toBe(0);
  });

  it('lets the operator point a card at a private host, and a tenant only at what EGRESS_ALLOW_PRIVATE_HOSTS opens', async () => {
    // The operator's tenant configures the deployment: its probe reaches the internal service.
    const before = internalHits;
    const op = await createCard(t.operatorKey, {
      model_id: 'operator-internal',
      base_url: `http://127.0.0.1:${internalPort}`,
    });
    expect(op.status).toBe(400); // the internal service answered 401 to the probe: a bad key, reported as such
    expect(op.body.error.message).toBe('api_key: rejected by the provider (HTTP 401)');
    expect(internalHits).toBe(before + 1);
    // A tenant, on the host:port the harness opened (the scripted model): works, probe included.
    const tenant = await t.newTenant('opened');
    const r = await createCard(tenant.apiKey, {
      model_id: 'opened-card',
      model: 'opened-wire',
      base_url: t.model.url,
    });
    expect(r.status).toBe(200);
    expect(r.body.probe).toMatchObject({ ok: true, status: 200 });
    const env = await tenant.client.beta.environments.create({ name: 'e' });
    const agent = await tenant.client.beta.agents.create({ name: 'a', model: 'opened-card' });
    const s = await tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    t.model.script('opened-wire', { steps: [{ text: 'through the opened host' }] });
    const seen = await turn(tenant.client, s.id, 'hi');
    expect(seen.find((e) => e.type === 'agent.message')?.content[0].text).toBe(
      'through the opened host',
    );
  });

  it('a tenant card stored before the policy, on an unopened private address, fails its turn without connecting', async () => {
    const tenant = await t.newTenant('legacy-private');
    const now = new Date().toISOString();
    // As it would be in the store after an upgrade: created when loopback was not yet refused.
    await t.server.platform.collections.modelCards.insert(tenant.tenantId, {
      _id: `mc_legacyprivate${Date.now()}`,
      model_id: 'legacy-private',
      provider: 'anthropic',
      model: 'legacy-private-wire',
      base_url: `http://127.0.0.1:${internalPort}`,
      custom_headers: {},
      api_key_sealed: t.server.platform.secrets.seal('sk-legacy', 'model-card-key'),
      api_key_preview: '…acy',
      pi_config: null,
      created_at: now,
      updated_at: now,
    });
    const before = internalHits;
    const env = await tenant.client.beta.environments.create({ name: 'e' });
    const agent = await tenant.client.beta.agents.create({ name: 'a', model: 'legacy-private' });
    const s = await tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const seen = await turn(tenant.client, s.id, 'hi');
    const error = seen.find((e) => e.type === 'session.error');
    expect(error?.error.type).toBe('model_request_failed_error');
    expect(error?.error.message).toContain('base_url');
    expect(error?.error.message).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
    expect(error?.error.message).not.toContain(String(internalPort));
    expect(internalHits).toBe(before);
  });
});

describe('model card custom_headers are sealed', () => {
  const SECRET = `hdr-secret-${Math.random().toString(36).slice(2)}`;
  const ROTATED = `hdr-rotated-${Math.random().toString(36).slice(2)}`;

  it('never appear in a response (create, get, list, update), yet reach the provider; a masked value sent back keeps the stored one', async () => {
    const tenant = await t.newTenant('headers');
    const created = await createCard(tenant.apiKey, {
      model_id: 'hdr',
      model: 'hdr-wire',
      base_url: t.model.url,
      custom_headers: { 'X-Team-Token': SECRET, 'x-plain': 'visible-only-to-provider' },
    });
    expect(created.status).toBe(200);
    expect(created.body.custom_headers).toEqual({ 'X-Team-Token': '****', 'x-plain': '****' });
    const texts: string[] = [JSON.stringify(created.body)];
    const list = await t.http('/v1/svc/model_cards', { key: tenant.apiKey, headers: BETA });
    texts.push(await list.text());
    texts.push(
      await (await t.http('/v1/model_cards', { key: tenant.apiKey, headers: BETA })).text(),
    );
    texts.push(await (await t.http('/v1/models', { key: tenant.apiKey })).text());
    // Sending the served card back (masked values) keeps the stored values.
    const same = await t.http(`/v1/svc/model_cards/${created.body.id}`, {
      method: 'POST',
      key: tenant.apiKey,
      headers: BETA,
      json: { custom_headers: created.body.custom_headers },
    });
    expect(same.status).toBe(200);
    texts.push(await same.text());
    for (const text of texts) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('visible-only-to-provider');
    }
    expect(JSON.parse(texts[1]).data[0].custom_headers).toEqual({
      'X-Team-Token': '****',
      'x-plain': '****',
    });

    const env = await tenant.client.beta.environments.create({ name: 'e' });
    const agent = await tenant.client.beta.agents.create({ name: 'a', model: 'hdr' });
    const s = await tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    t.model.script('hdr-wire', { steps: [{ text: 'one' }] }, { steps: [{ text: 'two' }] });
    await turn(tenant.client, s.id, 'first');
    const first = t.model.requests.filter((r) => r.model === 'hdr-wire').at(-1)!;
    expect(first.headers['x-team-token']).toBe(SECRET);
    expect(first.headers['x-plain']).toBe('visible-only-to-provider');

    // A real new value replaces it; it is not served either.
    const rotated = await json(
      await t.http(`/v1/svc/model_cards/${created.body.id}`, {
        method: 'POST',
        key: tenant.apiKey,
        headers: BETA,
        json: { custom_headers: { 'X-Team-Token': ROTATED } },
      }),
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.custom_headers).toEqual({ 'X-Team-Token': '****' });
    expect(JSON.stringify(rotated.body)).not.toContain(ROTATED);
    await turn(tenant.client, s.id, 'second');
    const second = t.model.requests.filter((r) => r.model === 'hdr-wire').at(-1)!;
    expect(second.headers['x-team-token']).toBe(ROTATED);
    expect(second.headers['x-plain']).toBeUndefined();

    // Nothing in the data dir holds a header value in clear.
    for (const file of filesUnder(t.dataDir)) {
      const content = readFileSync(file);
      expect(content.includes(SECRET), file).toBe(false);
      expect(content.includes(ROTATED), file).toBe(false);
    }
  });

  it('refuses bad header input with a 400 naming the field', async () => {
    const tenant = await t.newTenant('bad-headers');
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ 'x-a': 'line\r\nInjected: yes' }, /custom_headers/],
      [{ Host: 'internal.example' }, /custom_headers\.Host/],
      [{ 'Content-Length': '1' }, /custom_headers\.Content-Length/],
      [{ 'x-a': '****' }, /custom_headers/],
    ];
    for (const [custom_headers, field] of cases) {
      const r = await createCard(tenant.apiKey, {
        model_id: 'bad',
        base_url: t.model.url,
        custom_headers,
      });
      expect(r.status, JSON.stringify(custom_headers)).toBe(400);
      expect(r.body.error.message, JSON.stringify(custom_headers)).toMatch(field);
    }
  });

  it('seals the custom headers of cards stored in clear before sealing, at start', async () => {
    const tenant = await t.newTenant('legacy-headers');
    const LEGACY = `legacy-hdr-${Math.random().toString(36).slice(2)}`;
    const now = new Date().toISOString();
    const id = `mc_legacyhdr${Date.now()}`;
    await t.server.platform.collections.modelCards.insert(tenant.tenantId, {
      _id: id,
      model_id: 'legacy-hdr',
      provider: 'anthropic',
      model: 'legacy-hdr-wire',
      base_url: t.model.url,
      custom_headers: { 'x-legacy': LEGACY },
      api_key_sealed: t.server.platform.secrets.seal('sk-legacy', 'model-card-key'),
      api_key_preview: '…acy',
      pi_config: null,
      created_at: now,
      updated_at: now,
    });
    await t.restart();
    const stored = await t.server.platform.collections.modelCards.get(tenant.tenantId, id);
    expect(stored?.custom_headers).toBeUndefined();
    expect(stored?.custom_header_names).toEqual(['x-legacy']);
    expect(stored?.custom_headers_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(stored)).not.toContain(LEGACY);
    const listed = await json(
      await t.http('/v1/svc/model_cards', { key: tenant.apiKey, headers: BETA }),
    );
    expect(listed.body.data[0].custom_headers).toEqual({ 'x-legacy': '****' });
    const env = await tenant.client.beta.environments.create({ name: 'e' });
    const agent = await tenant.client.beta.agents.create({ name: 'a', model: 'legacy-hdr' });
    const s = await tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    t.model.script('legacy-hdr-wire', { steps: [{ text: 'sealed' }] });
    await turn(tenant.client, s.id, 'hi');
    expect(
      t.model.requests.filter((r) => r.model === 'legacy-hdr-wire').at(-1)!.headers['x-legacy'],
    ).toBe(LEGACY);
  });
});

async function turn(client: TestPlatform['client'], sid: string, text: string): Promise<any[]> {
  const stream = await client.beta.sessions.events.stream(sid);
  await client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
  });
  const seen: any[] = [];
  for await (const ev of stream) {
    seen.push(ev);
    if (ev.type === 'session.status_idle' || ev.type === 'session.status_terminated') break;
  }
  return seen;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...filesUnder(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}
