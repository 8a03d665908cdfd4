/**
 * The gateway's read path through HTTP (gateway/src/app.ts, requestGuards.ts, requestId.ts) and
 * the API key cache's revocation bound (core/src/auth/auth.ts):
 * - every answer carries a distinct ULID-shaped `request-id`, and an error body's request_id is
 *   the same id;
 * - GET /v1/agents/:id answers with the workspace and rate-limit headers, 404 for another
 *   tenant's id, and is counted in agentfleet_http_requests_total under its route pattern;
 * - extension endpoints still require the beta header (the callback-style preHandler);
 * - a revoked key is refused at once by the gateway that revoked it, and by another gateway on
 *   the same store (its own key cache, as another gateway process) within KEY_CACHE_TTL_MS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@agentfleet/gateway';
import { AuthService, KEY_CACHE_TTL_MS, createLogger, sha256 } from '@agentfleet/core';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let second: FastifyInstance;
let secondUrl: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  const p = t.server.platform;
  // Another gateway on the same store and coordination, with its own key cache, as a second
  // gateway process of a fleet would have.
  second = await buildApp(
    { ...p, auth: new AuthService(p.collections, sha256(t.operatorKey)) },
    { log: createLogger('error') },
  );
  secondUrl = (await second.listen({ host: '127.0.0.1', port: 0 })).replace('[::1]', '127.0.0.1');
});
afterAll(async () => {
  await second?.close();
  await t?.close();
});

const REQUEST_ID = /^req_[0-9a-hjkmnp-tv-z]{26}$/;

async function newAgent(): Promise<string> {
  const res = await t.http('/v1/agents', {
    method: 'POST',
    json: { name: 'read-path', model: 'claude-sonnet-4-5' },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

async function httpRequestsCount(route: string, status: number): Promise<number> {
  const res = await t.http('/metrics');
  expect(res.status).toBe(200);
  const text = await res.text();
  const line = text
    .split('\n')
    .find((l) =>
      l.startsWith(
        `agentfleet_http_requests_total{method="GET",route="${route}",status="${status}"} `,
      ),
    );
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('request ids', () => {
  it('every answer names a distinct ULID-shaped request id; an error body carries the same id', async () => {
    const id = await newAgent();
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await t.http(`/v1/agents/${id}`);
      expect(res.status).toBe(200);
      ids.push(res.headers.get('request-id')!);
    }
    const errors = await Promise.all([
      t.http(`/v1/agents/${id}`, { key: null }),
      t.http('/v1/no-such-route'),
      t.http('/v1/agents/agent_00000000000000000000000000'),
    ]);
    expect(errors.map((r) => r.status)).toEqual([401, 404, 404]);
    for (const res of errors) {
      const header = res.headers.get('request-id')!;
      expect(((await res.json()) as { request_id: string }).request_id).toBe(header);
      ids.push(header);
    }
    for (const rid of ids) expect(rid).toMatch(REQUEST_ID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('GET /v1/agents/:id', () => {
  it('answers with workspace and rate-limit headers, 404 for another tenant, counted under its route', async () => {
    const id = await newAgent();
    const before = await httpRequestsCount('/v1/agents/:id', 200);
    for (let i = 0; i < 3; i++) {
      const res = await t.http(`/v1/agents/${id}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('anthropic-workspace-id')).toBe('tnt_default');
      expect(Number(res.headers.get('x-ratelimit-limit'))).toBe(100000);
      expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
      expect(((await res.json()) as { id: string; type: string }).id).toBe(id);
    }
    expect(await httpRequestsCount('/v1/agents/:id', 200)).toBe(before + 3);

    const other = await t.newTenant('read-path-other');
    const foreign = await t.http(`/v1/agents/${id}`, { key: other.apiKey });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ type: 'error', error: { type: 'not_found' } });
    expect(foreign.headers.get('anthropic-workspace-id')).toBe(other.tenantId);
  });

  it('extension endpoints still require the beta header', async () => {
    const without = await t.http('/v1/api_keys');
    expect(without.status).toBe(400);
    expect(await without.json()).toMatchObject({
      error: { type: 'invalid_request', message: expect.stringContaining('anthropic-beta') },
    });
    expect((await t.http('/v1/api_keys', { headers: BETA })).status).toBe(200);
  });
});

describe('API key cache', () => {
  it(`a revoked key is refused at once where it was revoked, and within ${KEY_CACHE_TTL_MS} ms on another gateway`, async () => {
    const a = await t.newTenant('revocation');
    const created = await t.http('/v1/svc/api_keys', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { name: 'to revoke' },
    });
    expect(created.status).toBe(200);
    const k = (await created.json()) as { id: string; key: string };
    const onSecond = () => fetch(`${secondUrl}/v1/agents`, { headers: { 'x-api-key': k.key } });
    // Both gateways have resolved (and cached) the key.
    expect((await t.http('/v1/agents', { key: k.key })).status).toBe(200);
    expect((await onSecond()).status).toBe(200);

    const revoked = await t.http(`/v1/svc/api_keys/${k.id}`, {
      method: 'DELETE',
      key: a.apiKey,
      headers: BETA,
    });
    expect(revoked.status).toBeLessThan(300);
    expect((await t.http('/v1/agents', { key: k.key })).status).toBe(401);
    // The other gateway's cache entry lives at most KEY_CACHE_TTL_MS from its resolution.
    await new Promise((r) => setTimeout(r, KEY_CACHE_TTL_MS + 200));
    const late = await onSecond();
    expect(late.status).toBe(401);
    expect(await late.json()).toMatchObject({ error: { type: 'unauthorized' } });
    // The admin key of the same tenant is unaffected on both gateways.
    expect((await t.http('/v1/agents', { key: a.apiKey })).status).toBe(200);
    expect(
      (await fetch(`${secondUrl}/v1/agents`, { headers: { 'x-api-key': a.apiKey } })).status,
    ).toBe(200);
  });
});
