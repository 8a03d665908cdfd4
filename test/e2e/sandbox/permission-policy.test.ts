/**
 * permission_policy through the official TypeScript SDK against an in-process platform with the
 * local (bubblewrap) sandbox driver: always_ask holds a call (requires_action naming it, with
 * the client-executed calls of the same response), user.tool_confirmation allow runs it in the
 * sandbox, deny returns the message as an is_error tool result; per-tool overrides of the
 * toolset default; a server-executed custom tool's policy (extension) is honoured and a
 * client-executed one accepts only always_allow; auto is refused with a 400 naming
 * `….permission_policy.type` wherever a policy goes (agent and session update); a
 * user.message abandons held calls; confirmations that name no held call of this session are a
 * 400 naming the field, without telling another session's or tenant's ids apart from made-up
 * ones; held calls survive a restart and an interrupt (state is read from the event log).
 * Proves workers/src/tools/permissions.ts, workers/src/turn/input.ts,
 * core/src/sessions/toolConfirmation.ts and core/src/agents/toolPolicy.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { validateSessionEvent } from '@agentfleet/schemas';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, untilIdle as collectUntilIdle, userMessage } from '../../kit/turnHelpers.js';

const MODEL = 'permission-model';
const TOOLSET = 'agent_toolset_20260401' as const;
const ask = { type: 'always_ask' as const };
const allow = { type: 'always_allow' as const };

let t: TestPlatform;
let envId: string;
/** A loopback service a custom http tool calls: it answers only once the test opens the gate. */
let gateHit: () => void;
const gateReached = new Promise<void>((r) => (gateHit = r));
let openGate: () => void;
const gateOpened = new Promise<void>((r) => (openGate = r));
const gate = createServer((_req, res) => {
  gateHit();
  void gateOpened.then(() => res.end('gate passed'));
});
let gatePort = 0;
beforeAll(async () => {
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  gatePort = (gate.address() as { port: number }).port;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      SANDBOX_SLEEP_AFTER_MS: '1500',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${gatePort}`,
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'permissions' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  gate.closeAllConnections();
  await new Promise<void>((r) => gate.close(() => r()));
});

/** Sends events and collects the session's stream up to the next session.status_idle. */
const untilIdle = (sid: string, events: any[]) => collectUntilIdle(t.client, sid, events);
const message = userMessage;
const confirm = (tool_use_id: string, result: 'allow' | 'deny', deny_message?: string) => ({
  type: 'user.tool_confirmation' as const,
  tool_use_id,
  result,
  ...(deny_message !== undefined ? { deny_message } : {}),
});
const modelCalls = () => t.model.requests.filter((r) => r.model === MODEL);
const resultText = (e: any) => e.content.map((b: any) => b.text).join('');

async function sessionFor(tools: any[]): Promise<string> {
  const agent = await t.client.beta.agents.create({ name: 'perm', model: MODEL, tools });
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
}

describe('permission_policy (TS SDK, local sandbox)', () => {
  it('always_ask holds the call with requires_action beside client calls; per-tool always_allow runs at once; allow runs the held call in the sandbox', async () => {
    const sid = await sessionFor([
      {
        type: TOOLSET,
        default_config: { permission_policy: ask },
        configs: [{ name: 'write', permission_policy: allow }],
      },
      { type: 'custom', name: 'lookup', description: 'looks up', input_schema: { type: 'object' } },
    ]);
    t.model.script(
      MODEL,
      {
        steps: [
          {
            tool_use: {
              name: 'write',
              input: { file_path: '/workspace/w.txt', content: 'written-first' },
            },
          },
          {
            tool_use: {
              name: 'bash',
              input: { command: 'cat /workspace/w.txt && echo " ran-after-allow"' },
            },
          },
          { tool_use: { name: 'lookup', input: { q: 'x' } } },
        ],
      },
      { steps: [{ text: 'all three answered' }] },
    );
    const before = modelCalls().length;
    const first = await untilIdle(sid, [message('go')]);
    const uses = first.filter((e) => e.type === 'agent.tool_use');
    const [write, bash] = uses;
    const lookup = first.find((e) => e.type === 'agent.custom_tool_use');
    expect(uses.map((u) => [u.name, u.evaluated_permission, u.evaluation])).toEqual([
      ['write', 'allow', { type: 'always_allow' }],
      ['bash', 'ask', { type: 'always_ask' }],
    ]);
    // The allowed call ran at once; the held one did not run.
    expect(first.filter((e) => e.type === 'agent.tool_result').map((e) => e.tool_use_id)).toEqual([
      write.id,
    ]);
    expect(first.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: [bash.id, lookup.id],
    });
    expect((await t.client.beta.sessions.retrieve(sid)).status).toBe('idle');

    // Confirmations naming no held call of this session are refused, naming the field.
    const refused = async (events: any[], field: string) =>
      expect(t.client.beta.sessions.events.send(sid, { events })).rejects.toMatchObject({
        status: 400,
        message: expect.stringContaining(field),
      });
    await refused([confirm('sevt_nope', 'allow')], 'events[0].tool_use_id');
    await refused([confirm(write.id, 'allow')], 'events[0].tool_use_id'); // allowed by policy
    await refused([confirm(lookup.id, 'allow')], 'events[0].tool_use_id'); // client-executed
    await refused([confirm(bash.id, 'allow', 'why')], 'events[0].deny_message');
    await refused([confirm(bash.id, 'allow'), confirm(bash.id, 'deny')], 'events[1].tool_use_id');
    expect(modelCalls().length).toBe(before + 1);

    // Another session of this tenant and another tenant get the same answer as a made-up id.
    const other = await sessionFor([{ type: TOOLSET }]);
    const otherErr = await t.client.beta.sessions.events
      .send(other, { events: [confirm(bash.id, 'allow')] })
      .catch((e) => e);
    expect(otherErr.status).toBe(400);
    expect(otherErr.message).toContain(`no tool use ${bash.id} awaiting confirmation`);
    const tenant = await t.newTenant('perm-other');
    const env2 = await tenant.client.beta.environments.create({ name: 'e2' });
    const agent2 = await tenant.client.beta.agents.create({
      name: 'a2',
      model: 'claude-sonnet-4-5',
    });
    const s2 = await tenant.client.beta.sessions.create({
      agent: agent2.id,
      environment_id: env2.id,
    });
    const tenantErr = await tenant.client.beta.sessions.events
      .send(s2.id, { events: [confirm(bash.id, 'allow')] })
      .catch((e) => e);
    expect(tenantErr.status).toBe(400);
    expect(tenantErr.error.error).toEqual(otherErr.error.error); // same body but the request id
    await expect(
      tenant.client.beta.sessions.events.send(sid, { events: [confirm(bash.id, 'allow')] }),
    ).rejects.toMatchObject({ status: 404 });

    // Allow + the custom result in one request: the held call runs in the sandbox, then the model.
    const second = await untilIdle(sid, [
      confirm(bash.id, 'allow'),
      {
        type: 'user.custom_tool_result',
        custom_tool_use_id: lookup.id,
        content: [{ type: 'text', text: '42' }],
      },
    ]);
    const ran = second.find((e) => e.type === 'agent.tool_result');
    expect(ran.tool_use_id).toBe(bash.id);
    expect(ran.is_error).toBe(false);
    expect(resultText(ran)).toContain('written-first ran-after-allow');
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    const results = modelCalls().at(-1)!.body.messages.at(-1).content;
    expect(results.map((b: any) => [b.tool_use_id, b.is_error])).toEqual([
      [write.id, false],
      [lookup.id, false],
      [bash.id, false],
    ]);
    // The confirmation is in the log in the SDK's shape; a second one for the same call is refused.
    const listed = (await t.client.beta.sessions.events.list(sid)).data as any[];
    expect(listed.find((e) => e.type === 'user.tool_confirmation')).toMatchObject({
      tool_use_id: bash.id,
      result: 'allow',
    });
    await refused([confirm(bash.id, 'deny')], 'events[0].tool_use_id');
    // Every stored event of the flow has its schema's shape (the SDK types are checked in sdk-types.ts).
    for (const e of listed) expect(validateSessionEvent(e)).toEqual(e);
  });

  it('deny returns the message (or a default text) as an is_error result and the denied call never runs; an allowed one in the same batch does', async () => {
    const sid = await sessionFor([{ type: TOOLSET, default_config: { permission_policy: ask } }]);
    t.model.script(
      MODEL,
      {
        steps: [
          { tool_use: { name: 'bash', input: { command: 'echo x > /workspace/denied.txt' } } },
          { tool_use: { name: 'write', input: { file_path: '/workspace/d2.txt', content: 'no' } } },
          {
            tool_use: {
              name: 'bash',
              input: { command: 'test -e /workspace/denied.txt && echo exists || echo absent' },
            },
          },
        ],
      },
      { steps: [{ text: 'understood' }] },
    );
    const first = await untilIdle(sid, [message('try')]);
    const ids = first.filter((e) => e.type === 'agent.tool_use').map((e) => e.id);
    expect(first.at(-1).stop_reason).toEqual({ type: 'requires_action', event_ids: ids });
    const second = await untilIdle(sid, [
      confirm(ids[0], 'deny', 'not on my watch'),
      confirm(ids[1], 'deny'),
      confirm(ids[2], 'allow'),
    ]);
    const results = second.filter((e) => e.type === 'agent.tool_result');
    expect(results.map((r) => [r.tool_use_id, r.is_error])).toEqual([
      [ids[0], true],
      [ids[1], true],
      [ids[2], false],
    ]);
    expect(resultText(results[0])).toBe('not on my watch');
    expect(resultText(results[1])).toMatch(/denied/);
    expect(resultText(results[2])).toMatch(/^absent/);
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    const sent = modelCalls().at(-1)!.body.messages.at(-1).content;
    expect(sent[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: ids[0],
      is_error: true,
      content: [{ type: 'text', text: 'not on my watch' }],
    });
  });

  it('auto is refused: a 400 naming permission_policy.type wherever a policy goes, nothing stored', async () => {
    const auto = { type: 'auto' as const };
    const mcp = { mcp_servers: [{ type: 'url', name: 'm', url: 'https://mcp.example.com/sse' }] };
    const cases: Array<[any[], string, object]> = [
      [
        [{ type: TOOLSET, configs: [{ name: 'bash', permission_policy: auto }] }],
        'tools[0].configs[0]',
        {},
      ],
      [
        [{ type: TOOLSET, default_config: { permission_policy: auto } }],
        'tools[0].default_config',
        {},
      ],
      [
        [
          {
            type: 'mcp_toolset',
            mcp_server_name: 'm',
            default_config: { permission_policy: auto },
          },
        ],
        'tools[0].default_config',
        mcp,
      ],
    ];
    const before = (await t.client.beta.agents.list()).data.length;
    for (const [tools, field, extra] of cases)
      await expect(
        t.client.beta.agents.create({ name: 'auto', model: MODEL, tools, ...extra } as any),
      ).rejects.toMatchObject({
        status: 400,
        message: expect.stringMatching(
          new RegExp(
            `${field.replace(/[[\].]/g, '\\$&')}\\.permission_policy\\.type: .*not supported`,
          ),
        ),
      });
    expect((await t.client.beta.agents.list()).data.length).toBe(before);
    const sid = await sessionFor([{ type: TOOLSET }]);
    await expect(
      t.client.beta.sessions.update(sid, {
        agent: { tools: [{ type: TOOLSET, default_config: { permission_policy: auto } }] },
      } as any),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('agent.tools[0].default_config.permission_policy.type'),
    });
  });

  it('a held call survives a restart and an interrupt; a user.message instead abandons held calls', async () => {
    const sid = await sessionFor([
      { type: TOOLSET, configs: [{ name: 'bash', permission_policy: ask }] },
    ]);
    t.model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo survived' } } }] },
      { steps: [{ text: 'ok' }] },
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo never' } } }] },
      { steps: [{ text: 'fine, skipping it' }] },
    );
    const first = await untilIdle(sid, [message('run it')]);
    const use = first.find((e) => e.type === 'agent.tool_use');
    expect(use.evaluated_permission).toBe('ask');
    expect(use.evaluation).toEqual({ type: 'always_ask' });
    expect(first.at(-1).stop_reason).toEqual({ type: 'requires_action', event_ids: [use.id] });
    await t.restart();
    await t.client.beta.sessions.events.send(sid, { events: [{ type: 'user.interrupt' }] });
    const second = await untilIdle(sid, [confirm(use.id, 'allow')]);
    const ran = second.find((e) => e.type === 'agent.tool_result');
    expect([ran.tool_use_id, ran.is_error, resultText(ran)]).toEqual([
      use.id,
      false,
      expect.stringMatching(/^survived/),
    ]);
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });

    const third = await untilIdle(sid, [message('again')]);
    const held = third.find((e) => e.type === 'agent.tool_use');
    expect(third.at(-1).stop_reason).toEqual({ type: 'requires_action', event_ids: [held.id] });
    const fourth = await untilIdle(sid, [message('never mind')]);
    const closed = fourth.find((e) => e.type === 'agent.tool_result');
    expect([closed.tool_use_id, closed.is_error]).toEqual([held.id, true]);
    expect(resultText(closed)).toMatch(/not confirmed/);
    expect(fourth.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    await expect(
      t.client.beta.sessions.events.send(sid, { events: [confirm(held.id, 'allow')] }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('events[0].tool_use_id'),
    });
  });
  it('custom tools: a server-executed one honours its permission_policy (held, then run in the sandbox); a client-executed one accepts only always_allow', async () => {
    const lookup = {
      type: 'custom',
      name: 'lookup',
      description: 'd',
      input_schema: { type: 'object' },
    };
    await expect(
      t.client.beta.agents.create({
        name: 'bad',
        model: MODEL,
        tools: [{ ...lookup, permission_policy: ask }] as any,
      }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('tools[0].permission_policy'),
    });
    await t.client.beta.agents.create({
      name: 'fine',
      model: MODEL,
      tools: [{ ...lookup, permission_policy: allow }] as any,
    });
    const sid = await sessionFor([
      { type: TOOLSET, configs: [{ name: 'glob', enabled: false, permission_policy: ask }] },
      {
        type: 'custom',
        name: 'shout',
        description: 'upper-cases its input',
        input_schema: { type: 'object', properties: { word: { type: 'string' } } },
        execution: { type: 'sandbox', command: 'tr a-z A-Z' },
        permission_policy: ask,
      },
    ]);
    t.model.script(
      MODEL,
      {
        steps: [
          { tool_use: { name: 'shout', input: { word: 'quiet' } } },
          { tool_use: { name: 'bash', input: { command: 'echo ran-at-once' } } },
          { tool_use: { name: 'glob', input: { pattern: '*' } } },
        ],
      },
      { steps: [{ text: 'shouted' }] },
    );
    const first = await untilIdle(sid, [message('shout')]);
    const [shout, bash, glob] = first.filter((e) => e.type === 'agent.tool_use');
    expect([shout, bash, glob].map((u) => [u.evaluated_permission, u.evaluation])).toEqual([
      ['ask', { type: 'always_ask' }],
      ['allow', { type: 'always_allow' }],
      ['deny', undefined], // a disabled tool is refused before any policy applies (SDK)
    ]);
    const early = first.filter((e) => e.type === 'agent.tool_result');
    expect(early.map((e) => [e.tool_use_id, e.is_error, resultText(e)])).toEqual([
      [bash.id, false, expect.stringMatching(/^ran-at-once/)],
      [glob.id, true, expect.stringContaining("unknown tool 'glob'")],
    ]);
    expect(first.at(-1).stop_reason).toEqual({ type: 'requires_action', event_ids: [shout.id] });
    const second = await untilIdle(sid, [confirm(shout.id, 'allow')]);
    const ran = second.find((e) => e.type === 'agent.tool_result');
    expect([ran.tool_use_id, ran.is_error, resultText(ran)]).toEqual([
      shout.id,
      false,
      expect.stringContaining('"WORD":"QUIET"'),
    ]);
    expect(second.at(-1).stop_reason).toEqual({ type: 'end_turn' });
  });
  it('a confirmation sent before the session.status_idle that lists the call still resumes the turn', async () => {
    const env = await t.client.beta.environments.create({
      name: 'gate',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['127.0.0.1'] } },
    });
    const agent = await t.client.beta.agents.create({
      name: 'early',
      model: MODEL,
      tools: [
        { type: TOOLSET, default_config: { permission_policy: ask } },
        {
          type: 'custom',
          name: 'gate',
          description: 'waits at the gate',
          input_schema: { type: 'object' },
          execution: {
            type: 'http',
            endpoint: `http://127.0.0.1:${gatePort}/gate`,
            method: 'POST',
          },
        },
      ] as any,
    });
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;
    t.model.script(
      MODEL,
      {
        steps: [
          { tool_use: { name: 'bash', input: { command: 'echo early-confirmed' } } },
          { tool_use: { name: 'gate', input: {} } },
        ],
      },
      { steps: [{ text: 'both done' }] },
    );
    const stream = await t.client.beta.sessions.events.stream(sid);
    await t.client.beta.sessions.events.send(sid, { events: [message('go')] });
    const seen: any[] = [];
    let idles = 0;
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'agent.tool_use' && ev.name === 'bash') {
        // The allowed gate call is running (the turn has not ended): confirm the held one now.
        await gateReached;
        await t.client.beta.sessions.events.send(sid, { events: [confirm(ev.id, 'allow')] });
        openGate();
      }
      if (ev.type === 'session.status_idle' && ++idles === 2) break;
    }
    const bash = seen.find((e) => e.type === 'agent.tool_use' && e.name === 'bash');
    const idle = seen.filter((e) => e.type === 'session.status_idle');
    expect(idle[0].stop_reason).toEqual({ type: 'requires_action', event_ids: [bash.id] });
    const results = seen.filter((e) => e.type === 'agent.tool_result');
    expect(results.map((e) => resultText(e))).toEqual([
      'gate passed',
      expect.stringMatching(/^early-confirmed/),
    ]);
    expect(idle[1].stop_reason).toEqual({ type: 'end_turn' });
  });
});
