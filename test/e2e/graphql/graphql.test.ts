import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../kit/harness.js';
import {
  expectGapFree,
  gql,
  MODEL,
  newAgent,
  newSession,
  ok,
  say,
  sseClient,
  SUBSCRIBE,
  subscribe,
  TURN,
  untilIdle,
  useGraphqlPlatform,
  allEvents,
} from './graphqlHelpers.js';

const platform = useGraphqlPlatform();
let t: TestPlatform;
let envId: string;
beforeAll(() => {
  ({ t, envId } = platform());
});

describe('GraphQL over HTTP', () => {
  it('requires an API key (401 before GraphQL runs), accepts GET queries and Bearer keys', async () => {
    const missing = await gql('{ agents { hasMore } }', undefined, null);
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ type: 'error', error: { type: 'unauthorized' } });
    expect((await gql('{ agents { hasMore } }', undefined, 'wrong-key')).status).toBe(401);
    expect(
      (await t.http('/graphql/stream', { key: null, method: 'POST', json: { query: SUBSCRIBE } }))
        .status,
    ).toBe(401);
    const get = await t.http(
      `/graphql?query=${encodeURIComponent('{ agents(limit: 1) { hasMore } }')}`,
    );
    expect(get.status).toBe(200);
    expect(((await get.json()) as any).data.agents.hasMore).toBeTypeOf('boolean');
    const bearer = await t.http('/graphql', {
      key: null,
      method: 'POST',
      headers: { authorization: `Bearer ${t.operatorKey}` },
      json: { query: '{ agents { hasMore } }' },
    });
    expect(bearer.status).toBe(200);
    // Apollo serves queries and mutations; subscriptions are pointed to graphql-sse.
    const sub = await gql(SUBSCRIBE, { s: 'ses_x' });
    expect(sub.status).toBe(400);
    expect(sub.body.errors[0]).toMatchObject({
      message: expect.stringContaining('/graphql/stream'),
      extensions: { code: 'BAD_REQUEST' },
    });
  });

  it('creates an agent, updates it to v2, lists both versions, reads either version', async () => {
    const a = await newAgent(undefined, 'You are v1');
    expect(a.version).toBe(1);
    const v2 = (
      await ok(
        `mutation($id: ID!, $input: JSON!) { updateAgent(id: $id, input: $input) { id version system updatedAt } }`,
        { id: a.id, input: { version: 1, system: 'You are v2', environment_id: envId } },
      )
    ).updateAgent;
    expect(v2).toMatchObject({ id: a.id, version: 2, system: 'You are v2' });
    const versions = (
      await ok(
        `query($id: ID!) { agentVersions(agentId: $id) { nodes { version system } hasMore nextPage } }`,
        { id: a.id },
      )
    ).agentVersions;
    expect(versions).toEqual({
      nodes: [
        { version: 2, system: 'You are v2' },
        { version: 1, system: 'You are v1' },
      ],
      hasMore: false,
      nextPage: null,
    });
    const paged = (
      await ok(
        `query($id: ID!) { agentVersions(agentId: $id, limit: 1) { nodes { version } hasMore nextPage } }`,
        { id: a.id },
      )
    ).agentVersions;
    expect(paged).toMatchObject({ nodes: [{ version: 2 }], hasMore: true });
    const rest = (
      await ok(
        `query($id: ID!, $p: String) { agentVersions(agentId: $id, limit: 1, page: $p) { nodes { version } hasMore } }`,
        { id: a.id, p: paged.nextPage },
      )
    ).agentVersions;
    expect(rest).toEqual({ nodes: [{ version: 1 }], hasMore: false });
    const data = await ok(
      `query($id: ID!) {
      current: agent(id: $id) { version system model { id effort } environmentId environment { id name } archived }
      first: agent(id: $id, version: 1) { version system environment { id } }
      agents(limit: 100) { nodes { id } }
    }`,
      { id: a.id },
    );
    expect(data.current).toEqual({
      version: 2,
      system: 'You are v2',
      model: { id: MODEL, effort: null },
      environmentId: envId,
      environment: { id: envId, name: 'gql-env' },
      archived: false,
    });
    expect(data.first).toEqual({ version: 1, system: 'You are v1', environment: null });
    expect(data.agents.nodes.map((n: any) => n.id)).toContain(a.id);
    const stale = await gql(
      `mutation($id: ID!) { updateAgent(id: $id, input: { version: 1, system: "stale" }) { version } }`,
      { id: a.id },
    );
    expect(stale.body.errors[0].extensions).toMatchObject({
      code: 'CONFLICT',
      type: 'conflict',
      http_status: 409,
      current_version: 2,
    });
    const archived = (
      await ok(`mutation($id: ID!) { archiveAgent(id: $id) { archived archivedAt } }`, { id: a.id })
    ).archiveAgent;
    expect(archived.archived).toBe(true);
  });

  it('rejects bad input with the REST validators, naming the field', async () => {
    const missing = await gql(`mutation { createAgent(input: { model: "${MODEL}" }) { id } }`);
    expect(missing.body.data).toBeNull();
    expect(missing.body.errors[0]).toMatchObject({
      message: 'name: is required',
      path: ['createAgent'],
      extensions: {
        code: 'BAD_USER_INPUT',
        type: 'invalid_request',
        http_status: 400,
        field: 'name',
      },
    });
    const unknown = await gql(
      `mutation { createAgent(input: { name: "x", model: "${MODEL}", bogus: 1 }) { id } }`,
    );
    expect(unknown.body.errors[0]).toMatchObject({
      message: 'bogus: unknown field',
      extensions: { code: 'BAD_USER_INPUT', field: 'bogus' },
    });
    const notObject = await gql(`mutation { createAgent(input: "x") { id } }`);
    expect(notObject.body.errors[0]).toMatchObject({
      message: 'input: must be a JSON object',
      extensions: { code: 'BAD_USER_INPUT', field: 'input' },
    });
    const limit = await gql('{ agents(limit: 5000) { hasMore } }');
    expect(limit.body.errors[0]).toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'limit' },
    });
    expect(limit.body.errors[0].message).toMatch(/^limit: /);
    const a = await newAgent();
    const s = await newSession(a.id);
    const after = await gql(
      `query($s: ID!) { sessionEvents(sessionId: $s, afterSeq: -1) { hasMore } }`,
      { s: s.id },
    );
    expect(after.body.errors[0]).toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'afterSeq' },
    });
    expect(after.body.errors[0].message).toMatch(/^afterSeq: /);
    const page = await gql(
      `query($s: ID!) { sessionEvents(sessionId: $s, page: "garbage") { hasMore } }`,
      { s: s.id },
    );
    expect(page.body.errors[0]).toMatchObject({
      message: 'page: is not a valid page cursor',
      extensions: { field: 'page' },
    });
    const neither = await gql(`mutation($s: ID!) { sendMessage(sessionId: $s) { id } }`, {
      s: s.id,
    });
    expect(neither.body.errors[0]).toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'text' },
    });
    const badBlock = await gql(
      `mutation($s: ID!) { sendMessage(sessionId: $s, content: [{ type: "text" }]) { id } }`,
      { s: s.id },
    );
    expect(badBlock.body.errors[0]).toMatchObject({
      message: 'content[0].text: is required',
      extensions: { field: 'content[0].text' },
    });
    const badSession = await gql(
      `mutation($a: ID!) { createSession(input: { agent: $a }) { id } }`,
      { a: a.id },
    );
    expect(badSession.body.errors[0]).toMatchObject({
      // The agent names no environment_id either (test/e2e/sessions/session-default-environment.test.ts).
      message: expect.stringMatching(/^environment_id: is required/),
      extensions: { field: 'environment_id' },
    });
    const badType = await gql('{ agents(limit: "ten") { hasMore } }');
    expect(badType.status).toBe(400);
    expect(badType.body.errors[0].extensions).toMatchObject({
      code: 'GRAPHQL_VALIDATION_FAILED',
      type: 'invalid_request',
      http_status: 400,
    });
  });

  it('creates a session, sends a message, pages the events both ways', async () => {
    const a = await newAgent();
    const s = await newSession(a.id);
    expect(s).toMatchObject({ status: 'IDLE', agentVersion: 1 });
    t.model.script(MODEL, { steps: [{ text: 'Hello from GraphQL', chunks: 3 }] });
    const sent = (await say(s.id, 'hi')).sendMessage;
    expect(sent).toMatchObject({
      type: 'user.message',
      seq: 1,
      sessionId: s.id,
      data: { content: [{ type: 'text', text: 'hi' }] },
    });
    const all = await untilIdle(s.id);
    expect(all.map((e) => e.type)).toEqual(TURN);
    expectGapFree(all, 1);
    expect(all.find((e) => e.type === 'agent.message').data.content).toEqual([
      { type: 'text', text: 'Hello from GraphQL' },
    ]);
    const session = await ok(
      `query($s: ID!) { session(id: $s) { status agent { id version model { id } } environment { id } usage { inputTokens } } sessions(agentId: "${a.id}") { nodes { id status } } }`,
      { s: s.id },
    );
    expect(session.session).toMatchObject({
      status: 'IDLE',
      agent: { id: a.id, version: 1, model: { id: MODEL } },
      environment: { id: envId },
    });
    expect(session.sessions.nodes).toEqual([{ id: s.id, status: 'IDLE' }]);
    expect(
      (await ok(`{ sessions(agentId: "${a.id}", status: RUNNING) { nodes { id } } }`)).sessions
        .nodes,
    ).toEqual([]);

    const PAGE = `query($s: ID!, $order: Order, $p: String) { sessionEvents(sessionId: $s, limit: 2, order: $order, page: $p) { nodes { seq } hasMore nextPage prevPage } }`;
    const walk = async (order: 'ASC' | 'DESC') => {
      const seqs: number[] = [];
      const pages: any[] = [];
      let p: string | null = null;
      do {
        const page: any = (await ok(PAGE, { s: s.id, order, p })).sessionEvents;
        pages.push(page);
        seqs.push(...page.nodes.map((n: any) => n.seq));
        p = page.nextPage;
      } while (p);
      return { seqs, pages };
    };
    const asc = await walk('ASC');
    expect(asc.seqs).toEqual([1, 2, 3, 4, 5, 6]);
    expect(asc.pages.map((pg) => pg.hasMore)).toEqual([true, true, false]);
    expect(asc.pages[0].prevPage).toBeNull();
    const desc = await walk('DESC');
    expect(desc.seqs).toEqual([6, 5, 4, 3, 2, 1]);
    // Walking back from the last ASC page with prevPage gives the pages before it.
    const back = (await ok(PAGE, { s: s.id, order: 'ASC', p: asc.pages[2].prevPage }))
      .sessionEvents;
    expect(back.nodes.map((n: any) => n.seq)).toEqual([3, 4]);
    const after = (
      await ok(`query($s: ID!) { sessionEvents(sessionId: $s, afterSeq: 4) { nodes { seq } } }`, {
        s: s.id,
      })
    ).sessionEvents;
    expect(after.nodes.map((n: any) => n.seq)).toEqual([5, 6]);
    const typed = (
      await ok(
        `query($s: ID!) { sessionEvents(sessionId: $s, types: ["agent.message"]) { nodes { type } } }`,
        { s: s.id },
      )
    ).sessionEvents;
    expect(typed.nodes).toEqual([{ type: 'agent.message' }]);
    // The REST cursor works here.
    const restPage = (await (await t.http(`/v1/sessions/${s.id}/events?limit=2`)).json()) as any;
    expect(
      (await ok(PAGE, { s: s.id, p: restPage.next_page })).sessionEvents.nodes.map(
        (n: any) => n.seq,
      ),
    ).toEqual([3, 4]);

    const intr = (
      await ok(`mutation($s: ID!) { interrupt(sessionId: $s) { type seq } }`, { s: s.id })
    ).interrupt;
    expect(intr).toEqual({ type: 'user.interrupt', seq: 7 });
  });

  it('scopes every query and mutation to the tenant: another tenant gets NOT_FOUND, never data', async () => {
    const a = await newAgent();
    const s = await newSession(a.id);
    await say(s.id, 'mine');
    await untilIdle(s.id);
    const other = await t.newTenant('gql-other');
    const calls: Array<[string, Record<string, unknown>]> = [
      [`query($id: ID!) { agent(id: $id) { id system } }`, { id: a.id }],
      [`query($id: ID!) { agentVersions(agentId: $id) { nodes { id } } }`, { id: a.id }],
      [`query($id: ID!) { environment(id: $id) { id } }`, { id: envId }],
      [`query($id: ID!) { session(id: $id) { id } }`, { id: s.id }],
      [`query($id: ID!) { sessionEvents(sessionId: $id) { nodes { id } } }`, { id: s.id }],
      [
        `mutation($id: ID!) { updateAgent(id: $id, input: { system: "hijack" }) { id } }`,
        { id: a.id },
      ],
      [`mutation($id: ID!) { archiveAgent(id: $id) { id } }`, { id: a.id }],
      [`mutation($id: ID!) { sendMessage(sessionId: $id, text: "hijack") { id } }`, { id: s.id }],
      [`mutation($id: ID!) { interrupt(sessionId: $id) { id } }`, { id: s.id }],
    ];
    for (const [query, variables] of calls) {
      const r = await gql(query, variables, other.apiKey);
      expect(r.body.errors?.[0]?.extensions, query).toMatchObject({
        code: 'NOT_FOUND',
        type: 'not_found',
        http_status: 404,
      });
      expect(
        Object.values(r.body.data ?? {}).every((v) => v === null),
        query,
      ).toBe(true);
    }
    const lists = await ok(
      `{ agents { nodes { id } } sessions { nodes { id } } environments { nodes { id } } }`,
      undefined,
      other.apiKey,
    );
    expect(lists).toEqual({
      agents: { nodes: [] },
      sessions: { nodes: [] },
      environments: { nodes: [] },
    });
    // A subscription to another tenant's session is refused the same way.
    const sub = subscribe(sseClient(other.apiKey), { s: s.id, after: 0 }, () => true);
    const { seen, errors } = await sub.events;
    expect(seen).toEqual([]);
    expect(errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
    // Single-connection stream tokens are per tenant: another tenant cannot complete operations on them.
    const token = await (await t.http('/graphql/stream', { method: 'PUT' })).text();
    const del = (key: string) =>
      t.http('/graphql/stream?operationId=op1', {
        method: 'DELETE',
        key,
        headers: { 'x-graphql-event-stream-token': token },
      });
    expect((await del(other.apiKey)).status).toBe(404);
    expect((await del(t.apiKey)).status).toBe(200);
    // Nothing changed.
    expect(
      (await ok(`query($id: ID!) { agent(id: $id) { version system archived } }`, { id: a.id }))
        .agent,
    ).toEqual({ version: 1, system: 'v1', archived: false });
    expect(
      (await allEvents(s.id)).filter((e) => e.type.startsWith('user.')).map((e) => e.type),
    ).toEqual(['user.message']);
  });
});
