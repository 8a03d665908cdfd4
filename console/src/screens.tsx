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
  if (empty) return <p>Nothing here yet.</p>;
  return <>{children}</>;
}

const LIST = `query { agents(limit: 50) { nodes { id name } } environments(limit: 50) { nodes { id name } }
  sessions(limit: 20) { nodes { id title status createdAt } } }`;
type Lists = {
  agents: { nodes: Row[] };
  environments: { nodes: Row[] };
  sessions: { nodes: Row[] };
};
const useLists = () => useQuery({ queryKey: ['lists'], queryFn: () => gql<Lists>(LIST) });

export function Dashboard() {
  const q = useLists();
  const d = q.data;
  const running = d?.sessions.nodes.filter((s) => s.status === 'running') ?? [];
  return (
    <section>
      <h1>Dashboard</h1>
      <Status q={q} empty={false}>
        <ul>
          <li>Agents: {d?.agents.nodes.length}</li>
          <li>Environments: {d?.environments.nodes.length}</li>
          <li>Sessions: {d?.sessions.nodes.length}</li>
          <li>Running sessions: {running.length}</li>
        </ul>
        <h2>Recent sessions</h2>
        <SessionList rows={d?.sessions.nodes ?? []} />
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

/** A GraphQL connection read page by page (`page` = the previous answer's nextPage). */
function useConnection(field: 'agents' | 'environments' | 'sessions', fields: string) {
  return useInfiniteQuery({
    queryKey: ['lists', field],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      (
        await gql<Record<string, { nodes: Row[]; hasMore: boolean; nextPage: string | null }>>(
          `query ($page: String) { ${field}(limit: ${PAGE_SIZE}, page: $page) { nodes { ${fields} } hasMore nextPage } }`,
          { page: pageParam },
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
          <ul>
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
  const q = useConnection('sessions', 'id title status createdAt');
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Sessions</h1>
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
