import { useState } from 'react';
import { detail, summary, type Ev } from './events';

/** Every event: type, time, a one-line summary and a detail shown on demand. */
export function Timeline({ events }: { events: Ev[] }) {
  if (events.length === 0) return <p>No events yet.</p>;
  return (
    <ol className="timeline" aria-label="Timeline">
      {events.map((e) => (
        <Row key={e.seq} e={e} />
      ))}
    </ol>
  );
}

function Row({ e }: { e: Ev }) {
  const [open, setOpen] = useState(false);
  const error = e.type === 'session.error' || (e.data as { is_error?: boolean })?.is_error;
  return (
    <li data-type={e.type} className={error ? 'error' : undefined}>
      <strong>{e.type}</strong>{' '}
      <time dateTime={e.createdAt}>{new Date(e.createdAt).toLocaleTimeString()}</time>{' '}
      <span className="summary">{summary(e)}</span>{' '}
      <button
        type="button"
        aria-expanded={open}
        aria-label={`Details of event ${e.seq}`}
        onClick={() => setOpen((o) => !o)}
      >
        {open ? 'Hide' : 'Details'}
      </button>
      {open && (
        <dl className="detail">
          {detail(e).map((d) => (
            <div key={d.label}>
              <dt>{d.label}</dt>
              <dd>
                <pre className="json">{d.text}</pre>
              </dd>
            </div>
          ))}
        </dl>
      )}
    </li>
  );
}
