/**
 * The console's identity-provider sign-in in a real browser (Debian chromium via
 * playwright-core) against a real OpenID provider (oidc-provider on https://127.0.0.1; the
 * browser context accepts its self-signed certificate, the platform trusts it through
 * EGRESS_CA_CERTS): the operator's key sign-in invites the first admin on the Members screen;
 * the admin clicks "Sign in with Single sign-on", signs in at the provider's own login and
 * consent pages and lands on the dashboard; a stranger gets the "not a member" page; sign out,
 * and the old cookie is refused. A member of two tenants switches tenant in the header and sees
 * only that tenant's agents. No browser console error; nothing in browser storage.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-oidc-browser (docs/console.md).
 */
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { freePort } from '../../kit/process.js';
import { BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import { startOidcProvider, type OidcFixture } from '../../kit/fixtures/oidcProvider.js';

const shots = screenshotDir('console-oidc-browser');
let t: TestPlatform;
let idp: OidcFixture;
let browser: Browser;
let publicUrl: string;

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider([`${publicUrl}/v1/svc/oauth/oidc/callback`]);
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(idp.issuer).host,
      EGRESS_CA_CERTS: idp.certFile,
    },
  });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await idp?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`) });

async function watched(context: BrowserContext) {
  // Nothing leaves 127.0.0.1 (the provider's pages would fetch web fonts).
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (r) => r.abort());
  const page = await context.newPage();
  const errors: string[] = [];
  // The console's own errors (the provider's pages load fonts from the internet, unreachable here).
  page.on(
    'console',
    (m) =>
      m.type() === 'error' &&
      m.location().url.startsWith(publicUrl) &&
      errors.push(`${m.text()} (${m.location().url})`),
  );
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

/** Clicks the SSO button and goes through the provider's login and consent pages. */
async function ssoSignIn(page: Page, login: string) {
  await page.goto(`${publicUrl}/console/`);
  await page.getByRole('link', { name: 'Sign in with Single sign-on' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

describe.skipIf(BROWSER_SKIP)('console identity-provider sign-in in chromium', () => {
  it('the operator invites the first admin, who signs in at the IdP; a stranger is refused; sign out ends the cookie', async () => {
    const operatorContext = await browser.newContext();
    const op = await watched(operatorContext);
    await op.page.goto(`${publicUrl}/console/`);
    await op.page.getByLabel('API key').fill(t.operatorKey);
    await op.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await op.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await op.page.goto(`${publicUrl}/console/#/members`);
    await op.page.getByRole('heading', { name: 'Members' }).waitFor();
    const invite = op.page.getByRole('button', { name: 'Invite someone' });
    if (await invite.isVisible()) await invite.click();
    await op.page.getByLabel('Email', { exact: true }).fill('alice@acme.test');
    await op.page.locator('select[name="role"]').selectOption('admin');
    await op.page.getByRole('button', { name: 'Send invitation' }).click();
    await op.page.getByLabel('Invitations').getByText('alice@acme.test').waitFor();
    await shot(op.page, '01-operator-invites');
    expect(op.errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await operatorContext.close();

    idp.accounts.set('alice', { email: 'alice@acme.test', name: 'Alice Admin' });
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const { page, errors } = await watched(context);
    await page.goto(`${publicUrl}/console/`);
    await page.getByRole('heading', { name: 'Sign in to agentfleet' }).waitFor();
    await shot(page, '02-sign-in-with-sso');
    await ssoSignIn(page, 'alice');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByText('alice@acme.test').first().waitFor();
    await shot(page, '03-signed-in-through-idp');
    const cookies = await context.cookies(publicUrl);
    const consoleCookie = cookies.find((c) => c.name === 'af_console')!;
    expect(consoleCookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(cookies.find((c) => c.name === 'af_sign_in')).toBeUndefined();
    const storage = await page.evaluate(() =>
      JSON.stringify({ ...localStorage, ...sessionStorage }),
    );
    expect(storage).toBe('{}');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to agentfleet' }).waitFor();
    const after = await fetch(`${publicUrl}/v1/svc/console/me`, {
      headers: { cookie: `af_console=${consoleCookie.value}` },
    });
    expect(after.status).toBe(401);
    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await context.close();

    idp.accounts.set('mallory', { email: 'mallory@evil.test', name: 'Mallory' });
    const strangerContext = await browser.newContext({ ignoreHTTPSErrors: true });
    const { page: stranger } = await watched(strangerContext);
    await ssoSignIn(stranger, 'mallory');
    await stranger.getByRole('heading', { name: 'Not a member' }).waitFor();
    expect(await stranger.textContent('body')).toContain('mallory@evil.test');
    await shot(stranger, '04-not-a-member');
    expect((await strangerContext.cookies(publicUrl)).map((c) => c.name)).not.toContain(
      'af_console',
    );
    await strangerContext.close();
  }, 90_000);

  it('a member of two tenants switches tenant in the header and sees only that tenant', async () => {
    const acme = await t.newTenant('Acme');
    await acme.client.beta.agents.create({ name: 'acme-only-agent', model: 'claude-sonnet-4-5' });
    await t.client.beta.agents.create({ name: 'default-only-agent', model: 'claude-sonnet-4-5' });
    for (const [key, role] of [
      [t.operatorKey, 'viewer'],
      [acme.apiKey, 'member'],
    ] as const) {
      const res = await t.http('/v1/svc/console/invitations', {
        method: 'POST',
        key,
        headers: BETA,
        json: { email: 'carol@two.test', role },
      });
      expect(res.status).toBe(200);
    }
    idp.accounts.set('carol', { email: 'carol@two.test', name: 'Carol' });
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const { page, errors } = await watched(context);
    await ssoSignIn(page, 'carol');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    const tenant = page.getByLabel('Tenant');
    expect(await tenant.locator('option').allTextContents()).toEqual(
      expect.arrayContaining(['Acme (member)', 'default (viewer)']),
    );
    const now = await tenant.inputValue();
    const target = now === acme.tenantId ? 'tnt_default' : acme.tenantId;
    await tenant.selectOption(target);
    await page
      .getByText(target === acme.tenantId ? 'Acme (member)' : 'default (viewer)')
      .first()
      .waitFor();
    await page.goto(`${publicUrl}/console/#/agents`);
    const expected = target === acme.tenantId ? 'acme-only-agent' : 'default-only-agent';
    const other = target === acme.tenantId ? 'default-only-agent' : 'acme-only-agent';
    await page.getByText(expected).first().waitFor();
    expect(await page.getByText(other).count()).toBe(0);
    await shot(page, '05-switched-tenant');

    // As the viewer of default: the screens offer no write, and the server refuses one anyway.
    if (target !== 'tnt_default') {
      await page.getByLabel('Tenant').selectOption('tnt_default');
      await page.getByText('default (viewer)').first().waitFor();
    }
    for (const [hash, heading, button] of [
      ['/vaults', 'Vaults', 'Create vault'],
      ['/api_keys', 'API keys', 'Create API key'],
      ['/model_cards', 'Model cards', 'Create model card'],
      ['/memory_stores', 'Memory stores', 'Create memory store'],
      ['/agents', 'Agents', 'Create agent'],
    ] as const) {
      await page.goto(`${publicUrl}/console/#${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await page.locator('ul.rows, p.empty').first().waitFor();
      expect(await page.getByRole('button', { name: button }).count(), hash).toBe(0);
    }
    const forged = await page.evaluate(async () => {
      const me = (await (await fetch('/v1/svc/console/me')).json()) as {
        role: string;
        csrf_token: string;
      };
      const res = await fetch('/v1/vaults', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf_token },
        body: JSON.stringify({ display_name: 'from-a-viewer' }),
      });
      return { role: me.role, status: res.status, body: await res.json() };
    });
    expect(forged).toMatchObject({
      role: 'viewer',
      status: 403,
      body: { error: { type: 'forbidden' } },
    });
    await shot(page, '06-viewer');
    expect(errors.filter((e) => !/status of 40[13]/.test(e))).toEqual([]);
    await context.close();
  }, 60_000);
});
