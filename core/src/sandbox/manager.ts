/**
 * The sandbox manager: the container lifecycle of the spec, over any SandboxDriver.
 *
 *   cold ──first run()──▶ warming-up ──▶ active ──no run() for sleepAfter──▶ stopping ──▶ cold
 *                                          │  (keepAlive tasks hold it awake, ≤ 30 min each)
 *                                          ├── sandbox exits (crash, OOM 137) ─▶ snapshot attempted ─▶ cold
 *                                          └── destroy() ─▶ eager snapshot ─▶ destroy ─▶ cold
 *
 * stopping = /workspace snapshot written to the object store and recorded (the `latest`
 * pointer), outputs synced, then stop. If the snapshot cannot be written on an idle stop, the
 * sandbox stays up and the stop is retried after another idle period (stopping would lose work).
 *
 * Warmup, in order: (1) probe `exec true` until it answers (10 attempts); (2) read the warm
 * marker /tmp/.agentfleet-warm: non-empty means /workspace is populated, skip (3); (3) restore
 * the latest snapshot of (tenant, environment, session); (4) write the declared resources — one
 * that cannot be prepared FAILS the warmup; (5) set the outbound context (proxy, tenant,
 * session); (6) set the backup context (tenant, environment, session): only from here on is
 * the sandbox ever snapshotted, so a half-warmed sandbox never overwrites a good snapshot;
 * (7) write a fresh marker. Before each call the marker is re-probed: if it is gone, the cached
 * warmup resets and reruns. One warmup per session at a time: calls queue behind it.
 *
 * Objects: snapshots/<tenant>/<env>/<session>/<UTC stamp>-<rand>.tar.gz, the pointer
 * snapshots/<tenant>/<env>/<session>/latest (JSON), outputs/<tenant>/<session>/<path>.
 * sweepBackups() deletes snapshots older than 7 days (and pointers to them); it also runs every
 * `sweepIntervalMs`.
 *
 * Snapshots, restores and outputs stream (archiveStream/extractStream ↔ putStream/getStream):
 * the server never holds a whole archive. Output quotas and name rules: outputs.ts.
 */
import { randomBytes } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Logger } from '../log.js';
import { sleep } from '../util.js';
import type { ObjectStore } from '../ports/objectStore.js';
import {
  INSTANCE_SIZES,
  type OutputSyncReport,
  type SandboxAgentApi,
  type SandboxDriver,
  type SandboxHandle,
  type SandboxManager,
  type SandboxSpec,
  type SandboxState,
  type SessionRef,
} from '../ports/sandbox.js';
import {
  DEFAULT_OUTPUT_MAX_FILE_BYTES,
  DEFAULT_OUTPUT_MAX_SESSION_BYTES,
  newOutputSyncMemory,
  syncSessionOutputs,
  type OutputQuotas,
  type OutputSyncMemory,
} from './outputs.js';
import { SandboxAgentError } from './protocol.js';
import { SANDBOX_PATHS } from './localLayout.js';
import { objectKeySegment as keySegment, outputsPrefix } from '../domain/files.js';

export const WARM_MARKER = '/tmp/.agentfleet-warm';
const WORKSPACE_DIR = SANDBOX_PATHS.workspace;
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
  /** Snapshots older than this are swept (default 7 days). */
  backupTtlMs?: number;
  /** How often sweepBackups runs on its own (default 1 h; 0: never). */
  sweepIntervalMs?: number;
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

/** A warmup step failed; `step` is 'probe' | 'restore' | 'resources' | 'outbound' | 'marker' | 'start'. */
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

export const snapshotPrefix = (s: SessionRef) =>
  `snapshots/${keySegment(s.tenantId, 'tenant id')}/${keySegment(s.environmentId, 'environment id')}/${keySegment(s.sessionId, 'session id')}/`;
export const latestPointerKey = (s: SessionRef) => `${snapshotPrefix(s)}latest`;

const stamp = (at: number) => new Date(at).toISOString().replace(/[-:]/g, '');
export const snapshotKey = (s: SessionRef, at: number) =>
  `${snapshotPrefix(s)}${stamp(at)}-${randomBytes(3).toString('hex')}.tar.gz`;

/** The time in a snapshot key, or null. */
export function snapshotTime(key: string): number | null {
  const m = /\/(\d{8})T(\d{6})\.(\d{3})Z-[0-9a-f]+\.tar\.gz$/.exec(key);
  if (!m) return null;
  const [d, t, ms] = [m[1]!, m[2]!, m[3]!];
  const v = Date.parse(
    `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${t.slice(0, 2)}:${t.slice(2, 4)}:${t.slice(4, 6)}.${ms}Z`,
  );
  return Number.isNaN(v) ? null : v;
}

interface Entry {
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

const errMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));
const isClosed = (err: unknown) => err instanceof SandboxAgentError && err.kind === 'closed';

export function createSandboxManager(deps: SandboxManagerDeps): SandboxManagerService {
  const { driver, objects, log } = deps;
  const sleepAfterMs = deps.sleepAfterMs;
  const ttl = deps.backupTtlMs ?? BACKUP_TTL_MS;
  const maxKeepAlive = deps.maxKeepAliveMs ?? MAX_KEEPALIVE_MS;
  const probeAttempts = deps.probeAttempts ?? PROBE_ATTEMPTS;
  const probeDelayMs = deps.probeDelayMs ?? 200;
  const now = deps.now ?? Date.now;
  const outputQuotas: OutputQuotas = deps.outputQuotas ?? {
    maxFileBytes: DEFAULT_OUTPUT_MAX_FILE_BYTES,
    maxSessionBytes: DEFAULT_OUTPUT_MAX_SESSION_BYTES,
  };
  const entries = new Map<string, Entry>();
  const deadHandles = new WeakSet<SandboxHandle>();
  let closed = false;

  const emit = (type: string, sessionId: string, fields: Record<string, unknown> = {}) => {
    try {
      deps.onEvent?.({ type, sessionId, ...fields });
    } catch (err) {
      log.warn('sandbox event listener failed', { error: errMessage(err) });
    }
  };

  const setState = (e: Entry, state: SandboxState) => {
    if (e.state === state) return;
    e.state = state;
    emit('state', e.ref.sessionId, { state });
  };

  const entryFor = (ref: SessionRef): Entry => {
    let e = entries.get(ref.sessionId);
    if (!e) {
      e = {
        ref: { tenantId: ref.tenantId, sessionId: ref.sessionId, environmentId: ref.environmentId },
        state: 'cold',
        handle: null,
        warm: null,
        stopping: null,
        backup: null,
        inflight: 0,
        lastActivity: Date.now(),
        idleTimer: null,
        tasks: new Map(),
        outputs: newOutputSyncMemory(),
      };
      entries.set(ref.sessionId, e);
    }
    return e;
  };

  const maybeForget = (e: Entry) => {
    const t = Date.now();
    for (const [id, task] of e.tasks) if (task.until <= t) e.tasks.delete(id);
    if (
      e.state === 'cold' &&
      !e.handle &&
      !e.warm &&
      !e.stopping &&
      e.inflight === 0 &&
      e.tasks.size === 0 &&
      entries.get(e.ref.sessionId) === e
    ) {
      entries.delete(e.ref.sessionId);
    }
  };

  // ---- snapshots and outputs

  async function latestSnapshot(ref: SessionRef): Promise<SnapshotPointer | null> {
    const raw = await objects.get(latestPointerKey(ref));
    if (raw) {
      try {
        const p = JSON.parse(Buffer.from(raw).toString('utf8')) as SnapshotPointer;
        if (p && typeof p.key === 'string' && p.key.startsWith(snapshotPrefix(ref))) return p;
      } catch {
        /* fall back to listing */
      }
    }
    // no (valid) pointer: the newest snapshot object, if any (e.g. the pointer write failed)
    const list = (await objects.list(snapshotPrefix(ref))).filter((o) => o.key.endsWith('.tar.gz'));
    const last = list
      .sort((a, b) => (snapshotTime(a.key) ?? 0) - (snapshotTime(b.key) ?? 0))
      .at(-1);
    return last
      ? {
          key: last.key,
          createdAt: last.modifiedAt,
          bytes: last.size,
          reason: 'unknown',
          sandboxId: '',
        }
      : null;
  }

  async function snapshot(e: Entry, h: SandboxHandle, reason: string): Promise<SnapshotPointer> {
    const ref = e.backup!;
    const archive = await h.api.archiveStream(WORKSPACE_DIR);
    const at = now();
    const key = snapshotKey(ref, at);
    // streamed from the sandbox into the store: a failed transfer stores nothing
    const { size } = await objects.putStream(key, archive.data, {
      contentType: 'application/gzip',
      maxBytes: MAX_SNAPSHOT_BYTES,
    });
    const pointer: SnapshotPointer = {
      key,
      createdAt: new Date(at).toISOString(),
      bytes: size,
      reason,
      sandboxId: h.id,
    };
    await objects.put(latestPointerKey(ref), Buffer.from(JSON.stringify(pointer)), {
      contentType: 'application/json',
    });
    emit('snapshot', ref.sessionId, { key, reason, bytes: size, sandboxId: h.id });
    log.info('sandbox snapshot written', { sessionId: ref.sessionId, key, reason, bytes: size });
    return pointer;
  }

  async function syncOutputsWith(e: Entry, h: SandboxHandle): Promise<OutputSyncReport> {
    const report = await syncSessionOutputs({
      api: h.api,
      objects,
      dir: SANDBOX_PATHS.outputs,
      prefix: outputsPrefix(e.ref.tenantId, e.ref.sessionId),
      quotas: outputQuotas,
      memory: e.outputs,
      log,
      sessionId: e.ref.sessionId,
      now,
    });
    for (const s of report.skipped)
      emit('output_skipped', e.ref.sessionId, { name: s.name, reason: s.reason });
    emit('outputs_synced', e.ref.sessionId, {
      count: report.stored.length,
      skipped: report.skipped.length,
    });
    return report;
  }

  // ---- warmup

  async function probe(api: SandboxAgentApi): Promise<void> {
    let last: unknown;
    for (let attempt = 1; attempt <= probeAttempts; attempt++) {
      try {
        const r = await api.exec({ command: 'true', timeoutMs: 10_000 });
        if (r.exitCode === 0) return;
        last = new Error(`exit code ${r.exitCode}`);
      } catch (err) {
        last = err;
        if (isClosed(err)) break;
      }
      if (attempt < probeAttempts) await sleep(Math.min(2000, probeDelayMs * attempt));
    }
    throw new SandboxWarmupError(
      'probe',
      `sandbox did not answer 'exec true' (${probeAttempts} attempts): ${errMessage(last)}`,
    );
  }

  async function readMarker(api: SandboxAgentApi): Promise<string> {
    try {
      return (await api.readFile(WARM_MARKER)).content.trim();
    } catch (err) {
      if (err instanceof SandboxAgentError && err.kind === 'not_found') return '';
      throw err;
    }
  }

  async function restore(e: Entry, api: SandboxAgentApi): Promise<string | null> {
    let pointer: SnapshotPointer | null;
    let data: Readable | null = null;
    try {
      pointer = await latestSnapshot(e.ref);
      if (pointer) data = await objects.getStream(pointer.key);
    } catch (err) {
      throw new SandboxWarmupError(
        'restore',
        `reading the latest snapshot failed: ${errMessage(err)}`,
      );
    }
    if (!pointer) return null;
    if (!data) {
      log.warn('latest snapshot is gone (expired?): starting with an empty /workspace', {
        sessionId: e.ref.sessionId,
        key: pointer.key,
      });
      return null;
    }
    let bytes = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        cb(null, chunk);
      },
    });
    data.on('error', (err) => counted.destroy(err));
    data.pipe(counted);
    try {
      await api.extractStream(WORKSPACE_DIR, counted);
    } catch (err) {
      throw new SandboxWarmupError(
        'restore',
        `restoring snapshot ${pointer.key} into ${WORKSPACE_DIR} failed: ${errMessage(err)}`,
        WORKSPACE_DIR,
      );
    } finally {
      counted.destroy();
      data.destroy();
    }
    emit('restore', e.ref.sessionId, { key: pointer.key, bytes });
    return pointer.key;
  }

  async function mountResources(e: Entry, api: SandboxAgentApi): Promise<number> {
    let list: SandboxResource[];
    try {
      list = await deps.resources(e.ref);
    } catch (err) {
      throw new SandboxWarmupError(
        'resources',
        `listing the session's resources failed: ${errMessage(err)}`,
      );
    }
    for (const r of list) {
      let data: Uint8Array;
      try {
        data = await r.data();
      } catch (err) {
        throw new SandboxWarmupError(
          'resources',
          `resource ${r.path} could not be prepared: ${errMessage(err)}`,
          r.path,
        );
      }
      try {
        await api.writeFile(r.path, data);
      } catch (err) {
        throw new SandboxWarmupError(
          'resources',
          `resource ${r.path} could not be written into the sandbox: ${errMessage(err)}`,
          r.path,
        );
      }
    }
    return list.length;
  }

  function watchExit(e: Entry, h: SandboxHandle) {
    void h.exited.then((r) => {
      deadHandles.add(h);
      if (e.handle !== h) return; // stopped on purpose and already let go
      if (e.state === 'stopping') return; // our own stop sequence
      void crashed(e, h, r);
    });
  }

  async function warmup(e: Entry): Promise<SandboxHandle> {
    const t0 = Date.now();
    const sessionId = e.ref.sessionId;
    setState(e, 'warming-up');
    let h = e.handle;
    try {
      if (!h) {
        try {
          const spec = await deps.specFor(e.ref);
          h = await driver.start(spec);
        } catch (err) {
          throw new SandboxWarmupError('start', `starting the sandbox failed: ${errMessage(err)}`);
        }
        e.handle = h;
        watchExit(e, h);
      }
      const api = h.api;
      await probe(api); // (1)
      const marker = await readMarker(api); // (2)
      const restored = marker ? null : await restore(e, api); // (3)
      const resources = await mountResources(e, api); // (4)
      try {
        await deps.setOutboundContext?.({ ...e.ref, sandboxId: h.id }); // (5)
      } catch (err) {
        throw new SandboxWarmupError(
          'outbound',
          `setting the outbound context failed: ${errMessage(err)}`,
        );
      }
      e.backup = { ...e.ref }; // (6)
      try {
        await api.writeFile(
          WARM_MARKER,
          `${JSON.stringify({ sandboxId: h.id, warmedAt: new Date(now()).toISOString() })}\n`,
        ); // (7)
      } catch (err) {
        throw new SandboxWarmupError(
          'marker',
          `writing the warm marker failed: ${errMessage(err)}`,
          WARM_MARKER,
        );
      }
      if (e.handle !== h || deadHandles.has(h))
        throw new SandboxWarmupError('start', 'the sandbox exited during warmup');
      setState(e, 'active');
      emit('warmup', sessionId, {
        sandboxId: h.id,
        restored,
        skippedRestore: !!marker,
        resources,
        durationMs: Date.now() - t0,
      });
      return h;
    } catch (err) {
      emit('warmup_failed', sessionId, {
        error: errMessage(err),
        step: err instanceof SandboxWarmupError ? err.step : undefined,
      });
      log.warn('sandbox warmup failed', { sessionId, error: errMessage(err) });
      if (h && e.handle === h && !e.stopping) {
        // a sandbox that was active before (marker rerun) keeps its work; a fresh one has none to keep
        const hadBackup = e.backup;
        setState(e, 'stopping');
        const stopping = (async () => {
          if (hadBackup && !deadHandles.has(h!))
            await snapshot(e, h!, 'warmup-failed').catch(() => {});
          await h!.stop().catch(() => {});
        })();
        e.stopping = stopping;
        await stopping;
        e.stopping = null;
        e.handle = null;
        e.backup = null;
        setState(e, 'cold');
      }
      throw err;
    }
  }

  function startWarmup(e: Entry): Promise<SandboxHandle> {
    const p = warmup(e);
    e.warm = p;
    p.catch(() => {
      if (e.warm === p) e.warm = null;
    });
    return p;
  }

  async function crashed(
    e: Entry,
    h: SandboxHandle,
    r: { code: number | null; signal: string | null },
  ) {
    const sessionId = e.ref.sessionId;
    emit('exit', sessionId, { sandboxId: h.id, code: r.code, signal: r.signal, expected: false });
    log.warn('sandbox exited unexpectedly', {
      sessionId,
      sandboxId: h.id,
      code: r.code,
      signal: r.signal,
    });
    clearIdle(e);
    setState(e, 'stopping');
    e.warm = null;
    const stopping = (async () => {
      if (e.backup) {
        // attempted: a driver whose sandbox filesystem outlives the process may still answer
        try {
          await snapshot(e, h, 'exit');
        } catch (err) {
          emit('snapshot_failed', sessionId, { reason: 'exit', error: errMessage(err) });
        }
        await syncOutputsWith(e, h).catch(() => {});
      }
      await h.stop().catch(() => {});
    })();
    e.stopping = stopping;
    await stopping;
    e.stopping = null;
    e.handle = null;
    e.backup = null;
    setState(e, 'cold');
    maybeForget(e);
  }

  // ---- idle

  function clearIdle(e: Entry) {
    if (e.idleTimer) clearTimeout(e.idleTimer);
    e.idleTimer = null;
  }

  function idleDeadline(e: Entry): number {
    let d = e.lastActivity + sleepAfterMs;
    const t = Date.now();
    for (const [id, task] of e.tasks) {
      if (task.until <= t) e.tasks.delete(id);
      else d = Math.max(d, task.until);
    }
    return d;
  }

  function armIdle(e: Entry) {
    clearIdle(e);
    if (closed || e.state !== 'active' || e.inflight > 0 || !e.handle || e.stopping) return;
    e.idleTimer = setTimeout(
      () => {
        e.idleTimer = null;
        if (e.inflight > 0 || e.state !== 'active') return;
        if (Date.now() < idleDeadline(e)) return armIdle(e);
        void stopSandbox(e, 'idle');
      },
      Math.max(0, idleDeadline(e) - Date.now()),
    );
    e.idleTimer.unref?.();
  }

  /** Snapshot, sync outputs, stop (or destroy). On an idle stop whose snapshot fails, the sandbox stays up. */
  async function stopSandbox(e: Entry, reason: 'idle' | 'destroy' | 'shutdown'): Promise<void> {
    const h = e.handle;
    if (!h || e.stopping) return;
    clearIdle(e);
    setState(e, 'stopping');
    let kept = false;
    const stopping = (async () => {
      if (e.backup && !deadHandles.has(h)) {
        try {
          await snapshot(e, h, reason);
        } catch (err) {
          emit('snapshot_failed', e.ref.sessionId, { reason, error: errMessage(err) });
          log.error('sandbox snapshot failed', {
            sessionId: e.ref.sessionId,
            reason,
            error: errMessage(err),
          });
          if (reason === 'idle' && !deadHandles.has(h)) {
            kept = true;
            return;
          }
        }
        try {
          await syncOutputsWith(e, h);
        } catch (err) {
          log.warn('syncing sandbox outputs failed', {
            sessionId: e.ref.sessionId,
            error: errMessage(err),
          });
        }
      }
      await (reason === 'destroy' ? h.destroy() : h.stop()).catch((err) =>
        log.warn('stopping the sandbox failed', {
          sessionId: e.ref.sessionId,
          error: errMessage(err),
        }),
      );
    })();
    e.stopping = stopping;
    await stopping;
    e.stopping = null;
    if (kept && !deadHandles.has(h)) {
      setState(e, 'active');
      e.lastActivity = Date.now();
      armIdle(e);
      return;
    }
    if (kept) await h.stop().catch(() => {});
    emit('stopped', e.ref.sessionId, { sandboxId: h.id, reason });
    e.handle = null;
    e.warm = null;
    e.backup = null;
    setState(e, 'cold');
  }

  // ---- calls

  async function ready(e: Entry): Promise<SandboxAgentApi> {
    for (let round = 0; ; round++) {
      while (e.stopping) await e.stopping.catch(() => {});
      if (closed) throw new Error('sandbox manager is closed');
      const warm = e.warm ?? startWarmup(e);
      const h = await warm;
      if (e.stopping || e.handle !== h) {
        if (round >= 2)
          throw new Error(
            `sandbox for session ${e.ref.sessionId} stopped while the call waited for it`,
          );
        continue;
      }
      // re-probe the marker: gone means the sandbox lost its warm state
      const marker = await readMarker(h.api);
      if (marker) return h.api;
      if (e.warm === warm) {
        e.warm = null;
        emit('marker_missing', e.ref.sessionId, { sandboxId: h.id });
        log.info('sandbox warm marker missing: warming up again', { sessionId: e.ref.sessionId });
      }
      if (round >= 2)
        throw new Error(
          `sandbox for session ${e.ref.sessionId} keeps losing its warm marker ${WARM_MARKER}`,
        );
    }
  }

  let sweepTimer: NodeJS.Timeout | null = null;
  const sweepEvery = deps.sweepIntervalMs ?? 3600_000;

  const manager: SandboxManagerService = {
    async run(session, fn) {
      if (closed) throw new Error('sandbox manager is closed');
      const e = entryFor(session);
      e.inflight++;
      clearIdle(e);
      try {
        const api = await ready(e);
        e.lastActivity = Date.now();
        return await fn(api);
      } finally {
        e.inflight--;
        e.lastActivity = Date.now();
        armIdle(e);
        maybeForget(e);
      }
    },

    keepAlive(session, taskId, untilMs) {
      const e = entryFor(session);
      const t = Date.now();
      const started = e.tasks.get(taskId)?.started ?? t;
      const until = Math.min(untilMs, started + maxKeepAlive);
      if (until <= t) e.tasks.delete(taskId);
      else e.tasks.set(taskId, { started, until });
      if (e.state === 'active' && e.inflight === 0) armIdle(e);
      else maybeForget(e);
    },

    state: (sessionId) => entries.get(sessionId)?.state ?? 'cold',

    async syncOutputs(session) {
      const e = entries.get(session.sessionId);
      if (!e || !e.handle || e.state !== 'active') return { stored: [], skipped: [] }; // a cold sandbox synced when it stopped
      e.inflight++;
      clearIdle(e);
      try {
        return await syncOutputsWith(e, e.handle);
      } finally {
        e.inflight--;
        armIdle(e);
      }
    },

    async destroy(session) {
      const e = entries.get(session.sessionId);
      if (!e) return;
      if (e.warm) await e.warm.catch(() => {});
      while (e.stopping) await e.stopping.catch(() => {});
      if (e.handle) await stopSandbox(e, 'destroy');
      e.tasks.clear();
      clearIdle(e);
      emit('destroyed', e.ref.sessionId);
      maybeForget(e);
    },

    async close() {
      if (closed) return;
      closed = true;
      if (sweepTimer) clearInterval(sweepTimer);
      await Promise.all(
        [...entries.values()].map(async (e) => {
          clearIdle(e);
          if (e.warm) await e.warm.catch(() => {});
          while (e.stopping) await e.stopping.catch(() => {});
          if (e.handle) await stopSandbox(e, 'shutdown');
        }),
      );
    },

    async sweepBackups(at = now()) {
      const cutoff = at - ttl;
      const all = await objects.list('snapshots/');
      const live = new Set(all.map((o) => o.key));
      const deleted: string[] = [];
      for (const o of all) {
        if (!o.key.endsWith('.tar.gz')) continue;
        const t = snapshotTime(o.key) ?? Date.parse(o.modifiedAt);
        if (t < cutoff) {
          await objects.delete(o.key);
          live.delete(o.key);
          deleted.push(o.key);
        }
      }
      for (const o of all) {
        if (!o.key.endsWith('/latest')) continue;
        let target: string | null = null;
        try {
          const raw = await objects.get(o.key);
          target = raw
            ? (JSON.parse(Buffer.from(raw).toString('utf8')) as SnapshotPointer).key
            : null;
        } catch {
          /* unreadable pointer */
        }
        if (!target || !live.has(target)) {
          await objects.delete(o.key);
          deleted.push(o.key);
        }
      }
      if (deleted.length) log.info('expired sandbox backups swept', { deleted: deleted.length });
      return { deleted };
    },

    latestSnapshot,
  };

  if (sweepEvery > 0) {
    sweepTimer = setInterval(() => {
      manager
        .sweepBackups()
        .catch((err) => log.warn('sweeping sandbox backups failed', { error: errMessage(err) }));
    }, sweepEvery);
    sweepTimer.unref?.();
  }
  return manager;
}
