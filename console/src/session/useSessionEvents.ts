import { useEffect, useState } from 'react';
import { gql, sseClient } from '../api';
import { FIELDS, type Ev } from './events';

/** Persisted events via Query sessionEvents, then live ones via the Subscription (by seq). */
export function useSessionEvents(id: string) {
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
    gql<{ sessionEvents: { nodes: Ev[] } }>(
      `query ($id: ID!) { sessionEvents(sessionId: $id, limit: 1000) { nodes { ${FIELDS} } } }`,
      { id },
    )
      .then((d) => {
        if (cancelled) return;
        setEvents(d.sessionEvents.nodes);
        setLoading(false);
        const last = d.sessionEvents.nodes.at(-1)?.seq ?? 0;
        stop = sseClient().subscribe<{ sessionEvents: Ev }>(
          {
            query: `subscription ($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSeq: $after) { ${FIELDS} } }`,
            variables: { id, after: last },
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
  }, [id]);
  return { events, error, setError, loading };
}
