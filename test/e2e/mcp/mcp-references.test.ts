/**
 * The SDK's reference rule between an agent's `mcp_servers` and its `mcp_toolset` tools
 * (agents.d.ts: "Every server must be referenced by an `mcp_toolset` in `tools`; unreferenced
 * servers are rejected"; `mcp_server_name` "Must match a server name from the mcp_servers
 * array"), enforced on the RESULTING agent (core/src/agents/agents.ts checkMcpServers) through
 * the official TypeScript SDK and HTTP against an in-process platform:
 * - agent create: a server no toolset names is a 400 naming `mcp_servers[i].name` (the message
 *   says which toolset to add), a toolset naming no server is a 400 naming
 *   `tools[i].mcp_server_name`, a second toolset for one server is a 400 naming `tools[i]`;
 *   nothing is stored and the server is never contacted;
 * - agent update: removing the toolset, removing the server, or adding a server alone is
 *   refused and the agent stays at its version; replacing both together is accepted;
 * - session create with agent_with_overrides and session update (`agent.tools`,
 *   `agent.mcp_servers`): the same refusals on the session's resulting agent, named
 *   `agent.<field>`; clearing both is accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';

const MODEL = 'claude-sonnet-4-5';
const server = (name: string, url = 'https://mcp.example.com/mcp') => ({
  type: 'url' as const,
  name,
  url,
});
const toolset = (name: string) => ({ type: 'mcp_toolset' as const, mcp_server_name: name });
const unreferenced = (name: string) =>
  `MCP server ${name} is not referenced by an mcp_toolset in tools; add {type: 'mcp_toolset', mcp_server_name: '${name}'}`;

let t: TestPlatform;
let quiet: McpServerFixture;
let envId: string;
beforeAll(async () => {
  quiet = await startMcpServer();
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${quiet.port}` },
  });
  envId = (await t.client.beta.environments.create({ name: 'mcp-references' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await quiet?.close();
});

/** The SDK error of a refused request: status, message and the field it names. */
async function refusal(p: Promise<unknown>) {
  const err: any = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'the request should have been refused').not.toBeNull();
  return {
    status: err.status as number,
    message: String(err.error?.error?.message),
    field: err.error?.error?.details?.field as string | undefined,
  };
}

const agentCount = async () => (await t.client.beta.agents.list({ limit: 100 })).data.length;

describe('MCP server references on agent create', () => {
  it('refuses a server no mcp_toolset names, naming mcp_servers[i].name; never contacts it', async () => {
    const before = await agentCount();
    const err = await refusal(
      t.client.beta.agents.create({
        name: 'unreferenced',
        model: MODEL,
        mcp_servers: [server('used'), server('quiet', quiet.url)],
        tools: [toolset('used')],
      }),
    );
    expect(err).toEqual({
      status: 400,
      message: `mcp_servers[1].name: ${unreferenced('quiet')}`,
      field: 'mcp_servers[1].name',
    });
    // The same with no tools at all.
    const bare = await refusal(
      t.client.beta.agents.create({
        name: 'bare',
        model: MODEL,
        mcp_servers: [server('quiet', quiet.url)],
      }),
    );
    expect(bare).toMatchObject({ status: 400, field: 'mcp_servers[0].name' });
    expect(await agentCount()).toBe(before);
    expect(quiet.seen).toEqual([]);
  });

  it('refuses an mcp_toolset naming no server, naming tools[i].mcp_server_name', async () => {
    const before = await agentCount();
    const err = await refusal(
      t.client.beta.agents.create({
        name: 'dangling',
        model: MODEL,
        mcp_servers: [server('a')],
        tools: [toolset('a'), toolset('missing')],
      }),
    );
    expect(err).toMatchObject({ status: 400, field: 'tools[1].mcp_server_name' });
    expect(err.message).toMatch(/^tools\[1\]\.mcp_server_name: no MCP server named missing/);
    const none = await refusal(
      t.client.beta.agents.create({ name: 'none', model: MODEL, tools: [toolset('ghost')] }),
    );
    expect(none).toMatchObject({ status: 400, field: 'tools[0].mcp_server_name' });
    expect(await agentCount()).toBe(before);
  });

  it('refuses a second mcp_toolset for the same server, naming tools[i]', async () => {
    const err = await refusal(
      t.client.beta.agents.create({
        name: 'twice',
        model: MODEL,
        mcp_servers: [server('a')],
        tools: [toolset('a'), toolset('a')],
      }),
    );
    expect(err).toEqual({
      status: 400,
      message: 'tools[1]: duplicate tool mcp_toolset:a',
      field: 'tools[1]',
    });
  });

  it('accepts every server referenced once and serves both back', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'paired',
      model: MODEL,
      mcp_servers: [server('a'), server('b')],
      tools: [toolset('b'), toolset('a')],
    });
    expect(agent.mcp_servers.map((s) => s.name)).toEqual(['a', 'b']);
    expect(agent.tools.map((x: any) => x.mcp_server_name)).toEqual(['b', 'a']);
  });
});

describe('MCP server references on agent update', () => {
  it('refuses a resulting agent with an unreferenced server or a dangling toolset', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'updated',
      model: MODEL,
      mcp_servers: [server('a')],
      tools: [toolset('a')],
    });
    const noToolset = await refusal(
      t.client.beta.agents.update(agent.id, { version: 1, tools: [] }),
    );
    expect(noToolset).toEqual({
      status: 400,
      message: `mcp_servers[0].name: ${unreferenced('a')}`,
      field: 'mcp_servers[0].name',
    });
    const noServer = await refusal(
      t.client.beta.agents.update(agent.id, { version: 1, mcp_servers: [] }),
    );
    expect(noServer).toMatchObject({ status: 400, field: 'tools[0].mcp_server_name' });
    const added = await refusal(
      t.client.beta.agents.update(agent.id, {
        version: 1,
        mcp_servers: [server('a'), server('b')],
      }),
    );
    expect(added).toMatchObject({ status: 400, field: 'mcp_servers[1].name' });
    expect((await t.client.beta.agents.retrieve(agent.id)).version).toBe(1);

    const both = await t.client.beta.agents.update(agent.id, {
      version: 1,
      mcp_servers: [server('b')],
      tools: [toolset('b')],
    });
    expect(both.version).toBe(2);
    const cleared = await t.client.beta.agents.update(agent.id, {
      version: 2,
      mcp_servers: [],
      tools: [],
    });
    expect([cleared.version, cleared.mcp_servers, cleared.tools]).toEqual([3, [], []]);
  });
});

describe('MCP server references on a session agent', () => {
  async function pairedAgent() {
    return t.client.beta.agents.create({
      name: 'session-agent',
      model: MODEL,
      mcp_servers: [server('a')],
      tools: [toolset('a')],
    });
  }

  it('agent_with_overrides: the session resulting agent is checked, naming agent.<field>', async () => {
    const agent = await pairedAgent();
    const create = (overrides: Record<string, unknown>) =>
      t.client.beta.sessions.create({
        agent: { type: 'agent_with_overrides', id: agent.id, ...overrides },
        environment_id: envId,
      } as any);
    const noToolset = await refusal(create({ tools: [] }));
    expect(noToolset).toEqual({
      status: 400,
      message: `agent.mcp_servers[0].name: ${unreferenced('a')}`,
      field: 'agent.mcp_servers[0].name',
    });
    const renamed = await refusal(create({ mcp_servers: [server('b')] }));
    expect(renamed).toMatchObject({ status: 400, field: 'agent.tools[0].mcp_server_name' });
    expect(renamed.message).toMatch(/^agent\.tools\[0\]\.mcp_server_name: no MCP server named a/);
    const twice = await refusal(create({ tools: [toolset('a'), toolset('a')] }));
    expect(twice).toMatchObject({ status: 400, field: 'agent.tools[1]' });

    const cleared = await create({ tools: [], mcp_servers: [] });
    expect(cleared.agent).toMatchObject({ tools: [], mcp_servers: [] });
    const swapped = await create({ tools: [toolset('b')], mcp_servers: [server('b')] });
    expect(swapped.agent.mcp_servers.map((s) => s.name)).toEqual(['b']);
  });

  it('session update: agent.tools / agent.mcp_servers are checked against the session agent', async () => {
    const agent = await pairedAgent();
    const session = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const update = async (json: unknown) => {
      const res = await t.http(`/v1/sessions/${session.id}`, { method: 'POST', json });
      return { status: res.status, body: (await res.json()) as any };
    };
    const noToolset = await update({ agent: { tools: [] } });
    expect(noToolset.status).toBe(400);
    expect(noToolset.body.error.message).toBe(`agent.mcp_servers[0].name: ${unreferenced('a')}`);
    const added = await update({ agent: { mcp_servers: [server('a'), server('b')] } });
    expect(added.status).toBe(400);
    expect(added.body.error.details.field).toBe('agent.mcp_servers[1].name');
    const noServer = await update({ agent: { mcp_servers: [] } });
    expect(noServer.status).toBe(400);
    expect(noServer.body.error.details.field).toBe('agent.tools[0].mcp_server_name');
    const kept = await t.client.beta.sessions.retrieve(session.id);
    expect(kept.agent.mcp_servers.map((s) => s.name)).toEqual(['a']);
    expect(kept.agent.tools).toHaveLength(1);

    const both = await update({ agent: { mcp_servers: [server('b')], tools: [toolset('b')] } });
    expect(both.status).toBe(200);
    expect(both.body.agent.mcp_servers.map((s: any) => s.name)).toEqual(['b']);
  });
});
