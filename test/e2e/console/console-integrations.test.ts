/**
 * The console's Integrations screen in a real browser (Debian chromium via playwright-core),
 * with the GitHub integration configured against the GitHub fixture
 * (test/kit/fixtures/githubIntegration.ts, https://127.0.0.1) and console sign-in through an
 * OpenID provider (test/kit/fixtures/oidcProvider.ts); both certificates are accepted by the
 * browser contexts and trusted by the platform through EGRESS_CA_CERTS (one PEM file of both):
 * - GitHub shows as configured with its webhook URL; Linear and Slack as not configured,
 *   naming their missing settings, with no Install button;
 * - Install sends the browser to the fixture's authorize URL (client id, the platform's
 *   callback as redirect_uri, a state); the fixture approves and redirects to the public
 *   origin (https://agents.example, rewritten here to the test platform, as
 *   test/kit/integrations.ts does), the callback records the installation and the screen
 *   lists it;
 * - a publication created through the form (agent and environment selects, workspace, the
 *   label trigger with its label) is listed and stored as entered; an API refusal (no trigger)
 *   is shown as an alert;
 * - a viewer (invited with the viewer role through the API by the operator, then signed in
 *   with "Sign in with Single sign-on" at a real OpenID provider, oidc-provider on
 *   https://127.0.0.1 as in console-oidc-browser.test.ts) sees the installs and publications
 *   and no Install, Uninstall, Delete or Publish control; their forged uninstall is a 403
 *   `forbidden` in the API error shape;
 * - Delete removes the publication; Uninstall (confirmed) deletes the installation at GitHub.
 * axe-core finds no serious or critical violation; the browser logs no error.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-integrations (docs/console.md).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { axeViolations, BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import {
  githubPlatformEnv,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../kit/fixtures/githubIntegration.js';
import { startOidcProvider, type OidcFixture } from '../../kit/fixtures/oidcProvider.js';
import { PUBLIC_URL } from '../../kit/integrations.js';
import { freePort } from '../../kit/process.js';

const shots = screenshotDir('console-integrations');
let t: TestPlatform;
let gh: GithubIntegrationFixture;
let idp: OidcFixture;
/** The platform's own origin (PUBLIC_URL, where sign-in callbacks return); integrations keep PUBLIC_URL. */
let origin: string;
let caDir: string;
let browser: Browser;
let agentId: string;
let envId: string;

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  gh = await startGithubIntegration();
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider([`${origin}/v1/svc/oauth/oidc/callback`]);
  caDir = mkdtempSync(join(tmpdir(), 'console-integrations-ca-'));
  const caFile = join(caDir, 'ca.pem');
  writeFileSync(caFile, readFileSync(gh.certFile, 'utf8') + readFileSync(idp.certFile, 'utf8'));
  const github = githubPlatformEnv(gh, PUBLIC_URL);
  t = await startPlatform({
    env: {
      ...github,
      PORT: String(port),
      PUBLIC_URL: origin,
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      EGRESS_ALLOW_PRIVATE_HOSTS: `${github.EGRESS_ALLOW_PRIVATE_HOSTS},${new URL(idp.issuer).host}`,
      EGRESS_CA_CERTS: caFile,
    },
  });
  expect(t.url).toBe(origin);
  envId = (await t.client.beta.environments.create({ name: 'integrations-env' })).id;
  agentId = (
    await t.client.beta.agents.create({ name: 'integrations-agent', model: 'claude-sonnet-4-5' })
  ).id;
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await gh?.close();
  await idp?.close();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

/** A page of a fresh context that accepts the fixture's certificate and logs the console's errors. */
async function watched(context: BrowserContext) {
  const callbacks: string[] = [];
  // The fixture redirects to the public origin, which is the test platform here. Playwright
  // routes no redirect, so the authorize request itself is fetched and its redirect rewritten.
  await context.route(`${gh.url}/login/oauth/authorize**`, async (r) => {
    const res = await r.fetch({ maxRedirects: 0 });
    const location = res.headers()['location'];
    if (res.status() !== 302 || !location?.startsWith(PUBLIC_URL))
      return r.fulfill({ response: res });
    callbacks.push(location);
    const u = new URL(location);
    return r.fulfill({ status: 302, headers: { location: `${t.url}${u.pathname}${u.search}` } });
  });
  // Nothing leaves 127.0.0.1 (the provider's pages would fetch web fonts).
  const offHost = /^https?:\/\/(?!127\.0\.0\.1[:/])/;
  await context.route(offHost, (r) => r.abort());
  const page = await context.newPage();
  const errors: string[] = [];
  // The console's errors, not the provider's pages' (their refused fonts).
  page.on('console', (m) => {
    const at = m.location().url;
    if (m.type() !== 'error' || /status of 401/.test(m.text())) return;
    if (!at.startsWith(idp.issuer) && !offHost.test(at)) errors.push(`${m.text()} (${at})`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  const navigations: string[] = [];
  page.on('request', (r) => r.isNavigationRequest() && navigations.push(r.url()));
  return { page, errors, navigations, callbacks };
}

const card = (page: Page, name: string) => page.getByRole('region', { name, exact: true });
const open = async (page: Page) => {
  await page.goto(`${t.url}/console/#/integrations`);
  await page.getByRole('heading', { level: 1, name: 'Integrations' }).waitFor();
  await card(page, 'GitHub')
    .getByText(/Configured|Not configured/)
    .waitFor();
};

/** The operator invites `email` to the default tenant with `role`, as the Members screen does. */
async function invite(email: string, role: 'admin' | 'member' | 'viewer') {
  const res = await t.http('/v1/svc/console/invitations', {
    method: 'POST',
    headers: BETA,
    json: { email, role },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Clicks the SSO button and goes through the provider's login and consent pages. */
async function ssoSignIn(page: Page, login: string) {
  await page.goto(`${origin}/console/`);
  await page.getByRole('link', { name: 'Sign in with Single sign-on' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

describe.skipIf(BROWSER_SKIP)('console integrations screen in chromium', () => {
  it('shows what is configured, installs GitHub by OAuth, publishes an agent; a viewer gets no control', async () => {
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 900 },
    });
    const { page, errors, navigations, callbacks } = await watched(context);
    await page.goto(`${t.url}/console/`);
    await page.getByLabel('API key').fill(t.operatorKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page
      .getByRole('navigation')
      .getByRole('link', { name: 'Integrations', exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Integrations' }).waitFor();

    const github = card(page, 'GitHub');
    await github.getByText('Configured.').waitFor();
    await github.getByText(`${PUBLIC_URL}/v1/svc/integrations/github/webhook`).waitFor();
    for (const [name, settings] of [
      ['Linear', 'LINEAR_CLIENT_ID, LINEAR_CLIENT_SECRET, LINEAR_WEBHOOK_SECRET'],
      ['Slack', 'SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_SIGNING_SECRET'],
    ] as const) {
      const c = card(page, name);
      await expect(c.textContent()).resolves.toMatch(`Not configured — set ${settings}`);
      expect(await c.getByRole('button', { name: `Install ${name}` }).count()).toBe(0);
      expect(await c.getByRole('form').count()).toBe(0);
    }
    await github.getByText('Not installed in this tenant.').waitFor();
    await github.getByText('No agent is published here.').waitFor();
    const found = await axeViolations(page);
    expect(found).toEqual([]);
    await shot(page, '01-integrations');

    // Install: the browser goes to the provider's authorize URL, then through the callback.
    await github.getByRole('button', { name: 'Install GitHub' }).click();
    await page.getByRole('heading', { name: 'Installed' }).waitFor();
    await page.getByText('github is installed for acme.').waitFor();
    const authorize = new URL(navigations.find((u) => u.startsWith(gh.url))!);
    expect(authorize.pathname).toBe('/login/oauth/authorize');
    expect(authorize.searchParams.get('client_id')).toBe(gh.clientId);
    expect(authorize.searchParams.get('redirect_uri')).toBe(
      `${PUBLIC_URL}/v1/svc/integrations/github/callback`,
    );
    expect(authorize.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(callbacks).toHaveLength(1);
    const callback = new URL(callbacks[0]!);
    expect(callback.pathname).toBe('/v1/svc/integrations/github/callback');
    expect(callback.searchParams.get('state')).toBe(authorize.searchParams.get('state'));

    await open(page);
    const installs = github.getByRole('list', { name: 'GitHub installs' });
    await installs.getByText('acme').waitFor();
    await expect(installs.textContent()).resolves.toContain('7001');

    // Publish: an API refusal is shown, then a publication with the label trigger.
    const form = github.getByRole('form', { name: 'Publish an agent to GitHub' });
    await form.getByRole('combobox', { name: /^Agent/ }).selectOption(agentId);
    await form.getByRole('combobox', { name: /^Environment/ }).selectOption(envId);
    await form.getByLabel(/^Owner/).fill('acme');
    await form.getByLabel('Mention').uncheck();
    await form.getByLabel('Assignment').uncheck();
    await form.getByRole('button', { name: 'Publish' }).click();
    await expect(form.getByRole('alert').textContent()).resolves.toMatch(/triggers/);
    await form.getByLabel(/^Repository/).fill('widgets');
    await form.getByLabel('Mention').check();
    expect(await form.getByLabel(/^Label name/).count()).toBe(0);
    await form.getByLabel('Label', { exact: true }).check();
    await form.getByLabel(/^Label name/).fill('agent');
    await form.getByLabel(/Open pull requests/).check();
    await form.getByRole('button', { name: 'Publish' }).click();
    const pubs = github.getByRole('list', { name: 'GitHub publications' });
    await pubs.getByRole('link', { name: 'integrations-agent' }).waitFor();
    await expect(pubs.textContent()).resolves.toMatch(
      /owner acme, repo widgets · on mention, label \(label “agent”\) · replies · opens pull requests/,
    );
    expect(await form.getByRole('alert').count()).toBe(0);
    const stored = (await (
      await t.http('/v1/svc/integrations/github/publications', { headers: BETA })
    ).json()) as { data: Array<Record<string, unknown>> };
    expect(stored.data).toEqual([
      expect.objectContaining({
        agent: { id: agentId, version: null },
        environment_id: envId,
        workspace: { owner: 'acme', repo: 'widgets' },
        triggers: ['mention', 'label'],
        label: 'agent',
        capabilities: ['reply', 'pull_request'],
      }),
    ]);
    const pubId = stored.data[0]!.id as string;
    expect(await axeViolations(page)).toEqual([]);
    await shot(page, '02-installed-and-published');

    // A viewer reads everything and is offered no write; the server refuses one anyway.
    await invite('viewer@integrations.test', 'viewer');
    idp.accounts.set('vera', { email: 'viewer@integrations.test', name: 'Vera Viewer' });
    const viewerContext = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 900 },
    });
    const viewer = await watched(viewerContext);
    await ssoSignIn(viewer.page, 'vera');
    // The session is the provider's sign-in: authorize at the issuer, back through the callback.
    expect(viewer.navigations.some((u) => u.startsWith(`${idp.issuer}/auth`))).toBe(true);
    expect(
      viewer.navigations.some((u) => u.startsWith(`${origin}/v1/svc/oauth/oidc/callback?`)),
    ).toBe(true);
    expect((await viewerContext.cookies(origin)).map((c) => c.name)).toContain('af_console');
    await open(viewer.page);
    await viewer.page.getByText('viewer@integrations.test').first().waitFor();
    const vGithub = card(viewer.page, 'GitHub');
    await vGithub.getByRole('list', { name: 'GitHub installs' }).getByText('acme').waitFor();
    await vGithub.getByRole('link', { name: 'integrations-agent' }).waitFor();
    expect(await viewer.page.locator('main').getByRole('button').count()).toBe(0);
    expect(await viewer.page.locator('main form').count()).toBe(0);
    const forged = await viewer.page.evaluate(async (beta) => {
      const me = (await (await fetch('/v1/svc/console/me')).json()) as {
        user: { email: string; name: string } | null;
        role: string;
        csrf_token: string;
      };
      const res = await fetch('/v1/svc/integrations/github/uninstall', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...beta,
          'x-csrf-token': me.csrf_token,
        },
        body: '{}',
      });
      return { user: me.user, role: me.role, status: res.status, body: await res.json() };
    }, BETA);
    expect(forged).toMatchObject({
      user: { email: 'viewer@integrations.test', name: 'Vera Viewer' },
      role: 'viewer',
      status: 403,
      body: {
        type: 'error',
        error: { type: 'forbidden', message: 'the viewer role makes no changes' },
        request_id: expect.any(String),
      },
    });
    await shot(viewer.page, '03-viewer');
    expect(viewer.errors.filter((e) => !/status of 403/.test(e))).toEqual([]);
    await viewerContext.close();

    // Delete the publication; uninstall after confirming.
    await github.getByRole('button', { name: `Delete publication ${pubId}` }).click();
    await github.getByText('No agent is published here.').waitFor();
    page.once('dialog', (d) => {
      expect(d.message()).toBe('Uninstall GitHub from acme?');
      void d.accept();
    });
    await github.getByRole('button', { name: 'Uninstall GitHub from acme' }).click();
    await github.getByText('Not installed in this tenant.').waitFor();
    expect(gh.deletedInstallations).toEqual([7001]);
    await shot(page, '04-uninstalled');

    expect(errors.filter((e) => !/status of 400/.test(e) || !/publications/.test(e))).toEqual([]);
    await context.close();
  }, 90_000);
});
