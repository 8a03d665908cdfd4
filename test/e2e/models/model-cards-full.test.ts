/**
 * Model cards in full, over HTTP and the official SDK against an in-process platform,
 * observed at scripted model servers on 127.0.0.1:
 * - rotation (`POST /v1/svc/model_cards/:id`) of api_key, base_url, custom_headers and the wire
 *   model, each seen by the provider on the next request; a base_url rotation is under the
 *   egress policy as on create; a rotated key reaches the next credential resolve while the
 *   model request already under way finishes on the key it resolved (spec rule 2);
 * - `GET …/model_cards/:id/key`: only the internal worker credential reads a cleartext key;
 *   tenants (own or foreign card, any id) and the operator get the same 403;
 * - `POST /v1/svc/models/list`: static catalogs per provider (aliases, compatible and custom
 *   providers empty) whose pi_config a card accepts; the deprecated api_key path discovers
 *   live on both legacy protocols, through the egress policy, refusing bad keys by name;
 * - the older create body (no `model`) restricts provider to the four legacy aliases;
 * - pi_config cannot override identity, provider, wire model, endpoint or credential.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerCredential } from '@agentfleet/core';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { untilIdle, userMessage } from '../../kit/turnHelpers.js';

let t: TestPlatform;
/** A second provider endpoint, for base_url rotation. */
let other: ScriptedModelServer;
/** A loopback service the operator did not open; counts what reaches it. */
let internal: http.Server;
let internalHits = 0;
let tenant: { tenantId: string; apiKey: string; client: any };
let envId: string;

beforeAll(async () => {
  other = await startScriptedModelServer();
  internal = http.createServer((_req, res) => {
    internalHits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":[{"id":"internal-model"}]}');
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', () => r()));
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      RATE_LIMIT_PER_MINUTE: '100000',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(other.url).host,
    },
  });
  tenant = await t.newTenant('cards');
  envId = (await tenant.client.beta.environments.create({ name: 'cards' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await other?.close();
  internal?.closeAllConnections();
  await new Promise((r) => internal?.close(r));
});

const json = async (r: Response) => ({ status: r.status, text: await r.text() }) as const;
const parsed = async (r: Response) => {
  const { status, text } = await json(r);
  return { status, text, body: JSON.parse(text) as any };
};
const post = (path: string, body: unknown, key = tenant.apiKey) =>
  t.http(path, { method: 'POST', key, headers: BETA, json: body }).then(parsed);
const createCard = (body: Record<string, unknown>, key?: string) =>
  post(
    '/v1/svc/model_cards',
    { provider: 'anthropic', base_url: t.model.url, api_key: 'sk-card', ...body },
    key,
  );
const rotate = (id: string, body: Record<string, unknown>, key?: string) =>
  post(`/v1/svc/model_cards/${id}`, body, key);
const getKey = (id: string, headers: Record<string, string>, base = '/v1/svc') =>
  t.http(`${base}/model_cards/${id}/key`, { key: null, headers }).then(parsed);
const worker = () => ({
  authorization: `Bearer ${workerCredential(t.server.platform.config.rootSecret)}`,
});

let n = 0;
/** A tenant card on the scripted model with its own wire model, and a session on it. */
async function cardSession(extra: Record<string, unknown> = {}) {
  const modelId = `full-${++n}`;
  const card = await createCard({ model_id: modelId, model: modelId, ...extra });
  expect(card.status, card.text).toBe(200);
  const agent = await tenant.client.beta.agents.create({
    name: modelId,
    model: modelId,
    tools: [{ type: 'custom', name: 'lookup', description: 'l', input_schema: { type: 'object' } }],
  });
  const session = await tenant.client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
  });
  return { cardId: card.body.id as string, modelId, sid: session.id as string };
}
const turn = (sid: string, text = 'hi') => untilIdle(tenant.client, sid, [userMessage(text)]);
const requestsOf = (server: ScriptedModelServer, wire: string) =>
  server.requests.filter((r) => r.model === wire);

describe('rotation: every field takes effect on the next request', () => {
  it('api_key: the next model request carries the new key; responses carry only the preview', async () => {
    const s = await cardSession({ api_key: 'sk-first-1111' });
    await turn(s.sid);
    const r = await rotate(s.cardId, { api_key: 'sk-second-2222' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.api_key_preview).toBe('…2222');
    expect(r.text).not.toContain('sk-second-2222');
    await turn(s.sid);
    expect(requestsOf(t.model, s.modelId).map((q) => q.headers['x-api-key'])).toEqual([
      'sk-first-1111',
      'sk-second-2222',
    ]);
  });

  it('a session in flight keeps the key it resolved; the next credential resolve uses the rotated key', async () => {
    const s = await cardSession({ api_key: 'sk-inflight-aaaa' });
    t.model.script(
      s.modelId,
      {
        steps: [
          { text: 'looking' },
          { delay_ms: 300 },
          { tool_use: { name: 'lookup', input: {} } },
        ],
      },
      { steps: [{ text: 'done' }] },
    );
    const stream = await tenant.client.beta.sessions.events.stream(s.sid);
    await tenant.client.beta.sessions.events.send(s.sid, { events: [userMessage('go')] });
    // Rotate while the first model request of the turn is under way.
    await waitFor(async () => requestsOf(t.model, s.modelId).length === 1 || null);
    expect((await rotate(s.cardId, { api_key: 'sk-inflight-bbbb' })).status).toBe(200);
    const first: any[] = [];
    for await (const ev of stream) {
      first.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    // The request under way finished on its key: the turn went on to the tool call.
    const use = first.find((e) => e.type === 'agent.custom_tool_use');
    expect(use?.name).toBe('lookup');
    expect(first.some((e) => e.type === 'session.error')).toBe(false);
    const second = await untilIdle(tenant.client, s.sid, [
      {
        type: 'user.custom_tool_result',
        custom_tool_use_id: use.id,
        content: [{ type: 'text', text: '42' }],
      },
    ]);
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    expect(requestsOf(t.model, s.modelId).map((q) => q.headers['x-api-key'])).toEqual([
      'sk-inflight-aaaa',
      'sk-inflight-bbbb',
    ]);
  });

  it('base_url: the next request goes to the new endpoint; a private one the operator did not open is refused and the card is unchanged', async () => {
    const s = await cardSession();
    const refused = await rotate(s.cardId, {
      base_url: `http://127.0.0.1:${(internal.address() as AddressInfo).port}`,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^base_url: /);
    const list = await t
      .http('/v1/svc/model_cards', { key: tenant.apiKey, headers: BETA })
      .then(parsed);
    expect(list.body.data.find((c: any) => c.id === s.cardId).base_url).toBe(t.model.url);
    const moved = await rotate(s.cardId, { base_url: other.url, api_key: 'sk-moved' });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.base_url).toBe(other.url);
    await turn(s.sid);
    expect(requestsOf(other, s.modelId)).toHaveLength(1);
    expect(requestsOf(t.model, s.modelId)).toHaveLength(0);
    expect(internalHits).toBe(0);
  });

  it('custom_headers and the wire model: the provider sees the rotated values; responses mask them', async () => {
    const s = await cardSession({ custom_headers: { 'x-team': 'blue-secret' } });
    await turn(s.sid);
    const r = await rotate(s.cardId, {
      custom_headers: { 'x-team': 'green-secret' },
      model: `${s.modelId}-v2`,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.custom_headers).toEqual({ 'x-team': '****' });
    expect(r.body.model).toBe(`${s.modelId}-v2`);
    expect(r.text).not.toContain('green-secret');
    await turn(s.sid);
    const [before] = requestsOf(t.model, s.modelId);
    const [after] = requestsOf(t.model, `${s.modelId}-v2`);
    expect(before!.headers['x-team']).toBe('blue-secret');
    expect(after!.headers['x-team']).toBe('green-secret');
  });

  it("a custom provider's card cannot lose pi_config.api, and identity stays fixed", async () => {
    const created = await createCard({
      model_id: 'custom-rot',
      provider: 'my-llm',
      model: 'x',
      pi_config: { api: 'anthropic-messages' },
    });
    expect(created.status, created.text).toBe(200);
    const lost = await rotate(created.body.id, { pi_config: { reasoning: true } });
    expect(lost.status).toBe(400);
    expect(lost.body.error.message).toMatch(/^pi_config\.api: /);
    const provider = await rotate(created.body.id, { provider: 'anthropic' });
    expect(provider.body.error.message).toMatch(/^provider: /);
  });

  it("another tenant's card is a 404 like a missing one", async () => {
    const s = await cardSession();
    const b = await t.newTenant('other');
    const foreign = await rotate(s.cardId, { api_key: 'sk-x' }, b.apiKey);
    const missing = await rotate('mc_missing', { api_key: 'sk-x' }, b.apiKey);
    expect([foreign.status, missing.status]).toEqual([404, 404]);
    expect(foreign.body.error.type).toBe(missing.body.error.type);
  });
});

describe('a card created or deleted for a model in use', () => {
  it('takes effect on the next request: fallback key, then the card, then the fallback again', async () => {
    const modelId = `full-late-${++n}`;
    const agent = await tenant.client.beta.agents.create({ name: modelId, model: modelId });
    const { id: sid } = await tenant.client.beta.sessions.create({
      agent: agent.id,
      environment_id: envId,
    });
    await turn(sid); // no card yet: the fallback vendor key, the model id on the wire
    const card = await createCard({
      model_id: modelId,
      model: `${modelId}-wire`,
      api_key: 'sk-late-7777',
    });
    expect(card.status, card.text).toBe(200);
    await turn(sid);
    const del = await t.http(`/v1/svc/model_cards/${card.body.id}`, {
      method: 'DELETE',
      key: tenant.apiKey,
      headers: BETA,
    });
    expect(del.status).toBe(200);
    await turn(sid);
    const sent = t.model.requests.filter((r) => r.model.startsWith(modelId));
    expect(sent.map((r) => [r.model, r.headers['x-api-key']])).toEqual([
      [modelId, 'sk-test-vendor'],
      [`${modelId}-wire`, 'sk-late-7777'],
      [modelId, 'sk-test-vendor'],
    ]);
  });
});

describe('internal key route: agent workers only', () => {
  it('the worker credential reads the cleartext key, live after rotation; everyone else gets 403', async () => {
    const card = await createCard({ model_id: 'keyed', model: 'k', api_key: 'sk-keyed-1234' });
    expect(card.status, card.text).toBe(200);
    const id = card.body.id as string;
    const read = await getKey(id, worker());
    expect(read.status, read.text).toBe(200);
    expect(read.body).toEqual({
      id,
      type: 'model_card_key',
      tenant_id: tenant.tenantId,
      api_key: 'sk-keyed-1234',
    });
    const legacyPath = await getKey(id, { 'x-api-key': worker().authorization.slice(7) }, '/v1');
    expect(legacyPath.body.api_key).toBe('sk-keyed-1234');
    await rotate(id, { api_key: 'sk-keyed-5678' });
    expect((await getKey(id, worker())).body.api_key).toBe('sk-keyed-5678');
    expect((await getKey('mc_missing', worker())).status).toBe(404);

    const b = await t.newTenant('snoop');
    const callers: Array<[string, Record<string, string>]> = [
      ['none', {}],
      ['own tenant key (x-api-key)', { 'x-api-key': tenant.apiKey }],
      ['own tenant key (Bearer)', { authorization: `Bearer ${tenant.apiKey}` }],
      ['another tenant', { 'x-api-key': b.apiKey }],
      ['operator', { 'x-api-key': t.operatorKey }],
      ['a guess', { authorization: 'Bearer afw_guess' }],
    ];
    for (const [who, headers] of callers) {
      for (const target of [id, 'mc_missing']) {
        const res = await getKey(target, { ...BETA, ...headers });
        expect([who, res.status, res.body.error?.type]).toEqual([who, 403, 'forbidden']);
        expect(res.text).not.toContain('sk-keyed');
      }
    }
  });
});

describe('models/list', () => {
  const list = (body: Record<string, unknown>) => post('/v1/svc/models/list', body);

  it('static catalogs per provider: aliases resolve, compatible and custom providers have none', async () => {
    const ant = await list({ provider: 'anthropic' });
    expect(ant.status, ant.text).toBe(200);
    expect(ant.body.has_more).toBe(false);
    const ids = ant.body.data.map((m: any) => m.id);
    expect(ids).toContain('claude-sonnet-4-5');
    for (const m of ant.body.data) expect(m.pi_config.api).toBe('anthropic-messages');
    expect((await list({ provider: 'ant' })).body.data.map((m: any) => m.id)).toEqual(ids);
    const oai = await list({ provider: 'oai' });
    expect(oai.body.data.length).toBeGreaterThan(0);
    for (const m of oai.body.data) expect(m.pi_config.api).toBe('openai-completions');
    for (const provider of ['oai-compatible', 'ant-compatible', 'my-llm'])
      expect((await list({ provider })).body).toEqual({ data: [], has_more: false });
    const bad = await list({ provider: 'anthropic', base_url: t.model.url });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^base_url: /);
  });

  it("a catalog entry's pi_config is accepted by a card as it stands", async () => {
    const entry = (await list({ provider: 'openai' })).body.data[0];
    const card = await createCard({
      model_id: 'from-catalog',
      provider: 'openai',
      base_url: `${t.model.url}/v1`,
      model: entry.id,
      pi_config: entry.pi_config,
    });
    expect(card.status, card.text).toBe(200);
    expect(card.body.pi_config).toEqual(entry.pi_config);
  });

  it('deprecated api_key: live discovery on both legacy protocols, bad keys and private hosts refused by name', async () => {
    t.model.script('discovered-model', { steps: [{ text: 'unused' }] });
    const ant = await t.http('/v1/svc/models/list', {
      method: 'POST',
      key: tenant.apiKey,
      headers: BETA,
      json: { provider: 'anthropic', api_key: 'sk-discover-ant', base_url: t.model.url },
    });
    expect(ant.headers.get('deprecation')).toBe('true');
    const antBody = await parsed(ant);
    expect(antBody.status, antBody.text).toBe(200);
    expect(antBody.body.data.map((m: any) => m.id)).toContain('discovered-model');
    expect(antBody.text).not.toContain('sk-discover-ant');
    const oai = await list({
      provider: 'oai',
      api_key: 'sk-discover-oai',
      base_url: `${t.model.url}/v1`,
    });
    expect(oai.status, oai.text).toBe(200);
    expect(oai.body.data.find((m: any) => m.id === 'discovered-model').pi_config.api).toBe(
      'openai-completions',
    );
    const rejected = await list({ provider: 'ant', api_key: 'sk-bad', base_url: t.model.url });
    expect(rejected.status).toBe(400);
    expect(rejected.body.error.message).toMatch(/^api_key: /);
    const port = (internal.address() as AddressInfo).port;
    const privateHost = await list({
      provider: 'ant',
      api_key: 'sk-x',
      base_url: `http://127.0.0.1:${port}`,
    });
    expect(privateHost.status).toBe(400);
    expect(privateHost.body.error.message).toMatch(/^base_url: /);
    expect(internalHits).toBe(0);
    const custom = await list({ provider: 'my-llm', api_key: 'sk-x' });
    expect(custom.status).toBe(400);
    expect(custom.body.error.message).toMatch(/^provider: /);
  });
});

describe('the older create body and pi_config limits', () => {
  it('without `model` only ant, ant-compatible, oai, oai-compatible are accepted; the wire model is the model_id', async () => {
    const ant = await createCard({ model_id: 'older-ant', provider: 'ant' });
    expect(ant.status, ant.text).toBe(200);
    expect(ant.body.model).toBe('older-ant');
    const oaiCompat = await createCard({
      model_id: 'older-oai',
      provider: 'oai-compatible',
      base_url: `${t.model.url}/v1`,
    });
    expect(oaiCompat.status, oaiCompat.text).toBe(200);
    for (const provider of ['anthropic', 'openai', 'my-llm']) {
      const r = await createCard({
        model_id: `older-${provider}`,
        provider,
        pi_config: { api: 'anthropic-messages' },
      });
      expect([provider, r.status]).toEqual([provider, 400]);
      expect(r.body.error.message).toMatch(/^provider: /);
    }
  });

  it('pi_config cannot override identity, provider, wire model, endpoint or credential', async () => {
    const card = await createCard({ model_id: 'pi-limits', model: 'm' });
    expect(card.status, card.text).toBe(200);
    for (const key of ['id', 'model_id', 'provider', 'model', 'baseUrl', 'base_url', 'apiKey']) {
      const pi = { [key]: 'override' };
      const created = await createCard({ model_id: `pi-${key}`, model: 'm', pi_config: pi });
      const rotated = await rotate(card.body.id, { pi_config: pi });
      for (const r of [created, rotated]) {
        expect([key, r.status]).toEqual([key, 400]);
        expect(r.body.error.message).toMatch(new RegExp(`^pi_config\\.${key}: `));
      }
    }
  });
});
