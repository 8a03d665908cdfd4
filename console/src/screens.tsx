import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { gql } from './api';
import { PAGE_SIZE, useCanWrite } from './ui';

type Row = {
  id: string;
  name?: string;
  title?: string | null;
  status?: string;
  createdAt?: string;
};

export function Status({
  q,
  empty,
  children,
}: {
  q: { isPending: boolean; isError: boolean; error: Error | null; data?: unknown };
  empty: boolean;
  children: ReactNode;
}) {
  if (q.isPending) return <p role="status">Loading…</p>;
  if (q.isError)
    return (
      <p className="error" role="alert">
        {q.error?.message}
      </p>
    );
  if (empty) return <p className="empty">Nothing here yet.</p>;
  return <>{children}</>;
}

const DASHBOARD = `query {
  dashboard { agents environments sessions runningSessions
    recentErrors { sessionId seq type message createdAt } }
  running: sessions(status: RUNNING, limit: 10) { nodes { id title status createdAt } }
  recent: sessions(limit: 10) { nodes { id title status createdAt } } }`;
type DashboardData = {
  dashboard: {
    agents: number;
    environments: number;
    sessions: number;
    runningSessions: number;
    recentErrors: Array<{
      sessionId: string;
      seq: number;
      type: string;
      message: string;
      createdAt: string;
    }>;
  };
  running: { nodes: Row[] };
  recent: { nodes: Row[] };
};

/** Counts, sessions running now, recent sessions and the newest session errors (GraphQL `dashboard`). */
export function Dashboard() {
  const q = useQuery({
    queryKey: ['dashboard'],
    queryFn: () => gql<DashboardData>(DASHBOARD),
    refetchInterval: 10_000,
  });
  const d = q.data;
  return (
    <section>
      <h1>Dashboard</h1>
      <Status q={q} empty={false}>
        <ul aria-label="Counts">
          <li>Agents: {d?.dashboard.agents}</li>
          <li>Environments: {d?.dashboard.environments}</li>
          <li>Sessions: {d?.dashboard.sessions}</li>
          <li>Running sessions: {d?.dashboard.runningSessions}</li>
        </ul>
        <h2>Running now</h2>
        {d?.running.nodes.length ? (
          <SessionList rows={d.running.nodes} />
        ) : (
          <p>No session is running.</p>
        )}
        <h2>Recent sessions</h2>
        <SessionList rows={d?.recent.nodes ?? []} />
        <h2>Recent errors</h2>
        {d?.dashboard.recentErrors.length ? (
          <ul aria-label="Recent errors">
            {d.dashboard.recentErrors.map((e) => (
              <li key={`${e.sessionId}/${e.seq}`}>
                <a href={`#/sessions/${encodeURIComponent(e.sessionId)}`}>{e.sessionId}</a> —{' '}
                {e.type}: {e.message} ({new Date(e.createdAt).toLocaleString()})
              </li>
            ))}
          </ul>
        ) : (
          <p>No session error in the last 7 days.</p>
        )}
      </Status>
    </section>
  );
}

function SessionList({ rows }: { rows: Row[] }) {
  if (!rows.length) return <p>No sessions yet.</p>;
  return (
    <ul>
      {rows.map((s) => (
        <li key={s.id}>
          <a href={`#/sessions/${encodeURIComponent(s.id)}`}>{s.title || s.id}</a> — {s.status}
        </li>
      ))}
    </ul>
  );
}

function CreateForm({
  fields,
  mutation,
  label,
}: {
  fields: Array<[string, string, string]>;
  mutation: string;
  label: string;
}) {
  const qc = useQueryClient();
  const [error, setError] = useState('');
  const submit = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const input = Object.fromEntries(new FormData(form).entries());
    setError('');
    try {
      await gql(`mutation ($input: JSON!) { ${mutation}(input: $input) { id } }`, { input });
      form.reset();
      await qc.invalidateQueries({ queryKey: ['lists'] });
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form onSubmit={submit} aria-label={label}>
      {fields.map(([name, text, value]) => (
        <label key={name}>
          {text}
          <input name={name} defaultValue={value} required />
        </label>
      ))}
      <button type="submit">{label}</button>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The session list's filters, as the SDK's sessions.list takes them (GraphQL arguments). */
type SessionFilter = {
  agentId?: string;
  status?: 'IDLE' | 'RUNNING' | 'RESCHEDULING' | 'TERMINATED';
  order?: 'ASC' | 'DESC';
  includeArchived?: boolean;
};
const FILTER_ARGS: Record<keyof SessionFilter, string> = {
  agentId: 'ID',
  status: 'SessionStatus',
  order: 'Order',
  includeArchived: 'Boolean',
};

/** A GraphQL connection read page by page (`page` = the previous answer's nextPage). */
function useConnection(
  field: 'agents' | 'environments' | 'sessions',
  fields: string,
  filter: SessionFilter = {},
) {
  const set = (Object.keys(filter) as Array<keyof SessionFilter>).filter(
    (k) => filter[k] !== undefined && filter[k] !== '',
  );
  const decl = set.map((k) => `, $${k}: ${FILTER_ARGS[k]}`).join('');
  const args = set.map((k) => `, ${k}: $${k}`).join('');
  return useInfiniteQuery({
    queryKey: ['lists', field, filter],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      (
        await gql<Record<string, { nodes: Row[]; hasMore: boolean; nextPage: string | null }>>(
          `query ($page: String${decl}) { ${field}(limit: ${PAGE_SIZE}, page: $page${args}) { nodes { ${fields} } hasMore nextPage } }`,
          { page: pageParam, ...Object.fromEntries(set.map((k) => [k, filter[k]])) },
        )
      )[field]!,
    getNextPageParam: (last) => (last.hasMore && last.nextPage ? last.nextPage : undefined),
  });
}

function Connection({
  q,
  children,
}: {
  q: ReturnType<typeof useConnection>;
  children: (rows: Row[]) => ReactNode;
}) {
  const rows = q.data?.pages.flatMap((p) => p.nodes) ?? [];
  return (
    <Status q={q} empty={!rows.length}>
      {children(rows)}
      {q.hasNextPage && (
        <button type="button" onClick={() => q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </Status>
  );
}

/** A resource list with its create form: the agents and environments screens. */
function ResourceScreen(props: {
  title: string;
  field: 'agents' | 'environments';
  create: { label: string; mutation: string; fields: Array<[string, string, string]> };
  /** The detail screen's route prefix, when the resource has one (e.g. '#/agents/'). */
  detail?: string;
}) {
  const q = useConnection(props.field, 'id name');
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>{props.title}</h1>
      <Connection q={q}>
        {(items) => (
          <ul className="rows" aria-label={props.title}>
            {items.map((a) => (
              <li key={a.id}>
                {props.detail ? (
                  <a href={`${props.detail}${encodeURIComponent(a.id)}`}>{a.name}</a>
                ) : (
                  a.name
                )}{' '}
                ({a.id})
              </li>
            ))}
          </ul>
        )}
      </Connection>
      {canWrite && <CreateForm {...props.create} />}
    </section>
  );
}

export const Agents = () => (
  <ResourceScreen
    title="Agents"
    field="agents"
    detail="#/agents/"
    create={{
      label: 'Create agent',
      mutation: 'createAgent',
      fields: [
        ['name', 'Name', ''],
        ['model', 'Model', 'claude-sonnet-4-5'],
      ],
    }}
  />
);

export const Environments = () => (
  <ResourceScreen
    title="Environments"
    field="environments"
    create={{
      label: 'Create environment',
      mutation: 'createEnvironment',
      fields: [['name', 'Name', '']],
    }}
  />
);

export function Sessions() {
  const [filter, setFilter] = useState<SessionFilter>({});
  const q = useConnection('sessions', 'id title status createdAt', filter);
  const canWrite = useCanWrite();
  const apply = (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const str = (k: string) => (f.get(k) as string | null)?.trim() || undefined;
    setFilter({
      agentId: str('agent_id'),
      status: str('status') as SessionFilter['status'],
      order: str('order') as SessionFilter['order'],
      includeArchived: f.get('include_archived') === 'on' || undefined,
    });
  };
  return (
    <section>
      <h1>Sessions</h1>
      <form className="filters" aria-label="Filter sessions" onSubmit={apply}>
        <label>
          Agent id filter
          <input name="agent_id" autoComplete="off" />
        </label>
        <label>
          Status filter
          <select name="status" defaultValue="">
            <option value="">any</option>
            <option value="IDLE">idle</option>
            <option value="RUNNING">running</option>
            <option value="RESCHEDULING">rescheduling</option>
            <option value="TERMINATED">terminated</option>
          </select>
        </label>
        <label>
          Order
          <select name="order" defaultValue="DESC">
            <option value="DESC">newest first</option>
            <option value="ASC">oldest first</option>
          </select>
        </label>
        <label>
          <input type="checkbox" name="include_archived" /> Include archived
        </label>
        <button type="submit">Apply filters</button>
      </form>
      <Connection q={q}>{(rows) => <SessionList rows={rows} />}</Connection>
      {canWrite && (
        <CreateForm
          label="Start session"
          mutation="createSession"
          fields={[
            ['agent', 'Agent id', ''],
            ['environment_id', 'Environment id', ''],
          ]}
        />
      )}
    </section>
  );
}
