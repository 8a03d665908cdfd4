import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useContext, useEffect, useState } from 'react';
import { flushSync } from 'react-dom';
import { rest, setCsrf, resetSse, type Me, ApiError } from './api';
import { Agents, Dashboard, Environments, Sessions } from './screens';
import { SessionView } from './SessionView';
import { AgentDetail } from './screens/agentDetail';
import { Cost } from './screens/cost';
import { EvalDetail, Evals } from './screens/evals';
import { ApiKeys, ModelCards, Tenants } from './screens/admin';
import { Integrations } from './screens/integrations';
import { MemoryStoreDetail, MemoryStores } from './screens/memory';
import { Members } from './screens/members';
import { DeploymentDetail, Deployments, Files, WebhookDetail, Webhooks } from './screens/ops';
import { SkillDetail, Skills } from './screens/skills';
import { VaultDetail, Vaults } from './screens/vaults';
import { MeContext } from './ui';

type Screen = (p: { id: string }) => React.ReactNode;
type ListScreen = () => React.ReactNode;
/** List screens by route, and detail screens by the list route they sit under. */
const LISTS: Record<string, ListScreen> = {
  '/agents': Agents,
  '/environments': Environments,
  '/sessions': Sessions,
  '/deployments': Deployments,
  '/files': Files,
  '/skills': Skills,
  '/memory_stores': MemoryStores,
  '/vaults': Vaults,
  '/model_cards': ModelCards,
  '/api_keys': ApiKeys,
  '/webhooks': Webhooks,
  '/integrations': Integrations,
  '/members': Members,
  '/tenants': Tenants,
  '/cost': Cost,
  '/evals': Evals,
};
const DETAILS: Record<string, Screen> = {
  sessions: SessionView,
  agents: AgentDetail,
  vaults: VaultDetail,
  skills: SkillDetail,
  memory_stores: MemoryStoreDetail,
  deployments: DeploymentDetail,
  webhooks: WebhookDetail,
  evals: EvalDetail,
};

/** Screens only the deployment's operator reaches (the server refuses anyone else: 403). */
const OPERATOR_ONLY = new Set(['/tenants', '/cost']);

/** The header's links, grouped; the OPERATOR_ONLY ones only for the operator. */
const NAV: Array<[string, Array<[string, string]>]> = [
  [
    'Run',
    [
      ['/', 'Dashboard'],
      ['/sessions', 'Sessions'],
      ['/deployments', 'Deployments'],
      ['/files', 'Files'],
      ['/evals', 'Evals'],
      ['/cost', 'Cost'],
    ],
  ],
  [
    'Build',
    [
      ['/agents', 'Agents'],
      ['/environments', 'Environments'],
      ['/skills', 'Skills'],
      ['/memory_stores', 'Memory stores'],
    ],
  ],
  [
    'Connect',
    [
      ['/vaults', 'Vaults'],
      ['/model_cards', 'Model cards'],
      ['/webhooks', 'Webhooks'],
      ['/integrations', 'Integrations'],
    ],
  ],
  [
    'Access',
    [
      ['/api_keys', 'API keys'],
      ['/members', 'Members'],
      ['/tenants', 'Tenants'],
    ],
  ],
];

function screenFor(path: string): React.ReactNode {
  const List = LISTS[path];
  if (List) return <List />;
  const m = /^\/([a-z_]+)\/(.+)$/.exec(path);
  const Detail = m && DETAILS[m[1]!];
  if (Detail) return <Detail id={decodeURIComponent(m[2]!)} />;
  return <Dashboard />;
}

/**
 * The route in the hash. A click on an in-app link renders the new screen synchronously, in
 * the click itself (flushSync), rather than on the later hashchange event: whoever clicks
 * (a person or a test driving the browser) never acts on the old screen after the click.
 */
function useHash(): string {
  const [hash, setHash] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setHash(location.hash.slice(1) || '/');
    const click = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
      const a = (e.target as Element | null)?.closest?.('a');
      const h = a?.getAttribute('href');
      if (!h?.startsWith('#')) return;
      flushSync(() => setHash(h.slice(1) || '/'));
    };
    addEventListener('hashchange', on);
    document.addEventListener('click', click);
    return () => {
      removeEventListener('hashchange', on);
      document.removeEventListener('click', click);
    };
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
    // Every other query held the signed-out tenant's data; `me` stays (its observer is the
    // App's) and turns null, which renders the sign-in form even when the route is unchanged.
    qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
    qc.setQueryData(['me'], null);
    location.hash = '/';
  };
  const m = me.data;
  const current = route === '/' ? '/' : `/${route.split('/')[1]}`;
  return (
    <MeContext.Provider value={m}>
      <header>
        <strong className="brand">agentfleet</strong>
        <nav aria-label="Main">
          {NAV.map(([group, links]) => (
            <div className="nav-group" key={group} role="group" aria-label={group}>
              <span className="nav-label" aria-hidden="true">
                {group}
              </span>
              {links
                .filter(([p]) => !OPERATOR_ONLY.has(p) || m.operator)
                .map(([p, text]) => (
                  <a key={p} href={`#${p}`} aria-current={current === p ? 'page' : undefined}>
                    {text}
                  </a>
                ))}
            </div>
          ))}
        </nav>
        <div className="who">
          <span>
            {m.user?.email ?? 'operator'} · {m.tenant.name} ({m.role})
          </span>
          <TenantSwitcher />
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main key={route}>{screenFor(route)}</main>
    </MeContext.Provider>
  );
}

/** Shown when the principal belongs to more than one tenant (me.memberships). */
function TenantSwitcher() {
  const qc = useQueryClient();
  const me = useContext(MeContext);
  const [error, setError] = useState('');
  const list = me?.memberships ?? [];
  if (list.length < 2) return null;
  const change = async (e: React.ChangeEvent<HTMLSelectElement>) => {
    setError('');
    try {
      await rest<Me>('/v1/svc/console/switch_tenant', {
        method: 'POST',
        json: { tenant_id: e.target.value },
      });
      // Everything on screen belonged to the old tenant: refetch me, then every other query.
      resetSse();
      await qc.refetchQueries({ queryKey: ['me'] });
      await qc.resetQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <label className="switcher">
      Tenant
      <select value={me!.tenant.id} onChange={change}>
        {list.map((t) => (
          <option key={t.tenant_id} value={t.tenant_id}>
            {t.tenant_name} ({t.role})
          </option>
        ))}
      </select>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </label>
  );
}

function SignIn({ onDone }: { onDone: () => void }) {
  const config = useQuery({
    queryKey: ['config'],
    queryFn: () =>
      rest<{
        enabled: boolean;
        providers: Array<{ id: string; name: string; authorize_url: string }>;
      }>('/v1/svc/console/config'),
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
      {config.data?.enabled === false && (
        <p className="error" role="alert">
          The console is off on this deployment: its operator has not set CONSOLE_SESSION_SECRET.
        </p>
      )}
      {config.data?.providers.map((p) => (
        <p key={p.id}>
          <a className="button" href={p.authorize_url}>
            Sign in with {p.name}
          </a>
        </p>
      ))}
    </main>
  );
}
