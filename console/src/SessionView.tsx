import { useEffect, useState } from 'react';
import { gql, sseClient } from './api';

type Ev = { id: string; seq: number; type: string; data: unknown };
const FIELDS = 'id seq type data';

/** Timeline: persisted events via Query sessionEvents, then live ones via the Subscription. */
export function SessionView({ id }: { id: string }) {
  const [events, setEvents] = useState<Ev[]>([]);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    let stop = () => {};
    let cancelled = false;
    const add = (e: Ev) => setEvents((xs) => (xs.some((x) => x.seq === e.seq) ? xs : [...xs, e]));
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
            error: (e) => setError(String((e as Error).message ?? e)),
            complete: () => {},
          },
        );
      })
      .catch((e: Error) => {
        setError(e.message);
        setLoading(false);
      });
    return () => {
      cancelled = true;
      stop();
    };
  }, [id]);
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
  return (
    <section>
      <h1>Session {id}</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {loading ? (
        <p role="status">Loading…</p>
      ) : events.length === 0 ? (
        <p>No events yet.</p>
      ) : (
        <ol className="timeline" aria-label="Timeline">
          {events.map((e) => (
            <li key={e.seq} data-type={e.type}>
              <strong>{e.type}</strong> {summary(e.data)}
            </li>
          ))}
        </ol>
      )}
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
    </section>
  );
}

function summary(data: unknown): string {
  const d = data as { content?: Array<{ text?: string }> } | null;
  const text = d?.content?.map((c) => c.text ?? '').join('') ?? '';
  return text || JSON.stringify(data).slice(0, 200);
}
