import { conversation, type Ev } from './events';

/** User and agent messages as text. */
export function Conversation({ events }: { events: Ev[] }) {
  const msgs = conversation(events);
  if (msgs.length === 0) return <p>No messages yet.</p>;
  return (
    <ol className="conversation" aria-label="Conversation">
      {msgs.map((m) => (
        <li key={m.id} className={m.who === 'You' ? 'user' : 'agent'}>
          <strong>{m.who}:</strong> <span className="text">{m.text}</span>
        </li>
      ))}
    </ol>
  );
}
