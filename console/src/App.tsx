import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { rest, setCsrf, resetSse, type Me, ApiError } from './api';
import { Agents, Dashboard, Environments, Sessions } from './screens';
import { SessionView } from './SessionView';

function useHash(): string {
  const [hash, setHash] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setHash(location.hash.slice(1) || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

export function App() {
  const qc = useQueryClient();
  const me = useQuery({
    queryKey: ['me'],
    queryFn: async () => {
      try {
        const m = await rest<Me>('/v1/svc/console/me');
        setCsrf(m.csrf_token);
        return m;
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return null;
        throw e;
      }
    },
  });
  const route = useHash();
  if (me.isPending) return <p role="status">Loading…</p>;
  if (me.isError)
    return (
      <p className="error" role="alert">
        Could not reach the console: {me.error.message}
      </p>
    );
  if (!me.data) return <SignIn onDone={() => qc.invalidateQueries({ queryKey: ['me'] })} />;
  const signOut = async () => {
    await rest('/v1/svc/console/sign_out', { method: 'POST' });
    setCsrf('');
    resetSse();
    qc.clear();
    location.hash = '/';
    qc.invalidateQueries({ queryKey: ['me'] });
  };
  const sessionMatch = /^\/sessions\/(.+)$/.exec(route);
  return (
    <>
      <header>
        <strong>agentfleet</strong>
        <nav aria-label="Main">
          <a href="#/">Dashboard</a>
          <a href="#/agents">Agents</a>
          <a href="#/environments">Environments</a>
          <a href="#/sessions">Sessions</a>
        </nav>
        <span>
          {me.data.user?.email ?? 'operator'} · {me.data.tenant.name} ({me.data.role})
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {sessionMatch ? (
          <SessionView id={decodeURIComponent(sessionMatch[1]!)} />
        ) : route === '/agents' ? (
          <Agents />
        ) : route === '/environments' ? (
          <Environments />
        ) : route === '/sessions' ? (
          <Sessions />
        ) : (
          <Dashboard />
        )}
      </main>
    </>
  );
}

function SignIn({ onDone }: { onDone: () => void }) {
  const config = useQuery({
    queryKey: ['config'],
    queryFn: () => rest<{ providers: string[] }>('/v1/svc/console/config'),
  });
  const [error, setError] = useState('');
  const submit = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const input = form.elements.namedItem('api_key') as HTMLInputElement;
    setError('');
    try {
      await rest('/v1/svc/console/session', { method: 'POST', json: { api_key: input.value } });
      input.value = '';
      onDone();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main>
      <h1>Sign in to agentfleet</h1>
      <form onSubmit={submit}>
        <label>
          API key
          <input name="api_key" type="password" autoComplete="off" required />
        </label>
        <button type="submit">Sign in</button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </form>
      {config.data?.providers.map((p) => (
        <p key={p}>
          <a href={`/v1/svc/oauth/${p}/authorize?return_to=/console/`}>
            Sign in with {p === 'github' ? 'GitHub' : 'SSO'}
          </a>
        </p>
      ))}
    </main>
  );
}
