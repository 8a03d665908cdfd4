/**
 * MCP servers on agents take effect in the turn (workers/src/tools/mcp.ts, core/src/mcp/client.ts,
 * core/src/mcp/tools.ts), through the official TypeScript SDK against an in-process platform,
 * the scripted model and real MCP servers of ours on 127.0.0.1 (test/kit/fixtures/mcpServer.ts,
 * official MCP SDK, Streamable HTTP), reached only through the MCP proxy:
 * - a turn calls `mcp__srv__echo` in every auth mode (none, inline authorization_token, vault
 *   static_bearer, vault mcp_oauth): agent.mcp_tool_use / agent.mcp_tool_result in the SDK shape
 *   (validated against the served schema), the model request offers the tool with the server's
 *   description and full schema, the next request pairs tool_use/tool_result; the server saw
 *   the bearer, and no event, response or model request contains it;
 * - mcp_toolset configs: a disabled tool is not offered (a call of it anyway is a denied
 *   agent.mcp_tool_use with an is_error result), default_config.enabled false offers
 *   only the tools enabled by name, always_ask holds the call until user.tool_confirmation
 *   (allow runs it, deny answers the message as an is_error result); a server without a
 *   toolset is refused when the agent is written (test/e2e/mcp/mcp-references.test.ts);
 * - failures: an unreachable server → session.error mcp_connection_failed_error and the turn
 *   ends normally with the other server's tools; a server that never answers is given up after
 *   MCP_DISCOVERY_TIMEOUT_MS; a wrong bearer → mcp_authentication_failed_error
 *   without the token; a tool that fails → an is_error result, the turn goes on;
 * - an image in a tool result is served as the SDK's base64 image block and sent to the model.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSessionEvent } from '@agentfleet/schemas';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  FIXTURE_TOOLS,
  startMcpServer,
  type McpServerFixture,
} from '../../kit/fixtures/mcpServer.js';
import { addModelCard, call, runTurn, say, untilIdle } from '../../kit/turnHelpers.js';

const MODEL = 'mcp-tools-model';
const DISCOVERY_MS = 3000;
const rnd = () => Math.random().toString(36).slice(2, 12);
const INLINE = `inline-${rnd()}${rnd()}`;
const STATIC = `static-${rnd()}${rnd()}`;
const OAUTH = `oauth-${rnd()}${rnd()}`;
const WRONG = `wrong-${rnd()}${rnd()}`;
const TOKENS = [INLINE, STATIC, OAUTH, WRONG];

let t: TestPlatform;
let open: McpServerFixture;
let locked: McpServerFixture;
let downPort = 0;
/** Accepts connections and never answers: discovery must give up (MCP_DISCOVERY_TIMEOUT_MS). */
const silent = http.createServer(() => {});
/** A 1×1 PNG. */
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
/** An MCP server (official SDK, stateless) whose `pixel` tool answers an image and a text. */
const pictures = http.createServer(async (req, res) => {
  if (req.method !== 'POST') return void res.writeHead(405).end();
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const server = new McpServer({ name: 'pictures', version: '1.0.0' });
  server.registerTool('pixel', { description: 'A pixel', inputSchema: {} }, async () => ({
    content: [
      { type: 'image', data: PIXEL, mimeType: 'image/png' },
      { type: 'text', text: 'a pixel' },
    ],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => void transport.close());
  await server.connect(transport);
  await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
});
beforeAll(async () => {
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const silentPort = (silent.address() as AddressInfo).port;
  await new Promise<void>((r) => pictures.listen(0, '127.0.0.1', r));
  const picturesPort = (pictures.address() as AddressInfo).port;
  open = await startMcpServer();
  locked = await startMcpServer({ tokens: [INLINE, STATIC, OAUTH] });
  const down = await startMcpServer();
  downPort = down.port;
  await down.close(); // nothing listens there any more
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      MCP_DISCOVERY_TIMEOUT_MS: String(DISCOVERY_MS),
      EGRESS_ALLOW_PRIVATE_HOSTS: [open.port, locked.port, downPort, silentPort, picturesPort]
        .map((p) => `127.0.0.1:${p}`)
        .join(','),
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await Promise.all([open, locked].map((s) => s?.close()));
  for (const srv of [silent, pictures]) {
    srv.closeAllConnections();
    await new Promise<void>((r) => srv.close(() => r()));
  }
});

const toolset = (server: string, extra: Record<string, unknown> = {}) => ({
  type: 'mcp_toolset' as const,
  mcp_server_name: server,
  ...extra,
});

/** A session whose agent has these MCP servers and tools (and vaults), for `client`. */
async function session(
  servers: any[],
  tools: any[],
  opts: { client?: TestPlatform['client']; vaultIds?: string[] } = {},
): Promise<string> {
  const client = opts.client ?? t.client;
  const env = await client.beta.environments.create({ name: `mcp-tools-${rnd()}` });
  const agent = await client.beta.agents.create({
    name: `mcp-tools-${rnd()}`,
    model: MODEL,
    mcp_servers: servers,
    tools,
  } as any);
  const s = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    ...(opts.vaultIds ? { vault_ids: opts.vaultIds } : {}),
  } as any);
  return s.id;
}

const requestsSince = (n: number) => t.model.requests.filter((r) => r.model === MODEL).slice(n);
const modelCount = () => t.model.requests.filter((r) => r.model === MODEL).length;
const toolNames = (req: any) => (req.body.tools ?? []).map((x: any) => x.name);
const noToken = (text: string) => {
  for (const tok of TOKENS) expect(text).not.toContain(tok);
};

/** Runs one turn calling mcp__srv__echo and checks events, schema, model requests, secrecy. */
async function echoTurn(client: TestPlatform['client'], sid: string, token?: string) {
  t.model.script(MODEL, call('mcp__srv__echo', { text: 'hi' }), say('echoed'));
  const before = modelCount();
  const turn = await runTurn(client, sid, 'echo please');
  const use = turn.events.find((e) => e.type === 'agent.mcp_tool_use');
  const result = turn.events.find((e) => e.type === 'agent.mcp_tool_result');
  expect(use).toMatchObject({
    name: 'mcp__srv__echo',
    mcp_server_name: 'srv',
    mcp_tool_name: 'echo',
    input: { text: 'hi' },
    evaluated_permission: 'allow',
    evaluation: { type: 'always_allow' },
  });
  expect(result).toMatchObject({
    mcp_tool_use_id: use.id,
    content: [{ type: 'text', text: 'echo: hi' }],
    is_error: false,
  });
  expect(turn.events.filter((e) => e.type === 'session.error')).toEqual([]);
  expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  // Served events conform to the schemas (which the SDK types pin: test/kit/sdk-types.ts).
  const listed = (await client.beta.sessions.events.list(sid)).data;
  for (const e of listed) validateSessionEvent(e);
  const [first, second] = requestsSince(before);
  const spec = first.body.tools.find((x: any) => x.name === 'mcp__srv__echo');
  expect(spec).toEqual({
    name: 'mcp__srv__echo',
    description: FIXTURE_TOOLS[0]!.description,
    input_schema: FIXTURE_TOOLS[0]!.inputSchema,
  });
  const blocks = second.body.messages.flatMap((m: any) =>
    Array.isArray(m.content) ? m.content : [],
  );
  expect(blocks.find((b: any) => b.type === 'tool_use')).toMatchObject({
    id: use.id,
    name: 'mcp__srv__echo',
    input: { text: 'hi' },
  });
  const paired = blocks.find((b: any) => b.type === 'tool_result');
  expect(paired.tool_use_id).toBe(use.id);
  expect(JSON.stringify(paired.content)).toContain('echo: hi');
  if (token) expect(locked.seen.at(-1)?.authorization).toBe(`Bearer ${token}`);
  noToken(JSON.stringify(listed));
  noToken(JSON.stringify(turn.events));
  noToken(JSON.stringify(t.model.requests));
}

describe('MCP tools in a turn: auth modes (TS SDK)', () => {
  it('none: the tool runs, the server gets no Authorization', async () => {
    const sid = await session([{ type: 'url', name: 'srv', url: open.url }], [toolset('srv')]);
    const writes: string[][] = [];
    t.server.platform.events.onAppended(async (_tenant, id, written) => {
      if (id === sid) writes.push(written.map((e) => e.type));
    });
    await echoTurn(t.client, sid);
    expect(open.seen.length).toBeGreaterThan(0);
    for (const s of open.seen) expect(s.authorization).toBeUndefined();
    // The turn held a connection: its final answer is written before the connection closes, and
    // the idle after (workers/src/turn/finish.ts).
    expect(writes.slice(-2)).toEqual([
      ['agent.message', 'span.model_request_end'],
      ['session.status_idle'],
    ]);
  });

  it('inline authorization_token: the bearer reaches the server, never an event or the model', async () => {
    const sid = await session(
      [{ type: 'url', name: 'srv', url: locked.url, authorization_token: INLINE }],
      [toolset('srv')],
    );
    await echoTurn(t.client, sid, INLINE);
  });

  it('vault static_bearer matched by host', async () => {
    const { client } = await t.newTenant('mcp-static');
    const v = await client.beta.vaults.create({ display_name: 'static' });
    await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: STATIC, mcp_server_url: locked.url },
    });
    const sid = await session([{ type: 'url', name: 'srv', url: locked.url }], [toolset('srv')], {
      client,
      vaultIds: [v.id],
    });
    await echoTurn(client, sid, STATIC);
  });

  it('vault mcp_oauth: its access token is the bearer', async () => {
    const { client } = await t.newTenant('mcp-oauth');
    const v = await client.beta.vaults.create({ display_name: 'oauth' });
    await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'mcp_oauth', access_token: OAUTH, mcp_server_url: locked.url },
    } as any);
    const sid = await session([{ type: 'url', name: 'srv', url: locked.url }], [toolset('srv')], {
      client,
      vaultIds: [v.id],
    });
    await echoTurn(client, sid, OAUTH);
  });
});

describe('MCP tools in a turn: mcp_toolset configs', () => {
  it('a disabled tool is not offered; default_config.enabled false offers only tools enabled by name', async () => {
    const sid = await session(
      [
        { type: 'url', name: 'srv', url: open.url },
        { type: 'url', name: 'few', url: open.url },
      ],
      [
        toolset('srv', { configs: [{ name: 'add', enabled: false }] }),
        toolset('few', {
          default_config: { enabled: false },
          configs: [{ name: 'add', enabled: true }],
        }),
      ],
    );
    t.model.script(MODEL, call('mcp__srv__add', { a: 1, b: 2 }), say('refused'));
    const before = modelCount();
    const turn = await runTurn(t.client, sid, 'list');
    const [req] = requestsSince(before);
    expect(toolNames(req).sort()).toEqual(['mcp__few__add', 'mcp__srv__echo', 'mcp__srv__fail']);
    // Calling the disabled tool anyway: refused before any policy (SDK: deny, no evaluation).
    const use = turn.events.find((e) => e.type === 'agent.mcp_tool_use');
    expect(use).toMatchObject({ name: 'mcp__srv__add', mcp_tool_name: 'add' });
    expect([use.evaluated_permission, use.evaluation]).toEqual(['deny', undefined]);
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      mcp_tool_use_id: use.id,
      content: [{ type: 'text', text: "MCP tool 'add' of server 'srv' is not enabled" }],
      is_error: true,
    });
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });

  it('always_ask holds the call; user.tool_confirmation allow runs it, deny answers the message', async () => {
    const sid = await session(
      [{ type: 'url', name: 'srv', url: open.url }],
      [
        toolset('srv', {
          default_config: { permission_policy: { type: 'always_allow' } },
          configs: [{ name: 'echo', permission_policy: { type: 'always_ask' } }],
        }),
      ],
    );
    t.model.script(MODEL, call('mcp__srv__echo', { text: 'held' }));
    const first = await runTurn(t.client, sid, 'echo held');
    const use = first.events.find((e) => e.type === 'agent.mcp_tool_use');
    expect(use).toMatchObject({
      name: 'mcp__srv__echo',
      evaluated_permission: 'ask',
      evaluation: { type: 'always_ask' },
    });
    expect(first.events.some((e) => e.type === 'agent.mcp_tool_result')).toBe(false);
    expect(first.idle.stop_reason).toEqual({ type: 'requires_action', event_ids: [use.id] });

    t.model.script(MODEL, call('mcp__srv__echo', { text: 'again' }));
    const allowed = await untilIdle(t.client, sid, [
      { type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' },
    ]);
    const ran = allowed.find((e) => e.type === 'agent.mcp_tool_result');
    expect(ran).toMatchObject({
      mcp_tool_use_id: use.id,
      content: [{ type: 'text', text: 'echo: held' }],
      is_error: false,
    });
    // The model's next call of the held tool is held again.
    const second = allowed.find((e) => e.type === 'agent.mcp_tool_use');
    expect(second).toMatchObject({ evaluated_permission: 'ask' });
    expect(allowed.at(-1).stop_reason).toEqual({
      type: 'requires_action',
      event_ids: [second.id],
    });

    t.model.script(MODEL, say('denied, fine'));
    const denied = await untilIdle(t.client, sid, [
      {
        type: 'user.tool_confirmation',
        tool_use_id: second.id,
        result: 'deny',
        deny_message: 'not this one',
      },
    ]);
    expect(denied.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      mcp_tool_use_id: second.id,
      content: [{ type: 'text', text: 'not this one' }],
      is_error: true,
    });
    expect(denied.at(-1).stop_reason).toEqual({ type: 'end_turn' });
  });
});

describe('MCP tools in a turn: failures', () => {
  it('an unreachable server: mcp_connection_failed_error, and the turn ends normally with the other server', async () => {
    const sid = await session(
      [
        { type: 'url', name: 'down', url: `http://127.0.0.1:${downPort}/mcp` },
        { type: 'url', name: 'srv', url: open.url },
      ],
      [toolset('down'), toolset('srv')],
    );
    t.model.script(MODEL, call('mcp__srv__add', { a: 2, b: 3 }), say('five'));
    const before = modelCount();
    const turn = await runTurn(t.client, sid, 'add');
    const errors = turn.events.filter((e) => e.type === 'session.error');
    expect(errors).toHaveLength(1);
    expect(errors[0].error).toMatchObject({
      type: 'mcp_connection_failed_error',
      mcp_server_name: 'down',
      retry_status: { type: 'retrying' },
    });
    expect(errors[0].error.message).toContain("'down'");
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      content: [{ type: 'text', text: '5' }],
      is_error: false,
    });
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
    expect(toolNames(requestsSince(before)[0]).sort()).toEqual([
      'mcp__srv__add',
      'mcp__srv__echo',
      'mcp__srv__fail',
    ]);
  });

  it('a server that never answers: discovery gives up after MCP_DISCOVERY_TIMEOUT_MS and the turn goes on', async () => {
    const port = (silent.address() as AddressInfo).port;
    const sid = await session(
      [{ type: 'url', name: 'mute', url: `http://127.0.0.1:${port}/mcp` }],
      [toolset('mute')],
    );
    t.model.script(MODEL, say('without mute'));
    const turn = await runTurn(t.client, sid, 'hello');
    const err = turn.events.find((e) => e.type === 'session.error');
    expect(err.error).toMatchObject({
      type: 'mcp_connection_failed_error',
      mcp_server_name: 'mute',
      message: `MCP server 'mute' did not answer within ${DISCOVERY_MS} ms`,
    });
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });

  it('a wrong bearer: mcp_authentication_failed_error without the token; the turn still ends', async () => {
    const sid = await session(
      [{ type: 'url', name: 'srv', url: locked.url, authorization_token: WRONG }],
      [toolset('srv')],
    );
    t.model.script(MODEL, say('no tools today'));
    const before = modelCount();
    const turn = await runTurn(t.client, sid, 'try');
    const err = turn.events.find((e) => e.type === 'session.error');
    expect(err.error).toMatchObject({
      type: 'mcp_authentication_failed_error',
      mcp_server_name: 'srv',
      retry_status: { type: 'retrying' },
    });
    expect(locked.seen.at(-1)?.authorization).toBe(`Bearer ${WRONG}`);
    expect(toolNames(requestsSince(before)[0])).toEqual([]);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
    noToken(JSON.stringify(turn.events));
    noToken(JSON.stringify((await t.client.beta.sessions.events.list(sid)).data));
  });

  it('an image in a tool result is served as an SDK image block and reaches the model', async () => {
    const port = (pictures.address() as AddressInfo).port;
    const sid = await session(
      [{ type: 'url', name: 'pic', url: `http://127.0.0.1:${port}/mcp` }],
      [toolset('pic')],
    );
    t.model.script(MODEL, call('mcp__pic__pixel', {}), say('nice pixel'));
    const before = modelCount();
    const turn = await runTurn(t.client, sid, 'draw');
    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: PIXEL },
    };
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      content: [image, { type: 'text', text: 'a pixel' }],
      is_error: false,
    });
    for (const e of (await t.client.beta.sessions.events.list(sid)).data) validateSessionEvent(e);
    const blocks = requestsSince(before)[1].body.messages.flatMap((m: any) =>
      Array.isArray(m.content) ? m.content : [],
    );
    expect(blocks.find((b: any) => b.type === 'tool_result').content).toEqual([
      image,
      { type: 'text', text: 'a pixel' },
    ]);
  });

  it('a tool that fails is an is_error result and the turn goes on', async () => {
    const sid = await session([{ type: 'url', name: 'srv', url: open.url }], [toolset('srv')]);
    t.model.script(MODEL, call('mcp__srv__fail', {}), say('it failed'));
    const turn = await runTurn(t.client, sid, 'fail');
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      content: [{ type: 'text', text: 'the fail tool failed' }],
      is_error: true,
    });
    expect(turn.events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
      'it failed',
    );
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });
});
