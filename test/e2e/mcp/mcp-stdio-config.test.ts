/**
 * stdio MCP server configs through the official SDK and HTTP against in-process platforms:
 * - with sandboxes (SANDBOX_DRIVER=local): the flat shape and the older nested shape
 *   `{stdio: {command, args?, env?, port, ready_timeout_ms?}}` are accepted, stored and served
 *   back as sent (create, retrieve, the served object sent back on update); a port outside
 *   1–65535 or a ready_timeout_ms outside 1–600000 is a 400 naming mcp_servers;
 * - without (SANDBOX_DRIVER=none): a stdio server in either shape is refused with a 400 naming
 *   `mcp_servers[i].type` on agent create and update, and `agent.mcp_servers[i].type` on
 *   session create with agent_with_overrides (spec: "stdio MCP server on a runtime that keeps the
 *   harness outside the sandbox: rejected explicitly"); url servers are unaffected.
 * The stdio server itself, run in a real sandbox: core/test/sandbox-mcp-stdio.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

const MODEL = 'claude-sonnet-4-5';
const FLAT = {
  name: 'flat',
  type: 'stdio',
  command: 'npx',
  args: ['-y', 'some-mcp'],
  env: { A: 'b' },
};
const NESTED = {
  name: 'nested',
  type: 'stdio',
  stdio: {
    command: 'uvx',
    args: ['srv', '--port', '8931'],
    env: { X: 'y' },
    port: 8931,
    ready_timeout_ms: 30_000,
  },
};
const URL_SERVER = { name: 'web', type: 'url', url: 'https://mcp.example.com/mcp' };

/** One mcp_toolset per server: the SDK rejects a server no toolset names. */
const toolsets = (...servers: Array<{ name: string }>) =>
  servers.map((s) => ({ type: 'mcp_toolset', mcp_server_name: s.name }));

const errorOf = async (p: Promise<unknown>) => {
  const err: any = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'the request should have been refused').not.toBeNull();
  return {
    status: err.status as number,
    message: String(err.error?.error?.message ?? err.message),
  };
};

describe('stdio MCP server configs with sandboxes', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('accepts the flat and the nested shape and serves both back as sent', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'stdio',
      model: MODEL,
      mcp_servers: [FLAT, NESTED, URL_SERVER],
      tools: toolsets(FLAT, NESTED, URL_SERVER),
    } as any);
    expect(agent.mcp_servers).toEqual([FLAT, NESTED, URL_SERVER]);
    expect((await t.client.beta.agents.retrieve(agent.id)).mcp_servers).toEqual([
      FLAT,
      NESTED,
      URL_SERVER,
    ]);
    // the served object sent back is accepted and changes nothing
    const same = await t.client.beta.agents.update(agent.id, {
      version: agent.version,
      mcp_servers: agent.mcp_servers,
    } as any);
    expect(same.version).toBe(1);
    expect(same.mcp_servers).toEqual([FLAT, NESTED, URL_SERVER]);
  });

  it('refuses a port or ready_timeout_ms out of range, naming mcp_servers', async () => {
    for (const stdio of [
      { command: 'x', port: 0 },
      { command: 'x', port: 65536 },
      { command: 'x', port: 80.5 },
      { command: 'x', port: 80, ready_timeout_ms: 0 },
      { command: 'x', port: 80, ready_timeout_ms: 600_001 },
      { command: '', port: 80 },
    ]) {
      const res = await t.http('/v1/agents', {
        method: 'POST',
        json: {
          name: 'bad',
          model: MODEL,
          mcp_servers: [{ name: 'n', type: 'stdio', stdio }],
          tools: toolsets({ name: 'n' }),
        },
      });
      expect(res.status, JSON.stringify(stdio)).toBe(400);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('invalid_request');
      expect(body.error.message).toContain('mcp_servers');
    }
  });
});

describe('stdio MCP server configs without sandboxes (SANDBOX_DRIVER=none)', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses stdio servers on agent create and update with a 400 naming mcp_servers[i].type', async () => {
    const flat = await errorOf(
      t.client.beta.agents.create({
        name: 'a',
        model: MODEL,
        mcp_servers: [FLAT],
        tools: toolsets(FLAT),
      } as any),
    );
    expect(flat.status).toBe(400);
    expect(flat.message).toMatch(/^mcp_servers\[0\]\.type: a stdio MCP server runs inside/);
    expect(flat.message).toContain('SANDBOX_DRIVER=none');

    const nested = await errorOf(
      t.client.beta.agents.create({
        name: 'a',
        model: MODEL,
        mcp_servers: [URL_SERVER, NESTED],
        tools: toolsets(URL_SERVER, NESTED),
      } as any),
    );
    expect(nested.status).toBe(400);
    expect(nested.message).toMatch(/^mcp_servers\[1\]\.type:/);

    // url servers are fine; adding a stdio one on update is refused
    const agent = await t.client.beta.agents.create({
      name: 'a',
      model: MODEL,
      mcp_servers: [URL_SERVER],
      tools: toolsets(URL_SERVER),
    } as any);
    const update = await errorOf(
      t.client.beta.agents.update(agent.id, {
        version: agent.version,
        mcp_servers: [URL_SERVER, FLAT],
        tools: toolsets(URL_SERVER, FLAT),
      } as any),
    );
    expect(update.status).toBe(400);
    expect(update.message).toMatch(/^mcp_servers\[1\]\.type:/);
    expect((await t.client.beta.agents.retrieve(agent.id)).version).toBe(1);
  });

  it('refuses stdio servers in a session agent_with_overrides, naming agent.mcp_servers[i].type', async () => {
    const env = await t.client.beta.environments.create({ name: 'e' });
    const agent = await t.client.beta.agents.create({ name: 'o', model: MODEL });
    const err = await errorOf(
      t.client.beta.sessions.create({
        agent: {
          type: 'agent_with_overrides',
          id: agent.id,
          mcp_servers: [NESTED],
          tools: toolsets(NESTED),
        },
        environment_id: env.id,
      } as any),
    );
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^agent\.mcp_servers\[0\]\.type: a stdio MCP server/);
    // nor added to a session's agent afterwards
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
    });
    const res = await t.http(`/v1/sessions/${session.id}`, {
      method: 'POST',
      json: { agent: { mcp_servers: [URL_SERVER, FLAT], tools: toolsets(URL_SERVER, FLAT) } },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/^agent\.mcp_servers\[1\]\.type:/);
  });
});
