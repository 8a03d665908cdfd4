/**
 * Transports from the worker's MCP client (@modelcontextprotocol/sdk `Client`) to MCP servers
 * that run INSIDE the session's sandbox, owned by the sandbox agent (so the credential rule
 * holds: the server's process, its `env` and anything it reads live in the sandbox, never in the
 * worker). Two shapes of the agent's `mcp_servers[]` entry (schemas/src/agents.ts):
 *
 * - flat stdio `{type:'stdio', command, args?, env?}` → sandboxStdioTransport: the SDK
 *   `Transport` over the process's stdin/stdout (newline-delimited JSON-RPC, the SDK's own
 *   ReadBuffer/serializeMessage). stdout is read with the agent's waiting streamRead (no
 *   polling); a line that is not JSON-RPC goes to `onerror` and is skipped (like the SDK's
 *   StdioClientTransport).
 * - nested `{type:'stdio', stdio:{command, args?, env?, port, ready_timeout_ms?}}` →
 *   sandboxHttpServer: spawns the process (its stdout drained and discarded), waits until
 *   127.0.0.1:port INSIDE the sandbox accepts (at most ready_timeout_ms, default 60000), and
 *   returns a `fetch` that carries each request to that port through the agent's `httpLocal`
 *   (answered whole, bodies ≤ 16 MiB), for the SDK's StreamableHTTPClientTransport. A GET is answered 405 here without reaching the server:
 *   GET opens the Streamable HTTP standalone SSE stream, which never ends and cannot be carried
 *   as one answer; on 405 the SDK skips it (server-initiated messages outside a request are then
 *   not received: say so to users of this shape). POST answers that are SSE streams end with the
 *   request's response and arrive whole.
 *
 * Startup failures are McpStartupError: a missing executable (message names the command), a
 * process that exits before answering (message has its exit status and stderr tail; for the
 * stdio transport, every request still waiting is answered with a JSON-RPC error carrying the
 * same text, then `onclose` runs, and `startupError` holds the McpStartupError), a port that
 * never opens.
 *
 * Lifetime: a transport's process lives in the sandbox only while the SandboxAgentApi it was
 * opened on is valid: open it inside `SandboxManager.run(session, fn)` and close it before `fn`
 * returns (the turn); the sandbox may sleep once no run is pending, which ends the process
 * (`onclose`). If the worker never closes it, the agent kills it when its connection ends or 2
 * minutes after the last call (sandbox-agent/src/agent/procStream.ts).
 *
 * Proved by core/test/sandbox-mcp-stdio.test.ts (real bwrap sandbox, SDK client and servers) and
 * core/test/sandbox-mcp-stdio-nomad.test.ts (the Nomad driver: the same agent behind the launcher).
 */
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxAgentApi, SandboxProcess } from '../sandbox/port.js';
import { SandboxAgentError } from '../sandbox/protocol.js';

export const DEFAULT_READY_TIMEOUT_MS = 60_000;

/** The MCP server could not be started: missing executable, early exit, port never open. */
export class McpStartupError extends Error {
  override readonly name = 'McpStartupError';
}

export interface SandboxStdioSpec {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

export interface SandboxHttpSpec extends SandboxStdioSpec {
  port: number;
  ready_timeout_ms?: number;
}

async function startInSandbox(api: SandboxAgentApi, spec: SandboxStdioSpec) {
  try {
    return await api.startProcess({
      command: spec.command,
      ...(spec.args ? { args: spec.args } : {}),
      ...(spec.env ? { env: spec.env } : {}),
    });
  } catch (err) {
    const kind = err instanceof SandboxAgentError ? err.kind : '';
    const why =
      kind === 'not_found'
        ? `MCP server command '${spec.command}' was not found in the sandbox (the environment must provide the executable)`
        : `MCP server command '${spec.command}' could not be started in the sandbox: ${(err as Error).message}`;
    throw new McpStartupError(why, { cause: err });
  }
}

const exitText = (
  exit: { code: number | null; signal: string | null; stderr: string } | undefined,
) =>
  exit
    ? `exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ''}${exit.stderr.trim() ? `; stderr: ${exit.stderr.trim().slice(-2000)}` : ''}`
    : 'exit status unknown';

/** The SDK Transport of a stdio MCP server run in the sandbox (see the header). */
export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Set when the process ended before its first message (also passed to onerror). */
  startupError: McpStartupError | null = null;

  private proc: SandboxProcess | null = null;
  private readonly buffer = new ReadBuffer();
  private readonly waiting = new Set<string | number>();
  private answered = false;
  /** Resolves with why the process ended once its stdout ended (null: closed by us or failed). */
  private endedWith!: (why: string | null) => void;
  private readonly ended = new Promise<string | null>((r) => (this.endedWith = r));
  private state: 'new' | 'open' | 'closed' = 'new';
  private killed: Promise<void> = Promise.resolve();

  constructor(
    private readonly api: SandboxAgentApi,
    private readonly spec: SandboxStdioSpec,
  ) {}

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('SandboxStdioTransport already started');
    this.state = 'open';
    try {
      this.proc = await startInSandbox(this.api, this.spec);
    } catch (err) {
      this.state = 'closed';
      throw err;
    }
    void this.readLoop(this.proc);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.state !== 'open' || !this.proc)
      throw new Error('the MCP server process is not running');
    if ('id' in message && 'method' in message) this.waiting.add(message.id);
    try {
      await this.proc.write(serializeMessage(message));
    } catch (err) {
      // stdin refused: if the process is ending, its exit is the better reason
      let grace: NodeJS.Timeout | undefined;
      const why = await Promise.race([
        this.ended,
        new Promise<null>((r) => (grace = setTimeout(() => r(null), 5000))),
      ]);
      clearTimeout(grace);
      if (this.startupError) throw this.startupError;
      throw why ? new Error(why, { cause: err }) : err;
    }
  }

  /** Ends the transport and resolves once the sandbox agent killed the process group. */
  async close(): Promise<void> {
    this.finish();
    await this.killed;
  }

  private async readLoop(proc: SandboxProcess): Promise<void> {
    let exit: Parameters<typeof exitText>[0];
    try {
      for (;;) {
        const chunk = await proc.read();
        if (this.state === 'closed') return;
        if (chunk.data.length) {
          this.buffer.append(Buffer.from(chunk.data));
          this.drain();
        }
        if (chunk.eof) {
          exit = chunk.exit;
          break;
        }
      }
    } catch (err) {
      if (this.state === 'closed') return;
      this.onerror?.(err as Error);
      this.finish();
      return;
    }
    const why = `MCP server '${this.spec.command}' exited (${exitText(exit)})`;
    if (!this.answered) {
      this.startupError = new McpStartupError(`${why} before answering`);
      this.onerror?.(this.startupError);
    }
    this.endedWith(why);
    // every request still waiting learns why (the SDK would say only "Connection closed")
    for (const id of this.waiting)
      this.onmessage?.({ jsonrpc: '2.0', id, error: { code: -32000, message: why } });
    this.waiting.clear();
    this.finish();
  }

  private drain(): void {
    for (;;) {
      let msg: JSONRPCMessage | null;
      try {
        msg = this.buffer.readMessage();
      } catch (err) {
        this.onerror?.(err as Error); // not JSON-RPC (e.g. a log line on stdout): skipped
        continue;
      }
      if (!msg) return;
      this.answered = true;
      if (('result' in msg || 'error' in msg) && 'id' in msg && msg.id !== undefined)
        this.waiting.delete(msg.id);
      this.onmessage?.(msg);
    }
  }

  private finish(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.endedWith(null);
    this.buffer.clear();
    this.killed = this.proc ? this.proc.close().catch(() => {}) : Promise.resolve();
    this.onclose?.();
  }
}

/** A stdio MCP server in the sandbox as an SDK Transport (see the header). */
export function sandboxStdioTransport(
  api: SandboxAgentApi,
  spec: SandboxStdioSpec,
): SandboxStdioTransport {
  return new SandboxStdioTransport(api, spec);
}

const NULL_BODY = new Set([101, 204, 205, 304]);
const DROP_REQUEST = new Set(['host', 'content-length', 'connection', 'accept-encoding']);
const DROP_RESPONSE = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * The older nested shape: the process in the sandbox serves HTTP on 127.0.0.1:port there.
 * `url` is the conventional Streamable HTTP endpoint on it (`/mcp`); `fetch` carries any URL's
 * path and query to that port in the sandbox (its host part is ignored).
 */
export async function sandboxHttpServer(
  api: SandboxAgentApi,
  spec: SandboxHttpSpec,
): Promise<{ url: URL; fetch: typeof fetch; close(): Promise<void> }> {
  const readyMs = spec.ready_timeout_ms ?? DEFAULT_READY_TIMEOUT_MS;
  const proc = await startInSandbox(api, spec);
  // stdout is not the protocol here: drained (a server that logs there never blocks on a full
  // pipe), and the waiting read keeps the process from the agent's idle kill while it serves
  let draining = true;
  void (async () => {
    while (draining) {
      const chunk = await proc.read().catch(() => ({ eof: true }));
      if (chunk.eof) return;
    }
  })();
  try {
    await proc.waitForPort(spec.port, readyMs);
  } catch (err) {
    draining = false;
    await proc.close().catch(() => {});
    throw new McpStartupError(
      `MCP server '${spec.command}' did not accept on 127.0.0.1:${spec.port} in the sandbox: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const fetchInSandbox = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.method === 'GET')
      return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    request.headers.forEach((v, k) => {
      if (!DROP_REQUEST.has(k)) headers[k] = v;
    });
    const body = new Uint8Array(await request.arrayBuffer());
    const url = new URL(request.url);
    const exchange = api.httpLocal({
      port: spec.port,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers,
      body,
    });
    const signal = init?.signal ?? request.signal;
    const res = await (signal
      ? Promise.race([
          exchange,
          new Promise<never>((_, reject) => {
            if (signal.aborted) reject(signal.reason);
            signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          }),
        ])
      : exchange);
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (!DROP_RESPONSE.has(k)) out.set(k, v);
    return new Response(NULL_BODY.has(res.status) ? null : res.body, {
      status: res.status,
      headers: out,
    });
  };
  return {
    url: new URL(`http://127.0.0.1:${spec.port}/mcp`),
    fetch: fetchInSandbox as typeof fetch,
    close: () => {
      draining = false;
      return proc.close();
    },
  };
}

/** A stored `mcp_servers[]` entry of type stdio, flat or nested (schemas/src/agents.ts). */
export type StdioServerConfig =
  | ({ name: string; type: 'stdio' } & SandboxStdioSpec)
  | { name: string; type: 'stdio'; stdio: SandboxHttpSpec };

/**
 * The transport for either stdio shape: the flat one over stdin/stdout, the nested one through
 * StreamableHTTPClientTransport on sandboxHttpServer (its close also ends the process).
 */
export async function sandboxMcpTransport(
  api: SandboxAgentApi,
  server: StdioServerConfig,
): Promise<Transport> {
  if (!('stdio' in server)) return sandboxStdioTransport(api, server);
  const http = await sandboxHttpServer(api, server.stdio);
  const transport = new StreamableHTTPClientTransport(http.url, { fetch: http.fetch });
  const closeTransport = transport.close.bind(transport);
  transport.close = async () => {
    try {
      await closeTransport();
    } finally {
      await http.close().catch(() => {});
    }
  };
  return transport;
}
