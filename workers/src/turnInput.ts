/**
 * When pending input may start a turn. Guarantee: a turn that ended with requires_action is
 * resumed only once every client-executed call it named has its user.custom_tool_result, or
 * a new user.message arrives (which answers the rest with error results).
 * Proven by test/sdk-flow.test.ts (custom tools).
 */
import type { Platform, SessionDoc } from '@agentfleet/core';

/**
 * After an idle with requires_action, the turn resumes once every client-executed call has
 * its user.custom_tool_result (or a new user.message arrives, which answers the rest with
 * error results).
 */
export async function clientCallsAnswered(
  p: Platform,
  tenant: string,
  s: SessionDoc,
  inputTo: number,
): Promise<boolean> {
  const [idle] = await p.collections.events.find(
    tenant,
    { session_id: s._id, type: 'session.status_idle' },
    { sort: { seq: -1 }, limit: 1 },
  );
  const wanted: string[] =
    (idle?.payload as any)?.stop_reason?.type === 'requires_action'
      ? ((idle!.payload as any).stop_reason.event_ids ?? [])
      : [];
  if (!wanted.length) return true;
  const after = await p.collections.events.find(tenant, {
    session_id: s._id,
    seq: { $gt: idle!.seq, $lte: inputTo },
    type: { $in: ['user.message', 'user.custom_tool_result'] },
  });
  if (after.some((e) => e.type === 'user.message')) return true;
  const got = new Set(after.map((e) => (e.payload as any).custom_tool_use_id));
  return wanted.every((id) => got.has(id));
}
