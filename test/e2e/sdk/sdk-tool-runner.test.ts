/**
 * The official TypeScript SDK's session tool runner (`client.beta.sessions.events.toolRunner`,
 * @anthropic-ai/sdk 1.12 lib/tools/SessionToolRunner, used unchanged) drives a session of a
 * self_hosted environment against this server. Its tools are defined locally with the SDK's
 * `betaTool` helper (`@anthropic-ai/sdk/helpers/beta/json-schema`); the scripted model calls
 * them. The runner attaches to the event stream, reads the history, runs each call in this
 * process, posts the matching result event and stops on its own once the turn has ended
 * (`maxIdleMs`):
 * - a client-executed custom tool: `agent.custom_tool_use` answered by `user.custom_tool_result`
 *   (the runner on the tenant's API key; the same on a cloud session);
 * - an agent toolset call of the ama_worker lane: `agent.tool_use` answered by `user.tool_result`
 *   (the runner on the claimed-session bearer of a Work item, as a worker holds it).
 * The platform starts no sandbox, the model sees the local result paired with its call, and the
 * turn ends with `end_turn`.
 * Proves the events stream/list/send routes the runner uses, with the ama_worker lane
 * (workers/src/tools/selfHosted.ts) and the claimed-session bearer.
 */
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import type { DispatchedToolCall } from '@anthropic-ai/sdk/lib/tools/SessionToolRunner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, userMessage } from '../../kit/turnHelpers.js';
import { bearerClient, sessionsToken, workEnv } from '../../kit/workHelpers.js';

const MODEL = 'tool-runner-model';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
} as const;

const modelCalls = () => t.model.requests.filter((r) => r.model === MODEL);

/** Collects every event of `sid` from its stream until the idle that ends the turn. */
async function untilEndTurn(sid: string): Promise<any[]> {
  const stream = await t.client.beta.sessions.events.stream(sid);
  const seen: any[] = [];
  for await (const ev of stream) {
    seen.push(ev);
    if (ev.type === 'session.status_idle' && ev.stop_reason?.type !== 'requires_action') break;
  }
  return seen;
}

describe('client.beta.sessions.events.toolRunner', () => {
  it.each(['self_hosted', 'cloud'] as const)(
    '%s: runs a custom betaTool locally and answers agent.custom_tool_use with user.custom_tool_result',
    async (type) => {
      const ran: Array<{ city: string }> = [];
      const weather = betaTool({
        name: 'lookup_weather',
        description: 'The weather in a city',
        inputSchema: WEATHER_SCHEMA,
        run: (input) => {
          ran.push(input);
          return `sunny in ${input.city} (answered in the test process ${process.pid})`;
        },
      });
      const env = await t.client.beta.environments.create({
        name: `runner-${type}`,
        config: { type },
      });
      const agent = await t.client.beta.agents.create({
        name: 'runner-custom',
        model: MODEL,
        tools: [
          {
            type: 'custom',
            name: weather.name,
            description: 'The weather in a city',
            input_schema: { ...WEATHER_SCHEMA, required: [...WEATHER_SCHEMA.required] },
          },
        ],
      });
      const session = await t.client.beta.sessions.create({
        agent: agent.id,
        environment_id: env.id,
      });
      t.model.script(
        MODEL,
        { steps: [{ tool_use: { name: 'lookup_weather', input: { city: 'Lisbon' } } }] },
        { steps: [{ text: 'it is sunny in Lisbon' }] },
      );

      const events = untilEndTurn(session.id);
      await t.client.beta.sessions.events.send(session.id, { events: [userMessage('weather?')] });
      const calls: DispatchedToolCall[] = [];
      const started = Date.now();
      for await (const call of t.client.beta.sessions.events.toolRunner(session.id, {
        tools: [weather],
        maxIdleMs: 500,
        signal: AbortSignal.timeout(30_000),
      })) {
        calls.push(call);
      }
      // The runner ended by itself (maxIdleMs after the end_turn idle), not by the timeout.
      expect(Date.now() - started).toBeLessThan(25_000);
      const seen = await events;

      // The tool ran here, once, with the model's input.
      expect(ran).toEqual([{ city: 'Lisbon' }]);
      const use = seen.find((e) => e.type === 'agent.custom_tool_use');
      expect(use).toMatchObject({ name: 'lookup_weather', input: { city: 'Lisbon' } });
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({
        toolUseId: use.id,
        name: 'lookup_weather',
        isError: false,
        posted: true,
        confirmation: undefined,
      });

      // Its result reached the session as the matching result event, and the turn finished.
      const result = seen.find((e) => e.type === 'user.custom_tool_result');
      expect(result).toMatchObject({ custom_tool_use_id: use.id, is_error: false });
      expect(result.content[0].text).toBe(
        `sunny in Lisbon (answered in the test process ${process.pid})`,
      );
      const idles = seen.filter((e) => e.type === 'session.status_idle');
      expect(idles.map((e) => e.stop_reason.type)).toEqual(['requires_action', 'end_turn']);
      expect(idles[0].stop_reason.event_ids).toEqual([use.id]);
      expect(seen.find((e) => e.type === 'agent.message').content[0].text).toBe(
        'it is sunny in Lisbon',
      );
      expect((await t.client.beta.sessions.retrieve(session.id)).status).toBe('idle');
      // The model saw the local result paired with its call.
      const last = modelCalls().at(-1)!.body.messages;
      expect(last.at(-1).content[0]).toMatchObject({ type: 'tool_result', tool_use_id: use.id });
      expect(JSON.stringify(last.at(-1).content[0].content)).toContain('sunny in Lisbon');
      expect(t.server.sandboxes!.manager.state(session.id)).toBe('cold');
    },
    60_000,
  );

  it('answers a toolset agent.tool_use with user.tool_result on the claimed-session bearer', async () => {
    const w = await workEnv(t, 'runner-work');
    const agent = await t.client.beta.agents.create({
      name: 'runner-toolset',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: w.envId,
    });
    // A worker claims the session's Work item and holds only its sessions_token.
    const item = (await w.worker.beta.environments.work.poll(w.envId))!;
    expect(item.data).toEqual({ type: 'session', id: session.id });
    await w.worker.beta.environments.work.ack(item.id, { environment_id: w.envId });
    const claimed = bearerClient(t, sessionsToken(item.secret));

    const commands: string[] = [];
    const bash = betaTool({
      name: 'bash',
      description: 'A stand-in bash that records the command',
      inputSchema: {
        type: 'object',
        properties: { command: { type: 'string' } },
        required: ['command'],
      },
      run: ({ command }) => {
        commands.push(command);
        return `ran: ${command}`;
      },
    });
    t.model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo local' } } }] },
      { steps: [{ text: 'the runner answered' }] },
    );

    const events = untilEndTurn(session.id);
    await t.client.beta.sessions.events.send(session.id, { events: [userMessage('run it')] });
    const calls: DispatchedToolCall[] = [];
    for await (const call of claimed.beta.sessions.events.toolRunner(session.id, {
      tools: [bash],
      maxIdleMs: 500,
      signal: AbortSignal.timeout(30_000),
    })) {
      calls.push(call);
    }
    const seen = await events;

    expect(commands).toEqual(['echo local']);
    const use = seen.find((e) => e.type === 'agent.tool_use');
    expect(use).toMatchObject({ name: 'bash', evaluated_permission: 'allow' });
    expect(calls.map((c) => [c.toolUseId, c.name, c.isError, c.posted])).toEqual([
      [use.id, 'bash', false, true],
    ]);
    const result = seen.find((e) => e.type === 'user.tool_result');
    expect(result).toMatchObject({ tool_use_id: use.id, is_error: false });
    expect(result.content[0].text).toBe('ran: echo local');
    // The platform ran nothing itself: no agent.tool_result, no sandbox.
    expect(seen.filter((e) => e.type === 'agent.tool_result')).toEqual([]);
    expect(t.server.sandboxes!.manager.state(session.id)).toBe('cold');
    expect(seen.find((e) => e.type === 'agent.message').content[0].text).toBe(
      'the runner answered',
    );
    expect(seen.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    const last = modelCalls().at(-1)!.body.messages;
    expect(last.at(-1).content[0]).toMatchObject({ type: 'tool_result', tool_use_id: use.id });
  }, 60_000);
});
