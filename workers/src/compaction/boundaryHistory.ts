/**
 * The conversation a harness `pi` session sends, rebuilt from its event log: the newest
 * `agent.thread_context_compacted` boundary replaces everything before it with its summary.
 * Guarantees:
 * - no boundary: exactly ../history.ts buildHistory (a session that never compacted sends what a
 *   default-harness session sends);
 * - with one: a user turn carrying the boundary's summary, then the session's mid-conversation
 *   system messages from before it (they hold for every later turn), then the conversation
 *   built from the events after it. User input that arrived before the boundary but that no turn
 *   had consumed yet (after the last session.status_running) is kept and enters at the turn that
 *   consumes it, as usual;
 * - derived only from the log, so a worker restart rebuilds the same history.
 * Proved by test/compaction.test.ts (the request after a compaction carries the summary and the
 * later messages only) and test/compaction-overflow.test.ts (after a restart).
 */
import type { ChatMessage, EventDoc } from '@agentfleet/core';
import { buildHistory } from '../history.js';

export const BOUNDARY_EVENT = 'agent.thread_context_compacted';

const INPUT_TYPES = new Set([
  'user.message',
  'user.custom_tool_result',
  'user.tool_result',
  'system.message',
]);

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
  let lastRun = -1;
  for (let i = at - 1; i >= 0; i--)
    if (events[i]!.type === 'session.status_running') {
      lastRun = i;
      break;
    }
  const before = events.slice(0, at);
  const consumedSystem = before.slice(0, lastRun + 1).filter((e) => e.type === 'system.message');
  const pending = before.slice(lastRun + 1).filter((e) => INPUT_TYPES.has(e.type));
  const synthetic = (type: string, payload: Record<string, unknown>): EventDoc =>
    ({ ...boundary, _id: `${boundary._id}:${type}`, type, payload }) as EventDoc;
  const summary = String((boundary.payload as { summary?: unknown }).summary ?? '');
  return buildHistory([
    synthetic('user.message', { content: [{ type: 'text', text: summaryMessageText(summary) }] }),
    ...consumedSystem,
    synthetic('session.status_running', {}),
    ...pending,
    ...events.slice(at + 1),
  ]);
}
