/**
 * The MCP servers of one turn: connected once per turn (lazily, on first need), offered to the
 * model as `mcp__<server>__<tool>` (rules: core/src/mcp/tools.ts), called by the dispatcher
 * (./permissions.ts), closed when the turn ends. Guarantees:
 * - every server the agent's mcp_toolsets name is connected in parallel, each bounded by
 *   MCP_DISCOVERY_TIMEOUT_MS (default 15 s); at most 20 servers (agent schema);
 * - a server that cannot connect or authenticate appends one session.error
 *   `{type: 'mcp_connection_failed_error' | 'mcp_authentication_failed_error', mcp_server_name,
 *   message, retry_status: {type: 'retrying'}}` and the turn goes on without that server's
 *   tools (the SDK documents no stop for it; `retrying`, because the session keeps running
 *   and the server is tried again at the next turn, while `exhausted` means "this turn is
 *   dead"); messages name a status or reason, never a credential;
 * - `url` servers go through the MCP proxy only (core/src/mcp/client.ts); `stdio` servers run
 *   inside the session's sandbox (./mcpStdio.ts); with no sandbox (SANDBOX_DRIVER=none, refused
 *   at create anyway) a stdio server is reported as a connection failure and never started;
 * - a tool call that fails is an is_error result, never a dead turn; an abort (interrupt)
 *   rethrows, also during discovery (late connections are closed as they complete).
 * - a session that serves an integration thread also gets that thread's tools (the
 *   publication's actions, core/src/integrations/actions.ts) as the server
 *   `<integration>_integration`, run by the control plane with the install's token; an agent
 *   MCP server of the same name keeps the name and the thread's tools are not offered.
 * Proven by test/e2e/mcp/mcp-tools.test.ts (url servers, every auth mode, configs, failures),
 * test/e2e/mcp/mcp-tools-stdio.test.ts (stdio in a bwrap sandbox), test/e2e/mcp/mcp-tools-crash.test.ts and
 * test/e2e/sdk/sdk_suite/test_mcp.py.
 */
import { sessionOf } from '@agentfleet/core';
import {
  connectUrlServer,
  mcpToolName,
  McpServerError,
  mcpCallErrorMessage,
  mcpToolSpecs,
  serversToConnect,
  toServerError,
  unofferedMcpTool,
  type Logger,
  type McpConnection,
  type McpToolRef,
  type McpTool,
  type SandboxManager,
  type SessionDoc,
  type SessionRef,
  type ThreadActions,
  type ThreadTools,
  type ToolSpec,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import type { AppendFenced, McpResult, McpTools } from '../turn/types.js';
import { connectStdioServer, StdioServerHost } from './mcpStdio.js';

/** Rejects with the signal's reason once it aborts (never settles without a signal). */
const aborted = (signal?: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (!signal) return;
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

const errorText = (text: string): McpResult => ({
  content: [{ type: 'text', text }],
  is_error: true,
});

export class McpTurn implements McpTools {
  specs: ToolSpec[] = [];
  private refs = new Map<string, McpToolRef>();
  private opened: Promise<void> | null = null;
  private readonly conns = new Map<string, McpConnection>();
  /** The integration thread's tools (core/src/integrations/actions.ts), when the session serves one. */
  private thread: ThreadTools | null = null;
  private readonly stdio: StdioServerHost;
  private readonly session: SessionRef;

  constructor(
    private readonly p: Pick<WorkerServices, 'config' | 'mcpProxy'> & {
      integrationActions?: Pick<ThreadActions, 'forSession'>;
    },
    sandbox: SandboxManager | null,
    private readonly s: SessionDoc,
    private readonly append: AppendFenced,
    private readonly log: Logger,
    /** The turn's abort signal: an interrupt does not wait for discovery. */
    private readonly signal?: AbortSignal,
  ) {
    this.session = {
      tenantId: s.tenant_id,
      sessionId: sessionOf(s),
      environmentId: s.environment_id,
    };
    this.stdio = new StdioServerHost(sandbox, this.session);
  }

  /** An offered MCP tool, or (enabled: false) another name in an MCP server's namespace. */
  lookup(name: string): McpToolRef | undefined {
    return this.refs.get(name) ?? unofferedMcpTool(this.s.agent.tools as any[], name);
  }

  /** Connects the agent's servers once; failures are appended as session.error. */
  ready(): Promise<void> {
    return (this.opened ??= this.open());
  }

  private async open(): Promise<void> {
    const [thread] = await Promise.all([this.threadTools(), this.openServers()]);
    if (!thread) return;
    this.thread = thread;
    for (const t of thread.tools) {
      const name = mcpToolName(thread.server, t.name);
      this.refs.set(name, { server: thread.server, tool: t.name });
      this.specs.push({ name, description: t.description, input_schema: t.inputSchema });
    }
  }

  /**
   * The integration thread's tools; none when the agent has an MCP server of the same name (the
   * agent's own server keeps its name) or with no integration wired (a bare worker).
   */
  private async threadTools(): Promise<ThreadTools | null> {
    const actions = this.p.integrationActions;
    if (!actions) return null;
    const tools = await actions.forSession(this.session.tenantId, this.s);
    const own = (this.s.agent.mcp_servers ?? []) as Array<{ name?: unknown }>;
    if (tools && own.some((m) => m.name === tools.server)) {
      this.log.warn('integration tools not offered: the agent has an MCP server of that name', {
        session_id: this.session.sessionId,
        server: tools.server,
      });
      return null;
    }
    return tools;
  }

  private async openServers(): Promise<void> {
    const { agent } = this.s;
    const servers = serversToConnect((agent.mcp_servers ?? []) as any[], agent.tools as any[]);
    if (!servers.length) return;
    const timeoutMs = this.p.config.turn.mcpDiscoveryMs;
    const pending = Promise.allSettled(servers.map((s) => this.connect(s, timeoutMs)));
    const settled = await Promise.race([pending, aborted(this.signal)]).catch((reason) => {
      // Connections that complete after the abort are closed as they arrive.
      void pending.then((rs) => rs.forEach((r) => r.status === 'fulfilled' && r.value.close()));
      throw reason;
    });
    const discovered = new Map<string, McpTool[]>();
    const errors = [];
    for (const [i, r] of settled.entries()) {
      const name = String(servers[i]!.name);
      if (r.status === 'fulfilled') {
        this.conns.set(name, r.value);
        discovered.set(name, r.value.tools);
        continue;
      }
      const e = toServerError(name, r.reason, timeoutMs);
      this.log.warn('mcp server unavailable for this turn', {
        session_id: this.session.sessionId,
        server: name,
        error_type: e.errorType,
      });
      errors.push({
        type: 'session.error',
        payload: {
          error: {
            type: e.errorType,
            mcp_server_name: name,
            message: e.message,
            retry_status: { type: 'retrying' },
          },
        },
      });
    }
    if (errors.length) await this.append(errors);
    const { specs, refs } = mcpToolSpecs(agent.tools as any[], discovered);
    this.specs.push(...specs);
    for (const [k, v] of refs) this.refs.set(k, v);
  }

  private connect(s: any, timeoutMs: number): Promise<McpConnection> {
    if (s.type === 'url') {
      const proxy = this.p.mcpProxy;
      if (!proxy)
        return Promise.reject(
          new McpServerError('connection', s.name, 'the MCP proxy is not available here'),
        );
      return connectUrlServer({
        server: s.name,
        tenantId: this.session.tenantId,
        sessionId: this.session.sessionId,
        forward: (req) => proxy.forward(req),
        timeoutMs,
      });
    }
    return connectStdioServer(this.stdio, s, timeoutMs);
  }

  async call(
    ref: McpToolRef,
    input: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpResult> {
    await this.ready();
    if (this.thread && ref.server === this.thread.server) {
      if (signal.aborted) throw signal.reason;
      const r = await this.thread.call(ref.tool, input);
      return { content: [{ type: 'text', text: r.text }], is_error: r.isError };
    }
    const c = this.conns.get(ref.server);
    if (!c) return errorText(`MCP server '${ref.server}' is not connected in this turn`);
    try {
      const r = await c.call(ref.tool, input, signal);
      return { content: r.content, is_error: r.isError };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const why = mcpCallErrorMessage(ref.server, err);
      return errorText(`MCP tool '${ref.tool}' on server '${ref.server}' failed: ${why}`);
    }
  }

  /** True while the turn holds a connection (`close` has work to do). */
  get connected(): boolean {
    return this.conns.size > 0;
  }

  /** Closes every connection and ends the sandbox hold of stdio servers. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.conns.values()].map((c) => c.close()));
    this.conns.clear();
    await this.stdio.release();
  }
}
