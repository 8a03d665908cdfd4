/**
 * Every console screen in a real browser (Debian chromium via playwright-core), on real data:
 * fixtures are created through REST with the operator key, then the console (signed in with
 * the same key) must show them. Per screen: its content, a screenshot at 1280 px, and axe-core
 * with no serious or critical violation; two screens again at 375 px with no horizontal scroll.
 * Writes through the console: an agent edit (a new version), a credential added and rotated, a
 * model card's key rotated, an API key created (its value shown once) and revoked, a skill zip
 * uploaded, a memory edited, a deployment run, a webhook endpoint created, a tenant created.
 * No secret given to the platform ever appears in the page, and the browser logs no error but
 * the expected ones (signed-out 401 probes, the missing vault's 404). A real viewer and the
 * tenant switcher are driven in console-oidc-browser.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-screens.
 */
import { join } from 'node:path';
import { strToU8, zipSync } from 'fflate';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  axeViolations,
  BROWSER_SKIP,
  launchBrowser,
  screenshotDir,
  type AxeFinding,
} from '../../kit/browser.js';

const shots = screenshotDir('console-screens');
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

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

/** Secrets handed to the platform; none may ever be rendered. */
const SECRETS = {
  credential: 'sk-credential-secret-3141',
  rotated: 'sk-credential-rotated-2718',
  card: 'sk-card-secret-9876',
  cardRotated: 'sk-card-rotated-5555',
  added: 'sk-added-credential-1618',
};

async function post<T = { id: string }>(path: string, json: unknown): Promise<T> {
  const res = await t.http(path, { method: 'POST', json, headers: BETA });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The fixtures, through REST with the operator key (the tenant the console signs in to). */
async function fixtures() {
  const env = await post('/v1/environments', { name: 'screens-env' });
  // 21 environments: the GraphQL-backed list shows 20, then "Load more".
  for (let i = 0; i < 20; i++) await post('/v1/environments', { name: `bulk-env-${i}` });
  const agent = await post<{ id: string; version: number }>('/v1/agents', {
    name: 'screens-agent',
    model: 'claude-sonnet-4-5',
  });
  await post(`/v1/agents/${agent.id}`, { version: 1, system: 'first system prompt' });
  await post(`/v1/agents/${agent.id}`, { version: 2, description: 'an agent for the screens' });
  const vault = await post('/v1/vaults', { display_name: 'screens-vault' });
  await post(`/v1/vaults/${vault.id}/credentials`, {
    display_name: 'screens-credential',
    auth: {
      type: 'static_bearer',
      token: SECRETS.credential,
      mcp_server_url: 'https://mcp.screens.test/',
    },
  });
  // More vaults than one page (20): the first vault is reached through "Load more".
  for (let i = 0; i < 21; i++) await post('/v1/vaults', { display_name: `bulk-vault-${i}` });
  await post('/v1/svc/model_cards', {
    model_id: 'screens-card',
    provider: 'anthropic',
    model: 'screens-wire-model',
    base_url: t.model.url,
    api_key: SECRETS.card,
  });
  await post('/v1/svc/api_keys', { name: 'screens-key' });
  const skill = await post('/v1/skills', {
    files: [
      {
        filename: 'SKILL.md',
        content: '---\nname: screens-skill\ndescription: a skill for the screens\n---\nHello',
      },
    ],
  });
  const store = await post('/v1/memory_stores', {
    name: 'screens-store',
    description: 'memories for the screens',
  });
  await post(`/v1/memory_stores/${store.id}/memories`, {
    path: '/notes/screens.md',
    content: 'remember the screens',
  });
  const deployment = await post('/v1/deployments', {
    name: 'screens-deployment',
    agent: agent.id,
    environment_id: env.id,
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
  });
  await post(`/v1/deployments/${deployment.id}/run`, {});
  await post('/v1/svc/webhook_endpoints', { url: 'https://hooks.example.com/screens' });
  const form = new FormData();
  form.set('file', new Blob(['hello screens']), 'screens.txt');
  const file = await t.http('/v1/files', { method: 'POST', body: form });
  expect(file.status).toBe(200);
  return { agent, vault, skill, store, deployment };
}

describe.skipIf(BROWSER_SKIP)('console screens in chromium', () => {
  it('shows every screen with real data, accessibly, and at phone width', async () => {
    const f = await fixtures();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const url = m.location().url;
      // Signed-out /me probes answer 401.
      if (/status of 401/.test(m.text())) return;
      if (/status of 404/.test(m.text()) && url.includes('/v1/vaults/vlt_missing')) return;
      errors.push(`${m.text()} ${url}`);
    });
    page.on('pageerror', (e) => errors.push(e.message));
    const findings: Record<string, AxeFinding[]> = {};
    const main = page.locator('main');

    /** Checks the screen as it stands: axe, no secret in the page, a screenshot. */
    const check = async (name: string) => {
      const found = await axeViolations(page);
      if (found.length) findings[name] = found;
      const html = await page.content();
      for (const s of Object.values(SECRETS))
        expect(html, `${name} renders a secret`).not.toContain(s);
      await shot(page, name);
    };
    /** Clicks "Load more" until `target` is on the page. */
    const loadUntil = async (target: ReturnType<Page['locator']>) => {
      const more = page.getByRole('button', { name: 'Load more' });
      for (;;) {
        await target.or(more).first().waitFor();
        if (await target.count()) return;
        await more.click();
      }
    };
    const visit = async (hash: string, heading: string | RegExp) => {
      await page.goto(`${t.url}/console/#${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    };

    await page.goto(`${t.url}/console/`);
    await page.getByLabel('API key').fill(t.operatorKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await check('01-dashboard');

    // Environments (GraphQL connection): 20, then the 21st behind "Load more".
    await visit('/environments', 'Environments');
    const envs = main.getByRole('listitem');
    await expect.poll(() => envs.count()).toBe(20);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => envs.count()).toBe(21);
    await main.getByText(/^screens-env \(/).waitFor();
    await check('02-environments');

    // Agents list → agent detail: versions, diff, edit (a new version) and the API request.
    await page.getByRole('navigation').getByRole('link', { name: 'Agents', exact: true }).click();
    await page.getByRole('link', { name: 'screens-agent' }).click();
    await page.getByRole('heading', { name: 'Agent screens-agent' }).waitFor();
    const versions = page.getByRole('list', { name: 'Versions' });
    await versions.getByText('v3').waitFor();
    await expect(versions.getByRole('listitem').count()).resolves.toBe(3);
    const diff = page.getByLabel('Version diff');
    await expect(diff.textContent()).resolves.toContain(
      '+   "description": "an agent for the screens"',
    );
    await page.getByLabel('From version').selectOption('1');
    await expect(diff.textContent()).resolves.toContain('+   "system": "first system prompt"');
    const json = page.getByLabel('Agent JSON');
    const edited = JSON.parse(await json.inputValue()) as Record<string, unknown>;
    edited.system = 'edited in the console';
    await json.fill(JSON.stringify(edited, null, 2));
    const request = page.getByLabel('Equivalent API request');
    await expect(request.textContent()).resolves.toContain(`/v1/agents/${f.agent.id}`);
    await expect(request.textContent()).resolves.toContain('"version": 3');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await versions.getByText('v4').waitFor();
    await check('03-agent-detail');

    // Vaults: paged (22 vaults), the first one behind "Load more"; credentials; add; rotate.
    await visit('/vaults', 'Vaults');
    await page.getByRole('link', { name: 'bulk-vault-20' }).waitFor();
    await expect(page.getByRole('link', { name: 'screens-vault' }).count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByRole('link', { name: 'screens-vault' }).click();
    await page.getByRole('heading', { name: 'Vault screens-vault' }).waitFor();
    await main.getByText('https://mcp.screens.test/').waitFor();
    await page.getByRole('button', { name: 'Rotate screens-credential' }).click();
    await page.getByLabel('New secret for screens-credential').fill(SECRETS.rotated);
    await page.getByRole('button', { name: 'Save new secret' }).click();
    await main.getByText(/Rotated /).waitFor();
    const add = page.getByRole('form', { name: 'Add credential' });
    await add.getByLabel('Kind').selectOption('environment_variable');
    await add.getByLabel('Display name').fill('screens-env-var');
    await add.getByLabel('Variable name').fill('SCREENS_TOKEN');
    await add.getByLabel('Secret').fill(SECRETS.added);
    await add.getByRole('button', { name: 'Add credential' }).click();
    await main.getByText('$SCREENS_TOKEN').waitFor();
    await check('04-vault-detail');
    await visit('/vaults', 'Vaults');
    await check('05-vaults');

    // Model cards: the key only as its last four; rotate.
    await visit('/model_cards', 'Model cards');
    await main.getByText('…9876').waitFor();
    await page.getByRole('button', { name: 'Rotate key of screens-card' }).click();
    await page.getByLabel('New provider key for screens-card').fill(SECRETS.cardRotated);
    await page.getByRole('button', { name: 'Save new key' }).click();
    await main.getByText('…5555').waitFor();
    await check('06-model-cards');

    // API keys: create (the value once), revoke.
    await visit('/api_keys', 'API keys');
    await main.getByText('screens-key').waitFor();
    await page.getByLabel('Key name').fill('browser-key');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const once = page.getByRole('region', { name: 'New API key browser-key' });
    const value = (await once.locator('code.secret').textContent())!;
    expect(value).toMatch(/^afk_/);
    const probe = await t.http('/v1/agents', { key: value });
    expect(probe.status).toBe(200);
    await check('07-api-key-created');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect(page.content()).resolves.not.toContain(value);
    await page.getByRole('button', { name: 'Revoke screens-key' }).click();
    await main.getByText('screens-key').waitFor({ state: 'detached' });
    await check('08-api-keys');

    // Skills: list (vendor and custom), upload a zip with progress, versions and files.
    await visit('/skills', 'Skills');
    await loadUntil(page.getByRole('link', { name: 'screens-skill' }));
    const zip = zipSync({
      'zipped-skill/SKILL.md': strToU8(
        '---\nname: zipped-skill\ndescription: uploaded as a zip\n---\nZipped',
      ),
      'zipped-skill/notes.txt': strToU8('notes'),
    });
    await page.getByLabel('Zip file').setInputFiles({
      name: 'zipped-skill.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zip),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await main.getByText(/Uploaded zipped-skill: version/).waitFor();
    await check('09-skills');
    await visit(`/skills/${f.skill.id}`, 'Skill screens-skill');
    await page.getByRole('link', { name: 'SKILL.md' }).waitFor();
    const fileHref = await page.getByRole('link', { name: 'SKILL.md' }).getAttribute('href');
    const download = await page.evaluate(async (h) => (await fetch(h!)).text(), fileHref);
    expect(download).toContain('name: screens-skill');
    await check('10-skill-detail');

    // Memory stores: browse, open a memory, edit it, its versions.
    await visit('/memory_stores', 'Memory stores');
    await page.getByRole('link', { name: 'screens-store' }).click();
    await page.getByRole('heading', { name: 'Memory store screens-store' }).waitFor();
    await page.getByRole('button', { name: '/notes/screens.md' }).click();
    const content = page.getByLabel('Content of /notes/screens.md');
    await expect.poll(() => content.inputValue()).toBe('remember the screens');
    await content.fill('remember the screens, edited');
    await page.getByRole('button', { name: 'Save memory' }).click();
    await main.getByText('Saved: a new version was recorded.').waitFor();
    const memVersions = page.getByRole('list', { name: 'Memory versions' });
    await memVersions.getByText('modified').waitFor();
    await check('11-memory-store');

    // Deployments and their runs; run now.
    await visit('/deployments', 'Deployments');
    await page.getByRole('link', { name: 'screens-deployment' }).click();
    await page.getByRole('heading', { name: 'Deployment screens-deployment' }).waitFor();
    const runs = page.getByRole('list', { name: 'Runs' });
    await runs.getByText('manual').waitFor();
    await page.getByRole('button', { name: 'Run now' }).click();
    await expect.poll(() => runs.getByRole('listitem').count()).toBe(2);
    await check('12-deployment');

    // Webhook endpoints: list, create (no secret shown), deliveries.
    await visit('/webhooks', 'Webhook endpoints');
    await page.getByRole('link', { name: 'https://hooks.example.com/screens' }).waitFor();
    await page.getByLabel('Endpoint URL').fill('https://hooks.example.com/created');
    await page.getByRole('button', { name: 'Create webhook endpoint' }).click();
    await page.getByRole('link', { name: 'https://hooks.example.com/created' }).click();
    await main.getByText('No deliveries yet.').waitFor();
    await expect(page.content()).resolves.not.toMatch(/whsec_/);
    await check('13-webhook');

    // Files: a download link to the content.
    await visit('/files', 'Files');
    const link = page.getByRole('link', { name: 'screens.txt' });
    const fileUrl = await link.getAttribute('href');
    expect(fileUrl).toMatch(/^\/v1\/files\/file_.+\/content$/);
    const body = await page.evaluate(async (h) => (await fetch(h!)).text(), fileUrl);
    expect(body).toBe('hello screens');
    await check('14-files');

    // Members, invitations, sign-in policy: invite someone and revoke the invitation.
    await visit('/members', 'Members');
    await page.getByRole('heading', { name: 'Sign-in policy', exact: true }).waitFor();
    await expect.poll(() => page.getByRole('status').count()).toBe(0);
    const invite = page.getByRole('form', { name: 'Invite someone' });
    await invite.getByLabel('Email').fill('new.person@screens.test');
    await invite.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const invites = page.getByRole('list', { name: 'Invitations' });
    await invites.getByText('new.person@screens.test').waitFor();
    const listed = (await (
      await t.http('/v1/svc/console/invitations', { headers: BETA })
    ).json()) as { data: Array<{ email: string; role: string }> };
    expect(listed.data).toContainEqual(
      expect.objectContaining({ email: 'new.person@screens.test', role: 'viewer' }),
    );
    await check('15-members');
    await page
      .getByRole('button', { name: 'Revoke the invitation of new.person@screens.test' })
      .click();
    await invites.getByText('new.person@screens.test').waitFor({ state: 'detached' });

    // Tenants (operator): the list; create, the key shown once.
    await visit('/tenants', 'Tenants');
    await expect.poll(() => page.getByRole('status').count()).toBe(0);
    await page.getByLabel('Tenant name').fill('screens-tenant');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    const tenantKey = (await page.locator('code.secret').textContent())!;
    expect((await t.http('/v1/agents', { key: tenantKey })).status).toBe(200);
    await page.getByRole('list', { name: 'Tenants' }).getByText('screens-tenant').waitFor();
    await check('16-tenants');

    // The error state: a vault that does not exist (its 404 is the one expected console error).
    await visit('/vaults/vlt_missing', 'Vault vlt_missing');
    await expect(main.getByRole('alert').first().textContent()).resolves.toMatch(
      /^Not found \(404\)/,
    );
    await check('17-error-state');

    // Phone width: the nav wraps, nothing scrolls sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const [hash, heading, name] of [
      ['/', 'Dashboard', '18-phone-dashboard'],
      [`/vaults/${f.vault.id}`, 'Vault screens-vault', '19-phone-vault'],
    ] as const) {
      await visit(hash, heading);
      await main.getByText(/./).first().waitFor();
      const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
      expect(width, `${name} scrolls sideways`).toBeLessThanOrEqual(375);
      await check(name);
    }

    expect(findings).toEqual({});
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
