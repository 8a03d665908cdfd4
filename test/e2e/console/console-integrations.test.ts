/**
 * The console's Integrations screen in a real browser (Debian chromium via playwright-core),
 * with the GitHub integration configured against the GitHub fixture
 * (test/kit/fixtures/githubIntegration.ts, https://127.0.0.1, its certificate accepted by the
 * browser context and trusted by the platform through EGRESS_CA_CERTS):
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
 * - a viewer (a console user admitted through an invitation; the cookie made by the platform's
 *   own console service, no identity provider) sees the installs and publications and no
 *   Install, Uninstall, Delete or Publish control; their forged uninstall is a 403;
 * - Delete removes the publication; Uninstall (confirmed) deletes the installation at GitHub.
 * axe-core finds no serious or critical violation; the browser logs no error.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-integrations (docs/console.md).
 */
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
import { PUBLIC_URL } from '../../kit/integrations.js';

const shots = screenshotDir('console-integrations');
let t: TestPlatform;
let gh: GithubIntegrationFixture;
let browser: Browser;
let agentId: string;
let envId: string;

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  gh = await startGithubIntegration();
  t = await startPlatform({
    env: {
      ...githubPlatformEnv(gh, PUBLIC_URL),
    },
  });
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
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text()))
      errors.push(`${m.text()} (${m.location().url})`);
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

/** A console session of a viewer of the default tenant (invited, then admitted as a user). */
async function viewerCookie(): Promise<string> {
  const inv = await t.http('/v1/svc/console/invitations', {
    method: 'POST',
    headers: BETA,
    json: { email: 'viewer@integrations.test', role: 'viewer' },
  });
  expect(inv.status).toBe(200);
  const p = t.server.platform;
  const admitted = await p.members.admit({
    provider: 'oidc',
    issuer: 'https://idp.integrations.test',
    subject: 'viewer-1',
    email: 'viewer@integrations.test',
    emailVerified: true,
    name: 'Vera Viewer',
  });
  expect(admitted?.memberships.map((m) => m.role)).toEqual(['viewer']);
  const session = await p.console!.signInUser(admitted!.user, admitted!.memberships);
  return p.console!.cookieValue(session);
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
    await form.getByRole('button', { name: 'Publish' }).click();
    const pubs = github.getByRole('list', { name: 'GitHub publications' });
    await pubs.getByRole('link', { name: 'integrations-agent' }).waitFor();
    await expect(pubs.textContent()).resolves.toMatch(
      /owner acme, repo widgets · on mention, label \(label “agent”\) · replies/,
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
        capabilities: ['reply'],
      }),
    ]);
    const pubId = stored.data[0]!.id as string;
    expect(await axeViolations(page)).toEqual([]);
    await shot(page, '02-installed-and-published');

    // A viewer reads everything and is offered no write; the server refuses one anyway.
    const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await viewerContext.addCookies([
      { name: 'af_console', value: await viewerCookie(), url: t.url },
    ]);
    const viewer = await watched(viewerContext);
    await open(viewer.page);
    await viewer.page.getByText('viewer@integrations.test').first().waitFor();
    const vGithub = card(viewer.page, 'GitHub');
    await vGithub.getByRole('list', { name: 'GitHub installs' }).getByText('acme').waitFor();
    await vGithub.getByRole('link', { name: 'integrations-agent' }).waitFor();
    expect(await viewer.page.locator('main').getByRole('button').count()).toBe(0);
    expect(await viewer.page.locator('main form').count()).toBe(0);
    const forged = await viewer.page.evaluate(async (beta) => {
      const me = (await (await fetch('/v1/svc/console/me')).json()) as { csrf_token: string };
      const res = await fetch('/v1/svc/integrations/github/uninstall', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...beta,
          'x-csrf-token': me.csrf_token,
        },
        body: '{}',
      });
      return res.status;
    }, BETA);
    expect(forged).toBe(403);
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
