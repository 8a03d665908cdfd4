/**
 * An MCP tool call in flight survives kill -9 of the all-in-one process like any tool call:
 * the recovered turn answers the orphaned agent.mcp_tool_use with an is_error
 * agent.mcp_tool_result (session.warning orphan_tool_use), leaves the call held by always_ask
 * open (requires_action naming it, the model not called again), and the client's allow then
 * runs it on the MCP server through the restarted platform. Proves the MCP rules of
 * workers/src/turn/recovery.ts and workers/src/tools/permissions.ts (state read from the event
 * log).
 * The MCP server is built here with the official MCP SDK: `slow` answers only after the test.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { apiCaller, crashEnv, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { realAdapterEnv } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-mcp-crash-', { defaultText: 'done after the crash' });

let slowCalled: () => void;
const slowReached = new Promise<void>((r) => (slowCalled = r));
let release: () => void;
const released = new Promise<void>((r) => (release = r));
let srv: http.Server;
let url = '';
beforeAll(async () => {
  srv = http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const server = new McpServer({ name: 'crash-mcp', version: '1.0.0' });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: 'text', text: `echo: ${text}` }],
    }));
    server.registerTool('slow', { inputSchema: {} }, async () => {
      slowCalled();
      await released;
      return { content: [{ type: 'text', text: 'slow done' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  release();
  srv.closeAllConnections();
  await new Promise<void>((r) => srv.close(() => r()));
});

describe('kill -9 while an MCP tool call runs beside a held one', () => {
  it('the orphan gets an error agent.mcp_tool_result, the held call runs once allowed', async () => {
    const port = await freePort();
    const key = 'op-mcp-crash';
    const env = {
      ...crashEnv({ port, dataDir: fx.dataDir, key, secret: 'mcp-crash-secret-0123456789abcdef' }),
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: fx.model.url,
      SANDBOX_DRIVER: 'none',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(url).host,
      ...realAdapterEnv(),
    };
    const call = apiCaller(port, key);
    const { events, firstIdle, endTurn } = sessionEvents(call);
    let proc = await startProcess('all', env);
    try {
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agent = await call('/v1/agents', {
        name: 'a',
        model: 'mcp-crash-model',
        mcp_servers: [{ type: 'url', name: 'srv', url }],
        tools: [
          {
            type: 'mcp_toolset',
            mcp_server_name: 'srv',
            configs: [{ name: 'echo', permission_policy: { type: 'always_ask' } }],
          },
        ],
      });
      expect(agent.status, JSON.stringify(agent.body)).toBe(200);
      const sid = (await call('/v1/sessions', { agent: agent.body.id, environment_id: envId })).body
        .id;
      fx.model.script('mcp-crash-model', {
        steps: [
          { tool_use: { name: 'mcp__srv__echo', input: { text: 'held' } } },
          { tool_use: { name: 'mcp__srv__slow', input: {} } },
        ],
      });
      await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
      });
      await slowReached; // the allowed call is running on the MCP server
      const uses = (await events(sid)).filter((e) => e.type === 'agent.mcp_tool_use');
      const [echo, slow] = uses;
      expect(uses.map((u) => [u.name, u.evaluated_permission])).toEqual([
        ['mcp__srv__echo', 'ask'],
        ['mcp__srv__slow', 'allow'],
      ]);
      await kill9(proc.child);

      proc = await startProcess('all', env);
      const recovered = await firstIdle(sid);
      expect(recovered.at(-1).stop_reason).toEqual({
        type: 'requires_action',
        event_ids: [echo.id],
      });
      const results = recovered.filter((e) => e.type === 'agent.mcp_tool_result');
      expect(results.map((e) => [e.mcp_tool_use_id, e.is_error])).toEqual([[slow.id, true]]);
      expect(
        recovered.find((e) => e.type === 'session.warning' && e.warning === 'orphan_tool_use')
          .tool_use_id,
      ).toBe(slow.id);
      expect(fx.model.requests.filter((r) => r.model === 'mcp-crash-model')).toHaveLength(1);

      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.tool_confirmation', tool_use_id: echo.id, result: 'allow' }],
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const finished = await endTurn(sid);
      const ran = finished.find(
        (e) => e.type === 'agent.mcp_tool_result' && e.mcp_tool_use_id === echo.id,
      );
      expect([ran.is_error, ran.content]).toEqual([false, [{ type: 'text', text: 'echo: held' }]]);
      expect(finished.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'done after the crash',
      );
    } finally {
      await kill9(proc.child);
    }
  }, 150_000);
});
