/**
 * stdio MCP servers on the Nomad driver: the Nomad task runs the same sandbox agent (behind the
 * launcher, which relays every protocol method), so the transports of
 * core/src/mcp/sandboxTransports.ts work unchanged: the SDK `Client` lists and calls the
 * fixture's tools over sandboxStdioTransport, and over the nested port shape; closing kills the
 * process. Against the Nomad API fake (test/kit/nomad/), which runs the task on this host.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sandboxProgram } from '@agentfleet/sandbox-agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNomadFake, type NomadFake } from '../../test/kit/nomad/fake.js';
import { bundleStdioMcpServer } from '../../test/kit/fixtures/stdioMcpServerBundle.js';
import { nomadAgentCommand } from '../src/sandbox/drivers/nomad/command.js';
import { createNomadDriver, type NomadDriver } from '../src/sandbox/drivers/nomad/driver.js';
import { sandboxHttpServer, sandboxStdioTransport } from '../src/mcp/sandboxTransports.js';
import type { SandboxHandle } from '../src/sandbox/port.js';
import { testSpec } from './sandbox.contract.js';

const TOKEN = 'nomad-acl-token';
const SERVER = '/workspace/mcp-server.mjs';
let base: string;
let fake: NomadFake;
let driver: NomadDriver;
let h: SandboxHandle;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-mcp-nomad-'));
  const scripts = {
    launcher: await sandboxProgram('launcher', join(base, 'scripts')),
    agent: await sandboxProgram('agent', join(base, 'scripts')),
  };
  fake = await startNomadFake({
    token: TOKEN,
    namespaces: ['default', 'sandboxes'],
    node: { cpuMhz: 64_000, memoryMb: 65_536 },
  });
  driver = createNomadDriver({
    client: { address: fake.address, token: TOKEN, namespace: 'sandboxes' },
    agentCommand: (spec) =>
      nomadAgentCommand(spec, {
        node: process.execPath,
        launcher: scripts.launcher,
        agent: scripts.agent,
      }),
    job: { datacenters: ['dc1'], killTimeoutMs: 3000 },
    startTimeoutMs: 30_000,
    watchWait: '5s',
  });
  h = await driver.start(testSpec());
  await h.api.writeFile(SERVER, await bundleStdioMcpServer());
  await h.api.writeFile('/workspace/marker.txt', 'only-in-the-nomad-sandbox');
}, 120_000);
afterAll(async () => {
  await h?.destroy().catch(() => {});
  await driver?.close().catch(() => {});
  await fake?.close();
  await rm(base, { recursive: true, force: true });
});

const running = (marker: string): boolean => {
  try {
    execFileSync('pgrep', ['-f', marker]);
    return true;
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
};
const gone = async (marker: string) => {
  for (let i = 0; i < 100 && running(marker); i++) await new Promise((r) => setTimeout(r, 50));
  return !running(marker);
};
const textOf = (r: any): string => r.content[0].text;

describe('stdio MCP servers on the Nomad driver', () => {
  it('flat stdio: tools listed and called in the sandbox; close kills the process', async () => {
    const marker = `mcp-${randomBytes(6).toString('hex')}`;
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      sandboxStdioTransport(h.api, { command: 'node', args: [SERVER, '--marker', marker] }),
    );
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'echo',
      'whereami',
    ]);
    const where = JSON.parse(textOf(await client.callTool({ name: 'whereami', arguments: {} })));
    expect(where).toMatchObject({ cwd: '/workspace', marker: 'only-in-the-nomad-sandbox' });
    expect(running(marker)).toBe(true);
    await client.close();
    expect(await gone(marker)).toBe(true);
  });

  it('the nested port shape through httpLocal', async () => {
    const port = 20000 + Math.floor(Math.random() * 2000);
    const server = await sandboxHttpServer(h.api, {
      command: 'node',
      args: [SERVER, '--http', String(port)],
      port,
      ready_timeout_ms: 30_000,
    });
    try {
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(server.url, { fetch: server.fetch }));
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'nomad' } });
      expect(textOf(echo)).toBe('echo: nomad');
      await client.close();
    } finally {
      await server.close();
    }
  });
});
