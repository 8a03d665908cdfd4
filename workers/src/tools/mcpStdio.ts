/**
 * stdio MCP servers of a turn, inside the session's sandbox. Guarantees:
 * - the child process runs in the sandbox, owned by the sandbox agent (core/src/mcp/
 *   sandboxTransports.ts), never on the worker: the credential rule holds;
 * - all stdio servers of a turn share ONE `sandbox.run(session, fn)` kept open until the turn
 *   closes its MCP servers (a transport never outlives the `run` callback, as the transports'
 *   contract requires), which also keeps the sandbox awake meanwhile;
 * - with no sandbox runtime (SANDBOX_DRIVER=none) nothing is started: the server is reported as
 *   a connection failure (agent create refuses stdio servers there anyway);
 * - a missing executable is an MCP startup failure, reported as mcp_connection_failed_error.
 * Proven by test/e2e/mcp/mcp-tools-stdio.test.ts.
 */
import {
  connectStdioMcp,
  McpServerError,
  type McpConnection,
  type SandboxAgentApi,
  type SandboxManager,
  type SessionRef,
} from '@agentfleet/core';

/** One sandbox.run() per turn, held open while the turn's stdio servers live. */
export class StdioServerHost {
  private api: Promise<SandboxAgentApi> | null = null;
  private releaseHold: (() => void) | null = null;
  private done: Promise<unknown> | null = null;

  constructor(
    private readonly sandbox: SandboxManager | null,
    private readonly session: SessionRef,
  ) {}

  /** The sandbox agent's API inside the turn's held run (started on first use). */
  acquire(server: string): Promise<SandboxAgentApi> {
    const sandbox = this.sandbox;
    if (!sandbox)
      return Promise.reject(
        new McpServerError(
          'connection',
          server,
          `stdio MCP server '${server}' needs a sandbox and this deployment has none (SANDBOX_DRIVER=none)`,
        ),
      );
    return (this.api ??= new Promise<SandboxAgentApi>((resolve, reject) => {
      const held = new Promise<void>((r) => (this.releaseHold = r));
      this.done = sandbox
        .run(this.session, async (api) => {
          resolve(api);
          await held;
        })
        .catch(reject);
    }));
  }

  /** Ends the held run (after the connections over it are closed). */
  async release(): Promise<void> {
    this.releaseHold?.();
    await this.done?.catch(() => {});
    this.api = null;
    this.done = null;
    this.releaseHold = null;
  }
}

/** Connects one stdio server (flat or the older nested `stdio: {…, port}` shape) in the sandbox. */
export async function connectStdioServer(
  host: StdioServerHost,
  s: any,
  timeoutMs: number,
): Promise<McpConnection> {
  const api = await host.acquire(String(s.name));
  return connectStdioMcp(api, s, timeoutMs);
}
