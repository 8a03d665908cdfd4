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
    await page.getByLabel('Agent id').fill(agentId);
    await page.getByLabel('Environment id').fill(envId);
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
});
