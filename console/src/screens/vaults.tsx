// #/vaults and #/vaults/:id — vaults, their credentials (public fields only: the served shape
// has no secret field), adding a credential and rotating one's secret.
import { useState } from 'react';
import { rest } from '../api';
import {
  Action,
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

type Vault = { id: string; display_name: string; archived_at: string | null; created_at: string };
type Credential = {
  id: string;
  display_name: string | null;
  auth: { type: string; mcp_server_url?: string; secret_name?: string; cli_id?: string };
  archived_at: string | null;
  updated_at: string;
};

export function Vaults() {
  const q = usePaged<Vault>('/v1/vaults');
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Vaults</h1>
      <PagedList
        q={q}
        label="Vaults"
        keyOf={(v) => v.id}
        emptyText="No vaults yet."
        row={(v) => (
          <>
            <a href={href('vaults', v.id)}>{v.display_name}</a> <code>{v.id}</code> · created{' '}
            {when(v.created_at)}
            {v.archived_at && ' · archived'}
          </>
        )}
      />
      {canWrite && (
        <Form
          label="Create vault"
          submit="Create vault"
          fields={[{ name: 'display_name', label: 'Vault name', required: true }]}
          onSubmit={async (v) => {
            await rest('/v1/vaults', { method: 'POST', json: { display_name: v.display_name } });
            await refresh('/v1/vaults');
          }}
        />
      )}
    </section>
  );
}

/** The one secret field of each credential kind the console creates. */
const SECRET_FIELD: Record<string, string> = {
  static_bearer: 'token',
  environment_variable: 'secret_value',
  command_secret: 'secret_value',
  cap_cli: 'token',
  mcp_oauth: 'access_token',
};

export function VaultDetail({ id }: { id: string }) {
  const path = `/v1/vaults/${encodeURIComponent(id)}`;
  const vault = useGet<Vault>(path);
  const creds = usePaged<Credential>(`${path}/credentials`);
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const [kind, setKind] = useState('static_bearer');
  return (
    <section>
      <p>
        <a href="#/vaults">← Vaults</a>
      </p>
      <h1>Vault {vault.data?.display_name ?? id}</h1>
      <Loaded q={vault}>
        <p>
          <code>{vault.data?.id}</code> · created {when(vault.data?.created_at)}
        </p>
      </Loaded>
      <h2>Credentials</h2>
      <p>Secret values are write-only: the platform never sends them back.</p>
      <PagedList
        q={creds}
        label="Credentials"
        keyOf={(c) => c.id}
        emptyText="No credentials in this vault yet."
        row={(c) => (
          <CredentialRow c={c} path={`${path}/credentials/${c.id}`} canWrite={canWrite} />
        )}
      />
      {canWrite && (
        <Form
          label="Add credential"
          submit="Add credential"
          fields={[]}
          onSubmit={async (v) => {
            const auth: Record<string, unknown> =
              kind === 'static_bearer'
                ? { type: kind, token: v.secret, mcp_server_url: v.mcp_server_url }
                : {
                    type: kind,
                    secret_name: v.secret_name,
                    secret_value: v.secret,
                    networking: { type: 'unrestricted' },
                  };
            await rest(`${path}/credentials`, {
              method: 'POST',
              json: { display_name: v.display_name || undefined, auth },
            });
            await refresh(`${path}/credentials`);
          }}
        >
          <label>
            Kind
            <select name="kind" value={kind} onChange={(e) => setKind(e.target.value)}>
              <option value="static_bearer">static_bearer (an MCP server's bearer token)</option>
              <option value="environment_variable">environment_variable</option>
            </select>
          </label>
          <label>
            Display name
            <input name="display_name" autoComplete="off" />
          </label>
          {kind === 'static_bearer' ? (
            <label>
              MCP server URL
              <input name="mcp_server_url" type="url" required autoComplete="off" />
            </label>
          ) : (
            <label>
              Variable name
              <input
                name="secret_name"
                required
                pattern="[A-Za-z_][A-Za-z0-9_]*"
                autoComplete="off"
              />
            </label>
          )}
          <label>
            Secret
            <input name="secret" type="password" required autoComplete="new-password" />
          </label>
        </Form>
      )}
    </section>
  );
}

function CredentialRow({ c, path, canWrite }: { c: Credential; path: string; canWrite: boolean }) {
  const refresh = useRefresh();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const name = c.display_name ?? c.id;
  const field = SECRET_FIELD[c.auth.type];
  const rotate = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const secret = (form.elements.namedItem('secret') as HTMLInputElement).value;
    setError('');
    try {
      await rest(path, { method: 'POST', json: { auth: { type: c.auth.type, [field!]: secret } } });
      form.reset();
      setOpen(false);
      setDone(`Rotated ${new Date().toLocaleTimeString()}.`);
      await refresh(path.replace(/\/[^/]+$/, ''));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <strong>{name}</strong> <code>{c.id}</code> · {c.auth.type}
      {c.auth.mcp_server_url && <> · {c.auth.mcp_server_url}</>}
      {c.auth.secret_name && <> · ${c.auth.secret_name}</>} · updated {when(c.updated_at)}
      {c.archived_at && ' · archived'}
      {done && <span role="status"> {done}</span>}
      {canWrite && field && !c.archived_at && (
        <div className="inline">
          <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
            Rotate {name}
          </button>
          <Action
            label="Archive"
            ariaLabel={`Archive ${name}`}
            run={async () => {
              await rest(`${path}/archive`, { method: 'POST' });
              await refresh(path.replace(/\/[^/]+$/, ''));
            }}
          />
        </div>
      )}
      {open && (
        <form onSubmit={rotate} aria-label={`Rotate ${name}`}>
          <label>
            New secret for {name}
            <input name="secret" type="password" required autoComplete="new-password" />
          </label>
          <button type="submit">Save new secret</button>
          <ErrorText error={error} />
        </form>
      )}
    </>
  );
}
