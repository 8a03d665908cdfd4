/**
 * Object-store keys of sandbox /workspace snapshots:
 * snapshots/<tenant>/<env>/<session>/<UTC stamp>-<rand>.tar.gz and the `latest` pointer. Pure
 * key functions, shared by the sandbox manager (core/src/sandbox/manager/storage.ts writes,
 * restores and sweeps them) and the session delete cascade (../sessions/cascade.ts removes a
 * deleted session's prefix). Tested in core/test/sandbox.manager.test.ts and
 * test/e2e/sessions/session-delete.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { SessionRef } from './port.js';
import { objectKeySegment as keySegment } from '../files/files.js';

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
