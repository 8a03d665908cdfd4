// Shared pieces of the console's screens: paged REST lists with "Load more", the loading /
// empty / error states, labelled forms, the role gate for write controls and JSON blocks.
import { useInfiniteQuery, useQuery, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { createContext, useContext, useState, type ReactNode } from 'react';
import { ApiError, rest, type Me } from './api';

export type Page<T> = {
  data: T[];
  has_more: boolean;
  next_page?: string | null;
  last_id?: string | null;
};

/** The signed-in principal, for the role gate and the operator-only screens. */
export const MeContext = createContext<Me | null>(null);
export const useMe = () => useContext(MeContext);
/** Viewers see no write controls (the server refuses their writes anyway). */
export const useCanWrite = () => useMe()?.role !== 'viewer';

const withQuery = (path: string, params: Record<string, string | undefined>) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  const s = q.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
};

export const PAGE_SIZE = 20;

/**
 * A REST list read page by page: `limit`, then `page` = the previous answer's next_page, or
 * (cursor 'after_id') `after_id` = the previous answer's last_id.
 */
export function usePaged<T>(
  path: string,
  opts: { enabled?: boolean; cursor?: 'page' | 'after_id' } = {},
) {
  const param = opts.cursor ?? 'page';
  return useInfiniteQuery({
    queryKey: [path],
    enabled: opts.enabled ?? true,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      rest<Page<T>>(withQuery(path, { limit: String(PAGE_SIZE), [param]: pageParam })),
    getNextPageParam: (last) => {
      const next = param === 'page' ? last.next_page : last.last_id;
      return last.has_more && next ? next : undefined;
    },
  });
}

/** One REST resource. */
export const useGet = <T,>(path: string, opts: { enabled?: boolean } = {}) =>
  useQuery({ queryKey: [path], queryFn: () => rest<T>(path), enabled: opts.enabled ?? true });

/** Refetches every query whose key starts with one of these paths. */
export function useRefresh() {
  const qc = useQueryClient();
  return (...paths: string[]) =>
    Promise.all(
      paths.map((p) =>
        qc.invalidateQueries({
          predicate: (q) => typeof q.queryKey[0] === 'string' && q.queryKey[0].startsWith(p),
        }),
      ),
    );
}

type QState = { isPending: boolean; isError: boolean; error: Error | null };

export function ErrorText({ error }: { error: Error | null | string }) {
  if (!error) return null;
  const e = typeof error === 'string' ? null : error;
  const text =
    e instanceof ApiError && e.status === 404
      ? `Not found (404): ${e.message}`
      : typeof error === 'string'
        ? error
        : error.message;
  return (
    <p className="error" role="alert">
      {text}
    </p>
  );
}

/** Loading, error and empty states around a list or a resource. */
export function Loaded({
  q,
  empty,
  emptyText = 'Nothing here yet.',
  children,
}: {
  q: QState;
  empty?: boolean;
  emptyText?: string;
  children: ReactNode;
}) {
  if (q.isPending) return <p role="status">Loading…</p>;
  if (q.isError) return <ErrorText error={q.error} />;
  if (empty) return <p className="empty">{emptyText}</p>;
  return <>{children}</>;
}

/** A paged list: its rows, then "Load more" while the server has more. */
export function PagedList<T>({
  q,
  label,
  row,
  keyOf,
  emptyText,
}: {
  q: ReturnType<typeof usePaged<T>>;
  label: string;
  row: (item: T) => ReactNode;
  keyOf: (item: T) => string;
  emptyText?: string;
}) {
  const items = q.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Loaded q={q} empty={!items.length} emptyText={emptyText}>
      <ul className="rows" aria-label={label}>
        {items.map((it) => (
          <li key={keyOf(it)}>{row(it)}</li>
        ))}
      </ul>
      {q.hasNextPage && (
        <button type="button" onClick={() => q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </Loaded>
  );
}

export type Field = {
  name: string;
  label: string;
  type?: 'text' | 'password' | 'url' | 'email' | 'textarea' | 'select' | 'file';
  required?: boolean;
  defaultValue?: string;
  options?: string[];
  hint?: string;
};

/** A labelled form; `onSubmit` gets the values, and the form resets when it resolves. */
export function Form({
  label,
  fields,
  submit,
  onSubmit,
  children,
}: {
  label: string;
  fields: Field[];
  submit: string;
  onSubmit: (values: Record<string, string>, form: HTMLFormElement) => Promise<unknown>;
  children?: ReactNode;
}) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const handle = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const values: Record<string, string> = {};
    for (const [k, v] of new FormData(form).entries()) if (typeof v === 'string') values[k] = v;
    setError('');
    setBusy(true);
    try {
      await onSubmit(values, form);
      form.reset();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={handle} aria-label={label} className="card">
      <h2>{label}</h2>
      {fields.map((f) => (
        <label key={f.name}>
          {f.label}
          {f.type === 'textarea' ? (
            <textarea name={f.name} defaultValue={f.defaultValue} required={f.required} rows={6} />
          ) : f.type === 'select' ? (
            <select name={f.name} defaultValue={f.defaultValue}>
              {f.options?.map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
          ) : (
            <input
              name={f.name}
              type={f.type ?? 'text'}
              defaultValue={f.defaultValue}
              required={f.required}
              autoComplete="off"
            />
          )}
          {f.hint && <small>{f.hint}</small>}
        </label>
      ))}
      {children}
      <button type="submit" disabled={busy}>
        {submit}
      </button>
      <ErrorText error={error} />
    </form>
  );
}

/** A button that runs an action and shows its error next to it. */
export function Action({
  label,
  run,
  ariaLabel,
}: {
  label: string;
  run: () => Promise<unknown>;
  ariaLabel?: string;
}) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button
        type="button"
        aria-label={ariaLabel}
        disabled={busy}
        onClick={async () => {
          setError('');
          setBusy(true);
          try {
            await run();
          } catch (e) {
            setError((e as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        {label}
      </button>
      <ErrorText error={error} />
    </>
  );
}

export const Json = ({ value, label }: { value: unknown; label?: string }) => (
  <pre className="json" aria-label={label} tabIndex={0}>
    {typeof value === 'string' ? value : JSON.stringify(value, null, 2)}
  </pre>
);

export const when = (iso?: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

/** The hash route's link to a resource's own screen. */
export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join('/')}`;
