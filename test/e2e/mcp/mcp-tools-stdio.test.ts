/**
 * stdio MCP servers in a turn (workers/src/tools/mcpStdio.ts, core/src/mcp/clientStdio.ts), through
 * the official TypeScript SDK against an in-process platform with the local bubblewrap sandbox
 * driver and the scripted model. The server is test/kit/fixtures/stdioMcpServer.ts (official MCP
 * SDK), bundled with esbuild and attached to the session as a file resource, run with `node`
 * INSIDE the session's sandbox:
 * - flat stdio: the model's call of `mcp__box__whereami` / `mcp__box__echo` is answered by the
 *   process in the sandbox (cwd /workspace, the server's `env`), as agent.mcp_tool_result;
 * - the older nested shape `stdio: {command, args, port}`: served through HTTP at that port
 *   inside the sandbox;
 * - a missing executable is an MCP startup failure: session.error mcp_connection_failed_error
 *   naming the command, and the turn ends normally.
 * Needs `bwrap` (apt-get install bubblewrap).
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'mcp-stdio-model';
const SERVER = '/workspace/mcp-server.mjs';
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

let t: TestPlatform;
let envId: string;
let serverFileId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local', SANDBOX_SLEEP_AFTER_MS: '1500' } });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'mcp-stdio' })).id;
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: [join(repoRoot, 'test/kit/fixtures/stdioMcpServer.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    write: false,
    logLevel: 'silent',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  const f = await t.client.beta.files.upload({
    file: await toFile(Buffer.from(out.outputFiles[0]!.text), 'mcp-server.mjs'),
  } as any);
  serverFileId = f.id;
}, 120_000);
afterAll(async () => {
  await t?.close();
});

async function session(server: Record<string, unknown>): Promise<string> {
  const agent = await t.client.beta.agents.create({
    name: 'stdio',
    model: MODEL,
    mcp_servers: [{ type: 'stdio', name: 'box', ...server }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'box' }],
  } as any);
  const s = await t.client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
    resources: [{ type: 'file', file_id: serverFileId, mount_path: SERVER }],
  } as any);
  return s.id;
}

const resultText = (events: any[]) =>
  events
    .filter((e) => e.type === 'agent.mcp_tool_result')
    .map((e) => ({ text: e.content.map((b: any) => b.text).join(''), is_error: e.is_error }));

describe('stdio MCP servers in a turn (local sandbox)', () => {
  it('flat stdio: the process runs in the session sandbox and answers the call', async () => {
    const sid = await session({
      command: 'node',
      args: [SERVER],
      env: { MCP_GREETING: 'hello-from-env' },
    });
    t.model.script(
      MODEL,
      call('mcp__box__whereami', {}),
      call('mcp__box__echo', { text: 'boxed' }),
      say('done'),
    );
    const turn = await runTurn(t.client, sid, 'where are you');
    expect(turn.events.filter((e) => e.type === 'session.error')).toEqual([]);
    const [where, echo] = resultText(turn.events);
    expect(where!.is_error).toBe(false);
    expect(JSON.parse(where!.text)).toMatchObject({
      cwd: '/workspace',
      greeting: 'hello-from-env',
    });
    expect(echo).toEqual({ text: 'echo: boxed', is_error: false });
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_use')).toMatchObject({
      name: 'mcp__box__whereami',
      mcp_server_name: 'box',
      mcp_tool_name: 'whereami',
    });
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });

  it('the older nested shape: HTTP at the port inside the sandbox', async () => {
    const port = 18000 + Math.floor(Math.random() * 2000);
    const sid = await session({
      stdio: { command: 'node', args: [SERVER, '--http', String(port)], port },
    });
    t.model.script(MODEL, call('mcp__box__echo', { text: 'over http' }), say('done'));
    const turn = await runTurn(t.client, sid, 'echo');
    expect(turn.events.filter((e) => e.type === 'session.error')).toEqual([]);
    expect(resultText(turn.events)).toEqual([{ text: 'echo: over http', is_error: false }]);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });

  it('a missing executable: mcp_connection_failed_error naming the command; the turn still ends', async () => {
    const sid = await session({ command: 'no-such-mcp-server-xyz' });
    t.model.script(MODEL, say('carrying on'));
    const before = t.model.requests.filter((r) => r.model === MODEL).length;
    const turn = await runTurn(t.client, sid, 'try');
    const err = turn.events.find((e) => e.type === 'session.error');
    expect(err.error).toMatchObject({
      type: 'mcp_connection_failed_error',
      mcp_server_name: 'box',
      retry_status: { type: 'retrying' },
    });
    expect(err.error.message).toContain('no-such-mcp-server-xyz');
    const req = t.model.requests.filter((r) => r.model === MODEL)[before]!;
    expect(req.body.tools ?? []).toEqual([]);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
  });
});
