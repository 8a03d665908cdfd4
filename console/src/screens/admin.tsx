// #/model_cards, #/api_keys and #/tenants (operator only). A card's key is shown only as its
// last four characters; an API key's value (and a new tenant's key) is shown once, at creation.
import { useState } from 'react';
import { rest } from '../api';
import {
  Action,
  ErrorText,
  Form,
  PagedList,
  useCanWrite,
  useMe,
  usePaged,
  useRefresh,
  when,
} from '../ui';

type Card = {
  id: string;
  model_id: string;
  provider: string;
  model: string;
  base_url: string | null;
  api_key_preview: string;
  updated_at: string;
};

export function ModelCards() {
  const q = usePaged<Card>('/v1/svc/model_cards');
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const [probe, setProbe] = useState('');
  return (
    <section>
      <h1>Model cards</h1>
      <PagedList
        q={q}
        label="Model cards"
        keyOf={(c) => c.id}
        emptyText="No model cards yet."
        row={(c) => <CardRow c={c} canWrite={canWrite} />}
      />
      {canWrite && (
        <Form
          label="Create model card"
          submit="Create model card"
          fields={[
            { name: 'model_id', label: 'Model id (what agents name)', required: true },
            { name: 'provider', label: 'Provider', required: true, defaultValue: 'anthropic' },
            { name: 'model', label: 'Wire model', required: true },
            { name: 'base_url', label: 'Base URL (optional)', type: 'url' },
            { name: 'api_key', label: 'Provider API key', type: 'password', required: true },
          ]}
          onSubmit={async (v) => {
            setProbe('');
            const card = await rest<Card & { probe?: { ok: boolean; status?: number } }>(
              '/v1/svc/model_cards',
              {
                method: 'POST',
                json: {
                  model_id: v.model_id,
                  provider: v.provider,
                  model: v.model,
                  base_url: v.base_url || undefined,
                  api_key: v.api_key,
                },
              },
            );
            if (card.probe)
              setProbe(
                `Created ${card.model_id}; the provider probe ${card.probe.ok ? 'succeeded' : 'failed'}${card.probe.status ? ` (HTTP ${card.probe.status})` : ''}.`,
              );
            await refresh('/v1/svc/model_cards');
          }}
        />
      )}
      {probe && <p role="status">{probe}</p>}
    </section>
  );
}

function CardRow({ c, canWrite }: { c: Card; canWrite: boolean }) {
  const refresh = useRefresh();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState('');
  const rotate = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const key = (form.elements.namedItem('api_key') as HTMLInputElement).value;
    setError('');
    try {
      await rest(`/v1/svc/model_cards/${c.id}`, { method: 'POST', json: { api_key: key } });
      form.reset();
      setOpen(false);
      await refresh('/v1/svc/model_cards');
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <strong>{c.model_id}</strong> <code>{c.id}</code> · {c.provider} / {c.model}
      {c.base_url && <> · {c.base_url}</>} · key <code>{c.api_key_preview}</code> · updated{' '}
      {when(c.updated_at)}
      {canWrite && (
        <div className="inline">
          <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
            Rotate key of {c.model_id}
          </button>
        </div>
      )}
      {open && (
        <form onSubmit={rotate} aria-label={`Rotate key of ${c.model_id}`}>
          <label>
            New provider key for {c.model_id}
            <input name="api_key" type="password" required autoComplete="new-password" />
          </label>
          <button type="submit">Save new key</button>
          <ErrorText error={error} />
        </form>
      )}
    </>
  );
}

type Key = {
  id: string;
  name: string;
  key_prefix: string;
  environment_id: string | null;
  created_at: string;
};

/** A value shown once: the page never stores it, and it is gone when dismissed or left. */
function ShownOnce({
  title,
  value,
  onDismiss,
}: {
  title: string;
  value: string;
  onDismiss: () => void;
}) {
  return (
    <div className="card once" role="region" aria-label={title}>
      <h2>{title}</h2>
      <p>
        Copy it now: this is the only time it is shown. The platform keeps only a hash, so it cannot
        be shown again; if it is lost, revoke it and create another.
      </p>
      <code className="secret">{value}</code>
      <p>
        <button type="button" onClick={onDismiss}>
          I have copied it
        </button>
      </p>
    </div>
  );
}

export function ApiKeys() {
  const q = usePaged<Key>('/v1/svc/api_keys');
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  return (
    <section>
      <h1>API keys</h1>
      {created && (
        <ShownOnce
          title={`New API key ${created.name}`}
          value={created.key}
          onDismiss={() => setCreated(null)}
        />
      )}
      <PagedList
        q={q}
        label="API keys"
        keyOf={(k) => k.id}
        emptyText="No API keys yet."
        row={(k) => (
          <>
            <strong>{k.name}</strong> <code>{k.key_prefix}…</code> <code>{k.id}</code>
            {k.environment_id && <> · environment {k.environment_id}</>} · created{' '}
            {when(k.created_at)}
            {canWrite && (
              <div className="inline">
                <Action
                  label="Revoke"
                  ariaLabel={`Revoke ${k.name}`}
                  run={async () => {
                    await rest(`/v1/svc/api_keys/${k.id}`, { method: 'DELETE' });
                    await refresh('/v1/svc/api_keys');
                  }}
                />
              </div>
            )}
          </>
        )}
      />
      {canWrite && (
        <Form
          label="Create API key"
          submit="Create API key"
          fields={[{ name: 'name', label: 'Key name', required: true }]}
          onSubmit={async (v) => {
            const k = await rest<Key & { key: string }>('/v1/svc/api_keys', {
              method: 'POST',
              json: { name: v.name },
            });
            setCreated({ name: k.name, key: k.key });
            await refresh('/v1/svc/api_keys');
          }}
        />
      )}
    </section>
  );
}

type Tenant = { id: string; name: string; created_at: string };

/**
 * Operator only: the deployment's tenants (GET /v1/svc/tenants, paged by after_id; a server
 * without that route gets only the create form) and creating one, its first key shown once.
 */
export function Tenants() {
  const me = useMe();
  const q = usePaged<Tenant>('/v1/svc/tenants', { cursor: 'after_id', enabled: !!me?.operator });
  const refresh = useRefresh();
  const [created, setCreated] = useState<{ tenant_id: string; api_key: string } | null>(null);
  if (!me?.operator)
    return (
      <section>
        <h1>Tenants</h1>
        <ErrorText error="Only the deployment's operator manages tenants." />
      </section>
    );
  return (
    <section>
      <h1>Tenants</h1>
      {created && (
        <ShownOnce
          title={`API key of tenant ${created.tenant_id}`}
          value={created.api_key}
          onDismiss={() => setCreated(null)}
        />
      )}
      <PagedList
        q={q}
        label="Tenants"
        keyOf={(t) => t.id}
        emptyText="No tenants yet."
        row={(t) => (
          <>
            <strong>{t.name}</strong> <code>{t.id}</code> · created {when(t.created_at)}
            {t.id === me.tenant.id && ' · this console'}
          </>
        )}
      />
      <Form
        label="Create tenant"
        submit="Create tenant"
        fields={[{ name: 'name', label: 'Tenant name', required: true }]}
        onSubmit={async (v) => {
          setCreated(
            await rest<{ tenant_id: string; api_key: string }>('/v1/svc/tenants', {
              method: 'POST',
              json: { name: v.name },
            }),
          );
          await refresh('/v1/svc/tenants');
        }}
      />
    </section>
  );
}
