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
 * sweepBackups() deletes snapshots older than 7 days (and pointers to them); the worker runs it
 * every hour (workers/src/jobs/backupSweeper.ts).
 *
 * Snapshots, restores and outputs stream (archiveStream/extractStream ↔ putStream/getStream):
 * the server never holds a whole archive. Output quotas and name rules: outputs.ts.
 *
 * This file: the per-session entries, crash handling, idle stop and the public facade. The
 * warmup steps are in ./warmup.ts, the object-store side (snapshots, restore, sweep,
 * outputs) in ./storage.ts, shared types and constants in ./types.ts.
 * Tested in core/test/sandbox.manager.test.ts and sandbox.outputs.test.ts.
 */
import type {
  OutputSyncReport,
  SandboxAgentApi,
  SandboxHandle,
  SandboxState,
  SessionRef,
} from '../port.js';
import {
  DEFAULT_OUTPUT_MAX_FILE_BYTES,
  DEFAULT_OUTPUT_MAX_SESSION_BYTES,
  newOutputSyncMemory,
  type OutputQuotas,
} from '../outputs.js';
import {
  deleteSnapshots,
  latestSnapshot,
  sweepBackups,
  syncOutputsWith,
  writeSnapshot,
} from './storage.js';
import { readMarker, warmup } from './warmup.js';
import {
  BACKUP_TTL_MS,
  errMessage,
  MAX_KEEPALIVE_MS,
  WARM_MARKER,
  type Entry,
  type ManagerContext,
  type SandboxManagerDeps,
  type SandboxManagerService,
} from './types.js';

export {
  BACKUP_TTL_MS,
  DEFAULT_SLEEP_AFTER_MS,
  MAX_KEEPALIVE_MS,
  MAX_SNAPSHOT_BYTES,
  PROBE_ATTEMPTS,
  SandboxWarmupError,
  WARM_MARKER,
  type SandboxEvent,
  type SandboxManagerDeps,
  type SandboxManagerService,
  type SandboxResource,
  type SnapshotPointer,
} from './types.js';
export { latestPointerKey, snapshotKey, snapshotPrefix, snapshotTime } from './storage.js';

export function createSandboxManager(deps: SandboxManagerDeps): SandboxManagerService {
  const { objects, log } = deps;
  const sleepAfterMs = deps.sleepAfterMs;
  const ttl = deps.backupTtlMs ?? BACKUP_TTL_MS;
  const maxKeepAlive = deps.maxKeepAliveMs ?? MAX_KEEPALIVE_MS;
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

  const ctx: ManagerContext = {
    deps,
    objects,
    log,
    now,
    outputQuotas,
    deadHandles,
    emit,
    setState,
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

  function watchExit(e: Entry, h: SandboxHandle) {
    void h.exited.then((r) => {
      deadHandles.add(h);
      if (e.handle !== h) return; // stopped on purpose and already let go
      if (e.state === 'stopping') return; // our own stop sequence
      void crashed(e, h, r);
    });
  }

  function startWarmup(e: Entry): Promise<SandboxHandle> {
    const p = warmup(ctx, e, watchExit);
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
          await writeSnapshot(ctx, e, h, 'exit');
        } catch (err) {
          emit('snapshot_failed', sessionId, { reason: 'exit', error: errMessage(err) });
        }
        await syncOutputsWith(ctx, e, h).catch(() => {});
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
  async function stopSandbox(
    e: Entry,
    reason: 'idle' | 'destroy' | 'shutdown',
    discard = false,
  ): Promise<void> {
    const h = e.handle;
    if (!h || e.stopping) return;
    clearIdle(e);
    setState(e, 'stopping');
    let kept = false;
    const stopping = (async () => {
      if (e.backup && !deadHandles.has(h) && !discard) {
        try {
          await writeSnapshot(ctx, e, h, reason);
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
          await syncOutputsWith(ctx, e, h);
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
        return await syncOutputsWith(ctx, e, e.handle);
      } finally {
        e.inflight--;
        armIdle(e);
      }
    },

    async destroy(session, opts = {}) {
      const e = entries.get(session.sessionId);
      if (!e) return;
      if (e.warm) await e.warm.catch(() => {});
      while (e.stopping) await e.stopping.catch(() => {});
      if (e.handle) await stopSandbox(e, 'destroy', opts.discard === true);
      // A deleted session: any snapshot (an idle stop that finished meanwhile, older backups) goes too.
      if (opts.discard) await deleteSnapshots(ctx, e.ref);
      e.tasks.clear();
      clearIdle(e);
      emit('destroyed', e.ref.sessionId);
      maybeForget(e);
    },

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(
        [...entries.values()].map(async (e) => {
          clearIdle(e);
          if (e.warm) await e.warm.catch(() => {});
          while (e.stopping) await e.stopping.catch(() => {});
          if (e.handle) await stopSandbox(e, 'shutdown');
        }),
      );
    },

    sweepBackups: (at = now()) => sweepBackups(ctx, at - ttl),

    latestSnapshot: (ref) => latestSnapshot(objects, ref),
  };

  return manager;
}
