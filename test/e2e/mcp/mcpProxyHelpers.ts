/**
 * Helpers of the MCP proxy tests (test/mcp-proxy*.test.ts): a session whose agent has url MCP
 * servers (and vaults), the official MCP SDK client connected through the gateway route
 * (operator key) or straight through `platform.mcpProxy.forward`, raw JSON-RPC posts, and the
 * platform's JSON log lines captured around a call.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { vi } from 'vitest';
import type { McpCaller } from '@agentfleet/core';
import type { Platform } from '@agentfleet/server';
import type { TestPlatform } from '../../kit/harness.js';

export const rnd = () => Math.random().toString(36).slice(2, 12);

export interface UrlServer {
  name: string;
  url: string;
  authorization_token?: string;
}

/** An environment, an agent with these url servers (one mcp_toolset each), and a session with these vaults. */
export async function sessionWith(
  client: Anthropic,
  servers: UrlServer[],
  vaultIds: string[] = [],
): Promise<string> {
  const env = await client.beta.environments.create({ name: `mcp-env-${rnd()}` });
  const agent = await client.beta.agents.create({
    name: `mcp-agent-${rnd()}`,
    model: 'claude-sonnet-4-5',
    mcp_servers: servers.map((s) => ({ type: 'url', ...s })),
    tools: servers.map((s) => ({ type: 'mcp_toolset', mcp_server_name: s.name })),
  } as any);
  const s = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    ...(vaultIds.length ? { vault_ids: vaultIds } : {}),
  } as any);
  return s.id;
}

export const proxyUrl = (t: TestPlatform, sid: string, server: string) =>
  `${t.url}/v1/svc/mcp-proxy/${sid}/${server}`;

/** The MCP SDK client over Streamable HTTP, through the gateway route with the operator key. */
export async function clientViaGateway(
  t: TestPlatform,
  sid: string,
  server: string,
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(proxyUrl(t, sid, server)), {
    fetch: (url, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${t.operatorKey}`);
      return fetch(url, { ...init, headers });
    },
  });
  const c = new Client({ name: 'mcp-proxy-test', version: '1.0.0' });
  await c.connect(transport);
  return c;
}

/** The MCP SDK client whose fetch is `platform.mcpProxy.forward` (what the worker does). */
export async function clientViaForward(
  p: Platform,
  tenantId: string,
  sid: string,
  server: string,
  caller: McpCaller = 'rpc-mcp',
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(
    new URL(`http://mcp-proxy.invalid/${sid}/${server}`),
    {
      fetch: async (_url, init) =>
        p.mcpProxy.forward({
          tenantId,
          sessionId: sid,
          server,
          method: init?.method ?? 'GET',
          headers: Object.fromEntries(new Headers(init?.headers).entries()),
          body: typeof init?.body === 'string' ? init.body : null,
          caller,
          signal: init?.signal ?? undefined,
        }),
    },
  );
  const c = new Client({ name: 'mcp-proxy-test', version: '1.0.0' });
  await c.connect(transport);
  return c;
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

/** One raw JSON-RPC POST through the gateway route (`key`: the bearer; null for none). */
export function rpc(
  t: TestPlatform,
  sid: string,
  server: string,
  body: unknown = INITIALIZE,
  key: string | null = t.operatorKey,
): Promise<Response> {
  return fetch(proxyUrl(t, sid, server), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The text of the first content block of a tools/call result. */
export const textOf = (r: any): string => r?.content?.[0]?.text;

/** Runs `fn` with stderr captured; returns its result and the JSON log lines written meanwhile. */
export async function withLogs<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; lines: any[]; raw: string }> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: unknown) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stderr.write);
  let value: T;
  try {
    value = await fn();
  } finally {
    spy.mockRestore();
  }
  const raw = chunks.join('');
  const lines = raw
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .filter(Boolean);
  return { value, lines, raw };
}

export const forwardLines = (lines: any[]) => lines.filter((l) => l.msg === 'mcp_proxy.forward');
