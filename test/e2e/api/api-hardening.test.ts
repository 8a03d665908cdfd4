/**
 * API hardening over HTTP, each finding of the attack run as a test:
 * JSON depth limit before validation, empty JSON bodies (Python SDK), too-deep stored agents,
 * reserved and malformed query keys, multipart without a boundary, failed authentications
 * limited per client address with a bounded key cache, /metrics behind the operator key or on
 * METRICS_LISTEN, and X-RateLimit-* headers on SSE responses.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, REAL, startPlatform, type TestPlatform } from '../../kit/harness.js';
// The worker's ops app is not part of the gateway package's public exports.
import { buildOpsApp } from '../../../gateway/src/app.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(async () => {
  await t?.close();
});

const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });
const MODEL = 'claude-sonnet-4-5';
/** `{"type":"object","properties":{"a": …}}` nested `levels` times (2 JSON levels each), as text. */
const deepSchemaText = (levels: number) =>
  '{"type":"object","properties":{"a":'.repeat(levels) + '{"type":"object"}' + '}}'.repeat(levels);
const agentWithSchema = (schemaText: string) =>
  `{"name":"deep","model":"${MODEL}","tools":[{"type":"custom","name":"t","description":"d","input_schema":${schemaText}}]}`;
const postRaw = (
  path: string,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) => t.http(path, { method: 'POST', headers, body });

describe('JSON bodies', () => {
  it('a 20,000-deep body is refused with 400 naming the depth limit (checked before parsing and validation)', async () => {
    const r = await json(
      await postRaw(
        '/v1/agents',
        `{"name":"x","model":"${MODEL}","metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
      ),
    );
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      type: 'invalid_request',
      details: { field: 'body', limit: 64 },
    });
    expect(r.body.error.message).toMatch(/deeper than the limit of 64 levels/);
  });

  it('a 4,000-deep input_schema is refused with 400 (it used to be stored, then break every session of the agent)', async () => {
    const r = await json(await postRaw('/v1/agents', agentWithSchema(deepSchemaText(2000))));
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual({ field: 'body', limit: 64 });
    // Just under the limit is fine, and brackets inside strings do not count.
    const ok = await json(
      await postRaw(
        '/v1/agents',
        agentWithSchema(deepSchemaText(29)).replace(
          '"description":"d"',
          `"description":"${'[{'.repeat(500)}"`,
        ),
      ),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.tools[0].description).toBe('[{'.repeat(500));
  });

  it('prototype-poisoning keys and malformed JSON are 400, not 500', async () => {
    for (const body of [
      '{"name":"x","__proto__":{"admin":true}}',
      '{"name":"x","constructor":{"prototype":{"admin":true}}}',
      '{"name":',
      '[1,2',
    ]) {
      const r = await json(await postRaw('/v1/environments', body));
      expect(r.status, body).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
    }
  });

  it('an empty body with content-type application/json means no body: archive and delete work (Python SDK) and via the TypeScript SDK', async () => {
    const agent = await t.client.beta.agents.create({ name: 'arch', model: MODEL });
    // What the official Python SDK sends: content-type: application/json and an empty body.
    const raw = await json(await postRaw(`/v1/agents/${agent.id}/archive`, ''));
    expect(raw.status).toBe(200);
    expect(raw.body.archived_at).toBeTruthy();
    const env = await t.client.beta.environments.create({ name: 'arch-env' });
    expect(
      (
        await postRaw(`/v1/environments/${env.id}/archive`, '', {
          'content-type': 'application/json; charset=utf-8',
        })
      ).status,
    ).toBe(200);
    const env2 = await t.client.beta.environments.create({ name: 'del-env' });
    expect(
      (
        await t.http(`/v1/environments/${env2.id}`, {
          method: 'DELETE',
          headers: { 'content-type': 'application/json' },
          body: '',
        })
      ).status,
    ).toBe(200);
    const other = await t.client.beta.agents.create({ name: 'arch-sdk', model: MODEL });
    expect((await t.client.beta.agents.archive(other.id)).archived_at).toBeTruthy();
    // Routes that need a body still say so.
    const create = await json(await postRaw('/v1/agents', ''));
    expect(create.status).toBe(400);
    expect(create.body.error.message).toMatch(/^body: a JSON object is required/);
  });

  it('an agent stored too deep before the limit (old data) gets 400 naming it when a session uses it, never a 500; replacing its tools repairs it', async () => {
    const agent = await t.client.beta.agents.create({ name: 'old-data', model: MODEL });
    const env = await t.client.beta.environments.create({ name: 'old-data-env' });
    // Old data, written straight to the store as an earlier version accepted it. Both stores cap
    // nesting: MongoDB at 100 levels (98 levels from the agent's spec here), the embedded SQLite
    // store at SQLite's JSON depth of 1,000 (about 900 here); both are past the 96 a session accepts.
    let schema: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < (REAL ? 47 : 450); i++)
      schema = { type: 'object', properties: { a: schema } };
    const agents = t.server.platform.collections.agents;
    const doc = (await agents.get('tnt_default', agent.id))!;
    await agents.updateOne(
      'tnt_default',
      { _id: agent.id },
      {
        $set: {
          spec: {
            ...doc.spec,
            tools: [{ type: 'custom', name: 'deep', description: 'd', input_schema: schema }],
          },
        },
      },
    );

    // Reading it back still works.
    expect((await t.http(`/v1/agents/${agent.id}`)).status).toBe(200);
    expect((await t.http('/v1/agents?limit=100')).status).toBe(200);
    const session = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: agent.id, environment_id: env.id },
      }),
    );
    expect(session.status).toBe(400);
    expect(session.body.error.details).toEqual({ field: 'agent' });
    expect(session.body.error.message).toMatch(/nests JSON deeper than 96 levels/);
    const rename = await json(
      await t.http(`/v1/agents/${agent.id}`, {
        method: 'POST',
        json: { version: 1, name: 'renamed' },
      }),
    );
    expect(rename.status).toBe(400);
    expect(rename.body.error.details).toEqual({ field: 'tools' });
    const repaired = await json(
      await t.http(`/v1/agents/${agent.id}`, { method: 'POST', json: { version: 1, tools: [] } }),
    );
    expect(repaired.status).toBe(200);
    expect(
      (
        await t.http('/v1/sessions', {
          method: 'POST',
          json: { agent: agent.id, environment_id: env.id },
        })
      ).status,
    ).toBe(200);
  });
});

describe('query strings', () => {
  it('?constructor=1&__proto__=2 is a 400 naming the key', async () => {
    const r = await json(await t.http('/v1/agents?constructor=1&__proto__=2'));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      type: 'invalid_request',
      details: { field: 'constructor' },
    });
    expect(r.body.error.message).toMatch(/"constructor" is a reserved name/);
  });

  it('reserved names (also encoded or in brackets) and malformed bracket keys are 400 naming the key, on every route', async () => {
    const cases: Array<[string, string]> = [
      ['__proto__=1', '__proto__'],
      ['%5F%5Fproto%5F%5F=1', '__proto__'],
      ['prototype=1', 'prototype'],
      ['created_at[__proto__]=x', 'created_at[__proto__]'],
      ['created_at[gte][x]=1', 'created_at[gte][x]'],
      ['limit]=1', 'limit]'],
      ['a[b]c=1', 'a[b]c'],
      ['=1', ''],
    ];
    for (const path of ['/v1/agents', '/v1/sessions', '/graphql', '/healthz']) {
      for (const [qs, key] of cases) {
        const r = await json(await t.http(`${path}?limit=1&${qs}`));
        expect(r.status, `${path}?${qs}`).toBe(400);
        expect(r.body.error.details.field, `${path}?${qs}`).toBe(key);
      }
    }
  });

  it('a repeated scalar is refused naming it; SDK forms (name[], created_at[gte]) still work', async () => {
    const r = await json(await t.http('/v1/agents?limit=1&limit=2'));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/^limit/);
    expect(
      (
        await t.http(
          '/v1/agents?limit=2&include_archived=true&created_at[gte]=2020-01-01T00:00:00Z',
        )
      ).status,
    ).toBe(200);
    const agent = await t.client.beta.agents.create({ name: 'q', model: MODEL });
    const env = await t.client.beta.environments.create({ name: 'q' });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    expect(
      (
        await t.http(
          `/v1/sessions/${s.id}/events?types[]=user.message&types[]=agent.message&limit=5`,
        )
      ).status,
    ).toBe(200);
    expect((await t.client.beta.sessions.events.list(s.id, { limit: 5 })).data).toEqual([]);
  });
});

describe('multipart', () => {
  it('multipart/form-data without a boundary is a 400 on /v1/files and on every other route', async () => {
    for (const path of ['/v1/files', '/v1/agents', '/graphql']) {
      const r = await json(
        await t.http(path, {
          method: 'POST',
          headers: { 'content-type': 'multipart/form-data', ...BETA },
          body: 'xx',
        }),
      );
      expect(r.status, path).toBe(400);
      expect(r.body.error, path).toMatchObject({
        type: 'invalid_request',
        details: { field: 'content-type' },
      });
    }
  });

  it('a truncated multipart body is a 400, not a 500', async () => {
    const body =
      '--XyZ\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\ncontent-type: text/plain\r\n\r\nhello';
    const r = await t.http('/v1/files', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=XyZ', ...BETA },
      body,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error.type).toBe('invalid_request');
  });
});

describe('client errors are never 500', () => {
  it('odd content types and bodies get a 4xx in the API error shape', async () => {
    const cases: Array<[string, string]> = [
      ['application/xml', '<agent/>'],
      ['text/plain', 'hello'],
      ['application/x-www-form-urlencoded', 'name=x'],
      ['multipart/form-data; boundary=X', 'garbage'],
      ['application/json; charset=utf-16', '{}'],
      ['a/b/c;;;=', '{}'],
      ['application/json', '\u0000'],
    ];
    for (const [ct, body] of cases) {
      for (const path of ['/v1/agents', '/v1/files', '/graphql']) {
        const res = await t.http(path, {
          method: 'POST',
          headers: { 'content-type': ct, ...BETA },
          body,
        });
        expect(res.status, `${path} ${ct}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${path} ${ct}`).toBeLessThan(500);
        if (path !== '/graphql')
          expect(((await res.json()) as any).type, `${path} ${ct}`).toBe('error');
      }
    }
  });
});

describe('/metrics', () => {
  it('answers only the operator key on the API port', async () => {
    expect((await t.http('/metrics', { key: null })).status).toBe(401);
    const tenant = await t.newTenant('metrics-tenant');
    const forbidden = await json(await t.http('/metrics', { key: tenant.apiKey }));
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.type).toBe('forbidden');
    const ok = await t.http('/metrics');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/^agentfleet_auth_key_cache_entries \d+$/m);
  });

  it("a worker's ops port answers /metrics only to the operator key; health stays open", async () => {
    const ops = await buildOpsApp(t.server.platform);
    const url = await ops.listen({ host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/metrics`)).status).toBe(401);
      const tenant = await t.newTenant('ops-tenant');
      const forbidden = await fetch(`${url}/metrics`, { headers: { 'x-api-key': tenant.apiKey } });
      expect(forbidden.status).toBe(403);
      expect(((await forbidden.json()) as any).error.type).toBe('forbidden');
      const ok = await fetch(`${url}/metrics`, {
        headers: { authorization: `Bearer ${t.operatorKey}` },
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toMatch(/agentfleet_process_uptime_seconds/);
    } finally {
      await ops.close();
    }
  });

  it('with METRICS_LISTEN it is served only there, without auth', async () => {
    const m = await startPlatform({
      env: { SANDBOX_DRIVER: 'none', METRICS_LISTEN: '127.0.0.1:0' },
    });
    try {
      expect((await m.http('/metrics')).status).toBe(404);
      const metricsUrl = m.server.metricsUrl!;
      expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(metricsUrl).not.toBe(m.url);
      const res = await fetch(`${metricsUrl}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/agentfleet_http_requests_total/);
      expect((await fetch(`${metricsUrl}/v1/agents`)).status).toBe(404);
    } finally {
      await m.close();
    }
  });
});

describe('rate-limit headers', () => {
  it('SSE responses carry X-RateLimit-* and request-id like every other response', async () => {
    const agent = await t.client.beta.agents.create({ name: 'sse', model: MODEL });
    const env = await t.client.beta.environments.create({ name: 'sse' });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const ac = new AbortController();
    const res = await t.http(`/v1/sessions/${s.id}/events/stream`, {
      headers: BETA,
      signal: ac.signal,
    });
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('x-ratelimit-limit')).toBe('100000');
      expect(Number(res.headers.get('x-ratelimit-remaining'))).toBeGreaterThan(0);
      expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
      expect(res.headers.get('request-id')).toMatch(/^req_/);
    } finally {
      ac.abort();
    }
  });
});

/** A GET from a chosen loopback source address (127.0.0.x), so per-address limits can be seen. */
function getFrom(
  localAddress: string,
  url: string,
  key: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers: { 'x-api-key': key } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: text ? JSON.parse(text) : null,
        }),
      );
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

describe('failed authentications', () => {
  it('10,000 distinct invalid keys: 401 for the first 30, then 429 with Retry-After, per client address; valid keys still pass; the key cache stays bounded', async () => {
    const a = await startPlatform({
      env: { SANDBOX_DRIVER: 'none', METRICS_LISTEN: '127.0.0.1:0' },
    });
    try {
      const tenant = await a.newTenant('auth-limit');
      const url = `${a.url}/v1/agents`;
      const cacheEntries = async () =>
        Number(
          /^agentfleet_auth_key_cache_entries (\d+)$/m.exec(
            await (await fetch(`${a.server.metricsUrl}/metrics`)).text(),
          )![1],
        );
      // The tenant's own key resolves and is cached.
      expect((await getFrom('127.0.0.1', url, tenant.apiKey)).status).toBe(200);
      expect(await cacheEntries()).toBe(1);

      // Failures are counted per wall-clock minute (a fixed window) and an address is refused until
      // its window ends: start early in a window, so that the whole run falls inside one.
      const leftInWindow = 60_000 - (Date.now() % 60_000);
      if (leftInWindow < 30_000) await new Promise((r) => setTimeout(r, leftInWindow + 50));
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++)
        statuses.push(
          (await getFrom('127.0.0.1', url, `afk_invalid_${i}_${'x'.repeat(40)}`)).status,
        );
      expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
      expect(statuses[30]).toBe(429);

      // The remaining keys, 20 at a time: every one refused with 429 rate_limited and Retry-After.
      let next = 31;
      const refused = new Map<number, number>();
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (next < 10_000) {
            const r = await getFrom('127.0.0.1', url, `afk_invalid_${next++}_${'y'.repeat(200)}`);
            refused.set(r.status, (refused.get(r.status) ?? 0) + 1);
            if (r.status === 429 && refused.get(429) === 1) {
              expect(r.body.error.type).toBe('rate_limited');
              expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
              expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(60);
            }
          }
        }),
      );
      expect([...refused.keys()]).toEqual([429]);
      expect(refused.get(429)).toBe(10_000 - 31);
      // A valid key is looked up first and always passes, from that address too
      // (test/e2e/auth/auth-limiter.test.ts).
      expect((await getFrom('127.0.0.1', url, tenant.apiKey)).status).toBe(200);
      // Another client address is not affected.
      expect((await getFrom('127.0.0.2', url, tenant.apiKey)).status).toBe(200);
      expect((await getFrom('127.0.0.2', url, 'afk_wrong')).status).toBe(401);
      // Invalid keys never entered the key cache.
      expect(await cacheEntries()).toBe(1);
    } finally {
      await a.close();
    }
  }, 120_000);
});
