/**
 * The vault part of the secrets scan (test/e2e/credentials/secrets-scan.test.ts): one vault with a credential
 * of every type (static_bearer, mcp_oauth with refresh and a client secret,
 * environment_variable, cap_cli, command_secret), each secret distinctive; a rotation through
 * update; the list and retrieve reads. The scan then searches every response, event, log line
 * and file for these secrets, and the session created with the returned vault id runs the
 * sandbox dump (env, /proc, files) with them in its vaults.
 *
 * `vaultEgress` then makes the secrets take effect in a sandbox, so the scan also covers them in
 * use: `$SCAN_TOKEN` is the placeholder (`afv_ph_…`) and the session proxy substitutes the
 * secret into a request's header and body to an upstream of the test (local driver; Nomad
 * sandboxes have no proxy, so there it only checks the placeholder); a simple `git` command
 * gets the command_secret in its own environment. That is the one place the spec lets a vault
 * secret into the sandbox ("command_secret … is not out-of-sandbox"): the command_secret may
 * appear in the host-side /proc sample of that git process (and of the `sh -c` running it)
 * only, nowhere else: not in the in-sandbox dumps, events, responses, logs or files.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import type { Secret } from '../../kit/secretsScan.js';

const r = () => randomBytes(12).toString('hex');
export const VAULT_SECRETS: Secret[] = [
  { name: 'vault static_bearer token', value: `scan-vault-bearer-${r()}` },
  { name: 'vault static_bearer token (rotated)', value: `scan-vault-bearer-rotated-${r()}` },
  { name: 'vault mcp_oauth access_token', value: `scan-vault-access-${r()}` },
  { name: 'vault mcp_oauth refresh_token', value: `scan-vault-refresh-${r()}` },
  { name: 'vault mcp_oauth client_secret', value: `scan-vault-client-secret-${r()}` },
  { name: 'vault environment_variable secret_value', value: `scan-vault-env-${r()}` },
  { name: 'vault cap_cli token', value: `scan-vault-cli-${r()}` },
  {
    name: 'vault command_secret secret_value',
    value: `scan-vault-cmd-${r()}`,
    // Spec rule 5: in the environment of the one simple command it is for: the git process
    // and the `sh -c` the sandbox agent runs it with (dash does not exec the last command).
    allowedIn: (where) => /^host \/proc\/\d+ \((\S*\/)?(git|sh)\) /.test(where),
  },
];
const v = (i: number) => VAULT_SECRETS[i]!.value;

type Http = (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;

/** Creates the vault and its credentials as the tenant `http` speaks for; returns the vault id. */
export async function vaultLifecycle(http: Http, json: (r: Response) => Promise<any>) {
  const vault = await json(
    await http('/v1/vaults', { method: 'POST', json: { display_name: 'scan' } }),
  );
  const auths = [
    { type: 'static_bearer', token: v(0), mcp_server_url: 'https://mcp.example.com/sse' },
    {
      type: 'mcp_oauth',
      access_token: v(2),
      mcp_server_url: 'https://oauth.example.com/mcp',
      refresh: {
        client_id: 'scan-client',
        refresh_token: v(3),
        token_endpoint: 'https://auth.example.com/token',
        token_endpoint_auth: { type: 'client_secret_post', client_secret: v(4) },
      },
    },
    {
      type: 'environment_variable',
      secret_name: 'SCAN_TOKEN',
      secret_value: v(5),
      networking: { type: 'unrestricted' },
    },
    { type: 'cap_cli', cli_id: 'gh', token: v(6) },
    { type: 'command_secret', secret_name: 'GIT_TOKEN', secret_value: v(7), commands: ['git'] },
  ];
  const base = `/v1/vaults/${vault.id}/credentials`;
  const made = [];
  for (const auth of auths)
    made.push(await json(await http(base, { method: 'POST', json: { auth } })));
  expect(made.map((c) => c.auth.type)).toEqual(auths.map((a) => a.type));
  await json(
    await http(`${base}/${made[0].id}`, {
      method: 'POST',
      json: { auth: { type: 'static_bearer', token: v(1) } },
    }),
  );
  await json(await http(base));
  for (const c of made) await json(await http(`${base}/${c.id}`));
  return vault.id as string;
}

/** What vaultEgress needs of the scan's state (test/e2e/credentials/secretsScanLifecycle.ts ScanState). */
interface EgressState {
  client: (apiKey: string) => Anthropic;
  tenantKey: string;
  model: { script: (model: string, ...steps: any[]) => void };
  turn: (sdk: Anthropic, sid: string, text: string, label: string) => Promise<any[]>;
}

/**
 * A session whose vault's secrets take effect: the env var placeholder, its substitution at
 * egress to `upstreamUrl` (recorded by the test's server into `received`), and the
 * command_secret in a simple git command. `model` is the scan's model card id.
 */
export async function vaultEgress(
  s: EgressState,
  model: string,
  upstreamUrl: string | null,
  received: () => Array<{ header?: string; body: string }>,
) {
  const sdk = s.client(s.tenantKey);
  const vault = await sdk.beta.vaults.create({ display_name: 'scan-egress' });
  await sdk.beta.vaults.credentials.create(vault.id, {
    auth: {
      type: 'environment_variable',
      secret_name: 'SCAN_TOKEN',
      secret_value: v(5),
      networking: { type: 'limited', allowed_hosts: ['127.0.0.1'] },
      injection_location: { header: true, body: true },
    },
  });
  await sdk.beta.vaults.credentials.create(vault.id, {
    auth: {
      type: 'command_secret',
      secret_name: 'GIT_TOKEN',
      secret_value: v(7),
      commands: ['git'],
    },
  } as any);
  await sdk.beta.vaults.credentials.create(vault.id, {
    auth: { type: 'cap_cli', cli_id: 'gh', token: v(6) },
  } as any);
  const env = await sdk.beta.environments.create({ name: 'scan-egress' });
  const agent = await sdk.beta.agents.create({
    name: 'scan-egress',
    model,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (
    await sdk.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
      vault_ids: [vault.id],
    })
  ).id;
  const curl = upstreamUrl
    ? `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" -H "X-Scan: $SCAN_TOKEN" --data-binary "t=$SCAN_TOKEN" '${upstreamUrl}'; echo " curl=$?"`
    : 'echo no-proxy';
  s.model.script(
    model,
    { steps: [{ tool_use: { name: 'bash', input: { command: 'printenv SCAN_TOKEN' } } }] },
    { steps: [{ tool_use: { name: 'bash', input: { command: curl } } }] },
    { steps: [{ tool_use: { name: 'bash', input: { command: 'git --version' } } }] },
    { steps: [{ text: 'used' }] },
  );
  const events = await s.turn(sdk, sid, 'use the vault', 'vault egress turn');
  const results = events
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => (e.content ?? []).map((c: any) => c.text ?? '').join(''));
  expect(results).toHaveLength(3);
  // Controls: the placeholder is what the sandbox sees; the upstream got the real secret.
  expect(results[0]).toMatch(/^afv_ph_[0-9a-f]{32}\n/);
  expect(results[2]).toContain('git version');
  if (upstreamUrl) {
    expect(results[1]).toContain('curl=0');
    expect(received()).toEqual([{ header: v(5), body: `t=${v(5)}` }]);
  }
}
