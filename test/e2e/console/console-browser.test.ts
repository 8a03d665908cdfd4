/**
 * The console in a real browser (Debian chromium via playwright-core): sign in with the
 * operator key, create an environment and an agent, start a session, send a message and see
 * the scripted model's answer arrive live in the timeline, sign out. No console errors, the
 * CSP header on /console, and no key in localStorage/sessionStorage.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-browser (docs/console.md).
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';

const MODEL = 'console-browser-model';
const shots = screenshotDir('console-browser');
let t: TestPlatform;
let browser: Browser;

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  t = await startPlatform();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`) });

describe.skipIf(BROWSER_SKIP)('console in chromium', () => {
  it('the CSP header is strict on /console', async () => {
    const res = await fetch(`${t.url}/console/`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
  });

  it('signs in, creates an environment, an agent and a session, chats live, signs out', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));

    await page.goto(`${t.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in to agentfleet' }).waitFor();
    await shot(page, '01-sign-in');
    await page.getByLabel('API key').fill(t.operatorKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await shot(page, '02-dashboard');

    await page.getByRole('link', { name: 'Environments' }).click();
    await page.getByLabel('Name').fill('browser-env');
    await page.getByRole('button', { name: 'Create environment' }).click();
    await page.getByText(/browser-env \(/).waitFor();
    const envId = /\((.+)\)/.exec((await page.getByText(/browser-env \(/).textContent())!)![1]!;
    await shot(page, '03-environments');

    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByLabel('Name').fill('browser-agent');
    await page.getByLabel('Model').fill(MODEL);
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByText(/browser-agent \(/).waitFor();
    const agentId = /\((.+)\)/.exec((await page.getByText(/browser-agent \(/).textContent())!)![1]!;
    await shot(page, '04-agents');

    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByLabel('Agent id', { exact: true }).fill(agentId);
    await page.getByLabel('Environment id', { exact: true }).fill(envId);
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.locator('main a[href^="#/sessions/"]').first().click();
    await page.getByText('No events yet.').or(page.getByLabel('Timeline')).waitFor();

    t.model.script(MODEL, { steps: [{ text: 'hello from the scripted model' }] });
    await page.getByLabel('Message').fill('hi console');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('hello from the scripted model').waitFor({ timeout: 30_000 });
    await shot(page, '05-session');

    const storage = await page.evaluate(() =>
      JSON.stringify({ ...localStorage, ...sessionStorage }),
    );
    expect(storage).not.toContain(t.operatorKey);
    expect(storage).toBe('{}');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to agentfleet' }).waitFor();
    await shot(page, '06-signed-out');
    // The signed-out /me probe answers 401 (logged by chromium as a failed resource); nothing else.
    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  }, 90_000);

  it('the dashboard shows counts and session errors; the session list filters as the SDK does', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'dash-browser-env' });
    const a = await c.beta.agents.create({ name: 'dash-a', model: 'dash-browser-model' });
    const b = await c.beta.agents.create({ name: 'dash-b', model: 'dash-browser-model' });
    const sa = await c.beta.sessions.create({
      agent: a.id,
      environment_id: env.id,
      title: 'of agent a',
    });
    await c.beta.sessions.create({ agent: b.id, environment_id: env.id, title: 'of agent b' });
    t.model.script('dash-browser-model', {
      steps: [
        { http_error: { status: 400, type: 'invalid_request_error', message: 'scripted refusal' } },
      ],
    });
    await c.beta.sessions.events.send(sa.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'fail please' }] }],
    });
    for (let i = 0; i < 100; i++) {
      const ev = await c.beta.sessions.events.list(sa.id);
      if (ev.data.some((e) => e.type === 'session.status_idle')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${t.url}/console/`);
    await page.getByLabel('API key').fill(t.operatorKey);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    const errorsList = page.getByLabel('Recent errors');
    await errorsList.getByText('scripted refusal').waitFor();
    expect(await errorsList.textContent()).toContain('model_request_failed_error');
    expect(await page.getByLabel('Counts').textContent()).toMatch(/Sessions: \d+/);
    await shot(page, '07-dashboard-errors');

    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByLabel('Agent id filter').fill(a.id);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('of agent a').waitFor();
    expect(await page.getByText('of agent b').count()).toBe(0);
    await page.getByLabel('Status filter').selectOption('TERMINATED');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('Nothing here yet.').waitFor();
    await shot(page, '08-sessions-filtered');
    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  }, 60_000);
});
