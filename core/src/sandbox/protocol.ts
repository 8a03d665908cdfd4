/**
 * The sandbox wire protocol, host side. JSON-RPC 2.0 over a newline-delimited byte stream: one
 * message per line, UTF-8 JSON; binary payloads are base64. Method names are the
 * SandboxAgentApi methods; params are named:
 *
 *   ping       {}                                                  → null
 *   exec       ExecRequest                                         → ExecResult
 *   readFile   { path, offset?, limit? }                           → { content, totalLines }
 *              offset: 1-based first line (default 1); limit: number of lines (default all)
 *   writeFile  { path, content } | { path, contentBase64 }, mode?  → null   (parents created)
 *   edit       { path, oldString, newString, replaceAll? }         → { replacements }
 *   glob       { pattern, cwd? }                                   → string[] (absolute, sorted)
 *   grep       { pattern, path?, glob?, maxMatches? }              → GrepMatch[]
 *              pattern: a JS regular expression; a leading `(?i)` / `(?s)` / `(?m)` sets flags
 *   list       { dir }                                             → [{ name, size, isDirectory }]
 *   archiveOpen { dir, maxFileBytes?, unchanged? }                 → { stream, skipped }
 *   extractOpen { dir }                                            → { stream }
 *   streamRead  { stream }                                         → { base64, eof }  (≤ 1 MiB)
 *   streamWrite { stream, base64 }                                 → null
 *   streamEnd   { stream }                                         → null (extract finished)
 *   streamClose { stream }                                         → null (abandoned)
 *              archiveStream/extractStream are built on these: no whole archive in one message
 *   procOpen    { command, args?, env?, cwd? }                     → { stream, pid }
 *              a long-lived process (startProcess); the stream methods above read its stdout
 *              (streamRead { stream, waitMs? } → { base64, eof, exit? }: waits for output),
 *              write its stdin, close it (kills its process group)
 *   procWaitPort { stream, port, timeoutMs }                       → null (127.0.0.1:port accepts)
 *   httpLocal   { port, method, path, headers?, bodyBase64?, timeoutMs? }
 *                                                   → { status, headers, bodyBase64 } (loopback)
 *
 * Relative paths resolve against /workspace. The agent announces itself with the notification
 * `{"jsonrpc":"2.0","method":"ready","params":{...}}`. Errors are JSON-RPC error objects:
 * `{ code, message, data: { kind, path?, argument? } }`; the message names the path or argument
 * (codes and kinds in ERROR_CODES). The agent program and the shared definitions are in
 * @agentfleet/sandbox-agent (sandbox-agent/src/agent/, sandbox-agent/src/protocol.ts).
 *
 * Nothing the agent says is trusted (it runs beside the tenant's commands): the client reads no
 * line longer than its pending calls may be answered with (answerLimits.ts), fails a call whose
 * answer is over that call's bound or of the wrong shape, enforces every size cap on the results
 * itself, and treats a line that is no protocol message (not JSON, or an answer to an id it
 * never used) as a broken agent: every pending call fails with kind `closed` and the transport
 * is closed (the drivers then stop the sandbox). A transport reads at most READ_SLICE_BYTES per
 * turn of the event loop before it yields, so one busy sandbox cannot hold the process.
 * Proved by test/e2e/sandbox/sandbox-isolation.test.ts and core/test/sandbox.answers.test.ts.
 */
import { Readable } from 'node:stream';
import type {
  ArchiveStream,
  ExecRequest,
  ExecResult,
  GrepMatch,
  LocalHttpResponse,
  SandboxAgentApi,
  SandboxProcess,
  SandboxProcessChunk,
} from './port.js';
import { AnswerRefused, SMALL_LINE_BYTES, answerLimit, capAnswer } from './answerLimits.js';
import type { AgentTransport } from './transport.js';
import {
  ERROR_CODES,
  PROC_READ_WAIT_MS,
  STREAM_CHUNK_BYTES,
  type AgentErrorKind,
  type RpcErrorObject,
} from '@agentfleet/sandbox-agent';

export {
  boundedLineReader,
  nodeStreamTransport,
  READ_SLICE_BYTES,
  type AgentTransport,
} from './transport.js';
export {
  ERROR_CODES,
  MAX_ARCHIVE_BYTES,
  createTar,
  createTarGz,
  parseTar,
  parseTarGz,
  type AgentErrorKind,
  type TarEntry,
} from '@agentfleet/sandbox-agent';

export const AGENT_METHODS = [
  'ping',
  'exec',
  'readFile',
  'writeFile',
  'edit',
  'glob',
  'grep',
  'list',
  'archiveOpen',
  'extractOpen',
  'streamRead',
  'streamWrite',
  'streamEnd',
  'streamClose',
  'procOpen',
  'procWaitPort',
  'httpLocal',
] as const;
export type AgentMethod = (typeof AGENT_METHODS)[number];

/** A rejected protocol call: the agent's error (code, kind, path/argument), a timeout or a closed stream. */
export class SandboxAgentError extends Error {
  override readonly name = 'SandboxAgentError';
  constructor(
    readonly code: number,
    message: string,
    readonly kind: AgentErrorKind | string,
    readonly data: { path?: string; argument?: string; [k: string]: unknown } = {},
  ) {
    super(message);
  }
}

export interface AgentClientOptions {
  /** Calls other than exec and archive/extract streams fail after this long (default 60 s). */
  timeoutMs?: number;
  /** exec calls fail this long after the command's own timeout (default 15 s). */
  execGraceMs?: number;
  /** Each call of an archive/extract stream (default 10 min). */
  transferTimeoutMs?: number;
}

export interface AgentClient extends SandboxAgentApi {
  /** Notifications from the agent (`ready`). */
  onNotification(listener: (method: string, params: unknown) => void): void;
  /** Rejects every pending call and refuses new ones. */
  close(reason?: Error): void;
  readonly closed: boolean;
  /** Number of calls waiting for an answer. */
  pending(): number;
}

const b64 = (data: Uint8Array) =>
  Buffer.from(data.buffer, data.byteOffset, data.length).toString('base64');
const fromB64 = (s: string) => {
  const buf = Buffer.from(s, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
};

/**
 * A SandboxAgentApi speaking the protocol over `transport`: request ids, per-call timeouts, and
 * rejection of every pending call when the stream closes (the sandbox exited).
 */
export function createAgentClient(
  transport: AgentTransport,
  options: AgentClientOptions = {},
): AgentClient {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const execGraceMs = options.execGraceMs ?? 15_000;
  const transferTimeoutMs = options.transferTimeoutMs ?? 600_000;
  const pending = new Map<
    number,
    {
      method: AgentMethod;
      params: Record<string, unknown>;
      limit: number;
      resolve: (v: unknown) => void;
      reject: (e: Error) => void;
      timer: NodeJS.Timeout;
    }
  >();
  transport.limitLines?.(() => {
    let max = SMALL_LINE_BYTES;
    for (const p of pending.values()) if (p.limit > max) max = p.limit;
    return max;
  });
  const notificationListeners: Array<(method: string, params: unknown) => void> = [];
  let nextId = 1;
  let closedWith: SandboxAgentError | null = null;

  const failAll = (err: SandboxAgentError) => {
    if (!closedWith) closedWith = err;
    for (const [id, p] of pending) {
      pending.delete(id);
      clearTimeout(p.timer);
      p.reject(err);
    }
  };

  /** A line that is no protocol message: the agent is broken or hostile, its sandbox is stopped. */
  const brokeProtocol = (what: string) => {
    failAll(
      new SandboxAgentError(
        ERROR_CODES.closed,
        `the sandbox agent broke the protocol (${what}): the sandbox is stopped`,
        'closed',
      ),
    );
    transport.close();
  };

  transport.onLine((line) => {
    let msg: {
      id?: unknown;
      method?: unknown;
      params?: unknown;
      result?: unknown;
      error?: RpcErrorObject;
    };
    try {
      msg = JSON.parse(line);
    } catch {
      return brokeProtocol('a line that is not JSON');
    }
    if (!msg || typeof msg !== 'object') return brokeProtocol('a line that is no JSON-RPC message');
    if ((msg.id === undefined || msg.id === null) && typeof msg.method === 'string') {
      for (const l of notificationListeners) l(msg.method, msg.params);
      return;
    }
    if (msg.id === null && msg.error) return; // the agent refusing a line it could not read
    if (typeof msg.id !== 'number' || !Number.isInteger(msg.id) || msg.id < 1 || msg.id >= nextId)
      return brokeProtocol('an answer to a request never sent');
    const p = pending.get(msg.id);
    if (!p) return; // timed out already
    pending.delete(msg.id);
    clearTimeout(p.timer);
    if (line.length > p.limit) {
      return p.reject(
        new SandboxAgentError(
          ERROR_CODES.too_large,
          `the sandbox agent's answer to ${p.method} is ${line.length} bytes, over the ${p.limit} bytes it may be: refused`,
          'too_large',
        ),
      );
    }
    if (msg.error) {
      const e = msg.error;
      const message = typeof e.message === 'string' ? e.message.slice(0, 8192) : 'error';
      const code = typeof e.code === 'number' ? e.code : ERROR_CODES.internal;
      const data = e.data && typeof e.data === 'object' ? e.data : undefined;
      return p.reject(new SandboxAgentError(code, message, data?.kind ?? 'internal', data ?? {}));
    }
    try {
      p.resolve(capAnswer(p.method, p.params, msg.result));
    } catch (err) {
      if (!(err instanceof AnswerRefused)) throw err;
      p.reject(new SandboxAgentError(ERROR_CODES.internal, err.message, 'internal'));
    }
  });
  transport.onClose((reason) => {
    failAll(
      new SandboxAgentError(
        ERROR_CODES.closed,
        `sandbox agent stream closed${reason ? `: ${reason.message}` : ''} (the sandbox exited or was stopped)`,
        'closed',
      ),
    );
  });

  const call = <T>(
    method: AgentMethod,
    params: Record<string, unknown>,
    ms = timeoutMs,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (closedWith) return reject(closedWith);
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(
          new SandboxAgentError(
            ERROR_CODES.timeout,
            `sandbox agent call ${method} timed out after ${ms} ms`,
            'timeout',
          ),
        );
      }, ms);
      timer.unref?.();
      pending.set(id, {
        method,
        params,
        limit: answerLimit(method, params),
        resolve: resolve as (v: unknown) => void,
        reject,
        timer,
      });
      try {
        transport.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      } catch (err) {
        pending.delete(id);
        clearTimeout(timer);
        reject(
          new SandboxAgentError(
            ERROR_CODES.closed,
            `sandbox agent stream closed: ${(err as Error).message}`,
            'closed',
          ),
        );
      }
    });

  return {
    async ping() {
      await call('ping', {});
    },
    exec: (req: ExecRequest) =>
      call<ExecResult>('exec', { ...req }, (req.timeoutMs ?? 120_000) + execGraceMs),
    readFile: (path, opts) => call('readFile', { path, ...(opts ?? {}) }),
    async writeFile(path, content, opts) {
      const body = typeof content === 'string' ? { content } : { contentBase64: b64(content) };
      await call('writeFile', {
        path,
        ...body,
        ...(opts?.mode !== undefined ? { mode: opts.mode } : {}),
      });
    },
    edit: (path, oldString, newString, replaceAll) =>
      call('edit', { path, oldString, newString, replaceAll: replaceAll ?? false }),
    glob: (pattern, cwd) =>
      call<string[]>('glob', { pattern, ...(cwd !== undefined ? { cwd } : {}) }),
    grep: (pattern, path, opts) =>
      call<GrepMatch[]>('grep', {
        pattern,
        ...(path !== undefined ? { path } : {}),
        ...(opts ?? {}),
      }),
    list: (dir) => call('list', { dir }),
    async archiveStream(dir, opts): Promise<ArchiveStream> {
      const params = {
        dir,
        ...(opts?.maxFileBytes !== undefined ? { maxFileBytes: opts.maxFileBytes } : {}),
        ...(opts?.unchanged ? { unchanged: opts.unchanged } : {}),
      };
      const opened = await call<{ stream: string; skipped: ArchiveStream['skipped'] }>(
        'archiveOpen',
        params,
        transferTimeoutMs,
      );
      const stream = opened.stream;
      async function* chunks(): AsyncGenerator<Uint8Array> {
        let eof = false;
        try {
          while (!eof) {
            const r = await call<{ base64: string; eof: boolean }>(
              'streamRead',
              { stream },
              transferTimeoutMs,
            );
            eof = r.eof === true;
            if (r.base64) yield fromB64(r.base64);
          }
        } finally {
          // abandoned early (the reader stopped or failed): the sandbox drops its tar process
          if (!eof && !closedWith) call('streamClose', { stream }).catch(() => {});
        }
      }
      return {
        skipped: Array.isArray(opened.skipped) ? opened.skipped : [],
        data: Readable.from(chunks(), { objectMode: false }),
      };
    },
    async extractStream(dir, archive) {
      const { stream } = await call<{ stream: string }>('extractOpen', { dir }, transferTimeoutMs);
      let ended = false;
      try {
        for await (const piece of archive) {
          for (let off = 0; off < piece.length; off += STREAM_CHUNK_BYTES) {
            await call(
              'streamWrite',
              { stream, base64: b64(piece.subarray(off, off + STREAM_CHUNK_BYTES)) },
              transferTimeoutMs,
            );
          }
        }
        ended = true;
        await call('streamEnd', { stream }, transferTimeoutMs);
      } finally {
        if (!ended && !closedWith) call('streamClose', { stream }).catch(() => {});
      }
    },
    async startProcess(spec): Promise<SandboxProcess> {
      const { stream, pid } = await call<{ stream: string; pid: number | null }>('procOpen', {
        ...spec,
      });
      let closed = false;
      return {
        id: stream,
        pid,
        async read(): Promise<SandboxProcessChunk> {
          const r = await call<{
            base64: string;
            eof: boolean;
            exit?: SandboxProcessChunk['exit'];
          }>('streamRead', { stream, waitMs: PROC_READ_WAIT_MS }, PROC_READ_WAIT_MS + timeoutMs);
          return {
            data: fromB64(r.base64 ?? ''),
            eof: r.eof === true,
            ...(r.exit ? { exit: r.exit } : {}),
          };
        },
        async write(data) {
          const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
          for (let off = 0; off < bytes.length; off += STREAM_CHUNK_BYTES)
            await call('streamWrite', {
              stream,
              base64: b64(bytes.subarray(off, off + STREAM_CHUNK_BYTES)),
            });
        },
        async waitForPort(port, ms) {
          await call('procWaitPort', { stream, port, timeoutMs: ms }, ms + timeoutMs);
        },
        async close() {
          if (closed || closedWith) return;
          closed = true;
          await call('streamClose', { stream });
        },
      };
    },
    async httpLocal(req): Promise<LocalHttpResponse> {
      const ms = req.timeoutMs ?? 120_000;
      const r = await call<{ status: number; headers: Record<string, string>; bodyBase64: string }>(
        'httpLocal',
        {
          port: req.port,
          method: req.method,
          path: req.path,
          headers: req.headers ?? {},
          ...(req.body && req.body.length ? { bodyBase64: b64(req.body) } : {}),
          timeoutMs: ms,
        },
        ms + timeoutMs,
      );
      return { status: r.status, headers: r.headers ?? {}, body: fromB64(r.bodyBase64 ?? '') };
    },
    onNotification: (l) => void notificationListeners.push(l),
    close(reason) {
      failAll(
        new SandboxAgentError(
          ERROR_CODES.closed,
          `sandbox agent client closed${reason ? `: ${reason.message}` : ''}`,
          'closed',
        ),
      );
      transport.close();
    },
    get closed() {
      return closedWith !== null;
    },
    pending: () => pending.size,
  };
}
