/**
 * Session delete cascade (spec retention table: "session files and blobs" and "session output
 * prefix"): after DELETE /v1/sessions/:id stopped the runtime, every file scoped to the session
 * goes (metadata first: no longer listed or downloadable, then its bytes) and every object under
 * the session's output prefix. Best effort and idempotent: a failed blob delete is returned for
 * the caller to log for reconciliation, never thrown. The session's sandbox snapshots go too
 * (a deleted session is never resumed, so keeping them to the 7-day backup TTL would only keep
 * tenant data longer): this removes those already stored, and the worker holding a live
 * sandbox destroys it without a snapshot or output sync and removes any written meanwhile
 * (SandboxManager.destroy with `discard`). Spilled event blobs under the session's spill prefix go
 * as well (test/e2e/events/event-spill.test.ts). Proved by test/e2e/sessions/session-delete.test.ts.
 */
import type { ObjectStore } from '../objects/port.js';
import type { Collections } from '../store/collections.js';
import { outputsPrefix } from '../files/files.js';
import { eventSpillPrefix } from '../events/spill.js';
import { snapshotPrefix } from '../sandbox/snapshotKeys.js';

export async function cascadeSessionDelete(
  c: Pick<Collections, 'files' | 'sessions'>,
  objects: ObjectStore,
  tenant: string,
  sessionId: string,
): Promise<{ failedKeys: string[] }> {
  const failedKeys: string[] = [];
  const drop = (key: string) => objects.delete(key).catch(() => void failedKeys.push(key));
  const files = await c.files.find(tenant, { scope_id: sessionId });
  await c.files.deleteMany(tenant, { scope_id: sessionId });
  for (const f of files) await drop(f.object_key);
  const prefix = outputsPrefix(tenant, sessionId);
  const outputs = await objects.list(prefix).catch(() => {
    failedKeys.push(`${prefix}*`);
    return [];
  });
  for (const o of outputs) await drop(o.key);
  // Spilled event payloads (> 500 KB, ../events/spill.ts), including any left by a crashed append.
  const spilled = eventSpillPrefix(tenant, sessionId);
  for (const o of await objects.list(spilled).catch(() => {
    failedKeys.push(`${spilled}*`);
    return [];
  }))
    await drop(o.key);
  const s = await c.sessions.get(tenant, sessionId);
  if (s?.environment_id) {
    const snapshots = snapshotPrefix({
      tenantId: tenant,
      sessionId,
      environmentId: s.environment_id,
    });
    const stored = await objects.list(snapshots).catch(() => {
      failedKeys.push(`${snapshots}*`);
      return [];
    });
    for (const o of stored) await drop(o.key);
  }
  return { failedKeys };
}
