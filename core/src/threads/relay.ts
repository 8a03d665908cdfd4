/**
 * The client's answers to a child thread's calls. A child's call that waits for the client (a
 * client-executed custom tool, a call held by a permission policy) is cross-posted to the
 * primary's log with the child's `session_thread_id` (workers/src/turn/threads.ts), so a client
 * following the session sees it; the client answers it there, by the id it saw, and the answer
 * is routed to the child: the primary's log keeps the client's event with `session_thread_id`
 * set to the thread it was routed to (as the SDK says), and the child's log gets it with the
 * call's own id, as its input. Neither moves the primary's turn state. Proved by
 * test/e2e/threads/threads-client-calls.test.ts.
 */
import type { InputEvent } from '@agentfleet/schemas';
import type { SessionDoc } from '../sessions/records.js';
import type { EventDraft } from '../events/log.js';

/** The id an answer names: a custom tool result's call, a confirmation's tool use. */
const answered = (e: InputEvent): string | undefined =>
  e.type === 'user.custom_tool_result'
    ? e.custom_tool_use_id
    : e.type === 'user.tool_confirmation'
      ? e.tool_use_id
      : undefined;

/** Each answer (by index in `events`) to a cross-posted call: its thread and the child's drafts. */
export function routedAnswers(
  s: Pick<SessionDoc, 'relayed'>,
  events: readonly InputEvent[],
): Map<number, { thread: string; draft: EventDraft }> {
  const out = new Map<number, { thread: string; draft: EventDraft }>();
  events.forEach((e, i) => {
    const id = answered(e);
    const to = id ? s.relayed?.[id] : undefined;
    if (!to) return;
    const { type, ...payload } = e as InputEvent & Record<string, unknown>;
    const own =
      type === 'user.custom_tool_result' ? { custom_tool_use_id: to.id } : { tool_use_id: to.id };
    out.set(i, { thread: to.thread, draft: { type, payload: { ...payload, ...own } } });
  });
  return out;
}

const ABOUT_A_THREAD = new Set([
  'agent.custom_tool_use',
  'agent.tool_use',
  'agent.mcp_tool_use',
  'user.custom_tool_result',
  'user.tool_confirmation',
  'user.interrupt',
]);

/**
 * True for an event in the primary's log that belongs to a child thread: a cross-posted call,
 * the client's answer routed to the thread, an interrupt of one thread. The primary's turn
 * (history, held calls, recovery, input) reads past them.
 */
export const aboutAThread = (e: { type: string; payload: unknown }): boolean =>
  ABOUT_A_THREAD.has(e.type) && !!(e.payload as { session_thread_id?: unknown })?.session_thread_id;
