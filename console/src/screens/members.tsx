// #/members — the tenant's members (change role, remove), invitations (invite, revoke) and the
// sign-in policy. Routes: /v1/svc/console/{members,invitations,sign_in_policy}.
import { useQuery } from '@tanstack/react-query';
import { rest } from '../api';
import { Action, ErrorText, Form, Loaded, useCanWrite, useMe, useRefresh, when } from '../ui';

const BASE = '/v1/svc/console';
const ROLES = ['admin', 'member', 'viewer'];

type Member = { user_id: string; email: string; name: string; role: string; created_at: string };
type Invitation = {
  id: string;
  email: string;
  role: string;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
};
type Policy = { allowed_email_domains: string[]; default_role: string };

const useGet = <T,>(path: string) => useQuery({ queryKey: [path], queryFn: () => rest<T>(path) });

export function Members() {
  const me = useMe();
  const canAdmin = useCanWrite() && (me?.role === 'admin' || !!me?.operator);
  const members = useGet<{ data: Member[] }>(`${BASE}/members`);
  const invites = useGet<{ data: Invitation[] }>(`${BASE}/invitations`);
  const policy = useGet<Policy>(`${BASE}/sign_in_policy`);
  const refresh = useRefresh();
  return (
    <section>
      <h1>Members</h1>
      <p>
        Tenant {me?.tenant.name} · you are {me?.role}
      </p>
      <h2>People</h2>
      <Loaded q={members} empty={members.data?.data.length === 0} emptyText="No members yet.">
        <ul className="rows" aria-label="Members">
          {members.data?.data.map((m) => (
            <li key={m.user_id}>
              <strong>{m.name || m.email}</strong> {m.email} · since {when(m.created_at)}
              {canAdmin ? (
                <div className="inline">
                  <label>
                    Role of {m.email}
                    <select
                      value={m.role}
                      onChange={async (e) => {
                        await rest(`${BASE}/members/${encodeURIComponent(m.user_id)}`, {
                          method: 'PATCH',
                          json: { role: e.target.value },
                        }).catch((err: Error) => alert(err.message));
                        await refresh(`${BASE}/members`);
                      }}
                    >
                      {ROLES.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  </label>
                  <Action
                    label="Remove"
                    ariaLabel={`Remove ${m.email}`}
                    run={async () => {
                      await rest(`${BASE}/members/${encodeURIComponent(m.user_id)}`, {
                        method: 'DELETE',
                      });
                      await refresh(`${BASE}/members`);
                    }}
                  />
                </div>
              ) : (
                <> · {m.role}</>
              )}
            </li>
          ))}
        </ul>
      </Loaded>
      <h2>Invitations</h2>
      <Loaded q={invites} empty={invites.data?.data.length === 0} emptyText="No open invitations.">
        <ul className="rows" aria-label="Invitations">
          {invites.data?.data.map((i) => (
            <li key={i.id}>
              <strong>{i.email}</strong> as {i.role} · expires {when(i.expires_at)}
              {i.accepted_at && <> · accepted {when(i.accepted_at)}</>}
              {canAdmin && !i.accepted_at && (
                <div className="inline">
                  <Action
                    label="Revoke"
                    ariaLabel={`Revoke the invitation of ${i.email}`}
                    run={async () => {
                      await rest(`${BASE}/invitations/${encodeURIComponent(i.id)}`, {
                        method: 'DELETE',
                      });
                      await refresh(`${BASE}/invitations`);
                    }}
                  />
                </div>
              )}
            </li>
          ))}
        </ul>
      </Loaded>
      {canAdmin && (
        <Form
          label="Invite someone"
          submit="Send invitation"
          fields={[
            { name: 'email', label: 'Email', type: 'email', required: true },
            { name: 'role', label: 'Role', type: 'select', options: ROLES, defaultValue: 'member' },
          ]}
          onSubmit={async (v) => {
            await rest(`${BASE}/invitations`, {
              method: 'POST',
              json: { email: v.email, role: v.role },
            });
            await refresh(`${BASE}/invitations`);
          }}
        />
      )}
      <h2>Sign-in policy</h2>
      <Loaded q={policy}>
        {policy.data && canAdmin ? (
          <Form
            key={JSON.stringify(policy.data)}
            label="Edit sign-in policy"
            submit="Save policy"
            fields={[
              {
                name: 'domains',
                label: 'Allowed email domains (comma-separated)',
                defaultValue: policy.data.allowed_email_domains.join(', '),
              },
              {
                name: 'default_role',
                label: 'Default role of a new member',
                type: 'select',
                options: ROLES,
                defaultValue: policy.data.default_role,
              },
            ]}
            onSubmit={async (v) => {
              await rest(`${BASE}/sign_in_policy`, {
                method: 'PUT',
                json: {
                  allowed_email_domains: v
                    .domains!.split(',')
                    .map((s) => s.trim())
                    .filter(Boolean),
                  default_role: v.default_role,
                },
              });
              await refresh(`${BASE}/sign_in_policy`);
            }}
          />
        ) : policy.data ? (
          <p>
            Allowed domains: {policy.data.allowed_email_domains.join(', ') || 'any'} · default role{' '}
            {policy.data.default_role}
          </p>
        ) : (
          <ErrorText error="No policy." />
        )}
      </Loaded>
    </section>
  );
}
