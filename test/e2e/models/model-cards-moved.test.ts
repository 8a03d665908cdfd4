/**
 * A model card's sealed credentials go only to the endpoint they were given for
 * (core/src/models/models.ts), over HTTP against an in-process platform with two model
 * endpoints on 127.0.0.1, the second behind a recorder that sees every request (the probe's
 * model listing as well as turns):
 * - moving a card (`POST /v1/svc/model_cards/:id` with another base_url) without api_key is a
 *   400 naming `api_key`, and without real custom header values (absent or masked) a 400
 *   naming `custom_headers`; the second endpoint receives nothing and the card is unchanged;
 * - moving it with a new api_key (and headers) works: the probe and the next turn reach the new
 *   endpoint with the new credentials only;
 * - a rotation that keeps the endpoint (model, pi_config, the same base_url) needs no key and
 *   keeps the stored one; a rotated key the provider refuses (probe 401) is a 400 on api_key.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { untilIdle, userMessage } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let second: ScriptedModelServer;
/** Forwards to `second`, recording every request's path and headers. */
let recorder: http.Server;
let recorderUrl: string;
const seen: Array<{ path: string; headers: http.IncomingHttpHeaders }> = [];
let tenant: { apiKey: string; client: any };
let envId: string;

beforeAll(async () => {
  second = await startScriptedModelServer();
  const target = new URL(second.url);
  recorder = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: { ...req.headers } });
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => recorder.listen(0, '127.0.0.1', () => r()));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      RATE_LIMIT_PER_MINUTE: '100000',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(recorderUrl).host,
    },
  });
  tenant = await t.newTenant('moved');
  envId = (await tenant.client.beta.environments.create({ name: 'moved' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  recorder?.closeAllConnections();
  await new Promise((r) => recorder?.close(r));
  await second?.close();
});

const post = async (path: string, body: unknown) => {
  const r = await t.http(path, { method: 'POST', key: tenant.apiKey, headers: BETA, json: body });
  const text = await r.text();
  return { status: r.status, text, body: JSON.parse(text) as any };
};
const rotate = (id: string, body: Record<string, unknown>) =>
  post(`/v1/svc/model_cards/${id}`, body);
const cardOf = async (id: string) => {
  const r = await t.http('/v1/svc/model_cards', { key: tenant.apiKey, headers: BETA });
  return ((await r.json()) as any).data.find((c: any) => c.id === id);
};

let n = 0;
async function cardSession(extra: Record<string, unknown> = {}) {
  const modelId = `moved-${++n}`;
  const card = await post('/v1/svc/model_cards', {
    model_id: modelId,
    model: modelId,
    provider: 'anthropic',
    base_url: t.model.url,
    api_key: 'sk-sealed-1111',
    ...extra,
  });
  expect(card.status, card.text).toBe(200);
  const agent = await tenant.client.beta.agents.create({ name: modelId, model: modelId });
  const session = await tenant.client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
  });
  return { cardId: card.body.id as string, modelId, sid: session.id as string };
}
const turn = (sid: string) => untilIdle(tenant.client, sid, [userMessage('hi')]);
const keysAt = (server: ScriptedModelServer, model: string) =>
  server.requests.filter((r) => r.model === model).map((r) => r.headers['x-api-key']);

describe('a moved card takes no credential along', () => {
  it('base_url alone is a 400 naming api_key; the new endpoint receives nothing', async () => {
    const s = await cardSession();
    const before = seen.length;
    const r = await rotate(s.cardId, { base_url: recorderUrl });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.type).toBe('invalid_request');
    expect(r.body.error.message).toMatch(/^api_key: /);
    expect(seen.length).toBe(before);
    expect((await cardOf(s.cardId)).base_url).toBe(t.model.url);
    await turn(s.sid);
    expect(keysAt(t.model, s.modelId)).toEqual(['sk-sealed-1111']);
    expect(JSON.stringify(seen)).not.toContain('sk-sealed-1111');
  });

  it('a card with custom headers also needs their real values', async () => {
    const s = await cardSession({ custom_headers: { 'x-team': 'blue-secret' } });
    const before = seen.length;
    const none = await rotate(s.cardId, { base_url: recorderUrl, api_key: 'sk-new-2222' });
    expect(none.status, none.text).toBe(400);
    expect(none.body.error.message).toMatch(/^custom_headers: /);
    const masked = await rotate(s.cardId, {
      base_url: recorderUrl,
      api_key: 'sk-new-2222',
      custom_headers: { 'x-team': '****' },
    });
    expect(masked.status, masked.text).toBe(400);
    expect(masked.body.error.message).toMatch(/^custom_headers\.x-team: /);
    expect(seen.length).toBe(before);
    const moved = await rotate(s.cardId, {
      base_url: recorderUrl,
      api_key: 'sk-new-2222',
      custom_headers: { 'x-team': 'green' },
    });
    expect(moved.status, moved.text).toBe(200);
    await turn(s.sid);
    const [req] = second.requests.filter((q) => q.model === s.modelId);
    expect([req!.headers['x-api-key'], req!.headers['x-team']]).toEqual(['sk-new-2222', 'green']);
    expect(JSON.stringify(seen)).not.toContain('blue-secret');
  });

  it('base_url with a new api_key works: the probe and the next turn carry only the new key', async () => {
    const s = await cardSession();
    const before = seen.length;
    const r = await rotate(s.cardId, { base_url: recorderUrl, api_key: 'sk-fresh-3333' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.base_url).toBe(recorderUrl);
    // The probe ran against the new endpoint with the new key.
    expect(seen.slice(before).map((q) => [q.path, q.headers['x-api-key']])).toEqual([
      ['/v1/models', 'sk-fresh-3333'],
    ]);
    await turn(s.sid);
    expect(keysAt(second, s.modelId)).toEqual(['sk-fresh-3333']);
    expect(keysAt(t.model, s.modelId)).toEqual([]);
    expect(JSON.stringify(seen)).not.toContain('sk-sealed-1111');
  });

  it('a rotation on the same endpoint needs no key and keeps the stored one', async () => {
    const s = await cardSession({ custom_headers: { 'x-team': 'kept' } });
    const same = await rotate(s.cardId, { base_url: t.model.url, model: `${s.modelId}-v2` });
    expect(same.status, same.text).toBe(200);
    const pi = await rotate(s.cardId, { pi_config: { reasoning: false } });
    expect(pi.status, pi.text).toBe(200);
    expect(pi.body.api_key_preview).toBe('…1111');
    await turn(s.sid);
    const [req] = t.model.requests.filter((q) => q.model === `${s.modelId}-v2`);
    expect([req!.headers['x-api-key'], req!.headers['x-team']]).toEqual(['sk-sealed-1111', 'kept']);
  });

  it('a rotated key the provider refuses is a 400 naming api_key; the card keeps its key', async () => {
    const s = await cardSession();
    const r = await rotate(s.cardId, { api_key: 'sk-bad' });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(/^api_key: rejected by the provider/);
    expect((await cardOf(s.cardId)).api_key_preview).toBe('…1111');
  });
});
