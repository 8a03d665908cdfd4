/**
 * Undeclared methods (gateway/src/methodNotAllowed.ts), over HTTP against an in-process
 * platform: a path some route declares, asked with a method none of them declares, is a 405
 * `method_not_allowed` in the API error shape with `Allow` listing the declared methods, for
 * static paths and paths with parameters (one, two, a trailing slash, a query string); every
 * route of the served OpenAPI document is tried with each method it does not declare;
 * unknown paths stay 404, HEAD and OPTIONS keep their answers, and an unauthenticated request
 * is still refused by authentication first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(async () => {
  await t?.close();
});

const call = async (method: string, path: string, key?: string | null) => {
  const r = await t.http(path, { method, key });
  const text = await r.text();
  return { status: r.status, allow: r.headers.get('allow'), text };
};

describe('405 with Allow', () => {
  it('static and parameterised paths answer 405 listing their declared methods', async () => {
    const cases: Array<[string, string, string]> = [
      ['PUT', '/v1/agents', 'GET, POST'],
      ['DELETE', '/v1/agents', 'GET, POST'],
      ['PUT', '/v1/agents/agent_123', 'GET, POST, PATCH, DELETE'],
      ['PUT', '/v1/agents/agent_123/', 'GET, POST, PATCH, DELETE'],
      ['PATCH', '/v1/sessions/sesn_1/events?limit=3', 'GET, POST'],
      ['DELETE', '/v1/memory_stores/ms_1/memories/mem_1/x', ''],
      ['PUT', '/v1/memory_stores/ms_1/memories/mem_1', 'GET, POST, DELETE'],
      ['POST', '/healthz', 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      const r = await call(method, path);
      if (!allow) {
        expect(r.status, `${method} ${path}`).toBe(404);
        continue;
      }
      expect([r.status, r.allow], `${method} ${path}`).toEqual([405, allow]);
      const body = JSON.parse(r.text);
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('method_not_allowed');
      expect(body.error.message).toContain(allow);
      expect(typeof body.request_id).toBe('string');
    }
  });

  it('every documented path refuses each undeclared method with its own Allow', async () => {
    const doc = (await (await t.http('/v1/openapi.json')).json()) as any;
    const WRITE = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
    const templates = Object.entries<any>(doc.paths).map(([p, ops]) => ({
      path: p,
      match: new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      methods: Object.keys(ops).map((m) => m.toUpperCase()),
    }));
    let tried = 0;
    for (const { path: template } of templates) {
      if (template.includes('{nested_path}')) continue;
      // Parameters filled with a value no static segment has; the methods declared for the
      // concrete path are those of every documented path it matches.
      const path = template.replace(/\{[^}]+\}/g, 'zz9');
      const methods = new Set(
        templates.filter((x) => x.match.test(path)).flatMap((x) => x.methods),
      );
      for (const method of WRITE.filter((m) => !methods.has(m))) {
        const r = await call(method, path);
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(new Set(r.allow!.split(', ')), `${method} ${path}`).toEqual(
          new Set([...methods].filter((m) => m !== 'HEAD')),
        );
        tried++;
      }
    }
    expect(tried).toBeGreaterThan(100);
  }, 60_000);

  it('unknown paths stay 404; HEAD and OPTIONS keep their answers; auth still comes first', async () => {
    const unknown = await call('PUT', '/v1/no_such_thing');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text).error.type).toBe('not_found');
    expect(unknown.allow).toBeNull();
    expect((await call('HEAD', '/v1/agents')).status).toBe(200);
    const head = await call('HEAD', '/v1/agents/agent_1/archive');
    expect([head.status, head.allow]).toEqual([404, null]);
    const options = await call('OPTIONS', '/v1/agents');
    expect([options.status, options.allow]).toEqual([404, null]);
    expect((await call('PUT', '/v1/agents', null)).status).toBe(401);
  });
});
