/**
 * Section i: credentials on the way out.
 * 1. The session egress proxy: an HTTPS request with a credential injected (TLS intercepted with
 *    the deployment CA) beside a direct request and a raw tunnel, p50/p99
 *    (core/bench/egress.bench.ts, loaded at run time).
 * 2. An MCP tool call round trip (`tools/call` of the official SDK client): straight to an MCP
 *    server of ours (test/kit/fixtures/mcpServer.ts, requiring a bearer) beside the same call through
 *    the platform's MCP proxy route `/v1/svc/mcp-proxy/<sid>/<server>` (operator key; the bearer
 *    comes from the session's vault, injected by the proxy and never held by the client).
 *    Its own in-process platform (embedded adapters) with EGRESS_ALLOW_PRIVATE_HOSTS opening the
 *    fixture's 127.0.0.1 port.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startBenchPlatform } from './context.js';
import { printSection, printTable, summarize, fmt } from './stats.js';

interface McpFixture {
  url: string;
  port: number;
  close(): Promise<void>;
}

async function callTimes(client: Client, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + 10; i++) {
    const t0 = performance.now();
    const r = await client.callTool({ name: 'add', arguments: { a: i, b: 1 } });
    if ((r.content as Array<{ text?: string }>)[0]?.text !== String(i + 1))
      throw new Error(`bench: unexpected MCP answer ${JSON.stringify(r.content)}`);
    if (i >= 10) out.push(performance.now() - t0);
  }
  return out;
}

async function mcpRoundTrip(n: number): Promise<Array<[string, number[]]>> {
  const fixture = new URL('../../test/kit/fixtures/mcpServer.ts', import.meta.url).href;
  const { startMcpServer } = (await import(fixture)) as {
    startMcpServer: (o: { tokens: string[] }) => Promise<McpFixture>;
  };
  const token = `bench-mcp-${Math.random().toString(36).slice(2)}`;
  const server = await startMcpServer({ tokens: [token] });
  const p = await startBenchPlatform({ EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${server.port}` });
  const clients: Client[] = [];
  try {
    const ok = async (method: string, path: string, body: unknown) => {
      const r = await p.json<any>(method, path, body);
      if (r.status >= 300)
        throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const vault = await ok('POST', '/v1/vaults', { display_name: 'bench' });
    await ok('POST', `/v1/vaults/${vault.id}/credentials`, {
      auth: { type: 'static_bearer', token, mcp_server_url: server.url },
    });
    const agent = await ok('POST', '/v1/agents', {
      name: 'bench-mcp',
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ name: 'bench', type: 'url', url: server.url }],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'bench' }],
    });
    const env = await ok('POST', '/v1/environments', { name: `bench-mcp-${Date.now()}` });
    const s = await ok('POST', '/v1/sessions', {
      agent: agent.id,
      environment_id: env.id,
      vault_ids: [vault.id],
    });
    const connect = async (url: string, authorization: string) => {
      const c = new Client({ name: 'agentfleet-bench', version: '1' });
      await c.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization } },
        }),
      );
      clients.push(c);
      return c;
    };
    const direct = await connect(server.url, `Bearer ${token}`);
    const proxied = await connect(`${p.url}/v1/svc/mcp-proxy/${s.id}/bench`, `Bearer ${p.apiKey}`);
    return [
      ['MCP tools/call, direct to the server', await callTimes(direct, n)],
      [
        'MCP tools/call, through /v1/svc/mcp-proxy (vault bearer injected)',
        await callTimes(proxied, n),
      ],
    ];
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await p.close();
    await server.close();
  }
}

export async function egressSection(): Promise<void> {
  printSection(
    'i. Credentials on the way out: injected egress request and MCP tool call round trip',
  );
  const url = new URL('../../core/bench/egress.bench.ts', import.meta.url);
  const mod = (await import(url.href)) as {
    egressBench: (o?: { requests?: number }) => Promise<unknown>;
  };
  await mod.egressBench({ requests: 400 });
  const rows = await mcpRoundTrip(300);
  printTable(
    'MCP tool call round trip (sequential, one client, embedded adapters)',
    ['measurement', 'n', 'p50 ms', 'p99 ms', 'mean ms'],
    rows.map(([name, samples]) => {
      const s = summarize(samples);
      return [name, String(s.n), fmt(s.p50), fmt(s.p99), fmt(s.mean)];
    }),
    [
      'the difference between the two rows is what the MCP proxy adds (route, session and vault read, injection)',
    ],
  );
}
