import { useEffect, useState } from 'react';
import { gql, sseClient } from '../api';
import { FIELDS, type Ev } from './events';

/**
 * Persisted events via Query sessionEvents, then live ones via the Subscription (by seq). With
 * `threadId` (a child thread of the session, ./Threads.tsx): that thread's own log, via Query
 * threadEvents and the Subscription's threadId; null is the session's (its primary thread).
 */
export function useSessionEvents(id: string, threadId: string | null = null) {
  const [events, setEvents] = useState<Ev[]>([]);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    let stop = () => {};
    let cancelled = false;
    setEvents([]);
    setLoading(true);
    setError('');
    const add = (e: Ev) =>
      setEvents((xs) =>
        xs.some((x) => x.seq === e.seq) ? xs : [...xs, e].sort((a, b) => a.seq - b.seq),
      );
    const list = threadId
      ? `query ($id: ID!, $th: ID!) { page: threadEvents(sessionId: $id, threadId: $th, limit: 1000) { nodes { ${FIELDS} } } }`
      : `query ($id: ID!) { page: sessionEvents(sessionId: $id, limit: 1000) { nodes { ${FIELDS} } } }`;
    gql<{ page: { nodes: Ev[] } }>(list, threadId ? { id, th: threadId } : { id })
      .then((d) => {
        if (cancelled) return;
        setEvents(d.page.nodes);
        setLoading(false);
        const last = d.page.nodes.at(-1)?.seq ?? 0;
        stop = sseClient().subscribe<{ sessionEvents: Ev }>(
          {
            query: `subscription ($id: ID!, $th: ID, $after: Int) { sessionEvents(sessionId: $id, threadId: $th, afterSeq: $after) { ${FIELDS} } }`,
            variables: { id, th: threadId, after: last },
          },
          {
            next: (r) => r.data && add(r.data.sessionEvents),
            error: (e) => !cancelled && setError(String((e as Error).message ?? e)),
            complete: () => {},
          },
        );
      })
      .catch((e: Error) => {
        if (cancelled) return;
        setError(e.message);
        setLoading(false);
      });
    return () => {
      cancelled = true;
      stop();
    };
  }, [id, threadId]);
  return { events, error, setError, loading };
}
