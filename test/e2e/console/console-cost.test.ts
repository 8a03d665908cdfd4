/**
 * The console's Cost page (console/src/screens/cost.tsx) in a real browser (Debian chromium via
 * playwright-core), on a ledger of scripted model calls with hand-computed totals:
 * - signed in with the operator key: the nav has Cost; the table shows the report's rows per
 *   tenant and model with calls, the four token counts, the estimated cost and the evidence
 *   (source, completeness, invoice grade, reconciled), the totals, and the billed total as "—"
 *   with its reason; regrouped by model, then by day and kind, the rows change as the ledger
 *   says; a custom range of UTC days covers the same calls, a past one is an honest zero; the
 *   per-day chart has one bar a day with today's cost;
 * - the price card is shown and edited in the page (PUT): a refused card shows the 400 naming
 *   the field and stores nothing; a card without the cache rates makes the Anthropic row
 *   partial, naming both missing rates, its cost and the total "—", never 0;
 * - signed in with a tenant's key (an admin without operator rights): no Cost link, and the
 *   page shows the 403 as "needs the operator key".
 * axe finds no serious or critical violation; at 375 px nothing scrolls sideways. Screenshots: $TMPDIR/agentfleet-screenshots/console-cost.
 */
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { axeViolations, BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import { apiJson } from '../../kit/integrations.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';

const shots = screenshotDir('console-cost');
const SONNET = 'anthropic/claude-sonnet-4-5';
const MINI = 'openai/gpt-4o-mini';
const SONNET_USAGE = {
  input_tokens: 1000,
  output_tokens: 100,
  cache_read_input_tokens: 500,
  cache_creation_input_tokens: 200,
};
const MINI_USAGE = { input_tokens: 2000, output_tokens: 300 };
let t: TestPlatform;
let browser: Browser;
let tenantA: string;
let tenantB: { tenantId: string; apiKey: string; client: Anthropic };

async function sessionOn(client: Anthropic, model: string) {
  const env = await client.beta.environments.create({ name: `cost-${model}` });
  const agent = await client.beta.agents.create({ name: `cost-${model}`, model });
  return (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  t = await startPlatform();
  browser = await launchBrowser();
  tenantA = (await t.http('/v1/agents')).headers.get('anthropic-workspace-id')!;
  tenantB = await t.newTenant('cost-b');
  // Tenant A: two Anthropic calls and one OpenAI call; tenant B: one OpenAI call.
  await addModelCard(t, 'cost-a', { model: 'claude-sonnet-4-5' });
  await addModelCard(t, 'cost-a-mini', { provider: 'openai', model: 'gpt-4o-mini' });
  await addModelCard(t, 'cost-b', {
    provider: 'openai',
    model: 'gpt-4o-mini',
    key: tenantB.apiKey,
  });
  const sonnet = await sessionOn(t.client, 'cost-a');
  for (const text of ['one', 'two']) {
    t.model.script('claude-sonnet-4-5', { steps: [{ text }], usage: SONNET_USAGE });
    await runTurn(t.client, sonnet, text);
  }
  t.model.script('gpt-4o-mini', { steps: [{ text: 'a' }], usage: MINI_USAGE });
  await runTurn(t.client, await sessionOn(t.client, 'cost-a-mini'), 'hi');
  t.model.script('gpt-4o-mini', { steps: [{ text: 'b' }], usage: MINI_USAGE });
  await runTurn(tenantB.client, await sessionOn(tenantB.client, 'cost-b'), 'hi');
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** A fresh page with its console errors collected (`expected` ones left out). */
async function signedIn(key: string, expected: RegExp) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text()) && !expected.test(m.text()))
      errors.push(`${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${t.url}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  return { page, errors };
}

/** The text of every cell, row by row, of a table's body (or foot). */
async function cells(page: Page, table: string, part = 'tbody') {
  const rows = page.getByRole('table', { name: table }).locator(`${part} tr`);
  const out: string[][] = [];
  for (const row of await rows.all())
    out.push((await row.locator('th, td').allTextContents()).map((s) => s.trim()));
  return out;
}
const sorted = (rows: string[][]) => [...rows].sort((a, b) => a.join().localeCompare(b.join()));
/** The evidence of a metered row: no billed cost, source, completeness, invoice grade, reconciled. */
const METERED = ['—', 'svc_metered', 'complete', 'no', '—'];
const fact = (page: Page, name: string) =>
  page.getByLabel('Report totals').locator(`dt:text-is("${name}") + dd`).textContent();

async function show(page: Page, groups: string[]) {
  for (const g of ['Tenant', 'Agent', 'Session', 'Model', 'Day', 'Kind'])
    await page.getByRole('checkbox', { name: g, exact: true }).setChecked(groups.includes(g));
  await page.getByRole('button', { name: 'Show report' }).click();
}

describe.skipIf(BROWSER_SKIP)('the console Cost page in chromium', () => {
  it('shows the operator the ledger per grouping and range, the chart and the price card', async () => {
    const { page, errors } = await signedIn(t.operatorKey, /status of 400/);
    await page.getByRole('navigation').getByRole('link', { name: 'Cost' }).click();
    await page.getByRole('heading', { level: 1, name: 'Cost' }).waitFor();

    // Default: last 7 days by tenant and model. Sonnet: 2 × (1000×3 + 100×15 + 500×0.3 +
    // 200×3.75)/1e6 = 0.0108; gpt-4o-mini: (2000×0.15 + 300×0.6)/1e6 = 0.00048 a call.
    const byTenantModel = [
      [tenantA, SONNET, '2', '2,000', '200', '1,000', '400', '0.0108 USD', ...METERED],
      [tenantA, MINI, '1', '2,000', '300', '0', '0', '0.00048 USD', ...METERED],
      [tenantB.tenantId, MINI, '1', '2,000', '300', '0', '0', '0.00048 USD', ...METERED],
    ];
    await expect
      .poll(async () => sorted(await cells(page, 'Cost report')))
      .toEqual(sorted(byTenantModel));
    const total = ['Total', '4', '6,000', '800', '1,000', '400', '0.01176 USD', ...METERED];
    await expect(cells(page, 'Cost report', 'tfoot')).resolves.toEqual([total]);
    await expect(fact(page, 'Total estimated cost')).resolves.toBe('0.01176 USD');
    await expect(fact(page, 'Total cost (billed)')).resolves.toMatch(
      /^— \(no provider bill was read/,
    );
    await expect(fact(page, 'Calls')).resolves.toBe('4');
    // The chart: one bar per UTC day of the 7-day range (8 calendar days), today's priced.
    const today = new Date().toISOString().slice(0, 10);
    const bars = page.getByRole('list', { name: 'Estimated cost per day' }).getByRole('listitem');
    await expect.poll(() => bars.count()).toBe(8);
    await bars.and(page.getByLabel(`${today}: 0.01176 USD (4 calls)`)).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '01-by-tenant-and-model.png'), fullPage: true });

    // By model: both tenants' gpt-4o-mini calls in one row (4000 in, 600 out: 0.00096).
    await show(page, ['Model']);
    const byModel = [
      [SONNET, '2', '2,000', '200', '1,000', '400', '0.0108 USD', ...METERED],
      [MINI, '2', '4,000', '600', '0', '0', '0.00096 USD', ...METERED],
    ];
    await expect.poll(() => cells(page, 'Cost report')).toEqual(byModel);
    await show(page, ['Day', 'Kind']);
    await expect
      .poll(() => cells(page, 'Cost report'))
      .toEqual([[today, 'turn', '4', '6,000', '800', '1,000', '400', '0.01176 USD', ...METERED]]);

    // A custom range of UTC days (yesterday through today) holds the same calls; 2020 none.
    await page.getByRole('combobox', { name: /^Range/ }).selectOption('custom');
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('First day (UTC)').fill(yesterday);
    await page.getByLabel('Last day (UTC)').fill(today);
    await show(page, ['Model']);
    await expect.poll(() => cells(page, 'Cost report')).toEqual(byModel);
    const tomorrow = new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10);
    await expect(fact(page, 'Range')).resolves.toBe(
      `${yesterday}T00:00:00.000Z → ${tomorrow}T00:00:00.000Z (UTC, whole hours)`,
    );
    await expect.poll(() => bars.count()).toBe(2);
    await page.getByLabel('First day (UTC)').fill('2020-01-01');
    await page.getByLabel('Last day (UTC)').fill('2020-01-02');
    await page.getByRole('button', { name: 'Show report' }).click();
    await page.getByText('No model calls in this range.').waitFor();
    await expect(fact(page, 'Total estimated cost')).resolves.toBe('0.00 USD');
    await page.getByLabel('First day (UTC)').fill(yesterday);
    await page.getByLabel('Last day (UTC)').fill(today);
    await page.getByRole('button', { name: 'Show report' }).click();
    await expect.poll(() => cells(page, 'Cost report')).toEqual(byModel);

    // The price card: the vendors' list prices until set.
    const card = await cells(page, 'Price card');
    expect(card).toContainEqual([SONNET, '3', '15', '0.3', '3.75']);
    await page.getByText("the vendors' public list prices (never set)").waitFor();

    // A refused card: the 400 names the field, nothing is stored.
    await page.getByRole('button', { name: 'Edit price card' }).click();
    const editor = page.getByLabel('Price card JSON (replaces the whole card)');
    await editor.fill(JSON.stringify({ currency: 'eur', services: {} }));
    await page.getByRole('button', { name: 'Save price card' }).click();
    await page.getByRole('form', { name: 'Price card editor' }).getByRole('alert').waitFor();
    await expect(
      page.getByRole('form', { name: 'Price card editor' }).getByRole('alert').textContent(),
    ).resolves.toContain('currency');
    expect((await apiJson(t, '/v1/svc/cost_report/pricing')).body.updated_at).toBeNull();

    // No cache rates for Sonnet: its row is partial and names both, never priced as 0.
    await editor.fill(
      JSON.stringify({
        currency: 'EUR',
        services: {
          [SONNET]: { input_tokens: 2, output_tokens: 10 },
          [MINI]: { input_tokens: 0.1, output_tokens: 0.4 },
        },
      }),
    );
    await page.getByRole('button', { name: 'Save price card' }).click();
    const partial = `partial — missing rates: ${SONNET}.cache_creation_input_tokens, ${SONNET}.cache_read_input_tokens`;
    await expect
      .poll(() => cells(page, 'Cost report'))
      .toEqual([
        [SONNET, '2', '2,000', '200', '1,000', '400', '—', '—', 'svc_metered', partial, 'no', '—'],
        // (4000×0.1 + 600×0.4)/1e6
        [MINI, '2', '4,000', '600', '0', '0', '0.00064 EUR', ...METERED],
      ]);
    await expect(cells(page, 'Cost report', 'tfoot')).resolves.toEqual([
      ['Total', '4', '6,000', '800', '1,000', '400', '—', '—', 'svc_metered', 'partial', 'no', '—'],
    ]);
    await expect(fact(page, 'Total estimated cost')).resolves.toMatch(/^— \(partial: /);
    await expect
      .poll(() => cells(page, 'Price card'))
      .toEqual([
        [SONNET, '2', '10', 'not set', 'not set'],
        [MINI, '0.1', '0.4', 'not set', 'not set'],
      ]);
    await page.getByText(/^Rates in EUR per million tokens; set /).waitFor();
    await bars.and(page.getByLabel(`${today}: — (partial, 4 calls)`)).waitFor();
    const stored = (await apiJson(t, '/v1/svc/cost_report/pricing')).body;
    expect(stored.services[SONNET]).toEqual({ input_tokens: 2, output_tokens: 10 });
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '02-partial.png'), fullPage: true });
    // Phone width: the wide tables scroll in their own regions, the page does not.
    await page.setViewportSize({ width: 375, height: 800 });
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    expect(width).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(shots, '03-phone.png'), fullPage: true });

    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("a tenant's console session without operator rights sees the 403 as needing the operator key", async () => {
    const { page, errors } = await signedIn(tenantB.apiKey, /status of 403/);
    await expect(
      page.getByRole('navigation').getByRole('link', { name: 'Cost' }).count(),
    ).resolves.toBe(0);
    await page.goto(`${t.url}/console/#/cost`);
    await page.getByRole('heading', { level: 1, name: 'Cost' }).waitFor();
    const alert = page.getByRole('main').getByRole('alert');
    await expect(alert.textContent()).resolves.toContain('The cost report needs the operator key');
    await expect(alert.textContent()).resolves.toContain('403');
    await expect(page.getByRole('table').count()).resolves.toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '04-not-operator.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
