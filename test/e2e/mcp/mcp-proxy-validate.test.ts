/**
 * `mcp_oauth_validate` (core/src/mcp/validate.ts) through the official TypeScript SDK
 * (`client.beta.vaults.credentials.mcpOAuthValidate`), against a real MCP server of ours
 * (official MCP SDK) and a token endpoint that rotates tokens, on 127.0.0.1:
 * - a working token → valid, no probe failure, no refresh;
 * - an expired token with a working refresh → valid, refresh succeeded, tokens rotated;
 * - an expired token whose refresh fails → invalid, the failed refresh's scrubbed answer and the
 *   probe's 401 recorded where the SDK says (refresh.http_response, mcp_probe);
 * - no refresh configured → invalid with refresh `no_refresh_token`;
 * - an unreachable server → unknown; a static_bearer credential → 400 naming credential_id;
 * - no token in any answer.
 */
import Anthropic from '@anthropic-ai/sdk';
import { Value } from '@sinclair/typebox/value';
import type { BetaManagedAgentsCredentialValidation } from '@anthropic-ai/sdk/resources/beta/vaults/credentials';
import { CredentialValidation } from '@agentfleet/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';
import { startOAuthServer, type OAuthServerFixture } from '../../kit/fixtures/oauthServer.js';
import { rnd } from './mcpProxyHelpers.js';

let t: TestPlatform;
let mcp: McpServerFixture;
const GOOD = `good-access-${rnd()}${rnd()}`;
const closers: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  mcp = await startMcpServer({ tokens: [GOOD] });
  closers.push(mcp);
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', EGRESS_ALLOW_PRIVATE_HOSTS: '127.0.0.1' },
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all(closers.map((c) => c.close()));
});

async function oauthCred(
  access: string,
  opts: { url?: string; oauth?: OAuthServerFixture; rt?: string } = {},
) {
  const client = t.client;
  const v = await client.beta.vaults.create({ display_name: `validate-${rnd()}` });
  const cred = await client.beta.vaults.credentials.create(v.id, {
    auth: {
      type: 'mcp_oauth',
      access_token: access,
      mcp_server_url: opts.url ?? mcp.url,
      ...(opts.oauth
        ? {
            refresh: {
              client_id: 'cid-v',
              refresh_token: opts.rt!,
              token_endpoint: opts.oauth.url,
              token_endpoint_auth: { type: 'none' as const },
            },
          }
        : {}),
    },
  });
  return { vaultId: v.id, credId: cred.id };
}

const validate = (c: { vaultId: string; credId: string }) =>
  t.client.beta.vaults.credentials.mcpOAuthValidate(c.credId, { vault_id: c.vaultId });

/** Compile-time: the served schema's type is the SDK's BetaManagedAgentsCredentialValidation. */
export type ServedIsSdk = CredentialValidation extends BetaManagedAgentsCredentialValidation
  ? BetaManagedAgentsCredentialValidation extends CredentialValidation
    ? true
    : never
  : never;
const servedIsSdk: ServedIsSdk = true;
void servedIsSdk;

/** The served shape (the SDK adds `_request_id` to what it returns). */
const conforms = (x: unknown) => {
  const { _request_id, ...served } = x as Record<string, unknown>;
  expect(Value.Errors(CredentialValidation, served).First()).toBeUndefined();
};

describe('mcp_oauth_validate', () => {
  it('a working token is valid (probe initialize + tools/list), nothing refreshed', async () => {
    const c = await oauthCred(GOOD);
    const r = await validate(c);
    conforms(r);
    expect(r).toMatchObject({
      type: 'vault_credential_validation',
      credential_id: c.credId,
      vault_id: c.vaultId,
      status: 'valid',
      has_refresh_token: false,
      mcp_probe: null,
      refresh: null,
    });
    expect(Number.isNaN(Date.parse(r.validated_at))).toBe(false);
    expect(mcp.seen.at(-1)!.authorization).toBe(`Bearer ${GOOD}`);
    expect(JSON.stringify(r)).not.toContain(GOOD);
  });

  it('an expired token is refreshed, the new one probed: valid, refresh succeeded', async () => {
    const rt = `rt-${rnd()}${rnd()}`;
    const oauth = await startOAuthServer({ auth: 'none', clientId: 'cid-v', refreshToken: rt });
    closers.push(oauth);
    oauth.onIssue = (a) => mcp.tokens.add(a);
    const stale = `stale-${rnd()}${rnd()}`;
    const c = await oauthCred(stale, { oauth, rt });
    const r = await validate(c);
    conforms(r);
    expect(r).toMatchObject({
      status: 'valid',
      has_refresh_token: true,
      mcp_probe: null,
      refresh: { status: 'succeeded', http_response: null },
    });
    expect(oauth.calls).toBe(1);
    expect(mcp.seen.at(-1)!.authorization).toBe(`Bearer ${oauth.issued[0]}`);
    for (const s of [stale, rt, ...oauth.issued, ...oauth.refreshTokens])
      expect(JSON.stringify(r)).not.toContain(s);
  });

  it('a refresh that fails: invalid, with the token endpoint answer (scrubbed) and the probe 401', async () => {
    const rt = `rt-${rnd()}${rnd()}`;
    const oauth = await startOAuthServer({ auth: 'none', clientId: 'cid-v', refreshToken: rt });
    closers.push(oauth);
    oauth.failNext(1);
    const stale = `stale-${rnd()}${rnd()}`;
    const c = await oauthCred(stale, { oauth, rt });
    const r = await validate(c);
    conforms(r);
    expect(r).toMatchObject({
      status: 'invalid',
      has_refresh_token: true,
      mcp_probe: {
        method: 'initialize',
        http_response: { status_code: 401, content_type: 'application/json' },
      },
      refresh: {
        status: 'failed',
        http_response: { status_code: 400, content_type: 'application/json' },
      },
    });
    expect(r.refresh!.http_response!.body).toContain('invalid_grant');
    expect(r.mcp_probe!.http_response!.body).toContain('unauthorized');
    // The token endpoint's error named the refresh token: scrubbed.
    for (const s of [stale, rt]) expect(JSON.stringify(r)).not.toContain(s);
  });

  it('no refresh configured and the token is refused: invalid, refresh no_refresh_token', async () => {
    const c = await oauthCred(`refused-${rnd()}`);
    const r = await validate(c);
    conforms(r);
    expect(r).toMatchObject({
      status: 'invalid',
      has_refresh_token: false,
      refresh: { status: 'no_refresh_token', http_response: null },
      mcp_probe: { method: 'initialize' },
    });
  });

  it('an unreachable server: unknown, no HTTP answer', async () => {
    const gone = await startMcpServer();
    const url = gone.url;
    await gone.close();
    const r = await validate(await oauthCred(`any-${rnd()}`, { url }));
    conforms(r);
    expect(r).toMatchObject({
      status: 'unknown',
      refresh: null,
      mcp_probe: { method: 'initialize', http_response: null },
    });
  });

  it('a static_bearer credential is refused with a 400 naming credential_id', async () => {
    const v = await t.client.beta.vaults.create({ display_name: 'static' });
    const cred = await t.client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: `tok-${rnd()}`, mcp_server_url: mcp.url },
    });
    const err = await t.client.beta.vaults.credentials
      .mcpOAuthValidate(cred.id, { vault_id: v.id })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as any).error.error).toMatchObject({
      type: 'invalid_request',
      details: { field: 'credential_id' },
    });
  });
});
