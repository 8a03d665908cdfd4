/**
 * The MCP proxy's OAuth flow (spec "MCP proxy 401 flow", core/src/mcp/oauthRefresh.ts) against
 * a real MCP server of ours (test/kit/fixtures/mcpServer.ts, official MCP SDK) and a real token
 * endpoint of ours that rotates tokens (test/kit/fixtures/oauthServer.ts), both on 127.0.0.1:
 * - 401 → refresh → retry for each token endpoint auth (none, client_secret_basic,
 *   client_secret_post), the rotated tokens persisted (a second refresh uses the new refresh
 *   token; expires_at from expires_in), the log line says refreshed;
 * - the live-token shortcut: a credential already rotated by update is used, no refresh call;
 * - refresh failure: the caller gets the ORIGINAL 401, the failure is recorded (scrubbed);
 * - concurrent calls with an expired token: exactly one refresh at the token endpoint, all pass
 *   (the lease works on whichever coordination adapter the harness picked, Redis included);
 * - 403 from an upstream that uses it runs the same flow;
 * - no token in any response or log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';
import {
  startOAuthServer,
  type OAuthServerFixture,
  type TokenEndpointAuth,
} from '../../kit/fixtures/oauthServer.js';
import {
  clientViaGateway,
  forwardLines,
  rnd,
  rpc,
  sessionWith,
  textOf,
  withLogs,
} from './mcpProxyHelpers.js';

let t: TestPlatform;
const fixtures: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', LOG_LEVEL: 'info', EGRESS_ALLOW_PRIVATE_HOSTS: '127.0.0.1' },
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all(fixtures.map((f) => f.close()));
});

interface Setup {
  oauth: OAuthServerFixture;
  mcp: McpServerFixture;
  tenantId: string;
  vaultId: string;
  credId: string;
  sid: string;
  stale: string;
  rt0: string;
  clientSecret: string;
  secrets: () => string[];
}

async function setup(auth: TokenEndpointAuth, rejectStatus: 401 | 403 = 401): Promise<Setup> {
  const clientSecret = `client-secret-${rnd()}${rnd()}`;
  const rt0 = `refresh-0-${rnd()}${rnd()}`;
  const stale = `stale-access-${rnd()}${rnd()}`;
  const oauth = await startOAuthServer({
    auth,
    clientId: 'cid-1',
    clientSecret,
    refreshToken: rt0,
  });
  const mcp = await startMcpServer({ tokens: [`never-issued-${rnd()}`], rejectStatus });
  fixtures.push(oauth, mcp);
  oauth.onIssue = (a) => mcp.tokens.add(a);
  const { tenantId, client } = await t.newTenant(`oauth-${auth}`);
  const v = await client.beta.vaults.create({ display_name: `oauth-${auth}` });
  const cred = await client.beta.vaults.credentials.create(v.id, {
    auth: {
      type: 'mcp_oauth',
      access_token: stale,
      mcp_server_url: mcp.url,
      refresh: {
        client_id: 'cid-1',
        refresh_token: rt0,
        token_endpoint: oauth.url,
        token_endpoint_auth:
          auth === 'none' ? { type: 'none' } : { type: auth, client_secret: clientSecret },
        scope: 'mcp:tools',
        resource: mcp.url,
      },
    },
  });
  const sid = await sessionWith(client, [{ name: 'srv', url: mcp.url }], [v.id]);
  const secrets = () => [stale, rt0, clientSecret, ...oauth.issued, ...oauth.refreshTokens];
  return {
    oauth,
    mcp,
    tenantId,
    vaultId: v.id,
    credId: cred.id,
    sid,
    stale,
    rt0,
    clientSecret,
    secrets,
  };
}

const noSecret = (text: string, secrets: string[]) => {
  for (const s of secrets) expect(text).not.toContain(s);
};

describe('MCP proxy OAuth: 401 → refresh → retry', () => {
  it.each(['none', 'client_secret_basic', 'client_secret_post'] as const)(
    'token endpoint auth %s: one refresh, rotated tokens persisted, the call succeeds',
    async (auth) => {
      const s = await setup(auth);
      const {
        value: text,
        lines,
        raw,
      } = await withLogs(async () => {
        const c = await clientViaGateway(t, s.sid, 'srv');
        const r = await c.callTool({ name: 'echo', arguments: { text: 'after refresh' } });
        await c.close();
        return textOf(r);
      });
      expect(text).toBe('echo: after refresh');
      expect(s.oauth.calls).toBe(1);
      const [req] = s.oauth.requests;
      expect(req!.form).toMatchObject({
        grant_type: 'refresh_token',
        refresh_token: s.rt0,
        scope: 'mcp:tools',
        resource: s.mcp.url,
      });
      if (auth === 'none') expect([req!.basic, req!.form.client_id]).toEqual([false, 'cid-1']);
      if (auth === 'client_secret_basic')
        expect([req!.basic, req!.form.client_secret]).toEqual([true, undefined]);
      if (auth === 'client_secret_post')
        expect([req!.basic, req!.form.client_id, req!.form.client_secret]).toEqual([
          false,
          'cid-1',
          s.clientSecret,
        ]);
      // The server saw the stale bearer, then the refreshed one.
      const auths = s.mcp.seen.map((x) => x.authorization);
      expect(auths[0]).toBe(`Bearer ${s.stale}`);
      expect(auths.at(-1)).toBe(`Bearer ${s.oauth.issued[0]}`);
      // Persisted: the new access and refresh tokens, expires_at from expires_in.
      const live = await t.server.platform.vaults.credentialLive(s.tenantId, s.credId);
      expect(live!.secrets.access_token).toBe(s.oauth.issued[0]);
      expect(live!.secrets.refresh_token).not.toBe(s.rt0);
      expect(s.oauth.refreshTokens.has(live!.secrets.refresh_token!)).toBe(true);
      const served = await t.server.platform.vaults.getCredential(s.tenantId, s.vaultId, s.credId);
      const expiresIn = Date.parse((served.auth as any).expires_at) - Date.now();
      expect(expiresIn).toBeGreaterThan(3000_000);
      expect(expiresIn).toBeLessThanOrEqual(3600_000);
      const outcome = await t.server.platform.vaults.lastRefreshOutcome(s.tenantId, s.credId);
      expect(outcome).toMatchObject({ status: 'succeeded', http_response: null });
      // One log line per call; the first call was retried with the refreshed bearer.
      const fw = forwardLines(lines);
      expect(fw.filter((l) => l.refreshed)).toHaveLength(1);
      expect(fw.find((l) => l.refreshed)).toMatchObject({ status: 200, caller: 'http' });
      noSecret(raw, s.secrets());

      // The server drops that token: the next refresh must use the ROTATED refresh token.
      s.mcp.tokens.delete(s.oauth.issued[0]!);
      const res = await rpc(t, s.sid, 'srv');
      expect(res.status).toBe(200);
      noSecret(await res.text(), s.secrets());
      expect(s.oauth.calls).toBe(2);
      expect(s.oauth.requests[1]!.form.refresh_token).toBe(live!.secrets.refresh_token);
      expect(s.mcp.seen.at(-1)!.authorization).toBe(`Bearer ${s.oauth.issued[1]}`);
    },
  );

  it('the live token is used when the credential already moved on (no refresh call)', async () => {
    const s = await setup('none');
    const fresh = `fresh-${rnd()}${rnd()}`;
    s.mcp.tokens.add(fresh);
    // The tenant rotates the token through update while a caller still holds the stale one.
    await t.server.platform.vaults.updateCredential(s.tenantId, s.vaultId, s.credId, {
      auth: { type: 'mcp_oauth', access_token: fresh },
    });
    const renewed = await t.server.platform.mcpProxy.refresher.renew(s.tenantId, s.credId, s.stale);
    expect(renewed).toMatchObject({ ok: true, accessToken: fresh, refreshed: false });
    expect(s.oauth.calls).toBe(0);
    const res = await rpc(t, s.sid, 'srv');
    expect(res.status).toBe(200);
    expect(s.mcp.seen.at(-1)!.authorization).toBe(`Bearer ${fresh}`);
    expect(s.oauth.calls).toBe(0);
  });

  it('refresh failure: the caller gets the original 401, the failure is recorded and scrubbed', async () => {
    const s = await setup('client_secret_post');
    s.oauth.failNext(1);
    const { value, lines, raw } = await withLogs(async () => {
      const res = await rpc(t, s.sid, 'srv');
      return {
        status: res.status,
        www: res.headers.get('www-authenticate'),
        body: await res.text(),
      };
    });
    expect(value.status).toBe(401);
    expect(value.www).toBe('Bearer error="invalid_token"');
    expect(JSON.parse(value.body)).toEqual({
      jsonrpc: '2.0',
      error: { code: -32001, message: 'unauthorized' },
      id: null,
    });
    expect(s.oauth.calls).toBe(1);
    const outcome = await t.server.platform.vaults.lastRefreshOutcome(s.tenantId, s.credId);
    expect(outcome).toMatchObject({
      status: 'failed',
      http_response: { status_code: 400, content_type: 'application/json' },
    });
    expect(outcome!.http_response!.body).toContain('invalid_grant');
    // The token endpoint's answer named the refresh token: scrubbed from the record.
    noSecret(JSON.stringify(outcome), s.secrets());
    // Nothing was rotated; the failure is logged (without any secret).
    const live = await t.server.platform.vaults.credentialLive(s.tenantId, s.credId);
    expect([live!.secrets.access_token, live!.secrets.refresh_token]).toEqual([s.stale, s.rt0]);
    expect(lines.find((l) => l.msg === 'mcp_oauth refresh failed')).toMatchObject({
      credential_id: s.credId,
      status: 'failed',
      http_status: 400,
    });
    expect(forwardLines(lines)).toEqual([
      expect.objectContaining({ status: 401, refreshed: false }),
    ]);
    noSecret(raw, s.secrets());
    noSecret(value.body, s.secrets());
  });

  it('concurrent calls with an expired token: exactly one refresh, every call succeeds', async () => {
    const s = await setup('client_secret_basic');
    s.oauth.delayMs = 300;
    const results = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        const res = await rpc(t, s.sid, 'srv');
        return { status: res.status, text: await res.text() };
      }),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(s.oauth.calls).toBe(1);
    for (const r of results) noSecret(r.text, s.secrets());
    // The MCP SDK client too: two sessions of the SDK connecting at once.
    s.mcp.tokens.clear();
    s.mcp.tokens.add(`never-${rnd()}`);
    const clients = await Promise.all([1, 2].map(() => clientViaGateway(t, s.sid, 'srv')));
    const texts = await Promise.all(
      clients.map((c, i) => c.callTool({ name: 'echo', arguments: { text: `c${i}` } })),
    );
    expect(texts.map(textOf)).toEqual(['echo: c0', 'echo: c1']);
    await Promise.all(clients.map((c) => c.close()));
    expect(s.oauth.calls).toBe(2);
  });

  it('403 from an upstream that uses it for expired tokens: the same flow', async () => {
    const s = await setup('none', 403);
    const before = await rpc(t, s.sid, 'srv');
    expect(before.status).toBe(200);
    expect(s.oauth.calls).toBe(1);
    expect(s.mcp.seen.map((x) => x.authorization)).toEqual([
      `Bearer ${s.stale}`,
      `Bearer ${s.oauth.issued[0]}`,
    ]);
    // And a failed refresh answers the original 403.
    s.mcp.tokens.clear();
    s.mcp.tokens.add(`never-${rnd()}`);
    s.oauth.failNext(1);
    const res = await rpc(t, s.sid, 'srv');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: { message: 'unauthorized' } });
  });
});
