/**
 * The console's Evals page (console/src/screens/evals.tsx) in a real browser (Debian chromium
 * via playwright-core), on eval runs started through REST over a scripted model (expected-text
 * cases; a system prompt with "v2" answers `apple` right, so `apple` is fixed from the v1 run to
 * the v2 run; a `delay` prompt answers after 20 s, a run that stays live):
 * - the list shows both runs with agent and version, status, passed / failed / total, score
 *   and cost as REST gives them;
 * - a run's screen shows each case's status, pass or fail, score, reason, checks, a link to its
 *   session's screen, tokens, cost and duration, all REST's; a final run offers no Cancel;
 * - Compare against the other run shows `apple` fixed (marked) and `banana` same, and the
 *   summary counts;
 * - a live run shows its progress and Cancel; Cancel makes it cancelled on the screen (polled,
 *   no reload) and in REST;
 * - the start form refuses a JSONL line that is not an object, naming the line, and starts a
 *   run from valid lines, opening its screen, which polls until it completes.
 * The browser logs no error but the expected ones; axe finds no serious or critical violation;
 * at 375 px nothing scrolls sideways. Another tenant's console shows none of the runs. Screenshots: $TMPDIR/agentfleet-screenshots/console-evals.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { axeViolations, BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import { apiJson } from '../../kit/integrations.js';
import { addModelCard, say } from '../../kit/turnHelpers.js';

const shots = screenshotDir('console-evals');
const MODEL = 'console-eval-model';
const CASES = [
  { id: 'banana', prompt: 'Say banana.', expected_text: 'banana' },
  { id: 'apple', prompt: 'Say apple.', expected_text: 'apple' },
];
const FINAL = ['completed', 'cancelled', 'failed'];
let t: TestPlatform;
let browser: Browser;
let agentId: string;
let envId: string;
let v1: any;
let v2: any;

const start = (body: Record<string, unknown>) =>
  apiJson(t, '/v1/svc/evals', {
    method: 'POST',
    json: { agent: agentId, environment_id: envId, cases: CASES, ...body },
  });
const read = async (id: string) => (await apiJson(t, `/v1/svc/evals/${id}`)).body;
async function toEnd(id: string) {
  const run = await waitFor(async () => {
    const r = await read(id);
    return FINAL.includes(r.status) ? r : null;
  }, 60_000);
  expect(run.status, JSON.stringify(run)).toBe('completed');
  return run;
}

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  t = await startPlatform();
  browser = await launchBrowser();
  await addModelCard(t, MODEL);
  const card = await apiJson(t, '/v1/svc/cost_report/pricing', {
    method: 'PUT',
    key: t.operatorKey,
    json: {
      currency: 'USD',
      services: { [`anthropic/${MODEL}`]: { input_tokens: 3, output_tokens: 15 } },
    },
  });
  expect(card.status, JSON.stringify(card.body)).toBe(200);
  t.model.script(
    MODEL,
    ...Array.from({ length: 40 }, () => ({
      steps: [],
      decide: (body: any) => {
        const prompt = JSON.stringify(body.messages?.[0] ?? '');
        if (prompt.includes('delay')) return { steps: [{ delay_ms: 20_000 }, { text: 'late' }] };
        if (prompt.includes('banana')) return say('Here it is: banana!');
        return say(JSON.stringify(body.system ?? '').includes('v2') ? 'apple' : 'pear');
      },
    })),
  );
  envId = (await t.client.beta.environments.create({ name: 'console-evals' })).id;
  agentId = (
    await t.client.beta.agents.create({ name: 'console-evals', model: MODEL, system: 'v1' })
  ).id;
  v1 = await toEnd((await start({ name: 'v1 run' })).body.id);
  await t.client.beta.agents.update(agentId, { version: 1, system: 'v2' } as any);
  v2 = await toEnd((await start({ name: 'v2 run' })).body.id);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** A fresh page, signed in with `key`, with its console errors collected (`expected` left out). */
async function signedIn(width = 1280, key = t.apiKey, expected = /status of 401/) {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
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

/** The text of every cell, row by row, of a table's body. */
async function cells(page: Page, table: string) {
  const out: string[][] = [];
  for (const row of await page.getByRole('table', { name: table }).locator('tbody tr').all())
    out.push((await row.locator('th, td').allTextContents()).map((s) => s.trim()));
  return out;
}
const money = (n: number | null) =>
  n === null
    ? '—'
    : `${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })} USD`;
const status = (page: Page) => page.getByLabel('Run status').textContent();
const noSideScroll = (page: Page) =>
  page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth');

describe.skipIf(BROWSER_SKIP)('the console Evals page in chromium', () => {
  it('lists the runs, shows a run case by case and compares it with another', async () => {
    const { page, errors } = await signedIn();
    await page.getByRole('navigation').getByRole('link', { name: 'Evals' }).click();
    await page.getByRole('heading', { level: 1, name: 'Evals' }).waitFor();
    const row = (r: any, passed: string, failed: string) => [
      r.name,
      `${agentId} v${r.agent.version}`,
      'completed',
      passed,
      failed,
      '2',
      r.summary.score.toFixed(2),
      money(r.summary.cost),
    ];
    await expect
      .poll(async () => (await cells(page, 'Eval runs')).map((c) => c.slice(0, 8)))
      .toEqual([row(v2, '2', '0'), row(v1, '1', '1')]);
    expect(v1.summary.cost).toBeGreaterThan(0);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '01-list.png'), fullPage: true });

    // The v1 run: banana passed, apple failed with the expected-text judge's reason.
    await page.getByRole('link', { name: 'v1 run' }).click();
    await page.getByRole('heading', { level: 1, name: 'Eval v1 run' }).waitFor();
    expect(await status(page)).toBe('completed');
    const expected = v1.cases.map((c: any) => [
      c.id,
      'completed',
      c.passed ? 'passed' : 'failed',
      c.score.toFixed(2),
      c.reason,
      c.checks
        .map((k: any) => `${k.type}: ${k.passed ? 'passed' : 'failed'} — ${k.reason}`)
        .join(''),
      c.session_id,
      `${c.usage.input_tokens} in / ${c.usage.output_tokens} out`,
      money(c.cost),
      `${(c.duration_ms / 1000).toFixed(1)} s`,
    ]);
    await expect.poll(() => cells(page, 'Eval cases')).toEqual(expected);
    expect(expected.map((c: string[]) => [c[0], c[2], c[4]])).toEqual([
      ['banana', 'passed', '1 of 1 checks passed'],
      ['apple', 'failed', 'expected_text: the expected text is not in the answer'],
    ]);
    const session = page.getByRole('link', { name: v1.cases[1].session_id });
    expect(await session.getAttribute('href')).toBe(`#/sessions/${v1.cases[1].session_id}`);
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);

    // Compare with the v2 run: apple fixed (marked), banana the same.
    await page.getByLabel('Compare with').selectOption(v2.id);
    await page.getByRole('button', { name: 'Compare', exact: true }).click();
    await expect
      .poll(() => cells(page, 'Comparison'))
      .toEqual([
        ['banana', 'passed (1.00)', 'passed (1.00)', 'same'],
        ['apple', 'failed (0.00)', 'passed (1.00)', 'fixed'],
      ]);
    const fixed = page.getByRole('table', { name: 'Comparison' }).locator('tr[data-case="apple"]');
    expect(await fixed.getAttribute('class')).toBe('change-fixed');
    expect(await page.getByLabel('Comparison summary').textContent()).toContain(
      '1 fixed · 0 regressed · 1 same · 0 unmatched',
    );
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '02-run-and-compare.png'), fullPage: true });

    // The case's session link opens the session's screen.
    await session.click();
    await page.getByRole('heading', { level: 1 }).filter({ hasText: 'Session' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('cancels a live run from its screen', async () => {
    const live = await start({
      name: 'live run',
      cases: [{ id: 'slow', prompt: 'delay please', expected_text: 'late' }],
    });
    expect(live.status, JSON.stringify(live.body)).toBe(200);
    await waitFor(async () => (await read(live.body.id)).cases[0].status === 'running', 30_000);
    const { page, errors } = await signedIn();
    await page.goto(`${t.url}/console/#/evals/${live.body.id}`);
    await page.getByRole('heading', { level: 1, name: 'Eval live run' }).waitFor();
    expect(await status(page)).toBe('running');
    expect(await page.getByLabel('Cases ended').getAttribute('value')).toBe('0');
    await page.screenshot({ path: join(shots, '03-live.png'), fullPage: true });
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => status(page)).toBe('cancelled');
    await expect.poll(async () => (await cells(page, 'Eval cases'))[0]?.[1]).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    expect((await read(live.body.id)).status).toBe('cancelled');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('starts a run from JSONL cases and follows it to the end; fits a phone', async () => {
    const { page, errors } = await signedIn(375);
    await page.goto(`${t.url}/console/#/evals`);
    const form = page.getByRole('form', { name: 'Start an eval run' });
    await form.getByLabel('Environment').selectOption(envId);
    await form.getByLabel('Name (optional)').fill('console run');
    const jsonl = form.getByLabel(/^Cases/);
    await jsonl.fill(`${JSON.stringify(CASES[0])}\nnot json`);
    await form.getByRole('button', { name: 'Start' }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toBe('cases line 2 is not a JSON object');
    await jsonl.fill(`${JSON.stringify(CASES[0])}\n\n${JSON.stringify(CASES[1])}\n`);
    await form.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('heading', { level: 1, name: 'Eval console run' }).waitFor();
    const id = decodeURIComponent(new URL(page.url()).hash.replace('#/evals/', ''));
    expect(id).toMatch(/^eval_/);
    // The screen polls until the run is final: v2 answers both cases right.
    await expect.poll(() => status(page), { timeout: 30_000 }).toBe('completed');
    await expect
      .poll(async () => (await cells(page, 'Eval cases')).map((c) => c.slice(0, 3)))
      .toEqual([
        ['banana', 'completed', 'passed'],
        ['apple', 'completed', 'passed'],
      ]);
    expect((await read(id)).agent).toEqual({ type: 'agent', id: agentId, version: 2 });
    expect(await noSideScroll(page)).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, '04-phone.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("shows another tenant none of these runs: an empty list, a run's screen not found", async () => {
    const other = await t.newTenant('console-evals-other');
    const { page, errors } = await signedIn(1280, other.apiKey, /status of 404/);
    await page.goto(`${t.url}/console/#/evals`);
    await page.getByText('No eval runs yet.').waitFor();
    await page.goto(`${t.url}/console/#/evals/${v1.id}`);
    await page.reload();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Not found \(404\)/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
