/**
 * HTTP+SSE MCP servers (the SDK's deprecated SSEServerTransport: GET /sse, whose `endpoint`
 * event names POST /messages?sessionId=…) through the MCP proxy (core/src/mcp/proxy.ts,
 * core/src/mcp/sseEndpoint.ts, gateway/src/routes/mcpProxy.ts, core/src/mcp/client.ts), against
 * a real server of ours on 127.0.0.1 requiring a bearer (test/kit/fixtures/mcpSseServer.ts):
 * - the worker's connectUrlServer: Streamable HTTP gets a 4xx, the SSE fallback connects through
 *   `platform.mcpProxy.forward` (the announced endpoint mapped to `path`), tools list and call,
 *   the server saw the injected bearer on the stream and on every message; log lines keep the
 *   spec's fields only;
 * - the gateway route: the SDK's SSEClientTransport on `/v1/svc/mcp-proxy/<sid>/<server>` with
 *   the operator key; the endpoint event is rewritten to the proxy's `/*` route;
 * - a turn through the TypeScript SDK calls the SSE server's tool (fallback in the worker);
 * - the rewrite survives split chunks and CRLF line ends; a foreign-origin endpoint is untouched;
 * - hostile `path` values (another host, `//host`, backslash, scheme, no leading slash) are a 400
 *   naming path, through forward and through the route; nothing reaches the other host.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectUrlServer } from '@agentfleet/core';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpSseServer, type McpSseServerFixture } from '../../kit/fixtures/mcpSseServer.js';
import { forwardLines, proxyUrl, rnd, textOf, withLogs } from './mcpProxyHelpers.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const TOKEN = `sse-inline-${rnd()}${rnd()}`;
const MODEL = 'mcp-sse-model';

let t: TestPlatform;
let sse: McpSseServerFixture;
/** Another host (port) the operator opened: a hostile path must never reach it. */
let decoy: http.Server;
let decoyPort = 0;
let decoyHits = 0;
/** A raw SSE server: the endpoint event split across writes, CRLF line ends, then other events. */
let raw: http.Server;
let rawPort = 0;
beforeAll(async () => {
  sse = await startMcpSseServer({ token: TOKEN });
  decoy = http.createServer((req, res) => {
    decoyHits++;
    req.resume();
    res.end('decoy');
  });
  await new Promise<void>((r) => decoy.listen(0, '127.0.0.1', r));
  decoyPort = (decoy.address() as AddressInfo).port;
  raw = http.createServer(async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const other = req.url === '/foreign';
    const parts = other
      ? ['event: endpoint\r\ndata: http://elsewhere.example/msg\r\n\r\n']
      : [
          'event: endpoint\r\n',
          'data: /msg?sessionId=1\r',
          '\n\r\n: ping\r\n\r\n',
          'event: message\r\ndata: {}\r\n\r\n',
        ];
    for (const part of parts) {
      res.write(part);
      await new Promise((r) => setTimeout(r, 5));
    }
    res.end();
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  rawPort = (raw.address() as AddressInfo).port;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      LOG_LEVEL: 'info',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${sse.port},127.0.0.1:${decoyPort},127.0.0.1:${rawPort}`,
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await sse?.close();
  for (const srv of [decoy, raw]) {
    srv?.closeAllConnections();
    await new Promise((r) => srv?.close(r));
  }
});

/** A session whose agent has the SSE server `sse` (inline bearer) and its toolset. */
async function sseSession(client: TestPlatform['client'], model = 'claude-sonnet-4-5') {
  const env = await client.beta.environments.create({ name: `mcp-sse-${rnd()}` });
  const agent = await client.beta.agents.create({
    name: `mcp-sse-${rnd()}`,
    model,
    mcp_servers: [{ type: 'url', name: 'sse', url: sse.url, authorization_token: TOKEN }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'sse' }],
  } as any);
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any);
  return s.id;
}

const seenSince = (n: number) => sse.seen.slice(n);

describe('MCP proxy: HTTP+SSE servers', () => {
  it('connectUrlServer: Streamable HTTP 4xx → SSE fallback through forward; bearer injected on stream and messages', async () => {
    const { tenantId, client } = await t.newTenant('sse-forward');
    const sid = await sseSession(client);
    const before = sse.seen.length;
    const p = t.server.platform;
    const { value: conn, lines } = await withLogs(async () => {
      const c = await connectUrlServer({
        server: 'sse',
        tenantId,
        sessionId: sid,
        forward: (r) => p.mcpProxy.forward(r),
        timeoutMs: 10_000,
      });
      const r = await c.call('echo', { text: 'hi' }, new AbortController().signal);
      expect(r).toEqual({ content: [{ type: 'text', text: 'sse echo: hi' }], isError: false });
      return c;
    });
    expect(conn.tools.map((x) => x.name)).toEqual(['echo', 'add', 'fail']);
    await conn.close();
    const seen = seenSince(before);
    // Streamable HTTP first (POST /sse → 405), then the SSE stream and its message endpoint.
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/sse' });
    expect(seen.some((s) => s.method === 'GET' && s.path === '/sse')).toBe(true);
    const posts = seen.filter((s) => s.method === 'POST' && s.path.startsWith('/messages?'));
    expect(posts.length).toBeGreaterThanOrEqual(3); // initialize, initialized, tools/list, call
    for (const s of seen) expect(s.authorization).toBe(`Bearer ${TOKEN}`);
    const logged = forwardLines(lines);
    expect(logged.length).toBe(seen.length);
    for (const l of logged) {
      expect(
        Object.keys(l)
          .filter((k) => !['level', 'time', 'msg'].includes(k))
          .sort(),
      ).toEqual(
        [
          'caller',
          'host',
          'method',
          'ms',
          'op',
          'refreshed',
          'server',
          'session_id',
          'status',
          'tenant_id',
        ].sort(),
      );
    }
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
  });

  it('gateway route: the SDK SSEClientTransport on the proxy URL (operator key); endpoint rewritten', async () => {
    const sid = await sseSession(t.client);
    const base = proxyUrl(t, sid, 'sse');
    const auth = `Bearer ${t.operatorKey}`;
    // The raw stream: the endpoint event names the proxy's own route, not the upstream path.
    const ac = new AbortController();
    const res = await fetch(base, {
      headers: { authorization: auth, accept: 'text/event-stream' },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (!/\n\n/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    ac.abort();
    expect(text).toMatch(
      new RegExp(`^event: endpoint\\ndata: /v1/svc/mcp-proxy/${sid}/sse/messages\\?sessionId=`),
    );

    const before = sse.seen.length;
    const transport = new SSEClientTransport(new URL(base), {
      fetch: (url, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', auth);
        return fetch(url, { ...init, headers });
      },
    });
    const c = new Client({ name: 'mcp-proxy-sse-test', version: '1.0.0' });
    await c.connect(transport);
    expect((await c.listTools()).tools.map((x) => x.name)).toEqual(['echo', 'add', 'fail']);
    expect(textOf(await c.callTool({ name: 'add', arguments: { a: 2, b: 5 } }))).toBe('7');
    await c.close();
    const seen = seenSince(before);
    expect(seen.filter((s) => s.path.startsWith('/messages?')).length).toBeGreaterThanOrEqual(3);
    for (const s of seen) expect(s.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('a turn through the TypeScript SDK calls the SSE server’s tool (fallback in the worker)', async () => {
    const sid = await sseSession(t.client, MODEL);
    t.model.script(MODEL, call('mcp__sse__echo', { text: 'turn' }), say('done'));
    const turn = await runTurn(t.client, sid, 'echo via sse');
    const use = turn.events.find((e) => e.type === 'agent.mcp_tool_use');
    expect(use).toMatchObject({ name: 'mcp__sse__echo', mcp_server_name: 'sse' });
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      mcp_tool_use_id: use.id,
      content: [{ type: 'text', text: 'sse echo: turn' }],
      is_error: false,
    });
    expect(turn.events.filter((e) => e.type === 'session.error')).toEqual([]);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
    expect(JSON.stringify(turn.events)).not.toContain(TOKEN);
    expect(JSON.stringify(t.model.requests)).not.toContain(TOKEN);
  });

  it('hostile path values are a 400 naming path; nothing reaches another host', async () => {
    const { tenantId, client } = await t.newTenant('sse-hostile');
    const sid = await sseSession(client);
    const other = `127.0.0.1:${decoyPort}`;
    const before = sse.seen.length;
    const hostile = [
      `http://${other}/x`,
      `//${other}/x`,
      `/\\${other}/x`,
      `\\\\${other}/x`,
      `https://${other}/x`,
      'javascript:alert(1)',
      'file:///etc/passwd',
      'messages',
      `/x\r\nhost: ${other}`,
      `/ /x`,
      '',
    ];
    for (const path of hostile) {
      const res = await t.server.platform.mcpProxy.forward({
        tenantId,
        sessionId: sid,
        server: 'sse',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        caller: 'rpc-mcp',
        path,
      });
      expect(res.status, path).toBe(400);
      const body = (await res.json()) as any;
      expect(body.error.type).toBe('invalid_request');
      expect(body.error.message).toMatch(/^path: /);
    }
    // Through the route: `//host/x` after the server segment is a path of another host.
    const viaRoute = await fetch(`${proxyUrl(t, sid, 'sse')}//${other}/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.operatorKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(viaRoute.status).toBe(400);
    expect(((await viaRoute.json()) as any).error.message).toMatch(/^path: /);
    expect(decoyHits).toBe(0);
    expect(sse.seen.length).toBe(before);
  });

  it('the endpoint rewrite survives split chunks and CRLF; a foreign-origin endpoint is left as it came', async () => {
    const { tenantId, client } = await t.newTenant('sse-raw');
    const env = await client.beta.environments.create({ name: `mcp-sse-${rnd()}` });
    const agent = await client.beta.agents.create({
      name: `mcp-sse-raw-${rnd()}`,
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ type: 'url', name: 'raw', url: `http://127.0.0.1:${rawPort}/sse` }],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'raw' }],
    } as any);
    const sid = (
      await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
    ).id;
    const get = async (path?: string) => {
      const res = await t.server.platform.mcpProxy.forward({
        tenantId,
        sessionId: sid,
        server: 'raw',
        method: 'GET',
        headers: { accept: 'text/event-stream' },
        body: null,
        caller: 'rpc-mcp',
        endpointBase: '/base/raw',
        ...(path ? { path } : {}),
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    expect(await get()).toBe(
      'event: endpoint\ndata: /base/raw/msg?sessionId=1\n\n: ping\n\nevent: message\ndata: {}\n\n',
    );
    expect(await get('/foreign')).toBe('event: endpoint\ndata: http://elsewhere.example/msg\n\n');
  });
});
