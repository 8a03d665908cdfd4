/**
 * Console sign-in through OpenID Connect against a real OpenID provider (oidc-provider on
 * https://127.0.0.1, trusted through EGRESS_CA_CERTS, opened with EGRESS_ALLOW_PRIVATE_HOSTS),
 * driven over HTTP by test/kit/signInBrowser.ts: the operator's key sign-in bootstraps a tenant
 * and invites its admin; the admin signs in at the IdP; a stranger gets the "not a member" page
 * and nothing is created; an allowed domain admits a viewer, who cannot write (REST or
 * GraphQL); a member cannot manage keys or members; another tenant's member sees nothing of the
 * first; a replayed callback, a foreign state and an ID token for another audience are refused;
 * sign out everywhere ends the sessions. No secret in any answer.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { freePort } from '../../kit/process.js';
import { startOidcProvider, type OidcFixture } from '../../kit/fixtures/oidcProvider.js';
import { SignInBrowser, oidcSignIn } from '../../kit/signInBrowser.js';

const SESSION_SECRET = 'oidc-test-console-secret-0123456789abcdefgh';
let t: TestPlatform;
let idp: OidcFixture;
let publicUrl: string;
const bodies: string[] = [];
const browsers: SignInBrowser[] = [];

beforeAll(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider([
    `${publicUrl}/v1/svc/oauth/oidc/callback`,
    `${publicUrl}/v1/oauth/oidc/callback`,
  ]);
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      CONSOLE_SESSION_SECRET: SESSION_SECRET,
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(idp.issuer).host,
      EGRESS_CA_CERTS: idp.certFile,
    },
  });
}, 60_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await t?.close();
  await idp?.close();
});

const browser = () => {
  const b = new SignInBrowser(idp.certFile);
  browsers.push(b);
  return b;
};
const authorize = () => `${publicUrl}/v1/svc/oauth/oidc/authorize`;
const isCallback = (u: URL) => u.pathname.endsWith('/oidc/callback');

/** A signed-in console client: REST and GraphQL with its cookie and CSRF token. */
async function consoleClient(cookie: string) {
  const call = async (path: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await t.http(path, {
      method: init.method ?? 'GET',
      key: null,
      json: init.json,
      headers: { ...BETA, cookie: `af_console=${cookie}`, 'x-csrf-token': csrf },
    });
    const text = await res.text();
    bodies.push(text);
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  let csrf = '';
  const me = await call('/v1/svc/console/me');
  csrf = me.body?.csrf_token ?? '';
  return {
    me,
    call,
    gql: (query: string) => call('/graphql', { method: 'POST', json: { query } }),
  };
}

async function signInAs(login: string, email: string, opts: { verified?: boolean } = {}) {
  idp.accounts.set(login, { email, email_verified: opts.verified ?? true, name: login });
  const b = browser();
  const page = await oidcSignIn(b, authorize(), login);
  bodies.push(page.text);
  return { b, page, cookie: b.cookie(publicUrl, 'af_console') };
}

async function keyConsole(key: string) {
  const res = await t.http('/v1/svc/console/session', {
    method: 'POST',
    key: null,
    json: { api_key: key },
  });
  const cookie = /af_console=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
  return consoleClient(cookie);
}

let acme: string;
let operator: Awaited<ReturnType<typeof keyConsole>>;

describe('console sign-in with OpenID Connect', () => {
  it('offers the provider; the operator key bootstraps a tenant and invites its admin', async () => {
    const config = await (await t.http('/v1/svc/console/config', { key: null })).json();
    expect(config).toMatchObject({
      enabled: true,
      key_sign_in: true,
      providers: [{ id: 'oidc', authorize_url: '/v1/svc/oauth/oidc/authorize' }],
    });
    operator = await keyConsole(t.operatorKey);
    expect(operator.me.body.operator).toBe(true);
    const tenant = await operator.call('/v1/svc/tenants', {
      method: 'POST',
      json: { name: 'Acme' },
    });
    expect(tenant.status).toBe(200);
    acme = tenant.body.tenant_id;
    const inv = await operator.call('/v1/svc/console/invitations', {
      method: 'POST',
      json: { tenant_id: acme, email: 'Alice@Acme.test', role: 'admin' },
    });
    expect(inv.status).toBe(200);
    expect(inv.body).toMatchObject({ email: 'alice@acme.test', role: 'admin', accepted_at: null });
    const tenants = await operator.call('/v1/svc/tenants?limit=100');
    expect(tenants.body.data.map((x: { id: string }) => x.id)).toContain(acme);
  });

  it('the invited admin signs in at the IdP and lands in the console of that tenant', async () => {
    const { page, cookie, b } = await signInAs('alice', 'alice@acme.test');
    expect(page.status).toBe(200);
    expect(new URL(page.url).pathname).toBe('/console/');
    // The sign-in flow went through the IdP with PKCE, state and nonce.
    const toIdp = new URL(page.hops[0]!.location!);
    expect(toIdp.origin).toBe(idp.issuer);
    expect(toIdp.searchParams.get('code_challenge_method')).toBe('S256');
    expect(toIdp.searchParams.get('state')).toBeTruthy();
    expect(toIdp.searchParams.get('nonce')).toBeTruthy();
    expect(b.cookie(publicUrl, 'af_sign_in')).toBeUndefined();
    const setCookie = page.hops
      .flatMap((h) => h.setCookies)
      .find((c) => c.startsWith('af_console='))!;
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    const alice = await consoleClient(cookie!);
    expect(alice.me.body).toMatchObject({
      user: { email: 'alice@acme.test', name: 'alice' },
      operator: false,
      tenant: { id: acme, name: 'Acme' },
      role: 'admin',
    });
    const invs = await alice.call('/v1/svc/console/invitations');
    expect(invs.body.data[0].accepted_at).toBeTruthy();
    // API keys keep working unchanged beside the cookie.
    const agent = await alice.call('/v1/agents', {
      method: 'POST',
      json: { name: 'acme-agent', model: 'claude-sonnet-4-5' },
    });
    expect(agent.status).toBe(200);
  });

  it('a stranger gets the "not a member" page and nothing is created', async () => {
    const users = () => t.server.platform.collections.consoleUsers.count({});
    const before = await users();
    const { page, cookie } = await signInAs('mallory', 'mallory@evil.test');
    expect(page.status).toBe(403);
    expect(page.text).toContain('Not a member');
    expect(page.text).toContain('mallory@evil.test');
    expect(cookie).toBeUndefined();
    expect(await users()).toBe(before);
    expect(
      await t.server.platform.collections.consoleSessions.count({ user_id: { $ne: null } }),
    ).toBe(1);
  });

  it('an allowed domain admits a verified email as its role; an unverified one is refused', async () => {
    const alice = await consoleClient((await signInAs('alice', 'alice@acme.test')).cookie!);
    const bad = await alice.call('/v1/svc/console/sign_in_policy', {
      method: 'PUT',
      json: { allowed_email_domains: ['not a domain'], default_role: 'viewer' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('allowed_email_domains[0]');
    const put = await alice.call('/v1/svc/console/sign_in_policy', {
      method: 'PUT',
      json: { allowed_email_domains: ['acme.test'], default_role: 'viewer' },
    });
    expect(put.body).toEqual({ allowed_email_domains: ['acme.test'], default_role: 'viewer' });
    const unverified = await signInAs('eve', 'eve@acme.test', { verified: false });
    expect(unverified.page.status).toBe(403);
    expect(unverified.page.text).toContain('did not verify');
    const bob = await signInAs('bob', 'bob@acme.test');
    expect(bob.page.status).toBe(200);
    const viewer = await consoleClient(bob.cookie!);
    expect(viewer.me.body).toMatchObject({ role: 'viewer', tenant: { id: acme } });
  });

  it('a viewer reads (REST and GraphQL) but cannot write anything', async () => {
    const viewer = await consoleClient((await signInAs('bob', 'bob@acme.test')).cookie!);
    expect((await viewer.call('/v1/agents')).status).toBe(200);
    const q = await viewer.gql('{ agents { nodes { id name } } }');
    expect(q.status).toBe(200);
    expect(JSON.stringify(q.body)).toContain('acme-agent');
    const writes = [
      viewer.call('/v1/agents', { method: 'POST', json: { name: 'x', model: 'm' } }),
      viewer.call('/v1/svc/api_keys', { method: 'POST', json: { name: 'k' } }),
      viewer.call('/v1/svc/model_cards', { method: 'POST', json: {} }),
      viewer.call('/v1/svc/console/invitations', { method: 'POST', json: { email: 'a@b.test' } }),
      viewer.gql('mutation { createAgent(input: {name: "x", model: "m"}) { id } }'),
    ];
    for (const w of await Promise.all(writes)) expect(w.status).toBe(403);
    const agents = (await viewer.call('/v1/agents')).body.data;
    expect(agents.map((a: { name: string }) => a.name)).toEqual(['acme-agent']);
    const del = await viewer.call(`/v1/agents/${agents[0].id}/archive`, { method: 'POST' });
    expect(del.status).toBe(403);
  });

  it('a member writes agents but not keys, cards or members; roles change at once', async () => {
    const alice = await consoleClient((await signInAs('alice', 'alice@acme.test')).cookie!);
    const bobId = (await alice.call('/v1/svc/console/members')).body.data.find(
      (m: { email: string }) => m.email === 'bob@acme.test',
    ).user_id;
    const bob = await consoleClient((await signInAs('bob', 'bob@acme.test')).cookie!);
    const promote = await alice.call(`/v1/svc/console/members/${bobId}`, {
      method: 'PATCH',
      json: { role: 'member' },
    });
    expect(promote.body).toMatchObject({ user_id: bobId, role: 'member' });
    // The same cookie now acts as a member.
    const created = await bob.call('/v1/agents', {
      method: 'POST',
      json: { name: 'bob-agent', model: 'claude-sonnet-4-5' },
    });
    expect(created.status).toBe(200);
    expect(
      (await bob.call('/v1/svc/api_keys', { method: 'POST', json: { name: 'k' } })).status,
    ).toBe(403);
    expect(
      (
        await bob.call(`/v1/svc/console/members/${bobId}`, {
          method: 'PATCH',
          json: { role: 'admin' },
        })
      ).status,
    ).toBe(403);
    const bad = await alice.call(`/v1/svc/console/members/${bobId}`, {
      method: 'PATCH',
      json: { role: 'owner' },
    });
    expect(bad.status).toBe(400);
    // The last admin stays.
    const aliceId = alice.me.body.user.id;
    const demote = await alice.call(`/v1/svc/console/members/${aliceId}`, {
      method: 'PATCH',
      json: { role: 'viewer' },
    });
    expect(demote.status).toBe(409);
    // Removed from the tenant: the cookie no longer resolves.
    await alice.call(`/v1/svc/console/members/${bobId}`, { method: 'DELETE' });
    expect((await bob.call('/v1/agents')).status).toBe(401);
  });

  it("another tenant's member sees nothing of the first, and cannot name it", async () => {
    const other = await operator.call('/v1/svc/tenants', {
      method: 'POST',
      json: { name: 'Other' },
    });
    await operator.call('/v1/svc/console/invitations', {
      method: 'POST',
      json: { tenant_id: other.body.tenant_id, email: 'dave@other.test', role: 'admin' },
    });
    const dave = await consoleClient((await signInAs('dave', 'dave@other.test')).cookie!);
    expect(dave.me.body.tenant.id).toBe(other.body.tenant_id);
    expect(dave.me.body.memberships).toHaveLength(1);
    expect((await dave.call('/v1/agents')).body.data).toEqual([]);
    const q = await dave.gql('{ agents { nodes { id name } } }');
    expect(JSON.stringify(q.body)).not.toContain('acme-agent');
    expect((await dave.call(`/v1/svc/console/members?tenant_id=${acme}`)).status).toBe(403);
    expect(
      (
        await dave.call('/v1/svc/console/switch_tenant', {
          method: 'POST',
          json: { tenant_id: acme },
        })
      ).status,
    ).toBe(404);
  });

  it('a replayed callback and a foreign state are refused', async () => {
    idp.accounts.set('alice', { email: 'alice@acme.test', name: 'alice' });
    const b = browser();
    const atCallback = await oidcSignIn(b, authorize(), 'alice', isCallback);
    const callback = atCallback.url;
    const pending = b.cookie(publicUrl, 'af_sign_in')!;
    expect(pending).toBeTruthy();
    // A foreign state: refused before the code is used.
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state');
    const refusedState = await b.go(forged.href);
    expect(refusedState.status).toBe(400);
    expect(refusedState.text).toContain('state');
    b.setCookie(publicUrl, 'af_sign_in', pending);
    const first = await b.go(callback);
    expect(first.status).toBe(200);
    expect(b.cookie(publicUrl, 'af_console')).toBeTruthy();
    // Replaying the very same callback with the very same sign-in cookie.
    b.setCookie(publicUrl, 'af_sign_in', pending);
    const replay = await b.go(callback);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('already completed');
    // A callback in a browser that never started the sign-in.
    const fresh = browser();
    const elsewhere = await fresh.go(callback);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.text).toContain('not started in this browser');
  });

  it('an ID token issued to another client (audience) is refused', async () => {
    idp.accounts.set('alice', { email: 'alice@acme.test', name: 'alice' });
    // A genuine ID token of this provider, issued to other-app for alice.
    const b = browser();
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const auth = new URL(`${idp.issuer}/auth`);
    auth.search = new URLSearchParams({
      client_id: 'other-app',
      response_type: 'code',
      scope: 'openid email',
      redirect_uri: idp.redirectUris[0]!,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
      nonce: 'n',
    }).toString();
    const atRedirect = await oidcSignIn(b, auth.href, 'alice', isCallback);
    const code = new URL(atRedirect.url).searchParams.get('code')!;
    const token = await b.go(`${idp.issuer}/token`, {
      form: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: idp.redirectUris[0]!,
        code_verifier: verifier,
        client_id: 'other-app',
        client_secret: 'other-app-secret-0123456789abcdef',
      },
    });
    const otherIdToken = JSON.parse(token.text).id_token as string;
    expect(otherIdToken).toBeTruthy();
    idp.swapIdToken = otherIdToken;
    try {
      const { page, cookie } = await signInAs('alice', 'alice@acme.test');
      expect(page.status).toBe(400);
      expect(page.text).toMatch(/aud|audience/);
      expect(cookie).toBeUndefined();
    } finally {
      idp.swapIdToken = null;
    }
  });

  it('the un-prefixed /v1/oauth form signs in the same way; sign out everywhere ends it', async () => {
    const b = browser();
    const page = await oidcSignIn(b, `${publicUrl}/v1/oauth/oidc/authorize`, 'alice');
    expect(page.status).toBe(200);
    const first = await consoleClient(b.cookie(publicUrl, 'af_console')!);
    const second = await consoleClient((await signInAs('alice', 'alice@acme.test')).cookie!);
    expect(first.me.body.user.id).toBe(second.me.body.user.id);
    await first.call('/v1/svc/console/sign_out_everywhere', { method: 'POST' });
    expect((await second.call('/v1/svc/console/me')).status).toBe(401);
    expect((await first.call('/v1/agents')).status).toBe(401);
  });

  it('an unknown provider is 404 naming it; a foreign return_to is ignored', async () => {
    const res = await t.http('/v1/svc/oauth/okta/authorize', { key: null, redirect: 'manual' });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('okta');
    const b = browser();
    const page = await oidcSignIn(
      b,
      `${authorize()}?return_to=${encodeURIComponent('https://evil.test/')}`,
      'alice',
    );
    expect(new URL(page.url).origin).toBe(publicUrl);
  });

  it('no secret in any answer or page', () => {
    const all = bodies.join('\n');
    for (const s of [idp.clientSecret, SESSION_SECRET, t.operatorKey, 'test-root-secret'])
      expect(all).not.toContain(s);
  });
});
