/**
 * GraphQL eval reads (gateway/src/graphql/evals.ts) against REST, on two runs started through
 * REST over a scripted model (expected-text cases; a system prompt with "v2" answers `apple`
 * right, so `apple` is fixed between the v1 and the v2 run):
 * - evalRun(id) and evalRuns answer what GET /v1/svc/evals/:id and GET /v1/svc/evals answer
 *   (every case field and the summary), the agent at the run's version and the environment
 *   resolved; evalRuns pages newest first with limit/page and filters by agentId; a bad limit
 *   is BAD_USER_INPUT naming `limit`;
 * - evalComparison(id, with) answers what …/:id/compare?with= answers (`apple` FIXED);
 * - another tenant gets NOT_FOUND and no data for both runs, and an empty list; an unknown id
 *   is NOT_FOUND as for the other queries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { apiJson } from '../../kit/integrations.js';
import { addModelCard, say } from '../../kit/turnHelpers.js';

const MODEL = 'gql-eval-model';
const CASES = [
  { id: 'banana', prompt: 'Say banana.', expected_text: 'banana' },
  { id: 'apple', prompt: 'Say apple.', expected_text: 'apple' },
];
let t: TestPlatform;
let agentId: string;
let envId: string;
let v1: any;
let v2: any;

async function gql(query: string, variables: Record<string, unknown> = {}, key = t.apiKey) {
  const res = await t.http('/graphql', { method: 'POST', key, json: { query, variables } });
  expect(res.status).toBe(200);
  return (await res.json()) as { data?: any; errors?: any[] };
}
async function ok(query: string, variables: Record<string, unknown> = {}) {
  const r = await gql(query, variables);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data;
}

async function runToEnd(agent: unknown, name: string) {
  const started = await apiJson(t, '/v1/svc/evals', {
    method: 'POST',
    json: { name, agent, environment_id: envId, cases: CASES, concurrency: 2 },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const ended = await waitFor(
    async () => {
      const r = await apiJson(t, `/v1/svc/evals/${started.body.id}`);
      return ['completed', 'cancelled', 'failed'].includes(r.body.status) ? r.body : null;
    },
    60_000,
    200,
  );
  expect(ended.status, JSON.stringify(ended)).toBe('completed');
  return ended;
}

beforeAll(async () => {
  t = await startPlatform();
  await addModelCard(t, MODEL);
  t.model.script(
    MODEL,
    ...Array.from({ length: 20 }, () => ({
      steps: [],
      decide: (body: any) => {
        const prompt = JSON.stringify(body.messages?.[0] ?? '');
        if (prompt.includes('banana')) return say('Here it is: banana!');
        return say(JSON.stringify(body.system ?? '').includes('v2') ? 'apple' : 'pear');
      },
    })),
  );
  envId = (await t.client.beta.environments.create({ name: 'gql-evals' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'gql-evals', model: MODEL, system: 'v1' }))
    .id;
  v1 = await runToEnd(agentId, 'v1 run');
  await t.client.beta.agents.update(agentId, { version: 1, system: 'v2' } as any);
  v2 = await runToEnd({ id: agentId, version: 2 }, 'v2 run');
}, 120_000);
afterAll(async () => {
  await t?.close();
});

const USAGE = 'usage { inputTokens outputTokens cacheReadInputTokens cacheCreationInputTokens }';
const CASE = `id status passed score reason checks { type passed reason } sessionId ${USAGE} cost durationMs`;
const SUMMARY = `summary { passed failed errored cancelled pending total score cost ${USAGE} }`;
const RUN = `id name status agentId agentVersion environmentId concurrency currency
  cases { ${CASE} } ${SUMMARY} createdAt updatedAt endedAt`;

/** The REST answer as the GraphQL contract spells it (camelCase, enums upper case). */
const usage = (u: any) => ({
  inputTokens: u.input_tokens,
  outputTokens: u.output_tokens,
  cacheReadInputTokens: u.cache_read_input_tokens,
  cacheCreationInputTokens: u.cache_creation_input_tokens,
});
const asCase = (c: any) =>
  c && {
    id: c.id,
    status: c.status.toUpperCase(),
    passed: c.passed,
    score: c.score,
    reason: c.reason,
    checks: c.checks.map((k: any) => ({ ...k, type: k.type.toUpperCase() })),
    sessionId: c.session_id,
    usage: usage(c.usage),
    cost: c.cost,
    durationMs: c.duration_ms,
  };
const asSummary = (s: any) => ({ ...s, usage: usage(s.usage) });
const asRun = (r: any) => ({
  id: r.id,
  name: r.name,
  status: r.status.toUpperCase(),
  agentId: r.agent.id,
  agentVersion: r.agent.version,
  environmentId: r.environment_id,
  concurrency: r.concurrency,
  currency: r.currency,
  cases: r.cases.map(asCase),
  summary: asSummary(r.summary),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  endedAt: r.ended_at,
});

describe('GraphQL eval reads', () => {
  it('evalRun answers what REST answers, with the agent at its version and the environment', async () => {
    expect(v1.cases.map((c: any) => [c.id, c.passed])).toEqual([
      ['banana', true],
      ['apple', false],
    ]);
    for (const run of [v1, v2]) {
      const rest = (await apiJson(t, `/v1/svc/evals/${run.id}`)).body;
      const d = await ok(
        `query($id: ID!) { evalRun(id: $id) { ${RUN} agent { id version system } environment { id name } } }`,
        { id: run.id },
      );
      const { agent, environment, ...fields } = d.evalRun;
      expect(fields).toEqual(asRun(rest));
      expect(agent).toEqual({
        id: agentId,
        version: rest.agent.version,
        system: `v${rest.agent.version}`,
      });
      expect(environment).toEqual({ id: envId, name: 'gql-evals' });
    }
  });

  it('evalRuns pages newest first like REST, filters by agent and checks its limit', async () => {
    const rest = (await apiJson(t, '/v1/svc/evals?limit=10')).body;
    const all = await ok(`{ evalRuns(limit: 10) { nodes { ${RUN} } hasMore nextPage } }`);
    expect(all.evalRuns).toEqual({
      nodes: rest.data.map(asRun),
      hasMore: false,
      nextPage: rest.next_page,
    });
    expect(all.evalRuns.nodes.map((r: any) => r.id)).toEqual([v2.id, v1.id]);

    const first = await ok(`{ evalRuns(limit: 1) { nodes { id } hasMore nextPage } }`);
    expect(first.evalRuns).toMatchObject({ nodes: [{ id: v2.id }], hasMore: true });
    const next = await ok(
      `query($p: String) { evalRuns(limit: 1, page: $p) { nodes { id } hasMore } }`,
      { p: first.evalRuns.nextPage },
    );
    expect(next.evalRuns).toEqual({ nodes: [{ id: v1.id }], hasMore: false });

    const mine = await ok(`query($a: ID) { evalRuns(agentId: $a) { nodes { id } } }`, {
      a: agentId,
    });
    expect(mine.evalRuns.nodes).toHaveLength(2);
    const none = await ok(`{ evalRuns(agentId: "agent_nobody") { nodes { id } } }`);
    expect(none.evalRuns.nodes).toEqual([]);

    const bad = await gql(`{ evalRuns(limit: 0) { nodes { id } } }`);
    expect(bad.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      http_status: 400,
      field: 'limit',
    });
  });

  it('evalComparison answers what REST compare answers: apple fixed', async () => {
    const rest = (await apiJson(t, `/v1/svc/evals/${v1.id}/compare?with=${v2.id}`)).body;
    const d = await ok(
      `query($id: ID!, $w: ID!) { evalComparison(id: $id, with: $w) {
        base { id agentId agentVersion ${SUMMARY} } other { id agentId agentVersion ${SUMMARY} }
        cases { id change base { ${CASE} } other { ${CASE} } }
        summary { fixed regressed same unmatched } } }`,
      { id: v1.id, w: v2.id },
    );
    const side = (s: any) => ({
      id: s.id,
      agentId: s.agent.id,
      agentVersion: s.agent.version,
      summary: asSummary(s.summary),
    });
    expect(d.evalComparison).toEqual({
      base: side(rest.base),
      other: side(rest.other),
      cases: rest.cases.map((c: any) => ({
        id: c.id,
        change: c.change.toUpperCase(),
        base: asCase(c.base),
        other: asCase(c.other),
      })),
      summary: rest.summary,
    });
    expect(d.evalComparison.cases.map((c: any) => [c.id, c.change])).toEqual([
      ['banana', 'SAME'],
      ['apple', 'FIXED'],
    ]);
    expect(d.evalComparison.summary).toEqual({ fixed: 1, regressed: 0, same: 1, unmatched: 0 });
  });

  it('another tenant gets NOT_FOUND and an empty list; an unknown id is NOT_FOUND', async () => {
    const other = await t.newTenant('gql-evals-other');
    const notFound = async (query: string, variables: Record<string, unknown>, key?: string) => {
      const r = await gql(query, variables, key);
      expect(r.errors?.[0]?.extensions, query).toMatchObject({
        code: 'NOT_FOUND',
        type: 'not_found',
        http_status: 404,
      });
      expect(
        Object.values(r.data ?? {}).every((v) => v === null),
        query,
      ).toBe(true);
    };
    for (const id of [v1.id, v2.id])
      await notFound(
        `query($id: ID!) { evalRun(id: $id) { id cases { id } } }`,
        { id },
        other.apiKey,
      );
    await notFound(
      `query($id: ID!, $w: ID!) { evalComparison(id: $id, with: $w) { cases { id } } }`,
      { id: v1.id, w: v2.id },
      other.apiKey,
    );
    const list = await gql(`{ evalRuns { nodes { id } hasMore } }`, {}, other.apiKey);
    expect(list).toEqual({ data: { evalRuns: { nodes: [], hasMore: false } } });

    await notFound(`{ evalRun(id: "eval_unknown") { id } }`, {});
    await notFound(
      `query($id: ID!) { evalComparison(id: $id, with: "eval_unknown") { cases { id } } }`,
      { id: v1.id },
    );
  });
});
