/**
 * When pending input may start a turn. Guarantees: a turn starts only for new input that is not
 * cancelled by a later interrupt (a user.message, a user.custom_tool_result, a
 * user.tool_confirmation or a self-hosted worker's user.tool_result); a turn that ended with
 * requires_action is resumed only once every call it named is answered (a client-executed call
 * by its user.custom_tool_result, a call held by a permission policy by its
 * user.tool_confirmation, a worker call by its user.tool_result), or a new user.message arrives (which
 * answers the rest with error results: workers/src/permissions.ts, workers/src/history.ts).
 * An answer sent before that idle (as soon as the call's event arrived) counts. Answers to some
 * but not all of the calls re-emit the idle with the remainder (requiresAction).
 * Proven by test/sdk-flow.test.ts (custom tools), test/permission-policy.test.ts and
 * test/self-hosted-lane.test.ts (worker results).
 */
import type { EventDraft, Platform, SessionDoc } from '@agentfleet/core';

/** The idle that asks the client for the calls still unanswered. */
export const requiresAction = (eventIds: string[]): EventDraft => ({
  type: 'session.status_idle',
  payload: { stop_reason: { type: 'requires_action', event_ids: eventIds }, stop_details: null },
});

/** Input event types that start (or resume) a turn. */
const TURN_INPUT_TYPES = [
  'user.message',
  'user.custom_tool_result',
  'user.tool_confirmation',
  'user.tool_result',
];

/**
 * Whether input in (processed_seq or the last interrupt, inputTo] may start a turn now. When it
 * answers some but not all of the calls a requires_action idle named, `remaining` lists the rest
 * (the SDK: "resolving fewer than all re-emits session.status_idle with the remainder").
 */
export async function turnInputReady(
  p: Platform,
  tenant: string,
  s: SessionDoc,
  inputTo: number,
  interruptSeq: number,
): Promise<{ ready: boolean; remaining: string[] }> {
  const live = await p.collections.events.find(
    tenant,
    {
      session_id: s._id,
      type: { $in: TURN_INPUT_TYPES },
      seq: { $gt: Math.max(s.processed_seq, interruptSeq), $lte: inputTo },
    },
    { limit: 1 },
  );
  if (!live.length) return { ready: false, remaining: [] };
  const remaining = await unansweredCalls(p, tenant, s, inputTo);
  return { ready: remaining.length === 0, remaining };
}

/**
 * The calls the last requires_action idle named that are still unanswered: the turn resumes
 * once there are none (or a new user.message arrives, which answers them all).
 */
async function unansweredCalls(
  p: Platform,
  tenant: string,
  s: SessionDoc,
  inputTo: number,
): Promise<string[]> {
  const [idle] = await p.collections.events.find(
    tenant,
    { session_id: s._id, type: 'session.status_idle' },
    { sort: { seq: -1 }, limit: 1 },
  );
  const wanted: string[] =
    (idle?.payload as any)?.stop_reason?.type === 'requires_action'
      ? ((idle!.payload as any).stop_reason.event_ids ?? [])
      : [];
  if (!wanted.length) return [];
  const [message] = await p.collections.events.find(
    tenant,
    { session_id: s._id, seq: { $gt: idle!.seq, $lte: inputTo }, type: 'user.message' },
    { limit: 1 },
  );
  if (message) return [];
  // An answer counts wherever it is in the log: the SDK lets a client answer a call as soon as
  // its event arrives, before the session.status_idle that lists it.
  const answers = (field: string, type: string) =>
    p.collections.events.find(tenant, {
      session_id: s._id,
      seq: { $lte: inputTo },
      type,
      [`payload.${field}`]: { $in: wanted },
    });
  const got = new Set([
    ...(await answers('custom_tool_use_id', 'user.custom_tool_result')).map(
      (e) => e.payload.custom_tool_use_id,
    ),
    ...(await answers('tool_use_id', 'user.tool_confirmation')).map((e) => e.payload.tool_use_id),
    ...(await answers('tool_use_id', 'user.tool_result')).map((e) => e.payload.tool_use_id),
  ]);
  return wanted.filter((id) => !got.has(id));
}
