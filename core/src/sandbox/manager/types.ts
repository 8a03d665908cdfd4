/**
 * What the sandbox manager's parts share: its constants (warm marker, sleep, backup TTL,
 * keepAlive cap, probe attempts, largest snapshot), its options and service interfaces, the
 * warmup error naming the failed step, and the per-session entry with the context its parts
 * (manager.ts lifecycle, ./warmup.ts, ./storage.ts) work on.
 * Tested through the manager: core/test/sandbox.manager.test.ts, sandbox.outputs.test.ts.
 */
import type { Logger } from '../../log.js';
import type { ObjectStore } from '../../objects/port.js';
import {
  INSTANCE_SIZES,
  type SandboxAgentApi,
  type SandboxDriver,
  type SandboxHandle,
  type SandboxManager,
  type SandboxSpec,
  type SandboxState,
  type SessionRef,
} from '../port.js';
import type { OutputQuotas, OutputSyncMemory } from '../outputs.js';
import { SandboxAgentError } from '../protocol.js';

export const WARM_MARKER = '/tmp/.agentfleet-warm';
export const DEFAULT_SLEEP_AFTER_MS = 5 * 60_000;
export const BACKUP_TTL_MS = 7 * 24 * 3600_000;
export const MAX_KEEPALIVE_MS = 30 * 60_000;
export const PROBE_ATTEMPTS = 10;
/**
 * Largest snapshot stored: the biggest instance disk, gzipped incompressible data (+10%), and
 * tar headers. The sandbox is untrusted: a stream past this stores nothing (snapshot_failed).
 */
export const MAX_SNAPSHOT_BYTES =
  Math.ceil(Math.max(...Object.values(INSTANCE_SIZES).map((s) => s.diskMb)) * 1024 * 1024 * 1.1) +
  64 * 1024 * 1024;

export interface SandboxEvent {
  type: string;
  sessionId: string;
  [k: string]: unknown;
}

export interface SandboxResource {
  /** Absolute path inside the sandbox. */
  path: string;
  data: () => Promise<Uint8Array>;
  /**
   * A directory created EMPTY at `path` (anything there before is removed; `data` is not
   * read): a mounted memory store, so its files are exactly the store's at every warmup.
   */
  directory?: boolean;
  /**
   * Part of a read-only tree: a `directory` resource with readOnly is a tree the sandbox sees
   * read-only (SandboxSpec.readOnlyTrees), its files the readOnly resources under its path.
   * Given to the driver when the sandbox starts, not written through the agent.
   */
  readOnly?: boolean;
}

export interface SandboxManagerDeps {
  driver: SandboxDriver;
  objects: ObjectStore;
  /** Idle time before a sandbox is snapshotted and stopped (spec default 5 min: DEFAULT_SLEEP_AFTER_MS). */
  sleepAfterMs: number;
  /** The session's declared resources, written at each warmup (step 4). */
  resources: (s: SessionRef) => Promise<SandboxResource[]>;
  specFor: (s: SessionRef) => Promise<SandboxSpec>;
  onEvent?: (e: SandboxEvent) => void;
  log: Logger;
  /** Step 5: tells the outbound proxy which tenant and session this sandbox's traffic is for. */
  setOutboundContext?: (ctx: SessionRef & { sandboxId: string }) => Promise<void>;
  /**
   * Step 5b: what the session's workspace needs once its traffic has a way out (its
   * repositories: core/src/repositories/checkout.ts). A throw fails the warmup, as is.
   */
  prepareWorkspace?: (s: SessionRef, api: SandboxAgentApi) => Promise<void>;
  /** Snapshots older than this are swept (default 7 days). */
  backupTtlMs?: number;
  /** Longest a keepAlive task holds a sandbox awake (default 30 min). */
  maxKeepAliveMs?: number;
  probeAttempts?: number;
  /** Delay before the n-th probe retry is n × this (default 200 ms, at most 2 s). */
  probeDelayMs?: number;
  /** Clock for snapshot timestamps and the sweep (tests). */
  now?: () => number;
  /** Output quotas (default 100 MiB per file, 1 GiB per session). */
  outputQuotas?: OutputQuotas;
}

export interface SnapshotPointer {
  key: string;
  createdAt: string;
  bytes: number;
  reason: string;
  sandboxId: string;
}

export interface SandboxManagerService extends SandboxManager {
  /** Deletes snapshots older than the backup TTL at `now`, and pointers left pointing at them. */
  sweepBackups(now?: number): Promise<{ deleted: string[] }>;
  latestSnapshot(session: SessionRef): Promise<SnapshotPointer | null>;
}

/** A warmup step failed; `step` is 'probe' | 'restore' | 'resources' | 'outbound' | 'repositories' | 'marker' | 'start'. */
export class SandboxWarmupError extends Error {
  override readonly name = 'SandboxWarmupError';
  constructor(
    readonly step: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

export interface Entry {
  ref: SessionRef;
  state: SandboxState;
  handle: SandboxHandle | null;
  warm: Promise<SandboxHandle> | null;
  stopping: Promise<void> | null;
  /** Step 6: set once a warmup completed; snapshots are only taken with it. */
  backup: SessionRef | null;
  inflight: number;
  lastActivity: number;
  idleTimer: NodeJS.Timeout | null;
  tasks: Map<string, { started: number; until: number }>;
  outputs: OutputSyncMemory;
}

export const errMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));
export const isClosed = (err: unknown) => err instanceof SandboxAgentError && err.kind === 'closed';

/** What the manager's parts share: options with defaults applied, events and state changes. */
export interface ManagerContext {
  deps: SandboxManagerDeps;
  objects: ObjectStore;
  log: Logger;
  now: () => number;
  outputQuotas: OutputQuotas;
  /** Handles whose sandbox has exited. */
  deadHandles: WeakSet<SandboxHandle>;
  emit: (type: string, sessionId: string, fields?: Record<string, unknown>) => void;
  setState: (e: Entry, state: SandboxState) => void;
}
