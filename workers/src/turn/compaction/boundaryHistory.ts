/**
 * The conversation a harness `pi` session sends, rebuilt from its event log: the newest
 * `agent.thread_context_compacted` boundary replaces everything before it with its summary.
 * Guarantees:
 * - no boundary: exactly ../history.ts buildHistory (a session that never compacted sends what a
 *   default-harness session sends);
 * - with one: a user turn carrying the boundary's summary, then the session's mid-conversation
 *   system messages that earlier turns consumed, then the turn the boundary was written in, whole:
 *   the input that turn consumed (its user message, tool results, system messages, after the
 *   summary in the same user turn) and what the turn did before the boundary (its tool calls and
 *   results), then the conversation built from the events after the boundary. So the request
 *   after a compaction, mid-turn (overflow) or at its start (threshold), still ends with the
 *   turn's own input and the model answers it, never the summary. User input that arrived
 *   during that turn is kept and enters at the turn that consumes it, as usual;
 * - derived only from the log, so a worker restart rebuilds the same history.
 * Proved by test/e2e/turns/compaction.test.ts (the request after a compaction carries the summary and the
 * later messages only), test/e2e/turns/compaction-overflow.test.ts (after a restart; "the retry answers
 * the user": a model that refuses large prompts and echoes the last user text, all three
 * strategies).
 */
import type { ChatMessage, EventDoc } from '@agentfleet/core';
import { buildHistory } from '../history.js';

export const BOUNDARY_EVENT = 'agent.thread_context_compacted';

/** The input a turn consumes: what a boundary keeps of the turn it is written in. */
export const INPUT_TYPES = new Set([
  'user.message',
  'user.custom_tool_result',
  'user.tool_result',
  'system.message',
]);

/** Index of the last session.status_running before `end` (a turn's start), -1 when none. */
export function lastRunBefore(events: readonly EventDoc[], end: number): number {
  for (let i = end - 1; i >= 0; i--) if (events[i]!.type === 'session.status_running') return i;
  return -1;
}

/** The text of the user turn that stands for the summarised conversation. */
export const summaryMessageText = (summary: string) =>
  `This session continues an earlier conversation that was compacted. Summary of the conversation so far:\n\n${summary}`;

export function boundaryHistory(events: EventDoc[]): ChatMessage[] {
  let at = -1;
  for (let i = events.length - 1; i >= 0; i--)
    if (events[i]!.type === BOUNDARY_EVENT) {
      at = i;
      break;
    }
  if (at < 0) return buildHistory(events);
  const boundary = events[at]!;
  // the turn the boundary was written in starts at its session.status_running (run); it
  // consumed the input appended since the turn before it started (prevRun)
  const run = lastRunBefore(events, at);
  const prevRun = run < 0 ? -1 : lastRunBefore(events, run);
  const synthetic = (type: string, payload: Record<string, unknown>): EventDoc =>
    ({ ...boundary, _id: `${boundary._id}:${type}`, type, payload }) as EventDoc;
  const summary = String((boundary.payload as { summary?: unknown }).summary ?? '');
  const summaryEvent = synthetic('user.message', {
    content: [{ type: 'text', text: summaryMessageText(summary) }],
  });
  if (run < 0) {
    // no turn before the boundary: every input before it is still to be consumed
    const pending = events.slice(0, at).filter((e) => INPUT_TYPES.has(e.type));
    return buildHistory([
      summaryEvent,
      synthetic('session.status_running', {}),
      ...pending,
      ...events.slice(at + 1),
    ]);
  }
  const earlierSystem = events.slice(0, prevRun + 1).filter((e) => e.type === 'system.message');
  const turnInput = events.slice(prevRun + 1, run).filter((e) => INPUT_TYPES.has(e.type));
  return buildHistory([
    summaryEvent,
    ...earlierSystem,
    ...turnInput,
    events[run]!,
    ...events.slice(run + 1, at),
    ...events.slice(at + 1),
  ]);
}
