/**
 * The vault part of the secrets scan (test/secrets-scan.test.ts): one vault with a credential
 * of every type (static_bearer, mcp_oauth with refresh and a client secret,
 * environment_variable, cap_cli, command_secret), each secret distinctive; a rotation through
 * update; the list and retrieve reads. The scan then searches every response, event, log line
 * and file for these secrets, and the session created with the returned vault id runs the
 * sandbox dump (env, /proc, files) with them in its vaults.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Secret } from './secretsScan.js';

const r = () => randomBytes(12).toString('hex');
export const VAULT_SECRETS: Secret[] = [
  { name: 'vault static_bearer token', value: `scan-vault-bearer-${r()}` },
  { name: 'vault static_bearer token (rotated)', value: `scan-vault-bearer-rotated-${r()}` },
  { name: 'vault mcp_oauth access_token', value: `scan-vault-access-${r()}` },
  { name: 'vault mcp_oauth refresh_token', value: `scan-vault-refresh-${r()}` },
  { name: 'vault mcp_oauth client_secret', value: `scan-vault-client-secret-${r()}` },
  { name: 'vault environment_variable secret_value', value: `scan-vault-env-${r()}` },
  { name: 'vault cap_cli token', value: `scan-vault-cli-${r()}` },
  { name: 'vault command_secret secret_value', value: `scan-vault-cmd-${r()}` },
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
