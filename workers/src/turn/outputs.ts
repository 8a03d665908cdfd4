/**
 * Files a turn wrote under /mnt/session/outputs are made durable before the turn reports idle;
 * each file that was not stored (quota, name) becomes a session.warning naming it, appended
 * before the idle. A session whose sandbox is not active (none started, or a self_hosted
 * session, which has none) syncs nothing. Proven by test/e2e/sandbox/sandbox-tools.test.ts (output_skipped).
 */
import { sessionOf } from '@agentfleet/core';
import type { EventDraft, Logger, SandboxManager, SessionDoc } from '@agentfleet/core';

export async function outputWarnings(
  sandbox: SandboxManager | null,
  s: SessionDoc | null,
  log: Logger,
): Promise<EventDraft[]> {
  const warnings: EventDraft[] = [];
  if (!sandbox || !s || sandbox.state(sessionOf(s)) !== 'active') return warnings;
  const report = await sandbox
    .syncOutputs({
      tenantId: s.tenant_id,
      sessionId: sessionOf(s),
      environmentId: s.environment_id,
    })
    .catch((err) => {
      log.warn('output sync failed', { session_id: s._id, err: String(err) });
      return null;
    });
  for (const k of report?.skipped ?? []) {
    warnings.push({
      type: 'session.warning',
      payload: {
        warning: 'output_skipped',
        message: k.message,
        filename: k.name,
        reason: k.reason,
      },
    });
  }
  return warnings;
}
