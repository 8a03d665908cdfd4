// #/memory_stores and #/memory_stores/:id — stores, a store's memories (browse, open one, edit
// its content: each save is a new memory version) and the opened memory's versions.
import { useState } from 'react';
import { rest } from '../api';
import {
  ErrorText,
  Form,
  Loaded,
  PagedList,
  href,
  useCanWrite,
  useGet,
  usePaged,
  useRefresh,
  when,
} from '../ui';

type Store = {
  id: string;
  name: string;
  description: string;
  created_at: string;
  archived_at: string | null;
};
type Memory = {
  id: string;
  path: string;
  content: string | null;
  content_size_bytes: number;
  content_sha256: string;
  updated_at: string;
};
type MemVersion = {
  id: string;
  operation: string;
  path: string;
  content_size_bytes: number;
  created_at: string;
  redacted_at: string | null;
};

export function MemoryStores() {
  const q = usePaged<Store>('/v1/memory_stores');
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Memory stores</h1>
      <PagedList
        q={q}
        label="Memory stores"
        keyOf={(s) => s.id}
        emptyText="No memory stores yet."
        row={(s) => (
          <>
            <a href={href('memory_stores', s.id)}>{s.name}</a> <code>{s.id}</code>
            {s.description && <> · {s.description}</>} · created {when(s.created_at)}
            {s.archived_at && ' · archived'}
          </>
        )}
      />
      {canWrite && (
        <Form
          label="Create memory store"
          submit="Create memory store"
          fields={[
            { name: 'name', label: 'Store name', required: true },
            { name: 'description', label: 'Description' },
          ]}
          onSubmit={async (v) => {
            await rest('/v1/memory_stores', {
              method: 'POST',
              json: { name: v.name, description: v.description || undefined },
            });
            await refresh('/v1/memory_stores');
          }}
        />
      )}
    </section>
  );
}

export function MemoryStoreDetail({ id }: { id: string }) {
  const path = `/v1/memory_stores/${encodeURIComponent(id)}`;
  const store = useGet<Store>(path);
  const memories = usePaged<Memory>(`${path}/memories`);
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section>
      <p>
        <a href="#/memory_stores">← Memory stores</a>
      </p>
      <h1>Memory store {store.data?.name ?? id}</h1>
      <Loaded q={store}>
        <p>
          <code>{store.data?.id}</code> {store.data?.description}
        </p>
      </Loaded>
      <h2>Memories</h2>
      <PagedList
        q={memories}
        label="Memories"
        keyOf={(m) => m.id}
        emptyText="No memories in this store yet."
        row={(m) => (
          <>
            <button
              type="button"
              className="link"
              aria-expanded={open === m.id}
              onClick={() => setOpen(open === m.id ? null : m.id)}
            >
              {m.path}
            </button>{' '}
            · {m.content_size_bytes} bytes · updated {when(m.updated_at)}
          </>
        )}
      />
      {open && <MemoryView key={open} store={path} id={open} canWrite={canWrite} />}
      {canWrite && (
        <Form
          label="Add memory"
          submit="Add memory"
          fields={[
            { name: 'path', label: 'Path', required: true, defaultValue: '/notes.md' },
            { name: 'content', label: 'Content', type: 'textarea', required: true },
          ]}
          onSubmit={async (v) => {
            await rest(`${path}/memories`, {
              method: 'POST',
              json: { path: v.path, content: v.content },
            });
            await refresh(`${path}/memories`);
          }}
        />
      )}
    </section>
  );
}

function MemoryView({ store, id, canWrite }: { store: string; id: string; canWrite: boolean }) {
  const path = `${store}/memories/${encodeURIComponent(id)}`;
  const memory = useGet<Memory>(path);
  const versions = usePaged<MemVersion>(
    `${store}/memory_versions?memory_id=${encodeURIComponent(id)}`,
  );
  const refresh = useRefresh();
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const save = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const content = (e.currentTarget.elements.namedItem('content') as HTMLTextAreaElement).value;
    setError('');
    setSaved('');
    try {
      // The precondition makes a concurrent edit fail instead of being overwritten.
      await rest(path, {
        method: 'POST',
        json: {
          content,
          precondition: { type: 'content_sha256', content_sha256: memory.data!.content_sha256 },
        },
      });
      setSaved('Saved: a new version was recorded.');
      await refresh(store);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div className="card">
      <h2>Memory {memory.data?.path ?? id}</h2>
      <Loaded q={memory}>
        {memory.data && (
          <form onSubmit={save} aria-label="Edit memory">
            <label>
              Content of {memory.data.path}
              <textarea
                key={memory.data.content_sha256}
                name="content"
                rows={8}
                defaultValue={memory.data.content ?? ''}
                readOnly={!canWrite}
              />
            </label>
            {canWrite && <button type="submit">Save memory</button>}
            {saved && <p role="status">{saved}</p>}
            <ErrorText error={error} />
          </form>
        )}
      </Loaded>
      <h3>Versions</h3>
      <PagedList
        q={versions}
        label="Memory versions"
        keyOf={(v) => v.id}
        row={(v) => (
          <>
            <code>{v.id}</code> · {v.operation} · {v.path} · {v.content_size_bytes} bytes ·{' '}
            {when(v.created_at)}
            {v.redacted_at && ' · redacted'}
          </>
        )}
      />
    </div>
  );
}
