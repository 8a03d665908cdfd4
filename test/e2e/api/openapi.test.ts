/**
 * The OpenAPI 3.1 document (`GET /v1/openapi.json`, gateway/src/openapi): public, generated
 * from the route table, so every registered route (method + path) is an operation and a route
 * added without documentation fails here; its schemas are valid JSON Schema 2020-12; its
 * request examples are valid requests; live answers conform to the documented responses.
 * (Schemathesis drives the same document against a server: test/e2e/api/schemathesis.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { buildOpenApi, routeTableOf, type RouteEntry } from '@agentfleet/gateway';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

let t: TestPlatform;
let doc: any;
let routes: readonly RouteEntry[];
beforeAll(async () => {
  t = await startPlatform();
  routes = routeTableOf(t.server.app!);
  const res = await t.http('/v1/openapi.json', { key: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await res.json();
});
afterAll(async () => {
  await t?.close();
});

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const pathOf = (url: string) =>
  url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{filename}/{nested_path}');

/** An ajv that knows the document's components, so `$ref`s in operation schemas resolve. */
function validatorFor(document: any) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi.json', components: document.components }, 'openapi.json');
  const rebase = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rebase);
    if (!node || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node).map(([k, v]) => [
        k,
        k === '$ref' && typeof v === 'string' && v.startsWith('#/')
          ? `openapi.json${v}`
          : rebase(v),
      ]),
    );
  };
  // Many operations share a schema (every error answer, every page shape): compile each once.
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  return (schema: unknown) => {
    const key = JSON.stringify(schema);
    let v = compiled.get(key);
    if (!v) compiled.set(key, (v = ajv.compile(rebase(schema) as object)));
    return v;
  };
}

function responseSchema(
  method: string,
  path: string,
  status: number,
  mediaType = 'application/json',
) {
  const op = doc.paths[path]?.[method.toLowerCase()];
  expect(op, `${method} ${path} documented`).toBeDefined();
  const resp = op.responses[String(status)];
  expect(resp, `${method} ${path} documents ${status}`).toBeDefined();
  return resp.content[mediaType].schema;
}

describe('OpenAPI document', () => {
  it('is served without a key as OpenAPI 3.1 with both auth schemes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.ApiKeyAuth).toEqual(
      expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }),
    );
    expect(doc.components.securitySchemes.BearerAuth).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    );
  });

  it('documents every registered route, and nothing else', () => {
    // The table is fastify's own list: it holds the REST, GraphQL, files and ops routes.
    expect(routes.length).toBeGreaterThan(50);
    for (const url of [
      '/v1/agents',
      '/v1/sessions/:id/events',
      '/graphql',
      '/v1/files',
      '/healthz',
      '/v1/openapi.json',
    ])
      expect(
        routes.some((r) => r.url === url),
        url,
      ).toBe(true);
    const missing = routes
      .filter((r) => !doc.paths[pathOf(r.url)]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.url}`);
    expect(
      missing,
      'routes missing from the document: add them to gateway/src/openapi/operations.ts',
    ).toEqual([]);
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops as object)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(documented.length).toBe(routes.length);
    const rebuilt = buildOpenApi(routes);
    expect(rebuilt.undocumented).toEqual([]);
    expect(rebuilt.stale, 'entries in gateway/src/openapi/operations.ts with no route').toEqual([]);
  });

  it('the coverage check fails for a route without documentation', () => {
    const extra: RouteEntry = {
      method: 'POST',
      url: '/v1/brand_new/:id',
      public: false,
      operator: false,
      beta: false,
    };
    const build = buildOpenApi([...routes, extra]);
    expect(build.undocumented).toEqual(['POST /v1/brand_new/:id']);
    expect((build.document.paths as any)['/v1/brand_new/{id}']).toBeUndefined();
    expect(buildOpenApi(routes.filter((r) => r.url !== '/v1/agents')).stale).toEqual([
      'POST /v1/agents',
      'GET /v1/agents',
    ]);
  });

  it('derives auth, the beta header and the error answers from each route', () => {
    for (const r of routes) {
      const op = doc.paths[pathOf(r.url)][r.method.toLowerCase()];
      const what = `${r.method} ${r.url}`;
      expect(op.operationId, what).toBeTruthy();
      if (r.public) expect(op.security, what).toEqual([]);
      else {
        expect(op.security, what).toEqual([{ ApiKeyAuth: [] }, { BearerAuth: [] }]);
        for (const s of ['401', '403', '429'])
          expect(op.responses[s], `${what} ${s}`).toBeDefined();
      }
      for (const s of ['400', '404'])
        expect(op.responses[s]?.content['application/json'].schema, `${what} ${s}`).toBeDefined();
      const beta = (op.parameters ?? []).find(
        (p: any) => p.in === 'header' && p.name === 'anthropic-beta',
      );
      expect(!!beta, `${what} beta header`).toBe(r.beta);
      if (beta)
        expect(beta).toMatchObject({
          required: true,
          schema: { const: 'managed-agents-2026-04-01' },
        });
      const params = [...r.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
      for (const name of params)
        expect(
          op.parameters.some((p: any) => p.in === 'path' && p.name === name && p.required),
          `${what} path param ${name}`,
        ).toBe(true);
    }
    const tenants = doc.paths['/v1/svc/tenants'].post;
    expect(tenants.description).toMatch(/Operator only/);
    expect(doc.paths['/v1/agents/{id}'].get.parameters[0].schema).toMatchObject({
      type: 'string',
      pattern: '^agent_',
    });
    expect(doc.paths['/v1/agents'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/AgentCreate',
    });
    expect(doc.paths['/v1/agents'].get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(['limit', 'page', 'include_archived']),
    );
    expect(doc.paths['/v1/files'].post.requestBody.content['multipart/form-data']).toBeDefined();
  });

  it('every schema is valid JSON Schema 2020-12 and every request example is a valid request', () => {
    const compile = validatorFor(doc);
    for (const [name, s] of Object.entries(doc.components.schemas))
      expect(() => compile(s), name).not.toThrow();
    let examples = 0;
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        for (const p of op.parameters ?? [])
          expect(() => compile(p.schema), `${method} ${path} ${p.name}`).not.toThrow();
        for (const [status, resp] of Object.entries<any>(op.responses)) {
          for (const [type, media] of Object.entries<any>(resp.content ?? {}))
            if (media.schema)
              expect(
                () => compile(media.schema),
                `${method} ${path} ${status} ${type}`,
              ).not.toThrow();
        }
        const body = op.requestBody?.content['application/json'];
        if (!body) continue;
        expect(body.example, `${method} ${path}: a request example`).toBeDefined();
        const v = compile(body.schema);
        expect(v(body.example), `${method} ${path} example: ${JSON.stringify(v.errors)}`).toBe(
          true,
        );
        examples++;
      }
    }
    expect(examples).toBeGreaterThan(15);
  });

  it('live answers conform to the documented responses, and a drift would not', async () => {
    const compile = validatorFor(doc);
    const check = async (res: Response, method: string, path: string) => {
      const body = await res.json();
      const v = compile(responseSchema(method, path, res.status));
      expect(
        v(body),
        `${method} ${path} ${res.status}: ${JSON.stringify(v.errors)}\n${JSON.stringify(body)}`,
      ).toBe(true);
      return body as any;
    };
    const env = await check(
      await t.http('/v1/environments', { method: 'POST', json: { name: 'doc' } }),
      'POST',
      '/v1/environments',
    );
    const agent = await check(
      await t.http('/v1/agents', {
        method: 'POST',
        json: { name: 'doc', model: 'claude-sonnet-4-5' },
      }),
      'POST',
      '/v1/agents',
    );
    const session = await check(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: agent.id, environment_id: env.id },
      }),
      'POST',
      '/v1/sessions',
    );
    await check(
      await t.http(`/v1/sessions/${session.id}/events`, {
        method: 'POST',
        json: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] },
      }),
      'POST',
      '/v1/sessions/{id}/events',
    );
    await check(await t.http('/v1/agents?limit=1'), 'GET', '/v1/agents');
    await check(
      await t.http(`/v1/sessions/${session.id}/events`),
      'GET',
      '/v1/sessions/{id}/events',
    );
    await check(await t.http('/v1/svc/api_keys', { headers: BETA }), 'GET', '/v1/svc/api_keys');
    await check(
      await t.http('/v1/svc/api_keys', { method: 'POST', headers: BETA, json: { name: 'doc' } }),
      'POST',
      '/v1/svc/api_keys',
    );
    await check(await t.http('/v1/models'), 'GET', '/v1/models');
    await check(await t.http('/readyz', { key: null }), 'GET', '/readyz');
    const form = new FormData();
    form.set('file', new Blob(['hello']), 'hello.txt');
    const file = await check(
      await t.http('/v1/files', { method: 'POST', body: form }),
      'POST',
      '/v1/files',
    );
    await check(
      await t.http(`/v1/files/${file.id}`, { headers: { accept: 'application/json' } }),
      'GET',
      '/v1/files/{id}',
    );
    await check(await t.http('/v1/files'), 'GET', '/v1/files');
    await check(
      await t.http(`/v1/sessions/${session.id}/outputs`, { headers: BETA }),
      'GET',
      '/v1/sessions/{id}/outputs',
    );
    await check(await t.http('/v1/agents/agent_nope'), 'GET', '/v1/agents/{id}');
    await check(
      await t.http('/v1/agents', { method: 'POST', json: { name: 'x' } }),
      'POST',
      '/v1/agents',
    );
    await check(await t.http('/v1/agents', { key: 'wrong' }), 'GET', '/v1/agents');
    await check(
      await t.http('/graphql', { method: 'POST', json: { query: '{ __typename }' } }),
      'POST',
      '/graphql',
    );
    // The documented shapes are strict: an unannounced field fails.
    const v = compile(responseSchema('POST', '/v1/agents', 200));
    expect(v({ ...agent, surprise: true })).toBe(false);
  });
});

/** What Schemathesis found against the document, fixed and kept fixed. */
describe('schemathesis findings', () => {
  const errorShape = async (res: Response, status: number, type: string) => {
    expect(res.status).toBe(status);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      type: 'error',
      error: { type },
      request_id: expect.stringMatching(/^req_/),
    });
    return body;
  };

  it('router errors: an over-long path segment is 404 and malformed percent-encoding 400, in the error shape', async () => {
    await errorShape(await t.http(`/v1/agents/${'0'.repeat(1500)}`), 404, 'not_found');
    await errorShape(
      await t.http(`/v1/sessions/${'0'.repeat(1500)}/events`, {
        method: 'POST',
        json: { events: [] },
      }),
      404,
      'not_found',
    );
    // Ids up to the documented 128 characters reach the route (a plain 404 from the lookup).
    expect(
      (await errorShape(await t.http(`/v1/agents/agent_${'0'.repeat(122)}`), 404, 'not_found'))
        .error.message,
    ).toMatch(/agent_0+ not found/);
    const bad = await errorShape(await t.http('/v1/agents/%E0%A4%A'), 400, 'invalid_request');
    expect(bad.error.details).toEqual({ field: 'path' });
  });

  it('map fields refuse keys outside their pattern and non-string values (env, custom_headers), and over-long metadata keys', async () => {
    const env = await errorShape(
      await t.http('/v1/environments', {
        method: 'POST',
        json: { name: 'e', env: { 'not a name': 5 } },
      }),
      400,
      'invalid_request',
    );
    expect(env.error.message).toMatch(/^env\.not a name: unknown field/);
    await errorShape(
      await t.http('/v1/environments', { method: 'POST', json: { name: 'e', env: { GOOD: 5 } } }),
      400,
      'invalid_request',
    );
    const card = await errorShape(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'h',
          provider: 'anthropic',
          model: 'm',
          api_key: 'k',
          custom_headers: { 'bad header': 'x' },
        },
      }),
      400,
      'invalid_request',
    );
    expect(card.error.message).toMatch(/^custom_headers\.bad header: unknown field/);
    const meta = await errorShape(
      await t.http('/v1/agents', {
        method: 'POST',
        json: { name: 'a', model: 'm', metadata: { ['k'.repeat(65)]: 'v' } },
      }),
      400,
      'invalid_request',
    );
    expect(meta.error.message).toMatch(/^metadata/);
    expect(
      (
        await t.http('/v1/environments', {
          method: 'POST',
          json: { name: 'e', env: { GOOD: 'yes' }, metadata: { ['k'.repeat(64)]: 'v' } },
        })
      ).status,
    ).toBe(200);
  });
});
