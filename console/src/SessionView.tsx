import { useState } from 'react';
import { gql } from './api';
import { useCanWrite } from './ui';
import { Conversation } from './session/Conversation';
import { pendingCalls } from './session/events';
import { Outputs } from './session/Outputs';
import { PendingCalls } from './session/Pending';
import { Timeline } from './session/Timeline';
import { ThreadTabs, useThreads } from './session/Threads';
import { useSessionEvents } from './session/useSessionEvents';

type Tab = 'timeline' | 'conversation';
const TABS: Array<[Tab, string]> = [
  ['timeline', 'Timeline'],
  ['conversation', 'Conversation'],
];

/**
 * A session: its timeline of every event (or the conversation), live through the GraphQL
 * subscription; the calls waiting on the user; send a message, interrupt; outputs and files.
 * A coordinator's session has a tab per thread (./session/Threads.tsx), the primary first: the
 * timeline and conversation show the selected thread's own events.
 */
export function SessionView({ id }: { id: string }) {
  const [thread, setThread] = useState<string | null>(null);
  const { events, error, setError, loading } = useSessionEvents(id, thread);
  const [tab, setTab] = useState<Tab>('timeline');
  const canWrite = useCanWrite();
  // Calls waiting on the user are the primary thread's (a roster agent's tools never wait).
  const pending = thread ? [] : pendingCalls(events);
  // Counts of the primary's events that only grow (a thread's tab shows other events): the
  // outputs are read again after each idle, the threads after each thread_created.
  const [idles, setIdles] = useState(0);
  const [spawned, setSpawned] = useState(0);
  const count = (type: string) => (thread ? 0 : events.filter((e) => e.type === type).length);
  if (count('session.status_idle') > idles) setIdles(count('session.status_idle'));
  if (count('session.thread_created') > spawned) setSpawned(count('session.thread_created'));
  const threads = useThreads(id, spawned);
  const send = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const text = (form.elements.namedItem('text') as HTMLTextAreaElement).value;
    try {
      await gql(
        'mutation ($id: ID!, $text: String) { sendMessage(sessionId: $id, text: $text) { id } }',
        { id, text },
      );
      form.reset();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const interrupt = () =>
    gql('mutation ($id: ID!) { interrupt(sessionId: $id) { id } }', { id }).catch((e: Error) =>
      setError(e.message),
    );
  // Arrow keys move between the tabs (WAI-ARIA tabs pattern); Tab leaves the tab list.
  const onTabKey = (e: React.KeyboardEvent) => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    const i = TABS.findIndex(([t]) => t === tab);
    const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]![0];
    setTab(next);
    document.getElementById(`tab-${next}`)?.focus();
  };
  return (
    <section className="session-view">
      <h1>Session {id}</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <PendingCalls id={id} pending={pending} />
      <ThreadTabs threads={threads} selected={thread} onSelect={setThread} />
      <div role="tablist" aria-label="Session view" onKeyDown={onTabKey}>
        {TABS.map(([t, label]) => (
          <button
            key={t}
            id={`tab-${t}`}
            type="button"
            role="tab"
            aria-selected={tab === t}
            aria-controls={tab === t ? `panel-${t}` : undefined}
            tabIndex={tab === t ? 0 : -1}
            onClick={() => setTab(t)}
          >
            {tab === t ? <strong>{label}</strong> : label}
          </button>
        ))}
      </div>
      <div
        role="tabpanel"
        id={`panel-${tab}`}
        aria-label={tab === 'timeline' ? 'Events' : 'Messages'}
      >
        {loading ? (
          <p role="status">Loading…</p>
        ) : tab === 'timeline' ? (
          <Timeline events={events} />
        ) : (
          <Conversation events={events} />
        )}
      </div>
      {canWrite && (
        <form onSubmit={send}>
          <label>
            Message
            <textarea name="text" required />
          </label>
          <button type="submit">Send</button>
          <button type="button" onClick={interrupt}>
            Interrupt
          </button>
        </form>
      )}
      <Outputs id={id} version={idles} />
    </section>
  );
}
