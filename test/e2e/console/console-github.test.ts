/**
 * Console sign-in with GitHub's OAuth app flow (core/src/console/identity.ts) against a fixture
 * speaking GitHub's documented protocol on https://127.0.0.1 (test/kit/fixtures/githubOAuth.ts),
 * GITHUB_WEB_URL / GITHUB_API_URL pointing at it as on GitHub Enterprise Server: PKCE and the
 * client secret reach the token endpoint; the identity is the user's numeric id; only a primary
 * verified email admits; a provider on a private address is refused unless the operator lists
 * it in EGRESS_ALLOW_PRIVATE_HOSTS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { freePort } from '../../kit/process.js';
import { startGithubOAuth, type GithubFixture } from '../../kit/fixtures/githubOAuth.js';
import { SignInBrowser } from '../../kit/signInBrowser.js';

let gh: GithubFixture;
let t: TestPlatform;
let closed: TestPlatform;
let publicUrl: string;
let closedUrl: string;
const browsers: SignInBrowser[] = [];

async function platform(allow: boolean): Promise<{ t: TestPlatform; url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const p = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      PORT: String(port),
      PUBLIC_URL: url,
      GITHUB_OAUTH_CLIENT_ID: gh.clientId,
      GITHUB_OAUTH_CLIENT_SECRET: gh.clientSecret,
      GITHUB_WEB_URL: gh.url,
      GITHUB_API_URL: gh.apiUrl,
      EGRESS_CA_CERTS: gh.certFile,
      ...(allow ? { EGRESS_ALLOW_PRIVATE_HOSTS: new URL(gh.url).host } : {}),
    },
  });
  return { t: p, url };
}

beforeAll(async () => {
  gh = await startGithubOAuth();
  ({ t, url: publicUrl } = await platform(true));
  ({ t: closed, url: closedUrl } = await platform(false));
}, 60_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await t?.close();
  await closed?.close();
  await gh?.close();
});

function signIn(base: string) {
  const b = new SignInBrowser(gh.certFile);
  browsers.push(b);
  return b.go(`${base}/v1/svc/oauth/github/authorize`).then((page) => ({ b, page }));
}

describe('console sign-in with GitHub', () => {
  it('an invited GitHub user signs in; PKCE and the client secret reach the token endpoint', async () => {
    const config = (await (await t.http('/v1/svc/console/config', { key: null })).json()) as {
      providers: unknown[];
    };
    expect(config.providers).toEqual([
      { id: 'github', name: 'GitHub', authorize_url: '/v1/svc/oauth/github/authorize' },
    ]);
    const inv = await t.http('/v1/svc/console/invitations', {
      method: 'POST',
      headers: BETA,
      json: { email: 'octo@corp.test', role: 'member' },
    });
    expect(inv.status).toBe(200);
    gh.user = {
      id: 583231,
      login: 'octocat',
      name: 'The Octocat',
      emails: [
        { email: 'octo@other.test', primary: false, verified: true },
        { email: 'Octo@Corp.test', primary: true, verified: true },
      ],
    };
    const { b, page } = await signIn(publicUrl);
    expect(page.status).toBe(200);
    expect(new URL(page.url).pathname).toBe('/console/');
    const toGithub = new URL(page.hops[0]!.location!);
    expect(toGithub.origin).toBe(gh.url);
    expect(toGithub.searchParams.get('code_challenge_method')).toBe('S256');
    expect(toGithub.searchParams.get('scope')).toBe('read:user user:email');
    const form = gh.tokenRequests.at(-1)!;
    expect(form.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(form.client_secret).toBe(gh.clientSecret);
    const cookie = b.cookie(publicUrl, 'af_console')!;
    const me = await t.http('/v1/svc/console/me', {
      key: null,
      headers: { cookie: `af_console=${cookie}` },
    });
    const body = (await me.json()) as { user: { id: string } };
    expect(body).toMatchObject({
      user: { email: 'octo@corp.test', name: 'The Octocat' },
      tenant: { id: 'tnt_default' },
      role: 'member',
    });
    expect(JSON.stringify(body)).not.toContain(gh.clientSecret);
    // The identity is GitHub's numeric id at GITHUB_WEB_URL.
    const user = await t.server.platform.collections.consoleUsers.findOne({ _id: body.user.id });
    expect(user).toMatchObject({ issuer: gh.url, subject: '583231' });
  });

  it('an unverified primary email admits to nothing, even when invited', async () => {
    await t.http('/v1/svc/console/invitations', {
      method: 'POST',
      headers: BETA,
      json: { email: 'new@corp.test', role: 'viewer' },
    });
    gh.user = {
      id: 99,
      login: 'newbie',
      name: null,
      emails: [{ email: 'new@corp.test', primary: true, verified: false }],
    };
    const { b, page } = await signIn(publicUrl);
    expect(page.status).toBe(403);
    expect(page.text).toContain('Not a member');
    expect(page.text).toContain('newbie');
    expect(b.cookie(publicUrl, 'af_console')).toBeUndefined();
  });

  it('a provider on a private address is refused without EGRESS_ALLOW_PRIVATE_HOSTS', async () => {
    gh.user = {
      id: 583231,
      login: 'octocat',
      name: 'The Octocat',
      emails: [{ email: 'octo@corp.test', primary: true, verified: true }],
    };
    const before = gh.tokenRequests.length;
    const { page } = await signIn(closedUrl);
    expect(page.status).toBe(400);
    expect(page.text).toContain('private addresses are not allowed');
    expect(page.text).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
    expect(gh.tokenRequests.length).toBe(before);
  });
});
