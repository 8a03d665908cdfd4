import type { Collections } from '../store/collections.js';
import type { EnvironmentDoc } from '../environments/records.js';
import type { SessionEnvironmentSnapshot } from './records.js';

/** What a session keeps of its environment at create time (deep copy). */
export function snapshotOf(env: EnvironmentDoc): SessionEnvironmentSnapshot {
  const { kind, base_image, packages, network, env: vars, updated_at } = structuredClone(env);
  return { kind, base_image, packages, network, env: vars, updated_at };
}

/**
 * The environment a session runs with: the snapshot taken at create time; for sessions stored
 * before snapshots existed, the live environment. `null` when neither can be read (the session
 * is gone, or an old session's environment was deleted): callers fail closed (no egress, no
 * sandbox), never open. Proved by test/e2e/environments/environment-lifecycle.test.ts.
 */
export async function environmentSnapshot(
  c: Pick<Collections, 'sessions' | 'environments'>,
  tenant: string,
  sessionId: string,
): Promise<SessionEnvironmentSnapshot | null> {
  const s = await c.sessions.get(tenant, sessionId);
  if (!s || s.deleted_at) return null;
  if (s.environment) return s.environment;
  const live = await c.environments.get(tenant, s.environment_id);
  return live ? snapshotOf(live) : null;
}
