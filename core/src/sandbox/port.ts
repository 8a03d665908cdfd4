/**
 * Sandbox ports. A sandbox is one isolated container per session (sessions never share
 * sandbox state). Inside it runs the sandbox agent, which executes what the turn runner asks
 * over one protocol whatever the driver (local bubblewrap or a Nomad job).
 *
 * Implementations (SandboxDriver), each run through the driver contract suite
 * core/test/sandbox.contract.ts:
 *   - bubblewrap, name 'local' (core/src/sandbox/drivers/bubblewrap/driver.ts): one bwrap sandbox per
 *     session on this host — core/test/sandbox.local.test.ts, sandbox.limits.test.ts;
 *   - Nomad (core/src/sandbox/drivers/nomad/driver.ts): one Nomad job per session, the protocol over
 *     TCP — core/test/sandbox.nomad.test.ts (against the Nomad fake, test/nomad/).
 * The driver is chosen by the composition root (server/). What drivers share (sandbox paths,
 * env, spec checks, instance resources) is in ./shared.ts. The SandboxManager over
 * any driver: core/src/sandbox/manager/manager.ts (core/test/sandbox.manager.test.ts).
 */
import type { Readable } from 'node:stream';

export interface ExecRequest {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Killed (whole process group) after this long; default 120 s. */
  timeoutMs?: number;
  /** stdout and stderr are each cut at this many bytes; default 100 KiB. */
  maxOutputBytes?: number;
  stdin?: string;
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

/** A streamed tar.gz from the sandbox (untrusted: the reader enforces its own limits). */
export interface ArchiveStream {
  /** Files the sandbox left out before sending (relative names, sizes as the sandbox reports them). */
  skipped: Array<{ name: string; size: number; reason: 'too_large' }>;
  data: Readable;
}

/** The sandbox agent's operations (the protocol). Paths are absolute inside the sandbox. */
export interface SandboxAgentApi {
  ping(): Promise<void>;
  exec(req: ExecRequest): Promise<ExecResult>;
  /** UTF-8 text (binary files are refused with an error naming the path). */
  readFile(
    path: string,
    options?: { offset?: number; limit?: number },
  ): Promise<{ content: string; totalLines: number }>;
  writeFile(path: string, content: string | Uint8Array, options?: { mode?: number }): Promise<void>;
  /** Exact-string replacement; fails if old_string is missing, or ambiguous without replaceAll. */
  edit(
    path: string,
    oldString: string,
    newString: string,
    replaceAll?: boolean,
  ): Promise<{ replacements: number }>;
  glob(pattern: string, cwd?: string): Promise<string[]>;
  grep(
    pattern: string,
    path?: string,
    options?: { glob?: string; maxMatches?: number },
  ): Promise<GrepMatch[]>;
  /**
   * File transfer: a tar (gzip) of a directory, and its inverse, streamed in chunks (snapshots and outputs: bounded memory on both sides). With
   * `maxFileBytes`, larger files are left out by the sandbox and listed in `skipped`; files whose
   * `size:mtime` (whole seconds) matches `unchanged[name]` are left out silently. Destroying
   * `data` early abandons the archive in the sandbox.
   */
  archiveStream(
    dir: string,
    options?: { maxFileBytes?: number; unchanged?: Record<string, string> },
  ): Promise<ArchiveStream>;
  extractStream(dir: string, archive: AsyncIterable<Uint8Array>): Promise<void>;
  /** Files under a directory (non-recursive listing with sizes), for outputs. */
  list(dir: string): Promise<Array<{ name: string; size: number; isDirectory: boolean }>>;
  /**
   * A long-lived process in the sandbox (stdio MCP servers), in its own process group, with the
   * sandbox's environment plus `env`. A missing executable rejects with a SandboxAgentError of
   * kind `not_found` naming the command. The process dies with `close()`, with the sandbox
   * agent's connection, or after 2 minutes without any call on it.
   */
  startProcess(spec: SandboxProcessSpec): Promise<SandboxProcess>;
  /** One HTTP request to 127.0.0.1:port INSIDE the sandbox, answered whole (bodies ≤ 16 MiB). */
  httpLocal(req: LocalHttpRequest): Promise<LocalHttpResponse>;
}

export interface SandboxProcessSpec {
  /** Spawned directly (no shell), found on the sandbox's PATH. */
  command: string;
  args?: string[];
  env?: Record<string, string>;
  /** Default /workspace. */
  cwd?: string;
}

export interface SandboxProcessChunk {
  /** Bytes of stdout (empty when nothing came within the read's wait). */
  data: Uint8Array;
  /** stdout ended; `exit` then tells how the process ended (stderr: its last 8 KiB). */
  eof: boolean;
  exit?: { code: number | null; signal: string | null; stderr: string };
}

export interface SandboxProcess {
  readonly id: string;
  readonly pid: number | null;
  /** Waits for stdout (up to about 25 s, then answers empty): call it in a loop while open. */
  read(): Promise<SandboxProcessChunk>;
  /** To stdin, with backpressure; rejects once the process is gone. */
  write(data: Uint8Array | string): Promise<void>;
  /** Resolves once 127.0.0.1:port in the sandbox accepts; rejects if the process exits first. */
  waitForPort(port: number, timeoutMs: number): Promise<void>;
  /** Kills the process group; idempotent. */
  close(): Promise<void>;
}

export interface LocalHttpRequest {
  port: number;
  method: string;
  /** Path and query, starting with '/'. */
  path: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  /** The whole exchange; default 120 s. */
  timeoutMs?: number;
}

export interface LocalHttpResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

import type { InstanceSize } from '@agentfleet/schemas';
export { INSTANCE_SIZES, type InstanceSize } from '@agentfleet/schemas';

export interface SandboxSpec {
  tenantId: string;
  sessionId: string;
  environmentId: string;
  size: InstanceSize;
  /** Environment variables the environment declares (no credentials). */
  env: Record<string, string>;
  /** Outbound HTTP(S) proxy URL the sandbox must use; the sandbox has no other network. */
  proxyUrl: string | null;
  /**
   * The environment's `base_image`; null or absent: the host image. Only the Nomad driver runs
   * another image (docker task driver); the local driver refuses one (core/src/environments/baseImage.ts).
   */
  baseImage?: string | null;
  /**
   * The environment's package layer (core/src/sandbox/packages/): a host directory mounted
   * read-only at /opt/agentfleet/packages, its paths on PATH, PYTHONPATH, NODE_PATH…;
   * `writable` only for the confined build that fills it. Absent or null: no packages.
   */
  packages?: { hostDir: string; writable?: boolean } | null;
  /**
   * Directories the sandbox sees read-only (a `read_only` memory store's mount): each exists at
   * `path` with exactly `files` (paths relative to it) from the start, and every write, create,
   * rename, chmod or delete under it fails with EROFS inside the sandbox. Refreshed only when a
   * sandbox starts. Absent: none.
   */
  readOnlyTrees?: ReadOnlyTree[];
}

export interface ReadOnlyTree {
  /** Absolute path inside the sandbox. */
  path: string;
  files: Array<{ path: string; data: Uint8Array }>;
}

export interface SandboxHandle {
  readonly id: string;
  readonly api: SandboxAgentApi;
  /** Resolves when the sandbox's main process exits (crash, OOM (137), stop). */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Graceful stop. */
  stop(): Promise<void>;
  /** Stop and remove everything the driver created (Nomad: stop and purge the job). */
  destroy(): Promise<void>;
}

/** One interface, implementations side by side (local, nomad), chosen at start by config. */
export interface SandboxDriver {
  readonly name: 'local' | 'nomad';
  start(spec: SandboxSpec): Promise<SandboxHandle>;
  close(): Promise<void>;
}

/** Pub/sub channel on which gateways ask whichever worker holds a session's sandbox to destroy it. */
export const SANDBOX_CONTROL_CHANNEL = 'sandbox-control';

export interface SessionRef {
  tenantId: string;
  sessionId: string;
  environmentId: string;
}

/** Why an output file was not stored. */
export type OutputSkipReason =
  'file_too_large' | 'session_quota_exceeded' | 'invalid_name' | 'not_a_regular_file';

export interface OutputSyncReport {
  /** Names stored (new or changed) by this sync. */
  stored: string[];
  /** Files skipped for the first time (a file skipped again unchanged is not listed again). */
  skipped: Array<{ name: string; reason: OutputSkipReason; message: string }>;
}

export type SandboxState = 'cold' | 'warming-up' | 'active' | 'stopping';

/**
 * The sandbox lifecycle (spec "Sandbox container lifecycle"): cold → warming-up → active;
 * idle `sleepAfter` → snapshot of /workspace → stop → cold; crash → snapshot attempted → cold
 * (the next warmup restores the latest snapshot); destroy → eager snapshot, then destroy.
 */
export interface SandboxManager {
  /** Runs `fn` in the session's sandbox, warming it up first when cold; renews the idle timer. */
  run<T>(session: SessionRef, fn: (api: SandboxAgentApi) => Promise<T>): Promise<T>;
  /** Keeps the sandbox awake while a background task runs (at most 30 minutes per task). */
  keepAlive(session: SessionRef, taskId: string, untilMs: number): void;
  state(sessionId: string): SandboxState;
  /**
   * Copies files under /mnt/session/outputs to the object store (durable outputs). Files that
   * cannot be outputs (over a quota, unusable name, not a regular file) are skipped, each listed
   * once in `skipped` (the turn runner reports them as `session.warning` events).
   */
  syncOutputs(session: SessionRef): Promise<OutputSyncReport>;
  /**
   * Eager snapshot, then destroy. `discard` (the session was deleted): no snapshot and no output
   * sync, and the session's existing snapshots are deleted (test/e2e/sessions/session-delete.test.ts).
   */
  destroy(session: SessionRef, opts?: { discard?: boolean }): Promise<void>;
  close(): Promise<void>;
}
