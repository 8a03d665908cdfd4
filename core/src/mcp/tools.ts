/**
 * How an agent's MCP servers become model tools. Rules (pure functions; the turn applies them
 * in workers/src/tools/mcp.ts):
 * - a server's tools are offered only through an `mcp_toolset` naming it: the SDK documents
 *   the toolset as "Configuration for tools from an MCP server defined in mcp_servers" and
 *   says "every server must be referenced by an mcp_toolset in tools; unreferenced servers are
 *   rejected". A server without one offers no tool and is not even connected;
 * - a tool is offered when its own `configs[]` entry says `enabled`, else the toolset's
 *   `default_config.enabled`, else true (SDK: "Defaults to true if not specified"); a server
 *   whose toolset enables nothing is not connected;
 * - each tool is offered as `mcp__<server>__<tool>` (spec) with the server's description and
 *   full `inputSchema`; a tool whose prefixed name the model protocols cannot carry
 *   (`^[A-Za-z0-9_-]{1,128}$`) is skipped;
 * - a call of a name in a toolset server's `mcp__<server>__` namespace that the turn did not
 *   offer (disabled, unknown, server down) is recorded as agent.mcp_tool_use with
 *   evaluated_permission `deny` and answered with an is_error result;
 * - the permission policy of a call is resolved per server and tool
 *   (workers/src/tools/permissions.ts `resolvePolicy(tools, tool, server)`).
 * Proven by test/e2e/mcp/mcp-tools.test.ts.
 */
import type { ToolSpec } from '../models/port.js';
import type { McpTool } from './client.js';

/** Which MCP server and which of its tools a prefixed model tool name stands for. */
export interface McpToolRef {
  server: string;
  tool: string;
  /** false: a name of this server's namespace that the turn does not offer (disabled, unknown). */
  enabled?: false;
}

export const mcpToolName = (server: string, tool: string) => `mcp__${server}__${tool}`;

const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,128}$/;

/** The agent's `mcp_toolset` for `server`, if any. */
export function mcpToolsetOf(tools: readonly any[], server: string): any | undefined {
  return (tools ?? []).find((t) => t?.type === 'mcp_toolset' && t.mcp_server_name === server);
}

/** Whether the toolset offers `tool` (own config, else default, else true). */
export function mcpToolEnabled(toolset: any, tool: string): boolean {
  const own = (toolset?.configs ?? []).find((c: any) => c.name === tool);
  if (own && own.enabled != null) return own.enabled !== false;
  return toolset?.default_config?.enabled !== false;
}

/** The servers a turn connects: those with a toolset that may enable at least one tool. */
export function serversToConnect<S extends { name: string }>(
  servers: readonly S[],
  tools: readonly any[],
): S[] {
  return (servers ?? []).filter((s) => {
    const ts = mcpToolsetOf(tools, s.name);
    if (!ts) return false;
    return (
      ts.default_config?.enabled !== false ||
      (ts.configs ?? []).some((c: any) => c.enabled === true)
    );
  });
}

/**
 * A called name in the `mcp__<server>__` namespace of one of the agent's toolsets that the turn
 * did not offer: recorded as a denied agent.mcp_tool_use (SDK: "the named tool is not enabled").
 * The longest matching server name wins (names may contain `__`).
 */
export function unofferedMcpTool(tools: readonly any[], name: string): McpToolRef | undefined {
  const servers = (tools ?? [])
    .filter((t) => t?.type === 'mcp_toolset')
    .map((t) => String(t.mcp_server_name))
    .sort((a, b) => b.length - a.length);
  const server = servers.find(
    (s) => name.startsWith(mcpToolName(s, '')) && name.length > s.length + 7,
  );
  return server
    ? { server, tool: name.slice(mcpToolName(server, '').length), enabled: false }
    : undefined;
}

/** The model tools of the discovered servers, and what each prefixed name stands for. */
export function mcpToolSpecs(
  tools: readonly any[],
  discovered: ReadonlyMap<string, readonly McpTool[]>,
): { specs: ToolSpec[]; refs: Map<string, McpToolRef> } {
  const specs: ToolSpec[] = [];
  const refs = new Map<string, McpToolRef>();
  for (const [server, list] of discovered) {
    const ts = mcpToolsetOf(tools, server);
    if (!ts) continue;
    for (const t of list) {
      const name = mcpToolName(server, t.name);
      if (!mcpToolEnabled(ts, t.name) || !MODEL_TOOL_NAME.test(name) || refs.has(name)) continue;
      refs.set(name, { server, tool: t.name });
      specs.push({ name, description: t.description, input_schema: t.inputSchema });
    }
  }
  return { specs, refs };
}
