/**
 * One connection to one MCP server of an agent, with the official `@modelcontextprotocol/sdk`
 * `Client` (never a hand-written protocol). Guarantees:
 * - a `url` server is reached ONLY through the platform's MCP proxy (core/src/mcp/proxy.ts,
 *   `forward` with caller `rpc-mcp`): the SDK transport talks to the placeholder URL
 *   `http://mcp-proxy.invalid/<sid>/<server>` and its custom `fetch` hands every request to the
 *   proxy, which injects the bearer (inline token or session vault) under the egress policy; so
 *   this process, the model and the sandbox never hold the upstream credential;
 * - Streamable HTTP first; when its initialize fails with a 4xx other than 401/403 (the SDK's
 *   documented signal of an older server), the HTTP+SSE transport is tried (SSE fallback). The
 *   proxy rewrites the server's `endpoint` event to `/<sid>/<server><path>` on the placeholder
 *   origin, and the custom fetch maps a request under `http://mcp-proxy.invalid/<sid>/<server>/`
 *   to the forward's `path` (the proxy keeps it on the server url's origin); a request for any
 *   other URL is refused here, never sent;
 * - connect + `tools/list` (every page) is bounded by `timeoutMs` per server (spec: 15 s);
 * - a failure is an `McpServerError` of kind `authentication` (HTTP 401/403 after the proxy's
 *   refresh flow) or `connection` (anything else); its message names the server and an HTTP
 *   status or a reason, never a header or a response body, so it cannot carry a token;
 * - a tool call that fails (transport or JSON-RPC error) rejects; callers turn it into an
 *   is_error result (workers/src/tools/mcp.ts).
 * stdio servers connect through core/src/mcp/clientStdio.ts with `connectMcpTransport`.
 * Proven by test/e2e/mcp/mcp-tools.test.ts (every auth mode, unreachable / silent / wrong-bearer
 * servers, a failing tool), test/e2e/mcp/mcp-tools-stdio.test.ts and test/e2e/mcp/mcp-proxy-sse.test.ts (the SSE
 * fallback, through connectUrlServer and in a turn).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { McpForwardRequest } from './proxy.js';

/** A tool as the server describes it (name, description, full JSON input schema). */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A content block of a tool result: text, or a base64 image (the SDK's result blocks). */
export type McpResultBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } };

/** A tool call's outcome: text and image blocks (other parts are described in text). */
export interface McpCallResult {
  content: McpResultBlock[];
  isError: boolean;
}

export interface McpConnection {
  readonly server: string;
  readonly tools: McpTool[];
  call(tool: string, input: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult>;
  close(): Promise<void>;
}

/** A server that could not be connected or authenticated (the SDK's two session error types). */
export class McpServerError extends Error {
  constructor(
    readonly kind: 'connection' | 'authentication',
    readonly server: string,
    message: string,
    /** The HTTP status that caused it, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }
  get errorType(): 'mcp_connection_failed_error' | 'mcp_authentication_failed_error' {
    return this.kind === 'authentication'
      ? 'mcp_authentication_failed_error'
      : 'mcp_connection_failed_error';
  }
}

/** The MCP proxy's forward (core/src/mcp/proxy.ts `McpProxy.forward`). */
export type McpForward = (req: McpForwardRequest) => Promise<Response>;

/** A tool call may run this long (progress notifications restart the clock). */
export const MCP_CALL_TIMEOUT_MS = 120_000;
const CLIENT_INFO = { name: 'agentfleet', version: '0.1.0' };

/** The placeholder URL the SDK transport is given; only its path reaches the proxy's log. */
export const proxyPlaceholderUrl = (sessionId: string, server: string) =>
  new URL(
    `http://mcp-proxy.invalid/${encodeURIComponent(sessionId)}/${encodeURIComponent(server)}`,
  );

/** A fetch for the SDK transports that hands each request to the MCP proxy. */
export function proxyFetch(
  forward: McpForward,
  ids: { tenantId: string; sessionId: string; server: string },
): FetchLike {
  const target = proxyPlaceholderUrl(ids.sessionId, ids.server);
  return async (url, init) => {
    // The configured URL itself, or a path on its origin under `<target>/` (an SSE server's
    // message endpoint, as the proxy's rewritten `endpoint` event names it).
    const asked = new URL(url);
    const exact = asked.pathname === target.pathname && asked.search === target.search;
    const under =
      asked.origin === target.origin && asked.pathname.startsWith(`${target.pathname}/`);
    if (!exact && !under)
      throw new Error(
        `the MCP proxy forwards under ${target.pathname} only; the transport asked for ${asked.pathname}`,
      );
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    const body = init?.body;
    return forward({
      ...ids,
      method: (init?.method ?? 'GET').toUpperCase(),
      headers,
      body: body == null ? null : typeof body === 'string' ? body : String(body),
      caller: 'rpc-mcp',
      endpointBase: target.pathname,
      ...(exact ? {} : { path: `${asked.pathname.slice(target.pathname.length)}${asked.search}` }),
      ...(init?.signal ? { signal: init.signal } : {}),
    });
  };
}

const httpStatus = (err: unknown): number | undefined =>
  err instanceof StreamableHTTPError || err instanceof SseError
    ? (err as { code?: number }).code
    : undefined;

/** Maps any connect/discovery failure to an McpServerError whose message holds no secret. */
export function toServerError(server: string, err: unknown, timeoutMs: number): McpServerError {
  if (err instanceof McpServerError) return err;
  const status = httpStatus(err);
  if (err instanceof UnauthorizedError || status === 401 || status === 403)
    return new McpServerError(
      'authentication',
      server,
      `MCP server '${server}' refused the credential${status ? ` (HTTP ${status})` : ''}`,
      status,
    );
  if (status !== undefined && status > 0)
    return new McpServerError(
      'connection',
      server,
      `MCP server '${server}' answered HTTP ${status}`,
      status,
    );
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout)
    return new McpServerError(
      'connection',
      server,
      `MCP server '${server}' did not answer within ${timeoutMs} ms`,
    );
  const reason = String((err as Error)?.message ?? err).slice(0, 300);
  return new McpServerError(
    'connection',
    server,
    `could not connect to MCP server '${server}': ${reason}`,
  );
}

/**
 * Why a tool call failed: a JSON-RPC error is the server's own answer; anything else is
 * described by status or reason, without response bodies or headers.
 */
export function mcpCallErrorMessage(server: string, err: unknown): string {
  if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout) return err.message;
  return toServerError(server, err, MCP_CALL_TIMEOUT_MS).message;
}

/** Connects `transport` and lists every tool, within `timeoutMs` in all. */
export async function connectMcpTransport(
  server: string,
  transport: Transport,
  timeoutMs: number,
): Promise<McpConnection> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new McpServerError(
            'connection',
            server,
            `MCP server '${server}' did not answer within ${timeoutMs} ms`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    const tools = await Promise.race([
      (async () => {
        await client.connect(transport, { timeout: left() });
        const out: McpTool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: left() });
          for (const t of page.tools)
            out.push({
              name: t.name,
              description: t.description ?? t.title ?? t.name,
              inputSchema: (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
            });
          cursor = page.nextCursor;
        } while (cursor);
        return out;
      })(),
      expired,
    ]);
    return {
      server,
      tools,
      async call(tool, input, signal) {
        const r = await client.callTool({ name: tool, arguments: input }, undefined, {
          signal,
          timeout: MCP_CALL_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
        });
        return toCallResult(r);
      },
      close: () => client.close().catch(() => {}),
    };
  } catch (err) {
    await client.close().catch(() => {});
    throw toServerError(server, err, timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A `url` server through the MCP proxy: Streamable HTTP, else (a 4xx other than 401/403 on
 * initialize, as the SDK's backwards-compatibility guide describes) HTTP+SSE.
 */
export async function connectUrlServer(opts: {
  server: string;
  tenantId: string;
  sessionId: string;
  forward: McpForward;
  timeoutMs: number;
}): Promise<McpConnection> {
  const { server, tenantId, sessionId, forward, timeoutMs } = opts;
  const url = proxyPlaceholderUrl(sessionId, server);
  const fetch = proxyFetch(forward, { tenantId, sessionId, server });
  const started = Date.now();
  try {
    return await connectMcpTransport(
      server,
      new StreamableHTTPClientTransport(url, { fetch }),
      timeoutMs,
    );
  } catch (err) {
    const status =
      (err as McpServerError).kind === 'connection' ? (err as McpServerError).status : undefined;
    if (status === undefined || status < 400 || status >= 500) throw err;
    const left = timeoutMs - (Date.now() - started);
    if (left <= 0) throw err;
    return connectMcpTransport(
      server,
      new SSEClientTransport(url, { fetch, eventSourceInit: { fetch } }),
      left,
    ).catch((sseErr: McpServerError) => {
      // The SSE attempt's own failure says more only when it is an authentication refusal.
      throw sseErr.kind === 'authentication' ? sseErr : err;
    });
  }
}

type RawContent = { type: string; [k: string]: unknown };

/** An MCP CallToolResult as text and image blocks; audio and resources are described in text. */
export function toCallResult(r: Record<string, unknown>): McpCallResult {
  const parts = (Array.isArray(r.content) ? r.content : []) as RawContent[];
  const content = parts.map((c): McpResultBlock => {
    switch (c.type) {
      case 'text':
        return { type: 'text', text: String(c.text ?? '') };
      case 'image':
        if (typeof c.data === 'string' && typeof c.mimeType === 'string')
          return {
            type: 'image',
            source: { type: 'base64', media_type: c.mimeType, data: c.data },
          };
        return { type: 'text', text: '[image content without data omitted]' };
      case 'resource': {
        const res = (c.resource ?? {}) as { uri?: string; text?: string };
        return { type: 'text', text: res.text ?? `[resource ${res.uri ?? ''}]` };
      }
      case 'resource_link':
        return { type: 'text', text: `[resource link ${String(c.uri ?? '')}]` };
      default:
        return {
          type: 'text',
          text: `[${c.type} content (${String(c.mimeType ?? 'unknown type')}) omitted]`,
        };
    }
  });
  if (!content.length && r.structuredContent !== undefined)
    content.push({ type: 'text', text: JSON.stringify(r.structuredContent) });
  if (!content.length && r.toolResult !== undefined)
    content.push({ type: 'text', text: JSON.stringify(r.toolResult) });
  return { content, isError: r.isError === true };
}
