/**
 * A child thread's calls that wait for the client, through the TypeScript SDK
 * (core/src/threads/relay.ts, workers/src/turn/threads.ts):
 * - a roster agent's client-executed custom tool call is cross-posted to the primary stream as
 *   agent.custom_tool_use carrying the thread's `session_thread_id`, followed by
 *   session.thread_status_idle `requires_action` naming it; the session stays running;
 * - the client answers it on the session, by the id it saw: the stored answer carries the
 *   `session_thread_id` it was routed to, the thread's own log gets it under the call's own id,
 *   the thread resumes, replies, and the coordinator answers from the reply;
 * - a call held by `always_ask` is cross-posted the same way, and the client's
 *   user.tool_confirmation (allow) runs it in the thread (in the session's sandbox);
 * - the coordinator's own model never sees the cross-posted calls, and its turn never ends
 *   `requires_action` for them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, decide, say, sentText, userMessage } from '../../kit/turnHelpers.js';

const COORD = 'client-calls-coordinator';
const ASKER = 'client-calls-asker';
const GATED = 'client-calls-gated';
let t: TestPlatform;
let envId: string;
let lead: any;

const allEvents = async (sid: string, path = '') =>
  ((await (await t.http(`/v1/sessions/${sid}${path}/events?limit=1000`)).json()) as any)
    .data as any[];

beforeAll(async () => {
  t = await startPlatform();
  for (const m of [COORD, ASKER, GATED]) await addModelCard(t, m);
  envId = (await t.client.beta.environments.create({ name: 'client-calls' })).id;
  const asker = await t.client.beta.agents.create({
    name: 'asker',
    model: ASKER,
    tools: [
      {
        type: 'custom',
        name: 'lookup',
        description: 'asks the client',
        input_schema: { type: 'object', properties: { q: { type: 'string' } } },
      },
    ],
  });
  const gated = await t.client.beta.agents.create({
    name: 'gated',
    model: GATED,
    tools: [
      {
        type: 'agent_toolset_20260401',
        default_config: { permission_policy: { type: 'always_ask' } },
      },
    ],
  });
  lead = await t.client.beta.agents.create({
    name: 'lead',
    model: COORD,
    multiagent: { type: 'coordinator', agents: [asker.id, gated.id] },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe("a thread's calls that wait for the client", () => {
  it('a custom tool call is cross-posted, answered on the session and routed to the thread', async () => {
    const s = await t.client.beta.sessions.create({ agent: lead.id, environment_id: envId });
    t.model.script(
      COORD,
      {
        steps: [
          { tool_use: { name: 'start_thread', input: { agent_name: 'asker', task: 'ask' } } },
        ],
        stop_reason: 'tool_use',
      },
      ...Array.from({ length: 2 }, () =>
        decide((body) =>
          sentText(body).includes('found 42') ? say('the answer is 42') : say('wait'),
        ),
      ),
    );
    t.model.script(
      ASKER,
      { steps: [{ tool_use: { name: 'lookup', input: { q: 'x' } } }], stop_reason: 'tool_use' },
      decide((body) => (sentText(body).includes('forty-two') ? say('found 42') : say('no answer'))),
    );
    await t.client.beta.sessions.events.send(s.id, { events: [userMessage('go')] });
    const posted = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.thread_status_idle') ? ev : null;
    });
    const created = posted.find((e) => e.type === 'session.thread_created');
    const tid = created.session_thread_id;
    const use = posted.find((e) => e.type === 'agent.custom_tool_use');
    expect(use).toMatchObject({ name: 'lookup', input: { q: 'x' }, session_thread_id: tid });
    const idle = posted.find((e) => e.type === 'session.thread_status_idle');
    expect(idle).toMatchObject({
      session_thread_id: tid,
      agent_name: 'asker',
      stop_reason: { type: 'requires_action', event_ids: [use.id] },
    });
    expect((await t.client.beta.sessions.retrieve(s.id)).status).toBe('running');
    expect(posted.some((e) => e.type === 'session.status_idle')).toBe(false);
    // The client answers on the session, by the id it saw.
    const answer = await t.client.beta.sessions.events.send(s.id, {
      events: [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: use.id,
          content: [{ type: 'text', text: 'forty-two' }],
        },
      ],
    });
    expect((answer.data![0] as any).session_thread_id).toBe(tid);
    const events = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
    }, 60_000);
    const end = events.filter((e) => e.type === 'session.status_idle');
    expect(end).toHaveLength(1);
    expect(end[0].stop_reason).toEqual({ type: 'end_turn' });
    expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
      'the answer is 42',
    );
    // The thread's own log: its call under its own id, the answer routed to it, its reply.
    const own = await allEvents(s.id, `/threads/${tid}`);
    const ownUse = own.find((e) => e.type === 'agent.custom_tool_use');
    expect(ownUse.id).not.toBe(use.id);
    expect(ownUse.session_thread_id).toBeUndefined();
    const routed = own.find((e) => e.type === 'user.custom_tool_result');
    expect(routed).toMatchObject({
      custom_tool_use_id: ownUse.id,
      content: [{ text: 'forty-two' }],
    });
    expect(own.find((e) => e.type === 'agent.thread_message_sent').content[0].text).toBe(
      'found 42',
    );
    // The coordinator never saw the thread's call as its own.
    for (const r of t.model.requests.filter((x) => x.model === COORD))
      expect(sentText(r.body)).not.toContain('lookup');
    // An answer to the same call again is refused: it has a result in the thread.
    const again = await t.http(`/v1/sessions/${s.id}/events`, {
      method: 'POST',
      json: {
        events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
      },
    });
    expect(again.status).toBe(400);
  }, 90_000);

  it('a call held by always_ask is cross-posted and runs in the thread once the client allows it', async () => {
    const s = await t.client.beta.sessions.create({ agent: lead.id, environment_id: envId });
    t.model.script(
      COORD,
      {
        steps: [
          { tool_use: { name: 'start_thread', input: { agent_name: 'gated', task: 'write' } } },
        ],
        stop_reason: 'tool_use',
      },
      ...Array.from({ length: 2 }, () =>
        decide((body) => (sentText(body).includes('gated wrote') ? say('done') : say('wait'))),
      ),
    );
    t.model.script(
      GATED,
      {
        steps: [
          {
            tool_use: {
              name: 'bash',
              input: { command: 'echo gated > /workspace/g.txt && cat /workspace/g.txt' },
            },
          },
        ],
        stop_reason: 'tool_use',
      },
      decide((body) => (sentText(body).includes('gated\\n') ? say('gated wrote') : say('failed'))),
    );
    await t.client.beta.sessions.events.send(s.id, { events: [userMessage('go')] });
    const posted = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.find((e) => e.type === 'agent.tool_use' && e.session_thread_id) ? ev : null;
    });
    const use = posted.find((e) => e.type === 'agent.tool_use' && e.session_thread_id);
    expect(use).toMatchObject({ name: 'bash', evaluated_permission: 'ask' });
    await t.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
    });
    const events = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
    }, 60_000);
    expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe('done');
    const own = await allEvents(s.id, `/threads/${use.session_thread_id}`);
    const result = own.find((e) => e.type === 'agent.tool_result');
    expect(result.is_error).toBe(false);
    expect(result.content[0].text).toContain('gated');
    expect(own.find((e) => e.type === 'user.tool_confirmation')).toMatchObject({
      result: 'allow',
    });
  }, 90_000);
});
