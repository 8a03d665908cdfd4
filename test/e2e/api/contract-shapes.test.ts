/**
 * Served shapes against their schemas: every response body and every event (REST list, SSE
 * frames with chunks and SDK previews, POST answers) of a full session lifecycle is validated
 * against the schemas in `@agentfleet/schemas`, which are strict, so a served shape that drifts
 * from its schema (a field added, renamed, dropped or retyped) fails here.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import {
  Agent,
  CHUNK_EVENT_TYPES,
  Deleted,
  Environment,
  FullList,
  ListPage,
  ModelCardCreated,
  ModelCardOut,
  Session,
  SessionEvent,
  compileBody,
  validateSessionEvent,
} from '@agentfleet/schemas';
import { BETA, type TestPlatform } from '../../kit/harness.js';
import {
  call,
  checkFrame,
  collectSse,
  conformsEvent,
  expectError,
  MODEL,
  SendAnswer,
  useContractPlatform,
  userMessage,
} from '../../kit/contractShapesHelpers.js';

const platform = useContractPlatform();
let t: TestPlatform;
beforeAll(() => {
  t = platform();
});

describe('served shapes match their schemas', () => {
  it('the schemas are strict: an added, dropped or retyped field fails validation', async () => {
    const env = await call(Environment, 'POST', '/v1/environments', { name: 'strict' });
    expect(() => compileBody(Environment)({ ...env, surprise: 1 })).toThrow(
      /surprise: unknown field/,
    );
    const { name: _n, ...noName } = env;
    expect(() => compileBody(Environment)(noName)).toThrow(/name: is required/);
    expect(() => compileBody(Environment)({ ...env, archived_at: 5 })).toThrow(/archived_at/);
    const ev = {
      id: 'sevt_1',
      type: 'session.status_running',
      seq: 1,
      session_id: 'sess_1',
      created_at: env.created_at,
      processed_at: env.created_at,
      data: {},
    };
    expect(validateSessionEvent(ev)).toEqual(ev);
    expect(() => validateSessionEvent({ ...ev, extra: true })).toThrow(/extra: unknown field/);
    expect(() => validateSessionEvent({ ...ev, type: 'session.nope' })).toThrow(
      /not a session event type/,
    );
    expect(() => validateSessionEvent({ ...ev, data: { x: 1 } })).toThrow(/data\.x: unknown field/);
  });

  it('resources, lists, errors and every event of a full session lifecycle', async () => {
    // ---- model card (extension) ----
    const card = await call(
      ModelCardCreated,
      'POST',
      '/v1/svc/model_cards',
      {
        model_id: MODEL,
        provider: 'anthropic',
        model: MODEL,
        base_url: t.model.url,
        api_key: 'sk-contract-1234',
        custom_headers: { 'x-team': 'a' },
        // A list price, so a session on this model can carry a budget (core/src/sessions/budget.ts).
        pi_config: { cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
      },
      BETA,
    );
    await call(
      ModelCardOut,
      'POST',
      `/v1/svc/model_cards/${card.id}`,
      { api_key: 'sk-contract-5678' },
      BETA,
    );
    await call(FullList(ModelCardOut), 'GET', '/v1/svc/model_cards', undefined, BETA);
    const spare = await call(
      ModelCardCreated,
      'POST',
      '/v1/svc/model_cards',
      {
        model_id: 'spare',
        provider: 'custom-llm',
        model: 'spare',
        base_url: t.model.url,
        api_key: 'sk-spare',
        pi_config: { api: 'openai-completions' },
      },
      BETA,
    );
    await call(
      Deleted('model_card_deleted'),
      'DELETE',
      `/v1/svc/model_cards/${spare.id}`,
      undefined,
      BETA,
    );

    // ---- environments ----
    const env = await call(Environment, 'POST', '/v1/environments', {
      name: 'contract',
      description: 'limited',
      metadata: { team: 'a' },
      config: {
        type: 'cloud',
        networking: {
          type: 'limited',
          allowed_hosts: ['example.com'],
          allow_package_managers: true,
        },
        packages: { pip: ['requests'] },
      },
    });
    await call(Environment, 'POST', '/v1/environments', {
      name: 'spec-view',
      packages: { npm: ['left-pad'] },
      network: { allowlist: ['a.example'] },
      env: { A: '1' },
    });
    const selfHosted = await call(Environment, 'POST', '/v1/environments', {
      name: 'self',
      config: { type: 'self_hosted' },
    });
    await call(Environment, 'GET', `/v1/environments/${env.id}`);
    await call(Environment, 'POST', `/v1/environments/${env.id}`, {
      description: 'updated',
      config: { type: 'cloud', networking: { type: 'unrestricted' } },
    });
    await call(Environment, 'POST', `/v1/environments/${selfHosted.id}/archive`);
    const envPage = await call(ListPage(Environment), 'GET', '/v1/environments?limit=1');
    await call(ListPage(Environment), 'GET', `/v1/environments?limit=1&page=${envPage.next_page}`);
    const doomed = await call(Environment, 'POST', '/v1/environments', { name: 'doomed' });
    await call(Deleted('environment_deleted'), 'DELETE', `/v1/environments/${doomed.id}`);

    // ---- agents ----
    const agentBody = {
      name: 'contract-agent',
      description: 'every served field',
      model: { id: MODEL, effort: 'high' },
      system: 'You are v1',
      tools: [
        {
          type: 'agent_toolset_20260401',
          configs: [
            { name: 'bash', enabled: false },
            {
              name: 'web_search',
              permission_policy: { type: 'always_ask' },
              allowed_domains: ['example.com'],
            },
          ],
          default_config: { permission_policy: { type: 'always_allow' } },
        },
        { type: 'mcp_toolset', mcp_server_name: 'docs', configs: [{ name: 'search' }] },
        // Every server needs its toolset (SDK); all tools off, so turns never start this one.
        { type: 'mcp_toolset', mcp_server_name: 'local', default_config: { enabled: false } },
        {
          type: 'custom',
          name: 'lookup',
          description: 'looks things up',
          input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
      mcp_servers: [
        {
          type: 'url',
          name: 'docs',
          url: 'https://mcp.example.com/sse',
          authorization_token: 'secret-token',
        },
        { type: 'stdio', name: 'local', command: 'mcp-local', args: ['--quiet'] },
      ],
      environment_id: env.id,
      metadata: { team: 'a' },
      execution_identity: { type: 'service_account' },
    };
    // a skill ref to no skill: refused (test/e2e/skills/skills-session.test.ts), never stored.
    await expectError(400, 'POST', '/v1/agents', {
      ...agentBody,
      skills: [{ type: 'custom', skill_id: 'skill_missing' }],
    });
    // aws_role is refused (test/e2e/auth/workspace-identity.test.ts), never stored.
    await expectError(400, 'POST', '/v1/agents', {
      ...agentBody,
      execution_identity: { type: 'aws_role', role_arn: 'arn:aws:iam::123456789012:role/runner' },
    });
    const agent = await call(Agent, 'POST', '/v1/agents', agentBody);
    expect(agent.mcp_servers[0]).toEqual({
      type: 'url',
      name: 'docs',
      url: 'https://mcp.example.com/sse',
      has_authorization_token: true,
    });
    await call(Agent, 'GET', `/v1/agents/${agent.id}`);
    // multiagent is not built yet: refused (test/e2e/agents/unsupported-fields.test.ts), never stored.
    await expectError(400, 'POST', `/v1/agents/${agent.id}`, {
      version: 1,
      multiagent: { type: 'coordinator', agents: [] },
    });
    await call(Agent, 'POST', `/v1/agents/${agent.id}`, { version: 1, system: 'You are v2' });
    await call(Agent, 'PATCH', `/v1/agents/${agent.id}`, {
      metadata: { team: null },
      model: MODEL,
    });
    await call(Agent, 'GET', `/v1/agents/${agent.id}?version=1`);
    await call(Agent, 'GET', `/v1/agents/${agent.id}/versions/2`);
    const versions = await call(ListPage(Agent), 'GET', `/v1/agents/${agent.id}/versions?limit=2`);
    await call(
      ListPage(Agent),
      'GET',
      `/v1/agents/${agent.id}/versions?limit=2&page=${versions.next_page}`,
    );
    const other = await call(Agent, 'POST', '/v1/agents', { name: 'archived-one', model: MODEL });
    await call(Agent, 'POST', `/v1/agents/${other.id}/archive`);
    await call(Agent, 'DELETE', `/v1/agents/${other.id}`);
    const agents = await call(ListPage(Agent), 'GET', '/v1/agents?limit=1&include_archived=true');
    await call(
      ListPage(Agent),
      'GET',
      `/v1/agents?limit=1&include_archived=true&page=${agents.next_page}`,
    );

    // ---- error bodies ----
    await expectError(404, 'GET', '/v1/agents/agent_nope');
    await expectError(400, 'POST', '/v1/agents', { name: 'x', model: MODEL, bogus: 1 });
    await expectError(409, 'POST', `/v1/agents/${agent.id}`, { version: 1, system: 'stale' });
    await expectError(404, 'GET', '/v1/no-such-route');
    await expectError(401, 'GET', '/v1/agents', undefined, 'wrong');

    // ---- sessions ----
    const session = await call(Session, 'POST', '/v1/sessions', {
      agent: { type: 'agent', id: agent.id, version: 1 },
      environment_id: env.id,
      title: 'contract',
      metadata: { k: 'v' },
      vault_ids: [],
    });
    expect(session.agent.version).toBe(1);
    await call(Session, 'POST', '/v1/sessions', {
      agent: {
        type: 'agent_with_overrides',
        id: agent.id,
        model: { id: MODEL, speed: 'standard' },
        system: 'override',
      },
      environment_id: env.id,
      budget: { type: 'limit', max_list_cost: { amount: '2500', currency: 'USD' } },
    });
    await call(Session, 'GET', `/v1/sessions/${session.id}`);
    await call(Session, 'POST', `/v1/sessions/${session.id}`, {
      title: 'renamed',
      metadata: { k: null, n: '1' },
    });
    const sessions = await call(ListPage(Session), 'GET', '/v1/sessions?limit=1');
    await call(ListPage(Session), 'GET', `/v1/sessions?limit=1&page=${sessions.next_page}`);
    const sid = session.id as string;

    // The update above appended session.updated; the stream below serves from now on.
    const preStream = (await call(ListPage(SessionEvent), 'GET', `/v1/sessions/${sid}/events`)).data
      .length;
    expect(preStream).toBe(1);
    // ---- one live stream across every turn: chunks and the SDK's preview frames ----
    const stream = collectSse(
      await t.http(
        `/v1/sessions/${sid}/events/stream?include=chunks&event_deltas[]=agent.message&event_deltas[]=agent.thinking`,
      ),
    );
    const idleAfter = async (from: number) =>
      stream.until((f) => f.event === 'session.status_idle', from);
    const send = async (body: unknown) => {
      const answer = await call(SendAnswer, 'POST', `/v1/sessions/${sid}/events`, body);
      for (const e of answer.data) conformsEvent(e, 'POST …/events answer');
      return answer;
    };

    // Turn 1: thinking, text and a built-in tool call (no backend: an error result), then a
    // client-executed custom tool call (idle with requires_action), answered by the client.
    t.model.script(
      MODEL,
      {
        steps: [
          { thinking: 'let me think', signature: 'sig1' },
          { text: 'checking', chunks: 3 },
          { tool_use: { name: 'web_search', input: { query: 'x' } } },
        ],
      },
      { steps: [{ tool_use: { name: 'lookup', input: { q: 'x' } } }] },
      { steps: [{ text: 'done with it' }] },
    );
    let mark = stream.frames.length;
    await send(userMessage('go'));
    // web_search is always_ask: held, then denied by the client (user.tool_confirmation).
    const held = await idleAfter(mark);
    expect(held.data.stop_reason.type).toBe('requires_action');
    mark = stream.frames.length;
    await send({
      events: [
        {
          type: 'user.tool_confirmation',
          tool_use_id: held.data.stop_reason.event_ids[0],
          result: 'deny',
          deny_message: 'not now',
        },
      ],
    });
    const waiting = await idleAfter(mark);
    expect(waiting.data.stop_reason.type).toBe('requires_action');
    mark = stream.frames.length;
    await send({
      events: [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: waiting.data.stop_reason.event_ids[0],
          content: [{ type: 'text', text: '42' }],
        },
      ],
    });
    await idleAfter(mark);

    // Turn 2: model errors, retried (overloaded, rate limited) until a non-retryable one (billing).
    t.model.script(
      MODEL,
      { steps: [{ http_error: { status: 529, type: 'overloaded_error', message: 'overloaded' } }] },
      { steps: [{ http_error: { status: 429, type: 'rate_limit_error', message: 'slow down' } }] },
      { steps: [{ http_error: { status: 402, type: 'billing_error', message: 'no credit' } }] },
    );
    mark = stream.frames.length;
    await send(userMessage('fail terminally'));
    await idleAfter(mark);

    // Turn 3: retryable errors until the retries are exhausted.
    const overloaded = {
      steps: [{ http_error: { status: 529, type: 'overloaded_error', message: 'overloaded' } }],
    };
    t.model.script(MODEL, overloaded, overloaded, overloaded);
    mark = stream.frames.length;
    await send(userMessage('fail with retries'));
    const exhausted = await idleAfter(mark);
    expect(exhausted.data.stop_reason).toEqual({ type: 'retries_exhausted' });

    // Turn 4: interrupted by the user mid-response.
    t.model.script(MODEL, {
      steps: [{ text: 'partial', chunks: 1 }, { delay_ms: 30_000 }, { text: 'never' }],
    });
    mark = stream.frames.length;
    await send(userMessage('interrupt me'));
    await stream.until((f) => f.event === 'agent.message_chunk', mark);
    await send({ events: [{ type: 'user.interrupt' }] });
    expect((await idleAfter(mark)).data.interrupted).toBe(true);

    // Turn 5: cancelled (POST …/cancel appends its own interrupt).
    t.model.script(MODEL, { steps: [{ delay_ms: 30_000 }, { text: 'never' }] });
    mark = stream.frames.length;
    await send(userMessage('cancel me'));
    await stream.until((f) => f.event === 'span.model_request_start', mark);
    await call(Session, 'POST', `/v1/sessions/${sid}/cancel`, undefined, BETA);
    expect((await idleAfter(mark)).data.interrupted).toBe(true);

    // Turn 6: POST …/messages streams its own turn (chunks always on).
    t.model.script(MODEL, { steps: [{ thinking: 'hmm' }, { text: 'via messages', chunks: 2 }] });
    const messages = await t.http(`/v1/sessions/${sid}/messages`, {
      method: 'POST',
      headers: BETA,
      json: { content: 'plain string' },
    });
    expect(messages.status).toBe(200);
    const msgFrames = collectSse(messages);
    await msgFrames.until((f) => f.event === 'session.status_idle');
    await msgFrames.close();
    await stream.until(
      (f, i) =>
        i > mark && f.event === 'session.status_idle' && f.data.seq > 0 && !f.data.interrupted,
    );
    msgFrames.frames.forEach((f, i) => checkFrame(f, `POST …/messages frame ${i}`));

    // ---- the persisted log: REST list (paged), the beta log, the session afterwards ----
    const persisted: any[] = [];
    let page: string | null = null;
    do {
      const body: any = await call(
        ListPage(SessionEvent),
        'GET',
        `/v1/sessions/${sid}/events?limit=7${page ? `&page=${page}` : ''}`,
      );
      persisted.push(...body.data);
      page = body.has_more ? body.next_page : null;
    } while (page);
    persisted.forEach((e, i) => conformsEvent(e, `GET …/events [${i}] (${e.type})`));
    expect(persisted.map((e) => e.seq)).toEqual(persisted.map((_, i) => i + 1));
    await call(
      ListPage(SessionEvent),
      'GET',
      `/v1/sessions/${sid}/events?order=desc&limit=3&types[]=session.status_idle`,
    );
    await call(Type.Array(SessionEvent), 'GET', `/v1/sessions/${sid}/log`, undefined, BETA);
    const after = await call(Session, 'GET', `/v1/sessions/${sid}`);
    expect(after.usage.output_tokens).toBeGreaterThan(0);
    await call(Session, 'POST', `/v1/sessions/${sid}/archive`);

    // ---- deletion: terminated + deleted arrive live, then the stream is done ----
    await call(Deleted('session_deleted'), 'DELETE', `/v1/sessions/${sid}`);
    await stream.until((f) => f.event === 'session.deleted');
    await stream.close();
    stream.frames.forEach((f, i) => checkFrame(f, `SSE frame ${i}`));

    // Every persisted event reached the live stream exactly once, in order, identical to the REST view.
    const liveCanonical = stream.frames.filter((f) => f.id !== undefined).map((f) => f.data);
    const sinceOpen = persisted.slice(preStream);
    expect(liveCanonical.slice(0, sinceOpen.length)).toEqual(sinceOpen);

    // The flow covered every event kind it is meant to, so the validation above was not vacuous.
    const seen = new Set([...persisted.map((e) => e.type), ...stream.frames.map((f) => f.event)]);
    const expected = [
      'user.message',
      'user.interrupt',
      'session.status_running',
      'session.status_idle',
      'session.error',
      'agent.thinking',
      'agent.message',
      'agent.tool_use',
      'agent.tool_result',
      'agent.custom_tool_use',
      'user.custom_tool_result',
      'user.tool_confirmation',
      'span.model_request_start',
      'span.model_request_end',
      'session.status_terminated',
      'session.deleted',
      'session.updated',
      ...CHUNK_EVENT_TYPES,
      'event_start',
      'event_delta',
    ];
    expect(expected.filter((type) => !seen.has(type))).toEqual([]);
    // The agent's url MCP server (mcp.example.com) cannot be reached from here: each turn
    // reports it (workers/src/tools/mcp.ts) and goes on; the model errors are the scripted ones.
    const mcpErrors = persisted.filter(
      (e) => e.type === 'session.error' && e.error.type.startsWith('mcp_'),
    );
    expect(mcpErrors.length).toBeGreaterThan(0);
    for (const e of mcpErrors)
      expect(e.error).toMatchObject({
        type: 'mcp_connection_failed_error',
        mcp_server_name: 'docs',
        retry_status: { type: 'retrying' },
      });
    const errors = persisted
      .filter((e) => e.type === 'session.error' && !e.error.type.startsWith('mcp_'))
      .map((e) => `${e.error.type}/${e.error.retry_status.type}`);
    expect(errors).toEqual([
      'model_overloaded_error/retrying',
      'model_rate_limited_error/retrying',
      'billing_error/terminal',
      'model_overloaded_error/retrying',
      'model_overloaded_error/retrying',
      'model_overloaded_error/exhausted',
    ]);
    const interrupts = persisted.filter((e) => e.type === 'user.interrupt');
    expect(interrupts.map((e) => e.source ?? 'user')).toEqual(['user', 'cancel']);
  });
});
