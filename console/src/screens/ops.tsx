// #/deployments, #/deployments/:id (its runs, run now), #/webhooks, #/webhooks/:id (its
// deliveries) and #/files (download links). A webhook's signing secret is never shown here: the
// create and rotate_secret API answers carry it once, the console shows only its hint.
import { rest } from '../api';
import {
  Action,
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

type Deployment = {
  id: string;
  name: string;
  status: string;
  agent: { id: string; version: number };
  environment_id: string;
  schedule: unknown;
  paused_reason: string | null;
  updated_at: string;
};
type Run = {
  id: string;
  created_at: string;
  session_id: string | null;
  error: { message?: string } | null;
  trigger_context: { type: string };
};

export function Deployments() {
  const q = usePaged<Deployment>('/v1/deployments');
  return (
    <section>
      <h1>Deployments</h1>
      <PagedList
        q={q}
        label="Deployments"
        keyOf={(d) => d.id}
        emptyText="No deployments yet."
        row={(d) => (
          <>
            <a href={href('deployments', d.id)}>{d.name}</a> <code>{d.id}</code> · {d.status} ·
            agent <a href={href('agents', d.agent.id)}>{d.agent.id}</a> v{d.agent.version}
          </>
        )}
      />
    </section>
  );
}

export function DeploymentDetail({ id }: { id: string }) {
  const path = `/v1/deployments/${encodeURIComponent(id)}`;
  const d = useGet<Deployment>(path);
  const runsPath = `/v1/deployment_runs?deployment_id=${encodeURIComponent(id)}`;
  const runs = usePaged<Run>(runsPath);
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  return (
    <section>
      <p>
        <a href="#/deployments">← Deployments</a>
      </p>
      <h1>Deployment {d.data?.name ?? id}</h1>
      <Loaded q={d}>
        <p>
          <code>{d.data?.id}</code> · {d.data?.status}
          {d.data?.paused_reason && <> ({d.data.paused_reason})</>} · environment{' '}
          <code>{d.data?.environment_id}</code> · updated {when(d.data?.updated_at)}
        </p>
        {canWrite && d.data?.status === 'active' && (
          <Action
            label="Run now"
            run={async () => {
              await rest(`${path}/run`, { method: 'POST', json: {} });
              await refresh('/v1/deployment_runs');
            }}
          />
        )}
      </Loaded>
      <h2>Runs</h2>
      <PagedList
        q={runs}
        label="Runs"
        keyOf={(r) => r.id}
        emptyText="No runs yet."
        row={(r) => (
          <>
            <code>{r.id}</code> · {r.trigger_context.type} · {when(r.created_at)} ·{' '}
            {r.session_id ? (
              <a href={href('sessions', r.session_id)}>session {r.session_id}</a>
            ) : (
              'no session'
            )}
            {r.error && <span className="error"> · {r.error.message ?? 'failed'}</span>}
          </>
        )}
      />
    </section>
  );
}

type Endpoint = {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
  disabled: boolean;
  disabled_reason: string | null;
  secret_hint: string;
  created_at: string;
};
type Delivery = {
  id: string;
  event_type: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
};

const HOOKS = '/v1/svc/webhook_endpoints';

export function Webhooks() {
  const q = usePaged<Endpoint>(HOOKS);
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Webhook endpoints</h1>
      <PagedList
        q={q}
        label="Webhook endpoints"
        keyOf={(e) => e.id}
        emptyText="No webhook endpoints yet."
        row={(e) => (
          <>
            <a href={href('webhooks', e.id)}>{e.url}</a> <code>{e.id}</code> ·{' '}
            {e.event_types.length ? e.event_types.join(', ') : 'every event'} · secret{' '}
            <code>{e.secret_hint}</code>
            {e.disabled && <> · disabled{e.disabled_reason && ` (${e.disabled_reason})`}</>}
          </>
        )}
      />
      {canWrite && (
        <Form
          label="Create webhook endpoint"
          submit="Create webhook endpoint"
          fields={[
            { name: 'url', label: 'Endpoint URL', type: 'url', required: true },
            { name: 'description', label: 'Description' },
            {
              name: 'event_types',
              label: 'Event types (comma-separated; empty for every event)',
            },
          ]}
          onSubmit={async (v) => {
            const types = v
              .event_types!.split(',')
              .map((s) => s.trim())
              .filter(Boolean);
            await rest(HOOKS, {
              method: 'POST',
              json: {
                url: v.url,
                description: v.description || undefined,
                event_types: types.length ? types : undefined,
              },
            });
            await refresh(HOOKS);
          }}
        >
          <p>
            <small>
              The signing secret is not shown in the console; get it with the API (POST {HOOKS}
              /:id/rotate_secret answers it once).
            </small>
          </p>
        </Form>
      )}
    </section>
  );
}

export function WebhookDetail({ id }: { id: string }) {
  const path = `${HOOKS}/${encodeURIComponent(id)}`;
  const e = useGet<Endpoint>(path);
  const deliveries = usePaged<Delivery>(`${path}/deliveries`);
  return (
    <section>
      <p>
        <a href="#/webhooks">← Webhook endpoints</a>
      </p>
      <h1>Webhook endpoint {e.data?.url ?? id}</h1>
      <Loaded q={e}>
        <p>
          <code>{e.data?.id}</code> · {e.data?.disabled ? 'disabled' : 'enabled'} · created{' '}
          {when(e.data?.created_at)}
        </p>
      </Loaded>
      <h2>Deliveries</h2>
      <PagedList
        q={deliveries}
        label="Deliveries"
        keyOf={(d) => d.id}
        emptyText="No deliveries yet."
        row={(d) => (
          <>
            <code>{d.id}</code> · {d.event_type} · {d.state} · {d.attempts} attempts
            {d.last_status != null && <> · HTTP {d.last_status}</>}
            {d.last_error && <> · {d.last_error}</>} · {when(d.created_at)}
          </>
        )}
      />
    </section>
  );
}

type FileMeta = {
  id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  downloadable: boolean;
  created_at: string;
};

export function Files() {
  const q = usePaged<FileMeta>('/v1/files');
  return (
    <section>
      <h1>Files</h1>
      <PagedList
        q={q}
        label="Files"
        keyOf={(f) => f.id}
        emptyText="No files yet."
        row={(f) => (
          <>
            {f.downloadable ? (
              <a href={`/v1/files/${encodeURIComponent(f.id)}/content`} download={f.filename}>
                {f.filename}
              </a>
            ) : (
              <strong>{f.filename}</strong>
            )}{' '}
            <code>{f.id}</code> · {f.mime_type} · {f.size_bytes} bytes · {when(f.created_at)}
          </>
        )}
      />
    </section>
  );
}
