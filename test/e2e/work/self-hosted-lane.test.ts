/**
 * The ama_worker lane through the official TypeScript SDK, with this test posting the worker's
 * user.tool_result itself (test/e2e/work/environment-worker.test.ts does the same with the official
 * EnvironmentWorker): on a self_hosted environment the agent toolset's calls are recorded as
 * agent.tool_use with their permission evaluation, never executed by the platform (no sandbox is
 * started, the local driver stays cold), and the turn idles with requires_action until
 * user.tool_result answers them; the model then sees each result paired with its call. Bad
 * results are a 400 naming the field (unknown, already answered, twice in a request, another
 * session's call, a call held for confirmation, a web_fetch the platform runs, a cloud session);
 * an always_ask call goes to the worker only after allow, a denied one is answered here; a
 * user.message abandons a waiting call (error result, a late worker result refused); what a
 * self_hosted session cannot carry is refused at create (sandbox and http custom tools, stdio
 * MCP servers, repository resources) and a file resource is accepted.
 * Proves workers/src/tools/selfHosted.ts, the lane in workers/src/tools/permissions.ts,
 * workers/src/turn/input.ts and workers/src/turn/history.ts, core/src/sessions/inputEvents.ts
 * (checkToolResults) and refuseOnSelfHosted in core/src/domain/unsupported.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Static } from '@sinclair/typebox';
import type { BetaManagedAgentsUserToolResultEvent } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import type { BetaManagedAgentsUserToolResultEventParams } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import {
  validateSessionEvent,
  type UserToolResultEvent,
  type UserToolResultParams,
} from '@agentfleet/schemas';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, untilIdle as collectUntilIdle, userMessage } from '../../kit/turnHelpers.js';

const MODEL = 'lane-model';
const TOOLSET = 'agent_toolset_20260401' as const;

let t: TestPlatform;
let selfHostedEnv: string;
let cloudEnv: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  await addModelCard(t, MODEL);
  selfHostedEnv = (
    await t.client.beta.environments.create({ name: 'lane-sh', config: { type: 'self_hosted' } })
  ).id;
  cloudEnv = (await t.client.beta.environments.create({ name: 'lane-cloud' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

// Compile-time: the stored event is the SDK's user.tool_result, and the SDK's params are accepted.
export const servedIsSdkShape = (e: Static<typeof UserToolResultEvent>) =>
  e satisfies BetaManagedAgentsUserToolResultEvent;
export const sdkParamsAccepted = (e: BetaManagedAgentsUserToolResultEventParams) =>
  e satisfies Static<typeof UserToolResultParams>;

const untilIdle = (sid: string, events: any[]) => collectUntilIdle(t.client, sid, events);
const modelCalls = () => t.model.requests.filter((r) => r.model === MODEL);
const toolResult = (tool_use_id: string, text: string, is_error = false) => ({
  type: 'user.tool_result' as const,
  tool_use_id,
  content: [{ type: 'text' as const, text }],
  is_error,
});
const refused = (sid: string, events: any[], field: string) =>
  expect(t.client.beta.sessions.events.send(sid, { events })).rejects.toMatchObject({
    status: 400,
    message: expect.stringContaining(field),
  });

async function sessionOn(env: string, tools: any[] = [{ type: TOOLSET }], extra: any = {}) {
  const agent = await t.client.beta.agents.create({ name: 'lane', model: MODEL, tools, ...extra });
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env })).id;
}

describe('ama_worker lane (self_hosted environments)', () => {
  it('a toolset call idles with requires_action, runs nowhere here, and the worker result resumes the loop', async () => {
    const sid = await sessionOn(selfHostedEnv);
    t.model.script(
      MODEL,
      {
        steps: [
          { tool_use: { name: 'bash', input: { command: 'echo from-worker > out.txt' } } },
          { tool_use: { name: 'read', input: { file_path: 'out.txt' } } },
        ],
      },
      { steps: [{ text: 'the worker answered' }] },
    );
    const first = await untilIdle(sid, [userMessage('go')]);
    const uses = first.filter((e) => e.type === 'agent.tool_use');
    expect(uses.map((u) => [u.name, u.evaluated_permission])).toEqual([
      ['bash', 'allow'],
      ['read', 'allow'],
    ]);
    expect(first.filter((e) => e.type === 'agent.tool_result')).toEqual([]);
    expect(first.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: uses.map((u) => u.id),
    });
    // The platform started no sandbox for it: the worker is the sandbox.
    expect(t.server.sandboxes!.manager.state(sid)).toBe('cold');

    // One answer of two re-emits the idle with the remainder; the model is not called yet.
    const before = modelCalls().length;
    const partial = await untilIdle(sid, [toolResult(uses[0].id, 'ran bash')]);
    expect(partial.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: [uses[1].id],
    });
    expect(modelCalls().length).toBe(before);

    const second = await untilIdle(sid, [toolResult(uses[1].id, 'from-worker', false)]);
    expect(second.find((e) => e.type === 'agent.message').content[0].text).toBe(
      'the worker answered',
    );
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    const last = modelCalls().at(-1)!.body.messages;
    const results = last.at(-1).content.filter((b: any) => b.type === 'tool_result');
    expect(results.map((b: any) => [b.tool_use_id, b.content[0].text, !!b.is_error])).toEqual([
      [uses[0].id, 'ran bash', false],
      [uses[1].id, 'from-worker', false],
    ]);
    expect(t.server.sandboxes!.manager.state(sid)).toBe('cold');
    const listed = (await t.client.beta.sessions.events.list(sid)).data as any[];
    const stored = listed.filter((e) => e.type === 'user.tool_result');
    expect(stored.map((e) => [e.tool_use_id, e.is_error])).toEqual([
      [uses[0].id, false],
      [uses[1].id, false],
    ]);
    for (const e of listed) expect(validateSessionEvent(e)).toEqual(e);

    // Answered calls cannot be answered again; unknown ids and duplicates are refused.
    await refused(sid, [toolResult(uses[0].id, 'again')], 'events[0].tool_use_id');
    await refused(sid, [toolResult('sevt_nope', 'x')], 'events[0].tool_use_id');
  });

  it('refuses results that answer no waiting worker call, naming the field', async () => {
    const sid = await sessionOn(selfHostedEnv, [
      { type: TOOLSET },
      {
        type: 'custom',
        name: 'lookup',
        description: 'client tool',
        input_schema: { type: 'object' },
      },
    ]);
    t.model.script(MODEL, {
      steps: [
        { tool_use: { name: 'bash', input: { command: 'true' } } },
        { tool_use: { name: 'web_fetch', input: { url: 'http://127.0.0.1:9/' } } },
        { tool_use: { name: 'lookup', input: {} } },
      ],
    });
    const first = await untilIdle(sid, [userMessage('go')]);
    const [bash, web] = first.filter((e) => e.type === 'agent.tool_use');
    const lookup = first.find((e) => e.type === 'agent.custom_tool_use');
    // web_fetch runs in the control plane (an error result here: loopback is refused).
    expect(first.find((e) => e.type === 'agent.tool_result').tool_use_id).toBe(web.id);
    expect(first.at(-1).stop_reason.event_ids).toEqual([bash.id, lookup.id]);
    await refused(sid, [toolResult(web.id, 'x')], 'events[0].tool_use_id');
    await refused(sid, [toolResult(lookup.id, 'x')], 'events[0].tool_use_id');
    await refused(
      sid,
      [toolResult(bash.id, 'a'), toolResult(bash.id, 'b')],
      'events[1].tool_use_id',
    );
    // Another session's call, and a cloud session, are refused the same way as unknown ids.
    const other = await sessionOn(selfHostedEnv);
    await refused(other, [toolResult(bash.id, 'x')], 'events[0].tool_use_id');
    const cloud = await sessionOn(cloudEnv);
    const err = await t.client.beta.sessions.events
      .send(cloud, { events: [toolResult(bash.id, 'x')] })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain('events[0].type');
    expect(err.message).toContain('self_hosted');
    // Nothing was appended by the refused requests.
    const listed = (await t.client.beta.sessions.events.list(sid)).data as any[];
    expect(listed.filter((e) => e.type === 'user.tool_result')).toEqual([]);

    // A user.message abandons the waiting worker call: it gets an error result, and a late
    // result from the worker is refused instead of answering the call twice.
    t.model.script(MODEL, { steps: [{ text: 'moved on' }] });
    const next = await untilIdle(sid, [userMessage('never mind')]);
    const abandoned = next.find((e) => e.type === 'agent.tool_result');
    expect(abandoned).toMatchObject({ tool_use_id: bash.id, is_error: true });
    expect(abandoned.content[0].text).toContain('self-hosted worker');
    expect(next.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    await refused(sid, [toolResult(bash.id, 'late')], 'events[0].tool_use_id');
  });

  it('an always_ask call goes to the worker only after allow; a denied one is answered here', async () => {
    const sid = await sessionOn(selfHostedEnv, [
      { type: TOOLSET, default_config: { permission_policy: { type: 'always_ask' } } },
    ]);
    t.model.script(
      MODEL,
      {
        steps: [
          { tool_use: { name: 'bash', input: { command: 'echo allowed' } } },
          { tool_use: { name: 'write', input: { file_path: 'x', content: 'denied' } } },
        ],
      },
      { steps: [{ text: 'done' }] },
    );
    const first = await untilIdle(sid, [userMessage('go')]);
    const [bash, write] = first.filter((e) => e.type === 'agent.tool_use');
    expect([bash.evaluated_permission, write.evaluated_permission]).toEqual(['ask', 'ask']);
    expect(first.at(-1).stop_reason.event_ids).toEqual([bash.id, write.id]);
    // Before the client's allow, the worker may not answer.
    await refused(sid, [toolResult(bash.id, 'too early')], 'events[0].tool_use_id');

    const before = modelCalls().length;
    const second = await untilIdle(sid, [
      { type: 'user.tool_confirmation', tool_use_id: bash.id, result: 'allow' },
      { type: 'user.tool_confirmation', tool_use_id: write.id, result: 'deny', deny_message: 'no' },
    ]);
    // The denied call is answered here; the allowed one waits for the worker, not run here.
    const results = second.filter((e) => e.type === 'agent.tool_result');
    expect(results.map((e) => [e.tool_use_id, e.is_error, e.content[0].text])).toEqual([
      [write.id, true, 'no'],
    ]);
    expect(second.at(-1).stop_reason).toEqual({ type: 'requires_action', event_ids: [bash.id] });
    expect(modelCalls().length).toBe(before);
    await refused(sid, [toolResult(write.id, 'x')], 'events[0].tool_use_id');

    const third = await untilIdle(sid, [toolResult(bash.id, 'allowed')]);
    expect(third.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    const last = modelCalls().at(-1)!.body.messages.at(-1).content;
    // Both answers pair with the calls of the same model response (the denial was logged first).
    expect(last.map((b: any) => [b.tool_use_id, b.content[0].text])).toEqual([
      [write.id, 'no'],
      [bash.id, 'allowed'],
    ]);
    expect(t.server.sandboxes!.manager.state(sid)).toBe('cold');
  });

  it('refuses at create what a self_hosted session cannot carry, and accepts a file resource', async () => {
    const agentWith = async (extra: any) =>
      (await t.client.beta.agents.create({ name: 'lane-c', model: MODEL, ...extra })).id;
    const create = (agent: string, extra: any = {}) =>
      t.client.beta.sessions.create({ agent, environment_id: selfHostedEnv, ...extra });
    const sandboxTool = await agentWith({
      tools: [
        {
          type: 'custom',
          name: 'script',
          description: 'runs in the sandbox',
          input_schema: { type: 'object' },
          execution: { type: 'sandbox', command: 'cat' },
        } as any,
      ],
    });
    await expect(create(sandboxTool)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('agent.tools[0].execution'),
    });
    const stdio = await agentWith({
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'local' }],
      mcp_servers: [{ type: 'stdio', name: 'local', command: 'node', args: ['x.js'] } as any],
    });
    await expect(create(stdio)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('agent.mcp_servers[0].type'),
    });
    const plain = await agentWith({ tools: [{ type: TOOLSET }] });
    await expect(
      create(plain, {
        resources: [{ type: 'github_repository', url: 'https://github.com/octo/repo' }],
      }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('resources[0].type'),
    });
    // The same agents are fine on a cloud environment (the refusal is the lane's).
    await expect(
      t.client.beta.sessions.create({ agent: sandboxTool, environment_id: cloudEnv }),
    ).resolves.toMatchObject({ type: 'session' });
    const file = await t.client.beta.files.upload({
      file: new File(['attached'], 'notes.txt', { type: 'text/plain' }),
    });
    const withFile = await create(plain, { resources: [{ type: 'file', file_id: file.id }] });
    // A session update cannot bring a sandbox tool in later either.
    const updated = await t.client.beta.sessions
      .update(withFile.id, {
        agent: {
          tools: [
            {
              type: 'custom',
              name: 'later',
              description: 'http tool',
              input_schema: { type: 'object' },
              execution: { type: 'http', endpoint: 'https://example.com/hook' },
            } as any,
          ],
        },
      } as any)
      .catch((e) => e);
    expect(updated.status).toBe(400);
    expect(updated.message).toContain('agent.tools[0].execution');
    expect(withFile.resources).toEqual([
      expect.objectContaining({ type: 'file', file_id: file.id }),
    ]);
  });
});
