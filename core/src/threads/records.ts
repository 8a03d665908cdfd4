/**
 * Session threads as stored. A session's primary thread is the session itself (its document and
 * log); its id is derived from the session id ({@link primaryThreadId}). A child thread is a
 * session document of its own (`_id` its `sthr_` id, `thread_of` the session's id, `thread` the
 * link below) with its own event log, turn state, run record, lease and recovery, so the turn
 * runner drives it like any session; it is never served as a session (core/src/sessions).
 */
export interface ThreadLink {
  /** The session the thread belongs to. */
  session_id: string;
  /** The thread that spawned it (the primary: coordinators spawn one level deep). */
  parent_thread_id: string;
  /** The roster agent's name (SDK `agent_name`). */
  agent_name: string;
  /** The coordinator's start_thread call (agent.tool_use id) that created it. */
  spawned_by: string;
}

export const THREAD_PREFIX = 'sthr_';

/** The primary thread's id: the session id's body under the thread prefix. */
export const primaryThreadId = (sessionId: string) =>
  THREAD_PREFIX + sessionId.slice(sessionId.indexOf('_') + 1);

/** The child thread a coordinator's start_thread call creates (deterministic: a retry finds it). */
export const childThreadId = (toolUseId: string) =>
  THREAD_PREFIX + toolUseId.slice(toolUseId.indexOf('_') + 1);

export const isThreadId = (id: string) => id.startsWith(THREAD_PREFIX);

/** Threads a coordinator may run at once, and start in all, per session. */
export const MAX_RUNNING_THREADS = 8;
export const MAX_THREADS = 20;

/** The session a document belongs to: a child thread's session, else itself (sandbox, ledger). */
export const sessionOf = (s: { _id: string; thread_of?: string }) => s.thread_of ?? s._id;
