/**
 * What the sandbox manager keeps in the object store: /workspace snapshots
 * (snapshots/<tenant>/<env>/<session>/<UTC stamp>-<rand>.tar.gz and the `latest` pointer,
 * JSON), their restore at warmup, the backup sweep (older than the TTL, and pointers left
 * pointing at nothing), and the outputs sync (outputs/<tenant>/<session>/<path>; quotas and
 * name rules in outputs.ts). Everything streams (archiveStream/extractStream ↔
 * putStream/getStream): the server never holds a whole archive; a snapshot past
 * MAX_SNAPSHOT_BYTES stores nothing.
 * Tested in core/test/sandbox.manager.test.ts, sandbox.outputs.test.ts, outputKeys.test.ts.
 */
import { Transform, type Readable } from 'node:stream';
import type { ObjectStore } from '../../objects/port.js';
import type { OutputSyncReport, SandboxAgentApi, SandboxHandle, SessionRef } from '../port.js';
import { syncSessionOutputs } from '../outputs.js';
import { SANDBOX_PATHS } from '../shared.js';
import { outputsPrefix } from '../../files/files.js';
import { latestPointerKey, snapshotKey, snapshotPrefix, snapshotTime } from '../snapshotKeys.js';
import {
  errMessage,
  MAX_SNAPSHOT_BYTES,
  SandboxWarmupError,
  type Entry,
  type ManagerContext,
  type SnapshotPointer,
} from './types.js';

const WORKSPACE_DIR = SANDBOX_PATHS.workspace;

export { latestPointerKey, snapshotKey, snapshotPrefix, snapshotTime };

export async function latestSnapshot(
  objects: ObjectStore,
  ref: SessionRef,
): Promise<SnapshotPointer | null> {
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
  const last = list.sort((a, b) => (snapshotTime(a.key) ?? 0) - (snapshotTime(b.key) ?? 0)).at(-1);
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

/** Writes a snapshot of /workspace and points `latest` at it (only after warmup step 6). */
export async function writeSnapshot(
  ctx: ManagerContext,
  e: Entry,
  h: SandboxHandle,
  reason: string,
): Promise<SnapshotPointer> {
  const { objects, now, emit, log } = ctx;
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

/** Warmup step 3: the latest snapshot extracted into /workspace; its key, or null. */
export async function restoreSnapshot(
  ctx: ManagerContext,
  e: Entry,
  api: SandboxAgentApi,
): Promise<string | null> {
  const { objects, emit, log } = ctx;
  let pointer: SnapshotPointer | null;
  let data: Readable | null = null;
  try {
    pointer = await latestSnapshot(objects, e.ref);
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

/** Deletes snapshots older than `cutoff` and pointers left pointing at nothing. */
/** A deleted session's snapshots and pointer; a failed delete is logged for reconciliation. */
export async function deleteSnapshots(
  ctx: Pick<ManagerContext, 'objects' | 'log'>,
  ref: SessionRef,
): Promise<void> {
  const objects = await ctx.objects.list(snapshotPrefix(ref)).catch(() => []);
  for (const o of objects)
    await ctx.objects.delete(o.key).catch((err) =>
      ctx.log.warn('deleting a snapshot of a deleted session failed; left for reconciliation', {
        sessionId: ref.sessionId,
        key: o.key,
        error: errMessage(err),
      }),
    );
}

export async function sweepBackups(
  ctx: Pick<ManagerContext, 'objects' | 'log'>,
  cutoff: number,
): Promise<{ deleted: string[] }> {
  const { objects, log } = ctx;
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
      target = raw ? (JSON.parse(Buffer.from(raw).toString('utf8')) as SnapshotPointer).key : null;
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
}

export async function syncOutputsWith(
  ctx: ManagerContext,
  e: Entry,
  h: SandboxHandle,
): Promise<OutputSyncReport> {
  const { emit, log } = ctx;
  const report = await syncSessionOutputs({
    api: h.api,
    objects: ctx.objects,
    dir: SANDBOX_PATHS.outputs,
    prefix: outputsPrefix(e.ref.tenantId, e.ref.sessionId),
    quotas: ctx.outputQuotas,
    memory: e.outputs,
    log,
    sessionId: e.ref.sessionId,
    now: ctx.now,
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
