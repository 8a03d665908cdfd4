/**
 * A stdio MCP server of an agent (flat `{command, args?, env?}` or the older nested
 * `stdio: {command, args?, env?, port, ready_timeout_ms?}`), connected with the SDK `Client`
 * over the sandbox transports (./sandboxTransports.ts): the process runs INSIDE the session's
 * sandbox, owned by the sandbox agent. Guarantees: the nested shape waits for its port at most
 * `ready_timeout_ms` (default 60 s), then connect + `tools/list` is bounded by `timeoutMs` like
 * a url server; a missing executable, an early exit or a port that never opens is an
 * McpServerError of kind `connection` whose message names the command (McpStartupError).
 * The caller keeps `api` valid (inside `SandboxManager.run`) until it closes the connection:
 * workers/src/tools/mcpStdio.ts. Proven by test/e2e/mcp/mcp-tools-stdio.test.ts (real bwrap sandbox).
 */
import type { SandboxAgentApi } from '../sandbox/port.js';
import { connectMcpTransport, toServerError, type McpConnection } from './client.js';
import { sandboxMcpTransport, type StdioServerConfig } from './sandboxTransports.js';

export async function connectStdioMcp(
  api: SandboxAgentApi,
  server: StdioServerConfig,
  timeoutMs: number,
): Promise<McpConnection> {
  let transport;
  try {
    transport = await sandboxMcpTransport(api, server);
  } catch (err) {
    throw toServerError(server.name, err, timeoutMs);
  }
  return connectMcpTransport(server.name, transport, timeoutMs);
}
