/**
 * Session create with `agent: {type: 'agent_with_overrides', …}` through the official TS SDK
 * (core/src/sessions/agent.ts): every override field the SDK defines (model, system, tools,
 * skills (object refs, validated and pinned: test/e2e/skills/skills-session.test.ts), mcp_servers) replaces the agent's value in the session's agent and in what the
 * scripted model receives; omitted fields keep the agent's; `system: null` and `[]` clear; the
 * agent resource is unchanged; the merged agent is validated like agent create, with 400s
 * naming `agent.<field>`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  // No fallback vendor key: a model without a card is refused.
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', ANTHROPIC_API_KEY: '' } });
  envId = (await t.client.beta.environments.create({ name: 'overrides' })).id;
});
afterAll(async () => {
  await t?.close();
});

let n = 0;
async function card() {
  const wire = `override-${++n}`;
  await addModelCard(t, wire);
  return wire;
}

const customTool = (name: string) => ({
  type: 'custom' as const,
  name,
  description: `the ${name} tool`,
  input_schema: { type: 'object' as const, properties: {} },
});

/**
 * The SDK requires every MCP server to be referenced by one mcp_toolset; all tools off, so the
 * turns here never connect these example.com servers.
 */
const toolset = (server: string) => ({
  type: 'mcp_toolset' as const,
  mcp_server_name: server,
  default_config: { enabled: false },
});

async function baseAgent() {
  const model = await card();
  const agent = await t.client.beta.agents.create({
    name: `base-${n}`,
    model,
    system: 'the agent prompt',
    tools: [customTool('agent_tool'), toolset('agent-mcp')],
    mcp_servers: [{ type: 'url', name: 'agent-mcp', url: 'https://mcp.example.com/sse' }],
  });
  return { model, agent };
}

/** Sends one message, waits for the request it causes and for idle; returns that request. */
async function turnRequest(sid: string, wire: string) {
  const sent = () => t.model.requests.filter((r) => r.model === wire);
  const before = sent().length;
  await t.client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
  });
  await waitFor(
    async () =>
      sent().length > before && (await t.client.beta.sessions.retrieve(sid)).status === 'idle',
  );
  return sent().at(-1)!;
}

describe('agent_with_overrides', () => {
  it('every override field lands in the session agent and in the model request; the agent is unchanged', async () => {
    const { model, agent } = await baseAgent();
    const other = await card();
    const session = await t.client.beta.sessions.create({
      agent: {
        type: 'agent_with_overrides',
        id: agent.id,
        model: { id: other, effort: 'low' },
        system: 'the override prompt',
        tools: [customTool('override_tool'), toolset('override-mcp')],
        skills: [],
        mcp_servers: [{ type: 'url', name: 'override-mcp', url: 'https://other.example.com/mcp' }],
      },
      environment_id: envId,
    });
    expect(session.agent).toMatchObject({
      id: agent.id,
      version: 1,
      model: { id: other, effort: { type: 'low' } },
      system: 'the override prompt',
      tools: [
        { type: 'custom', name: 'override_tool' },
        { type: 'mcp_toolset', mcp_server_name: 'override-mcp' },
      ],
      skills: [],
      mcp_servers: [{ type: 'url', name: 'override-mcp', url: 'https://other.example.com/mcp' }],
    });
    expect(session.agent.tools).toHaveLength(2);
    expect((await t.client.beta.sessions.retrieve(session.id)).agent).toEqual(session.agent);

    const req = await turnRequest(session.id, other);
    expect(req.body.system).toBe('the override prompt');
    expect(req.body.tools.map((x: any) => x.name)).toEqual(['override_tool']);
    expect(req.body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(t.model.requests.some((r) => r.model === model)).toBe(false);

    const unchanged = await t.client.beta.agents.retrieve(agent.id);
    expect(unchanged).toMatchObject({
      version: 1,
      model: { id: model },
      system: 'the agent prompt',
      tools: [{ name: 'agent_tool' }, { type: 'mcp_toolset', mcp_server_name: 'agent-mcp' }],
      skills: [],
      mcp_servers: [{ name: 'agent-mcp' }],
    });
  });

  it('omitted fields keep the agent values; null and [] clear', async () => {
    const { model, agent } = await baseAgent();
    const kept = await t.client.beta.sessions.create({
      agent: { type: 'agent_with_overrides', id: agent.id, system: 'only the prompt' },
      environment_id: envId,
    });
    expect(kept.agent).toMatchObject({
      model: { id: model },
      system: 'only the prompt',
      tools: [{ name: 'agent_tool' }, { type: 'mcp_toolset', mcp_server_name: 'agent-mcp' }],
      skills: [],
      mcp_servers: [{ name: 'agent-mcp' }],
    });
    const keptReq = await turnRequest(kept.id, model);
    expect(keptReq.body.system).toBe('only the prompt');
    expect(keptReq.body.tools.map((x: any) => x.name)).toEqual(['agent_tool']);

    const cleared = await t.client.beta.sessions.create({
      agent: {
        type: 'agent_with_overrides',
        id: agent.id,
        system: null,
        tools: [],
        skills: [],
        mcp_servers: [],
      },
      environment_id: envId,
    });
    expect(cleared.agent).toMatchObject({ system: null, tools: [], skills: [], mcp_servers: [] });
    const clearedReq = await turnRequest(cleared.id, model);
    expect(clearedReq.body.system).toBeUndefined();
    expect(clearedReq.body.tools).toBeUndefined();
  });

  it('is validated like agent create, errors naming agent.<field>', async () => {
    const { agent } = await baseAgent();
    const create = (over: Record<string, unknown>) =>
      t.http('/v1/sessions', {
        method: 'POST',
        json: {
          agent: { type: 'agent_with_overrides', id: agent.id, ...over },
          environment_id: envId,
        },
      });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ model: 'no-such-card' }, /^agent\.model/],
      [{ model: { id: 'no-such-card', effort: 'high' } }, /^agent\.model/],
      [{ tools: [customTool('twice'), customTool('twice')] }, /^agent\.tools\[1\]/],
      [{ tools: [{ type: 'custom', name: 'bad name!' }] }, /^agent\.tools\[0\]\.name/],
      [{ system: 'x'.repeat(200_001) }, /^agent\.system/],
      // Skills bind only as object refs to skills that exist (test/e2e/skills/skills-session.test.ts).
      [{ skills: [{ type: 'custom', skill_id: 'skill_nope' }] }, /^agent\.skills\[0\]/],
      [{ skills: ['xlsx'] }, /^agent\.skills\[0\]: a bare skill id does not bind/],
      [
        {
          tools: [
            { type: 'agent_toolset_20260401', configs: [{ name: 'web_fetch', max_uses: 3 }] },
          ],
        },
        /^agent\.tools\[0\]\.configs\[0\]\.max_uses/,
      ],
      [
        {
          mcp_servers: [
            { type: 'url', name: 'dup', url: 'https://a.example.com' },
            { type: 'url', name: 'dup', url: 'https://b.example.com' },
          ],
          tools: [toolset('dup')],
        },
        /^agent\.mcp_servers\[1\]\.name: duplicate server name dup/,
      ],
      [
        {
          mcp_servers: [
            {
              type: 'url',
              name: 'no-token',
              url: 'https://a.example.com',
              has_authorization_token: true,
            },
          ],
        },
        /^agent\.mcp_servers\[0\]\.has_authorization_token/,
      ],
    ];
    for (const [over, field] of cases) {
      const res = await create(over);
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(over).slice(0, 200)).toBe(400);
      expect(body.error.type).toBe('invalid_request');
      expect(body.error.message).toMatch(field);
    }
    // Through the SDK: the typed error.
    await expect(
      t.client.beta.sessions.create({
        agent: { type: 'agent_with_overrides', id: agent.id, model: 'no-such-card' },
        environment_id: envId,
      }),
    ).rejects.toMatchObject({ status: 400 });
  });
});
