import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('official SDK drives a full session turn', () => {
  it('creates environment and agent, updates to v2, pins a session to v1, streams a turn to idle', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({
      name: 'env-a',
      config: { type: 'cloud', networking: { type: 'unrestricted' } },
    });
    expect(env.id).toMatch(/^env_/);
    expect(env.config.type).toBe('cloud');
    const agent = await c.beta.agents.create({
      name: 'a1',
      model: 'claude-sonnet-4-5',
      system: 'You are v1',
    });
    expect(agent.version).toBe(1);
    const v2 = await c.beta.agents.update(agent.id, { version: 1, system: 'You are v2' });
    expect(v2.version).toBe(2);
    expect(v2.system).toBe('You are v2');
    await expect(
      c.beta.agents.update(agent.id, { version: 1, system: 'stale' }),
    ).rejects.toMatchObject({ status: 409 });

    const session = await c.beta.sessions.create({
      agent: { type: 'agent', id: agent.id, version: 1 },
      environment_id: env.id,
    });
    expect(session.agent.version).toBe(1);
    expect(session.agent.system).toBe('You are v1');
    expect(session.status).toBe('idle');

    t.model.script('claude-sonnet-4-5', {
      steps: [
        { thinking: 'let me think', signature: 'sig1' },
        { text: 'Hello from the model', chunks: 4 },
      ],
    });
    const stream = await c.beta.sessions.events.stream(session.id);
    await c.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const types = seen.map((e) => e.type);
    expect(types).toEqual([
      'user.message',
      'session.status_running',
      'span.model_request_start',
      'agent.thinking',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ]);
    const msg = seen.find((e) => e.type === 'agent.message');
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello from the model' }]);
    const idle = seen.at(-1);
    expect(idle.stop_reason).toEqual({ type: 'end_turn' });
    const end = seen.find((e) => e.type === 'span.model_request_end');
    expect(end.model_request_start_id).toBe(
      seen.find((e) => e.type === 'span.model_request_start').id,
    );
    // The pinned version's system prompt reached the model.
    const req = t.model.requests.at(-1)!;
    expect(req.body.system).toBe('You are v1');
    expect(req.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    const after = await c.beta.sessions.retrieve(session.id);
    expect(after.status).toBe('idle');
  });
});

describe('SDK: replay, cancel, tool calls', () => {
  it('replays with Last-Event-ID through the SDK stream, only seq > N', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'replay' });
    const agent = await c.beta.agents.create({ name: 'r', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'one' }] }],
    });
    let all: any[] = [];
    for (let i = 0; i < 200 && !all.some((e) => e.type === 'session.status_idle'); i++) {
      all = (await c.beta.sessions.events.list(s.id)).data;
      await new Promise((r) => setTimeout(r, 25));
    }
    const stream = await c.beta.sessions.events.stream(
      s.id,
      {},
      { headers: { 'Last-Event-ID': '2' } },
    );
    const got: any[] = [];
    for await (const ev of stream) {
      got.push(ev);
      if ((ev as any).seq === all.at(-1).seq) break;
    }
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => e.seq > 2).map((e) => e.seq));
    const end = all.find((e) => e.type === 'span.model_request_end');
    expect(end.model_usage.output_tokens).toBeGreaterThan(0);
    expect(end.model_usage).toHaveProperty('input_tokens');
    expect((await c.beta.sessions.retrieve(s.id)).usage.output_tokens).toBe(
      end.model_usage.output_tokens,
    );
  });

  it('client-executed custom tools: agent.custom_tool_use, idle with requires_action, user.custom_tool_result resumes', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'tools' });
    await t.http('/v1/svc/model_cards', {
      method: 'POST',
      headers: { 'anthropic-beta': 'managed-agents-2026-04-01' },
      json: {
        model_id: 'tool-model',
        provider: 'anthropic',
        model: 'tool-model',
        base_url: t.model.url,
        api_key: 'k',
      },
    });
    const agent = await c.beta.agents.create({
      name: 'tooled',
      model: 'tool-model',
      tools: [
        {
          type: 'custom',
          name: 'lookup',
          description: 'looks things up',
          input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
    });
    t.model.script(
      'tool-model',
      {
        steps: [
          { text: 'checking' },
          { tool_use: { name: 'lookup', input: { q: 'x' } } },
          { tool_use: { name: 'lookup', input: { q: 'y' } } },
        ],
      },
      { steps: [{ text: 'the answers were 42 and 43' }] },
    );
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const stream = await c.beta.sessions.events.stream(s.id);
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const uses = seen.filter((e) => e.type === 'agent.custom_tool_use');
    expect(uses.map((u) => u.input)).toEqual([{ q: 'x' }, { q: 'y' }]);
    expect(seen.some((e) => e.type === 'agent.tool_result')).toBe(false);
    expect(seen.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: uses.map((u) => u.id),
    });
    expect((await c.beta.sessions.retrieve(s.id)).status).toBe('idle');
    // One result alone does not resume the turn: the idle is re-emitted with the remainder
    // (SDK: "resolving fewer than all re-emits session.status_idle"); the second resumes it.
    const resumed = await c.beta.sessions.events.stream(s.id);
    await c.beta.sessions.events.send(s.id, {
      events: [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: uses[0].id,
          content: [{ type: 'text', text: '42' }],
        },
      ],
    });
    const frames = resumed[Symbol.asyncIterator]();
    const untilIdle = async () => {
      const got: any[] = [];
      for (;;) {
        const { value, done } = await frames.next();
        if (done) return got;
        got.push(value);
        if (value.type === 'session.status_idle') return got;
      }
    };
    const partial = await untilIdle();
    expect(partial.map((e) => e.type)).toEqual(['user.custom_tool_result', 'session.status_idle']);
    expect(partial.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: [uses[1].id],
    });
    expect(t.model.requests.filter((r) => r.model === 'tool-model')).toHaveLength(1);
    expect((await c.beta.sessions.retrieve(s.id)).status).toBe('idle');
    await c.beta.sessions.events.send(s.id, {
      events: [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: uses[1].id,
          content: [{ type: 'text', text: '43' }],
        },
      ],
    });
    const after = await untilIdle();
    await frames.return?.();
    expect(after.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
      'the answers were 42 and 43',
    );
    expect(after.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    // The model saw both calls answered, paired by id, results first in the user turn.
    const second = t.model.requests.filter((r) => r.model === 'tool-model')[1]!.body.messages;
    expect(
      second[1].content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.id),
    ).toEqual(uses.map((u) => u.id));
    expect(second[2].content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: uses[0].id,
        content: [{ type: 'text', text: '42' }],
        is_error: false,
      },
      {
        type: 'tool_result',
        tool_use_id: uses[1].id,
        content: [{ type: 'text', text: '43' }],
        is_error: false,
      },
    ]);
    expect(t.model.requests.filter((r) => r.model === 'tool-model')[0]!.body.tools[0].name).toBe(
      'lookup',
    );
    // A custom tool result for a tool use that does not exist is refused, naming the field.
    await expect(
      c.beta.sessions.events.send(s.id, {
        events: [{ type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_nope', content: [] }],
      }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('events[0].custom_tool_use_id'),
    });
  });

  it('a built-in bash call runs in the session sandbox; its output is the tool result', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'builtin' });
    await t.http('/v1/svc/model_cards', {
      method: 'POST',
      headers: { 'anthropic-beta': 'managed-agents-2026-04-01' },
      json: {
        model_id: 'bash-model',
        provider: 'anthropic',
        model: 'bash-model',
        base_url: t.model.url,
        api_key: 'k',
      },
    });
    const agent = await c.beta.agents.create({
      name: 'bash',
      model: 'bash-model',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    t.model.script(
      'bash-model',
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo hi' } } }] },
      { steps: [{ text: 'it printed hi' }] },
    );
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const stream = await c.beta.sessions.events.stream(s.id);
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'run' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const use = seen.find((e) => e.type === 'agent.tool_use');
    const result = seen.find((e) => e.type === 'agent.tool_result');
    expect(result).toMatchObject({ tool_use_id: use.id, is_error: false });
    expect(result.content[0].text).toMatch(/^hi\n/);
    expect(seen.at(-1).stop_reason).toEqual({ type: 'end_turn' });
    // The toolset's tools were offered with their input schemas.
    expect(
      t.model.requests
        .filter((r) => r.model === 'bash-model')[0]!
        .body.tools.map((x: any) => x.name),
    ).toEqual(['bash', 'read', 'write', 'edit', 'glob', 'grep', 'web_fetch', 'web_search']);
  });

  it('cancel stops a running turn; the session returns to idle', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'cancel' });
    await t.http('/v1/svc/model_cards', {
      method: 'POST',
      headers: { 'anthropic-beta': 'managed-agents-2026-04-01' },
      json: {
        model_id: 'cancel-model',
        provider: 'anthropic',
        model: 'cancel-model',
        base_url: t.model.url,
        api_key: 'k',
      },
    });
    const agent = await c.beta.agents.create({ name: 'c', model: 'cancel-model' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    t.model.script('cancel-model', { steps: [{ delay_ms: 30_000 }, { text: 'never' }] });
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'x' }] }],
    });
    for (let i = 0; i < 200 && (await c.beta.sessions.retrieve(s.id)).status !== 'running'; i++)
      await new Promise((r) => setTimeout(r, 25));
    const r = await t.http(`/v1/sessions/${s.id}/cancel`, {
      method: 'POST',
      headers: { 'anthropic-beta': 'managed-agents-2026-04-01' },
    });
    expect(r.status).toBe(200);
    let status = '';
    for (let i = 0; i < 200 && status !== 'idle'; i++) {
      status = (await c.beta.sessions.retrieve(s.id)).status;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe('idle');
    const events = (await c.beta.sessions.events.list(s.id)).data as any[];
    expect(events.some((e) => e.type === 'agent.message')).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', interrupted: true });
  });
});
