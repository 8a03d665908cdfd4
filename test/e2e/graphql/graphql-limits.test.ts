/**
 * GraphQL document limits (gateway/src/graphql/limits.ts) over HTTP: tokens, aliases, depth and
 * cost refused as GraphQL errors with HTTP 400 (never a 500), the cost charged against the
 * tenant's rate limit, page sizes bounded in the resolvers, JSON arguments depth-limited, and the
 * same rules on the graphql-sse transport.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let sessionId: string;
const MAX_COST = 30_000;
const COST_PER_TOKEN = 500;
beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      GRAPHQL_MAX_COST: String(MAX_COST),
      GRAPHQL_COST_PER_RATE_LIMIT_TOKEN: String(COST_PER_TOKEN),
      RATE_LIMIT_PER_MINUTE: '100000',
    },
  });
  const env = await t.client.beta.environments.create({ name: 'limits' });
  const agent = await t.client.beta.agents.create({ name: 'limits', model: 'claude-sonnet-4-5' });
  sessionId = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
});
afterAll(async () => {
  await t?.close();
});

async function gql(
  query: string,
  variables?: Record<string, unknown>,
  init: { path?: string; headers?: Record<string, string> } = {},
) {
  const res = await t.http(init.path ?? '/graphql', {
    method: 'POST',
    headers: init.headers,
    json: { query, variables },
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    body: (() => {
      try {
        return JSON.parse(text);
      } catch {
        return null;
      }
    })() as any,
  };
}

/** A query that still answers: the server is fine after a refusal. */
async function stillServes() {
  const r = await gql('{ agents(limit: 1) { hasMore } }');
  expect(r.status).toBe(200);
  expect(r.body.errors).toBeUndefined();
}

describe('document limits', () => {
  it('3,000 aliases of sessionEvents(limit: 1000): refused before execution with a GraphQL error, not a 500', async () => {
    const fields = Array.from(
      { length: 3000 },
      (_, i) => `a${i}: sessionEvents(sessionId: "${sessionId}", limit: 1000) { nodes { id } }`,
    ).join('\n');
    const r = await gql(`{ ${fields} }`);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions).toMatchObject({
      code: 'GRAPHQL_VALIDATION_FAILED',
      type: 'invalid_request',
      limit: 'tokens',
    });
    expect(r.body.errors[0].message).toMatch(/Token limit of 2000 exceeded/);
    expect(r.body.data).toBeUndefined();
    await stillServes();
  });

  it('more aliases than GRAPHQL_MAX_ALIASES (15) within the token limit: refused naming the alias limit', async () => {
    const fields = (n: number) =>
      Array.from({ length: n }, (_, i) => `a${i}: agents(limit: 1) { hasMore }`).join(' ');
    const refused = await gql(`{ ${fields(16)} }`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/Aliases limit of 15 exceeded, found 16/),
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'aliases' },
    });
    // At the limit it runs.
    const fine = await gql(`{ ${fields(15)} }`);
    expect(fine.body.errors).toBeUndefined();
    expect(fine.body.data.a14).toEqual({ hasMore: false });
  });

  it('a query deeper than GRAPHQL_MAX_DEPTH (10) is refused naming the depth limit', async () => {
    const nest = (n: number): string => (n === 0 ? 'name' : `ofType { ${nest(n - 1)} }`);
    const refused = await gql(`{ __type(name: "Query") { fields { type { ${nest(9)} } } } }`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/depth limit of 10 exceeded/),
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' },
    });
    const fine = await gql(`{ __type(name: "Query") { fields { type { ${nest(5)} } } } }`);
    expect(fine.body.errors).toBeUndefined();
    // The full introspection query of GraphQL clients is not refused (graphql-armor ignores __schema).
    const { getIntrospectionQuery } = await import('graphql');
    const intro = await gql(getIntrospectionQuery());
    expect(intro.status).toBe(200);
    expect(intro.body.data.__schema.queryType.name).toBe('Query');
  });

  it('cost counts page sizes (limit, literal or variable): over GRAPHQL_MAX_COST is refused, below runs', async () => {
    const q = (limit: string) =>
      `query($s: ID!, $n: Int) { sessionEvents(sessionId: $s, limit: ${limit}) { nodes { id seq type sessionId createdAt data } } }`;
    // cost = (2 + 1.5 × (2 + 1.5 × 6)) × limit = 18.5 × limit: 1000 → 18,500 (runs); 2000 → 37,000 (over 30,000).
    const over = await gql(q('2000'), { s: sessionId });
    expect(over.status).toBe(400);
    expect(over.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/Cost limit of 30000 exceeded, found 37000/),
      extensions: { limit: 'cost' },
    });
    const overByVariable = await gql(q('$n'), { s: sessionId, n: 2000 });
    expect(overByVariable.status).toBe(400);
    expect(overByVariable.body.errors[0].extensions.limit).toBe('cost');
    const fine = await gql(q('$n'), { s: sessionId, n: 1000 });
    expect(fine.body.errors).toBeUndefined();
    expect(fine.body.data.sessionEvents.nodes).toEqual([]);
  });

  it('page sizes are bounded in the resolvers too: limit 5000 on a cheap selection is refused naming limit', async () => {
    const r = await gql(
      `query($s: ID!) { sessionEvents(sessionId: $s, limit: 5000) { hasMore } }`,
      { s: sessionId },
    );
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'limit' });
    expect(r.body.data).toBeNull();
  });
});

describe('cost against the rate limit', () => {
  it('an expensive query takes 1 + floor(cost / GRAPHQL_COST_PER_RATE_LIMIT_TOKEN) tokens; a cheap one takes 1', async () => {
    const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-ratelimit-remaining'));
    const reset = (r: { headers: Headers }) => r.headers.get('x-ratelimit-reset');
    const expensive = `query($s: ID!) { sessionEvents(sessionId: $s, limit: 1000) { nodes { id seq type sessionId createdAt data } } }`; // cost 18,500
    for (let attempt = 1; ; attempt++) {
      const a = await gql('{ agents(limit: 1) { hasMore } }');
      const b = await gql('{ agents(limit: 1) { hasMore } }');
      const c = await gql(expensive, { s: sessionId });
      const d = await gql('{ agents(limit: 1) { hasMore } }');
      // A window boundary between the calls restarts the count: measure again then.
      if (attempt < 3 && new Set([a, b, c, d].map(reset)).size > 1) continue;
      expect(c.body.errors).toBeUndefined();
      expect(remaining(a) - remaining(b)).toBe(1);
      expect(remaining(b) - remaining(d)).toBe(1 + Math.floor(18_500 / COST_PER_TOKEN) + 1);
      return;
    }
  });

  it('a tenant whose rate limit cannot pay for the cost gets 429 rate_limited', async () => {
    const small = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'none',
        RATE_LIMIT_PER_MINUTE: '40',
        GRAPHQL_COST_PER_RATE_LIMIT_TOKEN: '100',
      },
    });
    try {
      // {agents(limit: 1000){nodes{id name}}}: (2 + 1.5 × (2 + 1.5 × 2)) × 1000 = 9,500 → 95 tokens, more than 40.
      const res = await small.http('/graphql', {
        method: 'POST',
        json: { query: '{ agents(limit: 1000) { nodes { id name } } }' },
      });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await res.json()) as any).error.type).toBe('rate_limited');
    } finally {
      await small.close();
    }
  });
});

describe('JSON arguments', () => {
  it('an input literal nesting deeper than 64 levels is refused naming the argument (REST refuses such bodies too)', async () => {
    const deep = (n: number): string =>
      n === 0 ? '{ type: "object" }' : `{ type: "object", properties: { a: ${deep(n - 1)} } }`;
    const input = (n: number) =>
      `{ name: "deep", model: "claude-sonnet-4-5", tools: [{ type: "custom", name: "t", description: "d", input_schema: ${deep(n)} }] }`;
    const refused = await gql(`mutation { createAgent(input: ${input(40)}) { id } }`);
    expect(refused.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/^input: JSON nests deeper than the limit of 64/),
      extensions: { code: 'BAD_USER_INPUT', field: 'input' },
    });
    const fine = await gql(`mutation { createAgent(input: ${input(20)}) { id } }`);
    expect(fine.body.errors).toBeUndefined();
    expect(fine.body.data.createAgent.id).toMatch(/^agent_/);
  });
});

describe('graphql-sse transport', () => {
  it('applies the same limits to operations sent to /graphql/stream', async () => {
    const fields = Array.from(
      { length: 16 },
      (_, i) => `a${i}: sessionEvents(sessionId: "${sessionId}") { id }`,
    ).join(' ');
    const r = await gql(`subscription { ${fields} }`, undefined, {
      path: '/graphql/stream',
      headers: { accept: 'text/event-stream' },
    });
    expect(r.status).toBeLessThan(500);
    expect(r.text).toMatch(/Aliases limit of 15 exceeded/);
    const tokens = Array.from(
      { length: 1200 },
      (_, i) => `a${i}: sessionEvents(sessionId: "${sessionId}") { id }`,
    ).join(' ');
    const big = await gql(`subscription { ${tokens} }`, undefined, {
      path: '/graphql/stream',
      headers: { accept: 'text/event-stream' },
    });
    expect(big.status).toBe(400);
    expect(big.body.errors[0].extensions.limit).toBe('tokens');
  });
});
