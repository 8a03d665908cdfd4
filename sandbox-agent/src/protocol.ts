/**
 * The sandbox protocol's shared definitions, used by the agent (agent/) and by the host's client
 * (core/src/sandbox/protocol.ts imports them from this package): version, size limits, defaults,
 * JSON-RPC error codes and the agent's error type. No imports: safe in any bundle.
 */

/** 2: long-lived processes (procOpen, procWaitPort) and loopback HTTP (httpLocal). */
export const PROTOCOL_VERSION = 2;
/**
 * Largest message line the agent accepts from the host, and the launcher relays (the host's
 * client bounds what it accepts per call, far lower: core/src/sandbox/answerLimits.ts).
 */
export const MAX_LINE_BYTES = 400 * 1024 * 1024;
/**
 * The descriptors a bwrap sandbox is started with: bwrap reads its options from ARGS_FD and its
 * seccomp program (limits/seccomp.ts) from SECCOMP_FD; the agent serves the protocol on
 * CHANNEL_FD (`--channel-fd`), a socket only it holds (agent/main.ts).
 */
export const SANDBOX_FDS = { args: 3, channel: 4, seccomp: 5 } as const;
/** The built-in tar's extract (no tar CLI) holds a whole archive in memory: over this, refused. */
export const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;
export const MAX_READ_BYTES = 32 * 1024 * 1024;
export const DEFAULT_CWD = '/workspace';
export const DEFAULT_EXEC_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 100 * 1024;
export const MAX_OUTPUT_BYTES_LIMIT = 16 * 1024 * 1024;
export const DEFAULT_GREP_MAX_MATCHES = 500;
export const MAX_GLOB_RESULTS = 10_000;

/** JSON-RPC error codes: the standard ones, then the agent's (-320xx), each with a stable kind. */
export const ERROR_CODES = {
  parse_error: -32700,
  invalid_request: -32600,
  method_not_found: -32601,
  invalid_params: -32602,
  internal: -32603,
  not_found: -32001,
  is_directory: -32002,
  not_directory: -32003,
  binary_file: -32004,
  permission_denied: -32005,
  no_match: -32006,
  not_unique: -32007,
  too_large: -32008,
  exists: -32009,
  io: -32010,
  /** Client side only: no answer in time. */
  timeout: -32011,
  /** Client side only: the stream closed (sandbox exited) before the answer. */
  closed: -32012,
} as const;
export type AgentErrorKind = keyof typeof ERROR_CODES;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: { kind: AgentErrorKind; path?: string; argument?: string; errno?: string };
}

/** An error the agent answers with: carries its kind (→ code) and the path or argument it names. */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  constructor(
    readonly kind: AgentErrorKind,
    message: string,
    readonly detail: { path?: string; argument?: string; errno?: string } = {},
  ) {
    super(message);
  }
  get code(): number {
    return ERROR_CODES[this.kind];
  }
}

/** Largest chunk of a streamed archive in one message (streamRead/streamWrite). */
export const STREAM_CHUNK_BYTES = 1024 * 1024;

/** Long-lived processes (procOpen: stdio MCP servers) one sandbox runs at once: 20 servers + slack. */
export const MAX_PROCESSES = 24;
/** Longest a process stream's streamRead waits for output before answering empty. */
export const PROC_READ_WAIT_MS = 25_000;
/** Largest request or response body of httpLocal (HTTP to a port on the sandbox's loopback). */
export const MAX_HTTP_LOCAL_BODY_BYTES = 16 * 1024 * 1024;
