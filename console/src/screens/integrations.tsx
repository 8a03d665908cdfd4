// #/integrations — the shipped integrations (GitHub, Linear, Slack), one card each: configured
// or the settings the operator still has to set, the webhook URL for the provider's app
// settings, this tenant's installs (Install sends the browser to the provider's authorize URL;
// Uninstall asks first) and the publications (which agent serves which workspace on which
// triggers; create, delete). Viewers get no write control (the server answers their writes
// 403 anyway). Proved by test/e2e/console/console-integrations.test.ts.
import { useState } from 'react';
import { rest } from '../api';
import {
  Action,
  Form,
  Loaded,
  href,
  useCanWrite,
  useGet,
  useRefresh,
  when,
  type Page,
} from '../ui';

type Install = {
  id: string;
  external_id: string;
  account: { id: string; name: string };
  scopes: string[];
  created_at: string;
  updated_at: string;
};
type Integration = {
  id: string;
  name: string;
  configured: boolean;
  missing_settings: string[];
  callback_url: string | null;
  webhook_url: string | null;
  installs: Install[];
};
type Publication = {
  id: string;
  workspace: Record<string, string>;
  agent: { id: string; version: number | null };
  environment_id: string;
  vault_ids: string[];
  triggers: string[];
  label: string | null;
  capabilities: string[];
  created_at: string;
};
type Named = { id: string; name: string };

const BASE = '/v1/svc/integrations';
/** The options lists of the create form: the first 100 agents and environments. */
const AGENTS = '/v1/agents?limit=100';
const ENVIRONMENTS = '/v1/environments?limit=100';

/** Each integration's workspace keys (core/src/integrations/publications.ts). */
const WORKSPACE: Record<string, Array<{ key: string; label: string; required?: boolean }>> = {
  github: [
    { key: 'owner', label: 'Owner (organization or user)', required: true },
    { key: 'repo', label: 'Repository (optional; every repository of the owner when empty)' },
  ],
  linear: [
    { key: 'team_key', label: 'Team key (optional)' },
    { key: 'team_id', label: 'Team id (optional)' },
  ],
  slack: [{ key: 'channel', label: 'Channel id (optional; every channel when empty)' }],
};
/** Each integration's triggers; all but `label` are on by default, as the API defaults them. */
const TRIGGERS: Record<string, string[]> = {
  github: ['mention', 'assignment', 'label'],
  linear: ['mention', 'assignment', 'label'],
  slack: ['mention', 'direct_message'],
};
/** What an agent may do besides replying, per integration (opt-in; the API's capabilities). */
const ACTIONS: Record<string, Array<{ capability: string; text: string; short: string }>> = {
  github: [
    {
      capability: 'pull_request',
      text: 'Open pull requests (the repository is checked out; the agent pushes a branch)',
      short: 'opens pull requests',
    },
  ],
  linear: [
    {
      capability: 'state_change',
      text: "Change the issue's workflow state",
      short: 'changes issue state',
    },
  ],
};
const TRIGGER_TEXT: Record<string, string> = {
  mention: 'Mention',
  assignment: 'Assignment',
  label: 'Label',
  direct_message: 'Direct message',
};

export function Integrations() {
  const q = useGet<{ data: Integration[] }>(BASE);
  const canWrite = useCanWrite();
  const agents = useGet<Page<Named>>(AGENTS);
  const envs = useGet<Page<Named>>(ENVIRONMENTS, { enabled: canWrite });
  return (
    <section>
      <h1>Integrations</h1>
      <p>
        Publish agents to GitHub, Linear and Slack: install the integration in this tenant, then say
        which agent answers in which workspace.
      </p>
      <Loaded q={q} empty={!q.data?.data.length} emptyText="No integrations are shipped.">
        {q.data?.data.map((i) => (
          <IntegrationCard
            key={i.id}
            i={i}
            canWrite={canWrite}
            agents={agents.data?.data ?? []}
            envs={envs.data?.data ?? []}
          />
        ))}
      </Loaded>
    </section>
  );
}

function IntegrationCard({
  i,
  canWrite,
  agents,
  envs,
}: {
  i: Integration;
  canWrite: boolean;
  agents: Named[];
  envs: Named[];
}) {
  const refresh = useRefresh();
  const pubsPath = `${BASE}/${encodeURIComponent(i.id)}/publications`;
  const pubs = useGet<{ data: Publication[] }>(pubsPath);
  const agentName = (id: string) => agents.find((a) => a.id === id)?.name ?? id;
  const heading = `integration-${i.id}`;
  return (
    <section className="card" aria-labelledby={heading}>
      <h2 id={heading}>{i.name}</h2>
      {i.configured ? (
        <p>Configured.</p>
      ) : (
        <p>
          <strong>Not configured</strong> — set {i.missing_settings.join(', ')} on the platform
          (docs/integrations.md).
        </p>
      )}
      {i.configured && i.webhook_url && (
        <p>
          Webhook URL (paste it into the provider's app settings): <code>{i.webhook_url}</code>
        </p>
      )}
      {i.configured && i.callback_url && (
        <p>
          Callback URL: <code>{i.callback_url}</code>
        </p>
      )}

      <h3>Installs</h3>
      {i.installs.length ? (
        <ul className="rows" aria-label={`${i.name} installs`}>
          {i.installs.map((inst) => (
            <li key={inst.id}>
              <strong>{inst.account.name}</strong> <code>{inst.external_id}</code>
              {inst.scopes.length > 0 && <> · {inst.scopes.join(', ')}</>} · installed{' '}
              {when(inst.created_at)}
              {canWrite && (
                <div className="inline">
                  <Action
                    label="Uninstall"
                    ariaLabel={`Uninstall ${i.name} from ${inst.account.name}`}
                    run={async () => {
                      if (!window.confirm(`Uninstall ${i.name} from ${inst.account.name}?`)) return;
                      await rest(`${BASE}/${encodeURIComponent(i.id)}/uninstall`, {
                        method: 'POST',
                        json: { install_id: inst.id },
                      });
                      await refresh(BASE);
                    }}
                  />
                </div>
              )}
            </li>
          ))}
        </ul>
      ) : (
        <p className="empty">Not installed in this tenant.</p>
      )}
      {canWrite && i.configured && (
        <Action
          label={`Install ${i.name}`}
          run={async () => {
            const start = await rest<{ url: string }>(
              `${BASE}/${encodeURIComponent(i.id)}/install`,
            );
            window.location.assign(start.url);
          }}
        />
      )}

      <h3>Publications</h3>
      <Loaded q={pubs} empty={!pubs.data?.data.length} emptyText="No agent is published here.">
        <ul className="rows" aria-label={`${i.name} publications`}>
          {pubs.data?.data.map((p) => (
            <li key={p.id}>
              <a href={href('agents', p.agent.id)}>{agentName(p.agent.id)}</a>{' '}
              {p.agent.version === null ? '(latest)' : `v${p.agent.version}`} ·{' '}
              {Object.entries(p.workspace)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ') || 'every workspace'}{' '}
              · on {p.triggers.join(', ')}
              {p.label && <> (label “{p.label}”)</>} ·{' '}
              {p.capabilities.includes('reply') ? 'replies' : 'does not reply'}
              {(ACTIONS[i.id] ?? [])
                .filter((a) => p.capabilities.includes(a.capability))
                .map((a) => ` · ${a.short}`)
                .join('')}{' '}
              · environment <code>{p.environment_id}</code> <code>{p.id}</code>
              {canWrite && (
                <div className="inline">
                  <Action
                    label="Delete"
                    ariaLabel={`Delete publication ${p.id}`}
                    run={async () => {
                      await rest(`${pubsPath}/${encodeURIComponent(p.id)}`, { method: 'DELETE' });
                      await refresh(pubsPath);
                    }}
                  />
                </div>
              )}
            </li>
          ))}
        </ul>
      </Loaded>
      {canWrite && i.configured && (
        <PublishForm i={i} agents={agents} envs={envs} path={pubsPath} />
      )}
    </section>
  );
}

/** The create form of a publication: the body POST …/:id/publications takes. */
function PublishForm({
  i,
  agents,
  envs,
  path,
}: {
  i: Integration;
  agents: Named[];
  envs: Named[];
  path: string;
}) {
  const refresh = useRefresh();
  const [withLabel, setWithLabel] = useState(false);
  const triggers = TRIGGERS[i.id] ?? [];
  const label = `Publish an agent to ${i.name}`;
  return (
    <Form
      label={label}
      submit="Publish"
      fields={[]}
      onSubmit={async (v) => {
        const workspace: Record<string, string> = {};
        for (const w of WORKSPACE[i.id] ?? []) {
          const value = v[`workspace_${w.key}`]?.trim();
          if (value) workspace[w.key] = value;
        }
        const on = triggers.filter((t) => v[`trigger_${t}`] === 'on');
        const vaults = (v.vault_ids ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        await rest(path, {
          method: 'POST',
          json: {
            agent: v.agent,
            environment_id: v.environment_id,
            workspace,
            triggers: on,
            label: on.includes('label') ? v.label?.trim() || undefined : undefined,
            capabilities: [
              ...(v.reply === 'on' ? ['reply'] : []),
              ...(ACTIONS[i.id] ?? [])
                .filter((a) => v[`cap_${a.capability}`] === 'on')
                .map((a) => a.capability),
            ],
            vault_ids: vaults.length ? vaults : undefined,
          },
        });
        setWithLabel(false);
        await refresh(path);
      }}
    >
      <label>
        Agent
        <select name="agent" required>
          {agents.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} ({a.id})
            </option>
          ))}
        </select>
        {!agents.length && <small>Create an agent first (Agents).</small>}
      </label>
      <label>
        Environment
        <select name="environment_id" required>
          {envs.map((e) => (
            <option key={e.id} value={e.id}>
              {e.name} ({e.id})
            </option>
          ))}
        </select>
        {!envs.length && <small>Create an environment first (Environments).</small>}
      </label>
      {(WORKSPACE[i.id] ?? []).map((w) => (
        <label key={w.key}>
          {w.label}
          <input name={`workspace_${w.key}`} required={w.required} autoComplete="off" />
        </label>
      ))}
      <fieldset>
        <legend>Triggers</legend>
        {triggers.map((t) => (
          <label key={t}>
            <input
              type="checkbox"
              name={`trigger_${t}`}
              defaultChecked={t !== 'label'}
              onChange={t === 'label' ? (e) => setWithLabel(e.target.checked) : undefined}
            />{' '}
            {TRIGGER_TEXT[t] ?? t}
          </label>
        ))}
      </fieldset>
      {withLabel && (
        <label>
          Label name (the agent takes items given this label)
          <input name="label" required autoComplete="off" />
        </label>
      )}
      <label>
        <input type="checkbox" name="reply" defaultChecked /> Reply in the thread (the agent's
        answers are posted back)
      </label>
      {(ACTIONS[i.id] ?? []).map((a) => (
        <label key={a.capability}>
          <input type="checkbox" name={`cap_${a.capability}`} /> {a.text}
        </label>
      ))}
      <label>
        Vault ids (optional, comma-separated)
        <input name="vault_ids" autoComplete="off" />
      </label>
    </Form>
  );
}
