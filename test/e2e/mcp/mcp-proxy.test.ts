/**
 * The MCP proxy (core/src/mcp/proxy.ts, gateway/src/routes/mcpProxy.ts) against real MCP
 * servers of ours on 127.0.0.1 (test/kit/fixtures/mcpServer.ts, built with the official MCP SDK),
 * driven by the official MCP SDK client through the gateway route and through
 * `platform.mcpProxy.forward`:
 * - every auth mode reaches the server with the right bearer: none, inline
 *   authorization_token, vault static_bearer, vault mcp_oauth; a vault rotation applies to the
 *   next call (read live);
 * - one log line per call with exactly the spec's fields, no token in it;
 * - hostile: tenant key / no key on the route, another tenant's session, unknown session or
 *   server, a private address the operator did not open, a body over the cap.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';
import {
  clientViaForward,
  clientViaGateway,
  forwardLines,
  rnd,
  rpc,
  sessionWith,
  textOf,
  withLogs,
} from './mcpProxyHelpers.js';

const INLINE = `inline-${rnd()}${rnd()}`;
const STATIC = `static-${rnd()}${rnd()}`;
const OAUTH = `oauth-access-${rnd()}${rnd()}`;
const ROTATED = `static-rotated-${rnd()}${rnd()}`;
const TOKENS = [INLINE, STATIC, OAUTH, ROTATED];
const MAX_BODY = 64 * 1024;

let t: TestPlatform;
let open: McpServerFixture; // no auth
let locked: McpServerFixture; // bearer required
let closed: McpServerFixture; // on a port the operator did not open
let goneUrl: string; // opened, but nothing listens there
/** Records every header it gets; answers with a cookie, a session id and the bearer it got. */
let echo: http.Server;
let echoUrl: string;
const echoed: http.IncomingHttpHeaders[] = [];
beforeAll(async () => {
  open = await startMcpServer();
  locked = await startMcpServer({ tokens: [INLINE, STATIC, OAUTH] });
  closed = await startMcpServer();
  const gone = await startMcpServer();
  goneUrl = gone.url;
  await gone.close();
  echo = http.createServer((req, res) => {
    echoed.push(req.headers);
    req.resume();
    res.writeHead(200, {
      'content-type': 'application/json',
      'set-cookie': 'upstream=1',
      'mcp-session-id': 'sess-upstream-1',
      'x-echo-authorization': String(req.headers.authorization),
    });
    res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/mcp`;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      LOG_LEVEL: 'info',
      MCP_PROXY_MAX_BODY_BYTES: String(MAX_BODY),
      EGRESS_ALLOW_PRIVATE_HOSTS: [open.url, locked.url, goneUrl, echoUrl]
        .map((u) => new URL(u).host)
        .join(','),
    },
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([open, locked, closed].map((s) => s?.close()));
  echo?.closeAllConnections();
  await new Promise((r) => echo?.close(r));
});

const lastAuth = (s: McpServerFixture) => s.seen.at(-1)?.authorization;
const noToken = (text: string) => {
  for (const tok of TOKENS) expect(text).not.toContain(tok);
};

describe('MCP proxy: auth modes', () => {
  it('none: the server gets no Authorization (the caller’s operator key never goes upstream)', async () => {
    const sid = await sessionWith(t.client, [{ name: 'open', url: open.url }]);
    const c = await clientViaGateway(t, sid, 'open');
    expect(textOf(await c.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
    await c.close();
    expect(open.seen.length).toBeGreaterThan(1);
    for (const s of open.seen) expect(s.authorization).toBeUndefined();
  });

  it('inline authorization_token, through the gateway route and through forward', async () => {
    const { tenantId, client } = await t.newTenant('inline');
    const sid = await sessionWith(client, [
      { name: 'locked', url: locked.url, authorization_token: INLINE },
    ]);
    const c = await clientViaGateway(t, sid, 'locked');
    const tools = await c.listTools();
    expect(tools.tools.map((x) => x.name)).toEqual(['echo', 'add', 'fail']);
    expect(textOf(await c.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
    await c.close();
    expect(lastAuth(locked)).toBe(`Bearer ${INLINE}`);

    const f = await clientViaForward(t.server.platform, tenantId, sid, 'locked');
    expect(textOf(await f.callTool({ name: 'echo', arguments: { text: 'rpc' } }))).toBe(
      'echo: rpc',
    );
    await f.close();
    expect(lastAuth(locked)).toBe(`Bearer ${INLINE}`);
  });

  it('vault static_bearer matched by host, read live: a rotation applies to the next call', async () => {
    const { tenantId, client } = await t.newTenant('static');
    const v = await client.beta.vaults.create({ display_name: 'static' });
    const cred = await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: STATIC, mcp_server_url: locked.url },
    });
    const sid = await sessionWith(client, [{ name: 'locked', url: locked.url }], [v.id]);
    const f = await clientViaForward(t.server.platform, tenantId, sid, 'locked');
    expect(textOf(await f.callTool({ name: 'echo', arguments: { text: 'a' } }))).toBe('echo: a');
    expect(lastAuth(locked)).toBe(`Bearer ${STATIC}`);

    locked.tokens.add(ROTATED);
    await client.beta.vaults.credentials.update(cred.id, {
      vault_id: v.id,
      auth: { type: 'static_bearer', token: ROTATED },
    });
    expect(textOf(await f.callTool({ name: 'echo', arguments: { text: 'b' } }))).toBe('echo: b');
    expect(lastAuth(locked)).toBe(`Bearer ${ROTATED}`);
    await f.close();
    locked.tokens.delete(ROTATED);
  });

  it('vault mcp_oauth: its access token is the bearer', async () => {
    const { client } = await t.newTenant('oauth');
    const v = await client.beta.vaults.create({ display_name: 'oauth' });
    await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'mcp_oauth', access_token: OAUTH, mcp_server_url: locked.url },
    });
    const sid = await sessionWith(client, [{ name: 'locked', url: locked.url }], [v.id]);
    const c = await clientViaGateway(t, sid, 'locked');
    expect(textOf(await c.callTool({ name: 'echo', arguments: { text: 'o' } }))).toBe('echo: o');
    await c.close();
    expect(lastAuth(locked)).toBe(`Bearer ${OAUTH}`);
  });

  it('no bearer reaches a server that needs one: its 401 comes back as it was', async () => {
    const sid = await sessionWith(t.client, [{ name: 'locked', url: locked.url }]);
    const res = await rpc(t, sid, 'locked');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('invalid_token');
    expect(await res.json()).toMatchObject({ error: { message: 'unauthorized' } });
  });
});

describe('MCP proxy: headers', () => {
  it("the caller's credentials never go upstream; the injected bearer never comes back", async () => {
    const sid = await sessionWith(t.client, [
      { name: 'echo', url: echoUrl, authorization_token: INLINE },
    ]);
    const res = await fetch(`${t.url}/v1/svc/mcp-proxy/${sid}/echo`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.operatorKey}`,
        'x-api-key': t.operatorKey,
        cookie: 'session=caller',
        'anthropic-beta': 'managed-agents-2026-04-01',
        'content-type': 'application/json',
        'mcp-session-id': 'sess-upstream-1',
        'mcp-protocol-version': '2025-06-18',
      },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(res.status).toBe(200);
    const got = echoed.at(-1)!;
    expect(got.authorization).toBe(`Bearer ${INLINE}`);
    expect([got['x-api-key'], got.cookie, got['anthropic-beta']]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(got['mcp-session-id']).toBe('sess-upstream-1');
    expect(got['mcp-protocol-version']).toBe('2025-06-18');
    expect(got.host).toBe(new URL(echoUrl).host);
    expect(JSON.stringify(got)).not.toContain(t.operatorKey);
    // Back: the session id passes; cookies and the header echoing the bearer do not.
    expect(res.headers.get('mcp-session-id')).toBe('sess-upstream-1');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-echo-authorization')).toBeNull();
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });

    // Hop-by-hop headers (and those `connection` names) stay on the caller's hop (forward).
    const tenantId = (await t.server.platform.mcpProxy.sessionTenant(sid))!;
    const direct = await t.server.platform.mcpProxy.forward({
      tenantId,
      sessionId: sid,
      server: 'echo',
      method: 'POST',
      headers: {
        Connection: 'x-hop',
        'x-hop': 'dropped',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        'proxy-authorization': 'Basic c2VjcmV0',
        Authorization: 'Bearer caller-own',
        'x-kept': 'yes',
      },
      body: '{}',
      caller: 'rpc-mcp',
    });
    expect(direct.status).toBe(200);
    const hop = echoed.at(-1)!;
    expect([hop['x-hop'], hop['keep-alive'], hop.te, hop['proxy-authorization']]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect([hop.authorization, hop['x-kept']]).toEqual([`Bearer ${INLINE}`, 'yes']);
  });
});

describe('MCP proxy: log line', () => {
  it('one line per call with exactly the spec fields, and no token', async () => {
    const { tenantId, client } = await t.newTenant('logs');
    const sid = await sessionWith(client, [
      { name: 'locked', url: locked.url, authorization_token: INLINE },
    ]);
    const { value: res, lines, raw } = await withLogs(() => rpc(t, sid, 'locked'));
    expect(res.status).toBe(200);
    // Streamable HTTP answered as server-sent events: streamed through as they came.
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).toMatch(/^event: message\ndata: \{.*"serverInfo"/m);
    noToken(text);
    noToken(raw);
    const logged = forwardLines(lines);
    expect(logged).toHaveLength(1);
    const { level, time, msg, ...fields } = logged[0];
    expect([level, msg, typeof time]).toEqual(['info', 'mcp_proxy.forward', 'string']);
    expect(Object.keys(fields).sort()).toEqual(
      [
        'op',
        'caller',
        'tenant_id',
        'session_id',
        'server',
        'host',
        'method',
        'status',
        'refreshed',
        'ms',
      ].sort(),
    );
    expect(fields).toMatchObject({
      op: 'mcp_proxy.forward',
      caller: 'http',
      tenant_id: tenantId,
      session_id: sid,
      server: 'locked',
      host: '127.0.0.1',
      method: 'POST',
      status: 200,
      refreshed: false,
    });
    expect(typeof fields.ms).toBe('number');

    const viaRpc = await withLogs(async () => {
      const f = await clientViaForward(t.server.platform, tenantId, sid, 'locked', 'rpc-outbound');
      await f.close();
    });
    const rpcLines = forwardLines(viaRpc.lines);
    expect(rpcLines.length).toBeGreaterThan(0);
    for (const l of rpcLines) expect(l.caller).toBe('rpc-outbound');
    noToken(viaRpc.raw);
  });
});

describe('MCP proxy: hostile input', () => {
  it('no key → 401, a tenant key → 403, in the error shape', async () => {
    const { apiKey } = await t.newTenant('keys');
    const sid = await sessionWith(t.client, [{ name: 'open', url: open.url }]);
    const none = await rpc(t, sid, 'open', undefined, null);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ type: 'error', error: { type: 'unauthorized' } });
    const tenant = await rpc(t, sid, 'open', undefined, apiKey);
    expect(tenant.status).toBe(403);
    expect(await tenant.json()).toMatchObject({ type: 'error', error: { type: 'forbidden' } });
    const wrong = await rpc(t, sid, 'open', undefined, 'not-the-operator-key');
    expect(wrong.status).toBe(401);
  });

  it("unknown session or server → 404; another tenant's session through forward → 404", async () => {
    const a = await t.newTenant('a');
    const b = await t.newTenant('b');
    const sid = await sessionWith(a.client, [
      { name: 'locked', url: locked.url, authorization_token: INLINE },
    ]);
    const unknownSession = await rpc(t, 'sess_doesnotexist', 'locked');
    expect(unknownSession.status).toBe(404);
    expect(await unknownSession.json()).toMatchObject({ error: { type: 'not_found' } });
    const unknownServer = await rpc(t, sid, 'nope');
    expect(unknownServer.status).toBe(404);
    expect(((await unknownServer.json()) as any).error.message).toContain('nope');
    const before = locked.seen.length;
    const foreign = await t.server.platform.mcpProxy.forward({
      tenantId: b.tenantId,
      sessionId: sid,
      server: 'locked',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      caller: 'rpc-mcp',
    });
    expect(foreign.status).toBe(404);
    const text = await foreign.text();
    expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'not_found' } });
    noToken(text);
    expect(locked.seen.length).toBe(before);
  });

  it('a private address the operator did not open is refused (502 naming the setting), nothing sent', async () => {
    const sid = await sessionWith(t.client, [{ name: 'closed', url: closed.url }]);
    const res = await rpc(t, sid, 'closed');
    expect(res.status).toBe(502);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ type: 'error', error: { details: { reason: 'egress_refused' } } });
    expect(body.error.message).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
    expect(closed.seen).toEqual([]);
  });

  it('an upstream that cannot be reached → 502 in the error shape, no crash', async () => {
    const sid = await sessionWith(t.client, [{ name: 'gone', url: goneUrl }]);
    const res = await rpc(t, sid, 'gone');
    expect(res.status).toBe(502);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      type: 'error',
      error: { details: { reason: 'upstream_unreachable' } },
    });
    expect(body.error.message).toContain('gone');
  });

  it('a body over MCP_PROXY_MAX_BODY_BYTES → 413 naming body (route and forward)', async () => {
    const { tenantId, client } = await t.newTenant('big');
    const sid = await sessionWith(client, [{ name: 'open', url: open.url }]);
    const before = open.seen.length;
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'x',
      params: { p: 'x'.repeat(MAX_BODY) },
    });
    const res = await rpc(t, sid, 'open', big);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({
      error: { type: 'invalid_request', details: { field: 'body' } },
    });
    const direct = await t.server.platform.mcpProxy.forward({
      tenantId,
      sessionId: sid,
      server: 'open',
      method: 'POST',
      headers: {},
      body: big,
      caller: 'rpc-mcp',
    });
    expect(direct.status).toBe(413);
    expect(open.seen.length).toBe(before);
  });

  it('the route is not the tenant API: the SDK with a tenant key cannot use it', async () => {
    const { apiKey } = await t.newTenant('sdk');
    const c = new Anthropic({ apiKey, baseURL: t.url, maxRetries: 0 });
    await expect(c.post('/v1/svc/mcp-proxy/sess_x/open', { body: {} })).rejects.toBeInstanceOf(
      Anthropic.PermissionDeniedError,
    );
  });
});
