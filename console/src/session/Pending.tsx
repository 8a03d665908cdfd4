import { useState } from 'react';
import { rest } from '../api';
import { useCanWrite } from '../ui';
import { dataOf, type Pending } from './events';

type UserEvent =
  | {
      type: 'user.tool_confirmation';
      tool_use_id: string;
      result: 'allow' | 'deny';
      deny_message?: string;
    }
  | {
      type: 'user.custom_tool_result';
      custom_tool_use_id: string;
      content: Array<{ type: 'text'; text: string }>;
      is_error?: boolean;
    };

/** POST /v1/sessions/:id/events with the SDK's user event shapes. */
export const sendEvents = (id: string, events: UserEvent[]) =>
  rest(`/v1/sessions/${encodeURIComponent(id)}/events`, { method: 'POST', json: { events } });

/** The calls the session waits on: Allow / Deny for held tool calls, a form per custom tool call. */
export function PendingCalls({ id, pending }: { id: string; pending: Pending[] }) {
  if (pending.length === 0) return null;
  return (
    <section className="pending" aria-label="Waiting for you">
      <h2>Waiting for you</h2>
      <ul className="rows">
        {pending.map((p) =>
          p.kind === 'confirmation' ? (
            <Confirmation key={p.event.id} id={id} p={p} />
          ) : (
            <CustomResult key={p.event.id} id={id} p={p} />
          ),
        )}
      </ul>
    </section>
  );
}

function Call({ p }: { p: Pending }) {
  const d = dataOf(p.event);
  return (
    <>
      <strong>{d.name}</strong>
      <pre className="json">{JSON.stringify(d.input ?? {}, null, 2)}</pre>
    </>
  );
}

function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const run = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError('');
    try {
      await f();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return { busy, error, run };
}

function Confirmation({ id, p }: { id: string; p: Pending }) {
  const canWrite = useCanWrite();
  const { busy, error, run } = useSubmit();
  const [denying, setDenying] = useState(false);
  const tool_use_id = p.event.id;
  const name = dataOf(p.event).name ?? 'tool';
  const deny = (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const msg = (e.currentTarget.elements.namedItem('deny_message') as HTMLInputElement).value;
    void run(() =>
      sendEvents(id, [
        {
          type: 'user.tool_confirmation',
          tool_use_id,
          result: 'deny',
          ...(msg ? { deny_message: msg } : {}),
        },
      ]),
    );
  };
  return (
    <li className="card confirmation" aria-label={`Confirm ${name}`}>
      <p>The agent asks to run:</p>
      <Call p={p} />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button
        type="button"
        disabled={busy || !canWrite}
        onClick={() =>
          void run(() =>
            sendEvents(id, [{ type: 'user.tool_confirmation', tool_use_id, result: 'allow' }]),
          )
        }
      >
        Allow
      </button>{' '}
      {denying ? (
        <form onSubmit={deny}>
          <label>
            Reason for denying (optional)
            <input name="deny_message" autoFocus />
          </label>
          <button type="submit" disabled={busy || !canWrite}>
            Deny
          </button>
        </form>
      ) : (
        <button type="button" disabled={busy || !canWrite} onClick={() => setDenying(true)}>
          Deny…
        </button>
      )}
    </li>
  );
}

function CustomResult({ id, p }: { id: string; p: Pending }) {
  const canWrite = useCanWrite();
  const { busy, error, run } = useSubmit();
  const name = dataOf(p.event).name ?? 'tool';
  const submit = (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = e.currentTarget.elements;
    const text = (f.namedItem('result') as HTMLTextAreaElement).value;
    const isError = (f.namedItem('is_error') as HTMLInputElement).checked;
    void run(() =>
      sendEvents(id, [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: p.event.id,
          content: [{ type: 'text', text }],
          ...(isError ? { is_error: true } : {}),
        },
      ]),
    );
  };
  return (
    <li className="card custom-tool" aria-label={`Answer ${name}`}>
      <p>The agent called your tool:</p>
      <Call p={p} />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <form onSubmit={submit}>
        <label>
          Result of {name}
          <textarea name="result" required />
        </label>
        <label>
          <input type="checkbox" name="is_error" /> The call failed
        </label>
        <button type="submit" disabled={busy || !canWrite}>
          Submit result
        </button>
      </form>
    </li>
  );
}
