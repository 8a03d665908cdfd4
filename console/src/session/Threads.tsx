import { useEffect, useState } from 'react';
import { gql } from '../api';

/** A thread of the session as the view needs it (GraphQL SessionThread). */
export type Thread = {
  id: string;
  parentThreadId: string | null;
  status: string;
  agent: { name: string };
};

/**
 * The session's threads (Session.threads: the primary first, then the children oldest first),
 * read again whenever `version` changes (the view passes the count of session.thread_created
 * events it has seen, so a thread started while the view is open gets its tab).
 */
export function useThreads(id: string, version: number) {
  const [threads, setThreads] = useState<Thread[]>([]);
  useEffect(() => {
    let cancelled = false;
    gql<{ session: { threads: { nodes: Thread[] } } | null }>(
      'query ($id: ID!) { session(id: $id) { threads(limit: 100) { nodes { id parentThreadId status agent { name } } } } }',
      { id },
    )
      .then((d) => !cancelled && setThreads(d.session?.threads.nodes ?? []))
      .catch(() => {}); // the events' own error reports an unknown session
    return () => {
      cancelled = true;
    };
  }, [id, version]);
  return threads;
}

/**
 * One tab per thread, labelled with its agent's name, when the session has child threads (a
 * coordinator's); nothing otherwise. `selected` null is the primary thread (the session's
 * events). Arrow keys move between the tabs (WAI-ARIA tabs pattern).
 */
export function ThreadTabs({
  threads,
  selected,
  onSelect,
}: {
  threads: Thread[];
  selected: string | null;
  onSelect: (threadId: string | null) => void;
}) {
  if (threads.length < 2) return null;
  const idOf = (t: Thread) => (t.parentThreadId === null ? null : t.id);
  const tabId = (t: Thread) => `thread-tab-${t.id}`;
  const onKey = (e: React.KeyboardEvent) => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    const i = Math.max(
      0,
      threads.findIndex((t) => idOf(t) === selected),
    );
    const n = threads.length;
    const next = threads[(i + (e.key === 'ArrowRight' ? 1 : n - 1)) % n]!;
    onSelect(idOf(next));
    document.getElementById(tabId(next))?.focus();
  };
  return (
    <div role="tablist" aria-label="Threads" className="threads" onKeyDown={onKey}>
      {threads.map((t) => {
        const on = idOf(t) === selected;
        return (
          <button
            key={t.id}
            id={tabId(t)}
            type="button"
            role="tab"
            aria-selected={on}
            tabIndex={on ? 0 : -1}
            title={`${t.parentThreadId === null ? 'primary thread' : 'thread'} · ${t.status.toLowerCase()}`}
            onClick={() => onSelect(idOf(t))}
          >
            {on ? <strong>{t.agent.name}</strong> : t.agent.name}
          </button>
        );
      })}
    </div>
  );
}
