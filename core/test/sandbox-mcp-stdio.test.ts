/**
 * stdio MCP servers run INSIDE a real bubblewrap sandbox, owned by the sandbox agent, reached by
 * the official SDK `Client` over core/src/mcp/sandboxTransports.ts:
 * - flat stdio: tools listed and called; the process runs in the sandbox (cwd /workspace, a file
 *   only the sandbox has, the sandbox's env plus the server's `env`);
 * - a missing executable is an McpStartupError naming the command; a process that exits before
 *   answering is an McpStartupError with its exit code and stderr;
 * - closing the transport kills the process (pgrep on the host finds it before, not after);
 * - the nested port shape through sandboxHttpServer + StreamableHTTPClientTransport (the SDK's
 *   StreamableHTTPServerTransport inside the sandbox); GET answered 405 without reaching it;
 * - hostile httpLocal calls (another host, a port out of range, a huge body, a missing method
 *   argument) are refused by the agent with errors naming the argument.
 * The server is test/kit/fixtures/stdioMcpServer.ts, bundled with esbuild into one .mjs file.
 * Needs `bwrap` (apt-get install bubblewrap).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { lineSplitter, sandboxProgram } from '@agentfleet/sandbox-agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDriver, type LocalDriver } from '../src/sandbox/drivers/bubblewrap/driver.js';
import {
  McpStartupError,
  sandboxHttpServer,
  sandboxMcpTransport,
  sandboxStdioTransport,
} from '../src/mcp/sandboxTransports.js';
import type { SandboxAgentApi, SandboxHandle } from '../src/sandbox/port.js';
import { bundleStdioMcpServer } from '../../test/kit/fixtures/stdioMcpServerBundle.js';
import { testSpec } from './sandbox.contract.js';

const SERVER = '/workspace/mcp-server.mjs';
let base: string;
let driver: LocalDriver;
let h: SandboxHandle;
let api: SandboxAgentApi;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-mcp-'));
  driver = createLocalDriver({ rootDir: join(base, 'root') });
  h = await driver.start(testSpec({ env: { SANDBOX_ENV_MARK: 'from-environment' } }));
  api = h.api;
  await api.writeFile(SERVER, await bundleStdioMcpServer());
  await api.writeFile('/workspace/marker.txt', 'only-in-this-sandbox');
}, 120_000);
afterAll(async () => {
  await h?.destroy().catch(() => {});
  await driver?.close().catch(() => {});
  await rm(base, { recursive: true, force: true });
});

/** Host processes whose command line holds `marker` (the sandbox's processes are host processes). */
const hostProcesses = (marker: string): string[] => {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
};
const gone = async (marker: string) => {
  for (let i = 0; i < 100 && hostProcesses(marker).length; i++)
    await new Promise((r) => setTimeout(r, 50));
  return hostProcesses(marker);
};

const newClient = () => new Client({ name: 'test', version: '1.0.0' });
const textOf = (r: any): string => r.content[0].text;

describe('stdio MCP servers in the sandbox', () => {
  it('lists and calls tools of a server that really runs inside the sandbox', async () => {
    const marker = `mcp-${randomBytes(6).toString('hex')}`;
    const transport = sandboxStdioTransport(api, {
      command: 'node',
      args: [SERVER, '--marker', marker],
      env: { MCP_GREETING: 'hello from env' },
    });
    const client = newClient();
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['echo', 'whereami']);
      expect(tools.find((t) => t.name === 'echo')?.inputSchema).toMatchObject({
        type: 'object',
        properties: { text: { type: 'string' } },
      });
      const where = JSON.parse(textOf(await client.callTool({ name: 'whereami', arguments: {} })));
      expect(where).toMatchObject({
        cwd: '/workspace',
        marker: 'only-in-this-sandbox',
        greeting: 'hello from env',
        sandboxEnv: 'from-environment',
      });
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe(
        'echo: hi',
      );
      // the process is a host process (bwrap shares the kernel) whose cwd is the sandbox's
      expect(hostProcesses(marker).length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    expect(await gone(marker)).toEqual([]);
  });

  it('a missing executable is an McpStartupError naming the command', async () => {
    const transport = sandboxStdioTransport(api, { command: 'no-such-mcp-server-xyz' });
    const err = await newClient()
      .connect(transport)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect((err as Error).message).toContain("'no-such-mcp-server-xyz' was not found");
  });

  it('a process that exits before answering is an McpStartupError with its exit and stderr', async () => {
    const transport = sandboxStdioTransport(api, { command: 'node', args: [SERVER, '--exit'] });
    const errors: Error[] = [];
    const client = newClient();
    client.onerror = (e) => errors.push(e);
    const err = await client.connect(transport).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/exited \(exit code 3; stderr: fixture: told to exit/);
    expect(transport.startupError).toBeInstanceOf(McpStartupError);
    expect(transport.startupError?.message).toContain('before answering');
  });

  it('the nested port shape: Streamable HTTP at 127.0.0.1:port inside the sandbox', async () => {
    const marker = `mcp-${randomBytes(6).toString('hex')}`;
    const port = 18000 + Math.floor(Math.random() * 2000);
    const server = await sandboxHttpServer(api, {
      command: 'node',
      // --noisy: 3 MiB on stdout before it binds (stdout is drained, so it never blocks)
      args: [SERVER, '--http', String(port), '--noisy', '--marker', marker],
      env: { MCP_GREETING: 'nested' },
      port,
      ready_timeout_ms: 30_000,
    });
    try {
      // GET (the standalone SSE stream) is answered here and never reaches the server
      const get = await server.fetch(server.url, { method: 'GET' });
      expect(get.status).toBe(405);
      const client = newClient();
      await client.connect(new StreamableHTTPClientTransport(server.url, { fetch: server.fetch }));
      const where = JSON.parse(textOf(await client.callTool({ name: 'whereami', arguments: {} })));
      expect(where).toMatchObject({
        cwd: '/workspace',
        marker: 'only-in-this-sandbox',
        greeting: 'nested',
      });
      await client.close();
      // the port is the sandbox's own loopback: nothing listens there on the host
      const onHost = await fetch(`http://127.0.0.1:${port}/mcp`).then(
        () => 'reachable',
        () => 'refused',
      );
      expect(onHost).toBe('refused');
    } finally {
      await server.close();
    }
    expect(await gone(marker)).toEqual([]);
  });

  it('sandboxMcpTransport serves both stored shapes; a port that never opens is an McpStartupError', async () => {
    const flat = await sandboxMcpTransport(api, {
      name: 'flat',
      type: 'stdio',
      command: 'node',
      args: [SERVER],
    });
    const c1 = newClient();
    await c1.connect(flat);
    expect((await c1.listTools()).tools).toHaveLength(2);
    await c1.close();

    const err = await sandboxMcpTransport(api, {
      name: 'never',
      type: 'stdio',
      stdio: { command: 'sleep', args: ['30'], port: 18999, ready_timeout_ms: 300 },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect((err as Error).message).toMatch(/did not accept on 127\.0\.0\.1:18999/);
  });

  it('httpLocal refuses ports out of range, other methods, absolute paths and huge bodies', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ port: 0, method: 'POST', path: '/' }, 'port'],
      [{ port: 70000, method: 'POST', path: '/' }, 'port'],
      [{ port: 1.5, method: 'POST', path: '/' }, 'port'],
      [{ port: 8080, method: 'CONNECT', path: '/' }, 'method'],
      [{ port: 8080, method: 'POST', path: 'http://169.254.169.254/' }, 'path'],
      [
        { port: 8080, method: 'POST', path: '/', body: new Uint8Array(16 * 1024 * 1024 + 1) },
        'bodyBase64',
      ],
    ];
    for (const [params, argument] of cases) {
      const e = await api.httpLocal(params as any).catch((err: any) => err);
      expect(e.data?.argument, `${params.method} ${params.path} port ${params.port}`).toBe(
        argument,
      );
    }
    // nothing listens: an error naming the port, not a hang
    const refused = await api
      .httpLocal({ port: 18998, method: 'POST', path: '/' })
      .catch((err: any) => err);
    expect(refused.message).toContain('127.0.0.1:18998/: ECONNREFUSED');
  });

  it('the agent refuses a non-loopback host, caps open processes, kills them when its connection ends', async () => {
    // the typed client never sends `host`: speak the protocol to a bundled agent directly
    const file = await sandboxProgram('agent', join(base, 'cache'));
    const child = spawn(process.execPath, [file], { stdio: ['pipe', 'pipe', 'inherit'] });
    const answers = new Map<number, any>();
    const waiters: Array<() => void> = [];
    child.stdout.on(
      'data',
      lineSplitter((line) => {
        const m = JSON.parse(line);
        if (typeof m.id === 'number') answers.set(m.id, m);
        for (const w of waiters.splice(0)) w();
      }),
    );
    let id = 0;
    const call = (method: string, params: unknown) => {
      const n = ++id;
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
      return new Promise<any>((res) => {
        const check = () => (answers.has(n) ? res(answers.get(n)) : waiters.push(check));
        check();
      });
    };
    try {
      const other = await call('httpLocal', {
        host: '10.0.0.1',
        port: 80,
        method: 'GET',
        path: '/',
      });
      expect(other.error.data).toMatchObject({ kind: 'invalid_params', argument: 'host' });
      const opened: string[] = [];
      for (let i = 0; i < 24; i++) {
        const r = await call('procOpen', { command: 'sleep', args: ['60'], cwd: base });
        opened.push(r.result.stream);
      }
      const over = await call('procOpen', { command: 'sleep', args: ['60'], cwd: base });
      expect(over.error.data).toMatchObject({ kind: 'too_large', argument: 'command' });
      for (const stream of opened) await call('streamClose', { stream });
      const marker = `orphan-${randomBytes(6).toString('hex')}`;
      const again = await call('procOpen', {
        command: 'sh',
        args: ['-c', `sleep 60; : ${marker}`],
        cwd: base,
      });
      expect(again.result.stream).toMatch(/^pr/);
      expect(hostProcesses(marker).length).toBeGreaterThan(0);
      // the connection ends: the agent exits and kills the processes it still runs
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin.end();
      await exited;
      expect(await gone(marker)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
