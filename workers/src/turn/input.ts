/**
 * When pending input may start a turn. Guarantees: a turn starts only for new input that is not
 * cancelled by a later interrupt (a user.message, a user.custom_tool_result, a
 * user.tool_confirmation or a self-hosted worker's user.tool_result); a turn that ended with
 * requires_action is resumed only once every call it named is answered (a client-executed call
 * by its user.custom_tool_result, a call held by a permission policy by its
 * user.tool_confirmation, a worker call by its user.tool_result), or a new user.message arrives
 * (which answers the rest with error results: workers/src/tools/permissions.ts,
 * workers/src/turn/history.ts).
 * An answer sent before that idle (as soon as the call's event arrived) counts. Answers to some
 * but not all of the calls re-emit the idle with the remainder (requiresAction).
 * Proven by test/e2e/sdk/sdk-flow.test.ts (custom tools), test/e2e/sandbox/permission-policy.test.ts and
 * test/e2e/work/self-hosted-lane.test.ts (worker results).
 */
import { aboutAThread, type EventDoc, type EventDraft, type SessionDoc } from '@agentfleet/core';

/** The idle that asks the client for the calls still unanswered. */
export const requiresAction = (eventIds: string[]): EventDraft => ({
  type: 'session.status_idle',
  payload: { stop_reason: { type: 'requires_action', event_ids: eventIds }, stop_details: null },
});

/** Input event types that start (or resume) a turn. */
const TURN_INPUT_TYPES = new Set([
  'user.message',
  'user.define_outcome',
  'user.custom_tool_result',
  'user.tool_confirmation',
  'user.tool_result',
  'agent.thread_message_received', // a child thread's task or next message (core/src/threads)
]);

/**
 * Whether input in (processed_seq or the last interrupt, inputTo] may start a turn now. When it
 * answers some but not all of the calls a requires_action idle named, `remaining` lists the rest
 * (the SDK: "resolving fewer than all re-emits session.status_idle with the remainder").
 * `log` is the session's log read after `s` (the worker's SessionLogCache): every event up to
 * `inputTo` is in it, ascending by seq, so the answer needs no query of its own.
 */
export function turnInputReady(
  log: readonly EventDoc[],
  s: SessionDoc,
  inputTo: number,
  interruptSeq: number,
): { ready: boolean; remaining: string[] } {
  const after = Math.max(s.processed_seq, interruptSeq);
  let live = false;
  for (let i = log.length - 1; i >= 0 && log[i]!.seq > after; i--) {
    const e = log[i]!;
    if (e.seq <= inputTo && TURN_INPUT_TYPES.has(e.type) && !aboutAThread(e)) {
      live = true;
      break;
    }
  }
  if (!live) return { ready: false, remaining: [] };
  const remaining = unansweredCalls(log, inputTo);
  return { ready: remaining.length === 0, remaining };
}

/**
 * The calls the last requires_action idle named that are still unanswered: the turn resumes
 * once there are none (or a new user.message arrives, which answers them all).
 */
function unansweredCalls(log: readonly EventDoc[], inputTo: number): string[] {
  let at = log.length - 1;
  while (at >= 0 && log[at]!.type !== 'session.status_idle') at--;
  const idle = at >= 0 ? log[at]! : undefined;
  const wanted: string[] =
    (idle?.payload as any)?.stop_reason?.type === 'requires_action'
      ? ((idle!.payload as any).stop_reason.event_ids ?? [])
      : [];
  if (!wanted.length) return [];
  for (let i = at + 1; i < log.length && log[i]!.seq <= inputTo; i++)
    if (log[i]!.type === 'user.message') return [];
  // An answer counts wherever it is in the log: the SDK lets a client answer a call as soon as
  // its event arrives, before the session.status_idle that lists it.
  const got = new Set<string>();
  for (const e of log) {
    if (e.seq > inputTo) break;
    const p = e.payload as Record<string, unknown>;
    if (e.type === 'user.custom_tool_result') got.add(p.custom_tool_use_id as string);
    else if (e.type === 'user.tool_confirmation' || e.type === 'user.tool_result')
      got.add(p.tool_use_id as string);
  }
  return wanted.filter((id) => !got.has(id));
}
