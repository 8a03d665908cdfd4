/**
 * The console's session view in a real browser (Debian chromium via playwright-core), signed in
 * with the operator key: (a) a turn with thinking and a bash call held by an always_ask policy
 * shows Allow / Deny; Allow lets the call run in the local sandbox and the result and the
 * agent's answer arrive live in the timeline, whose rows expand to the tool's input and result
 * and the thinking text; (b) a client-executed custom tool call shows a result form, and
 * submitting it lets the agent answer; (c) the output the bash call wrote and a file uploaded
 * for the session are listed and download with their bytes. The Conversation tab shows the
 * messages; a failed model request shows its session.error; the view fits 375 px. No console errors.
 * Screenshots: $TMPDIR/agentfleet-screenshots/console-session-view.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { axeViolations, BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import { addModelCard } from '../../kit/turnHelpers.js';

const MODEL = 'console-session-view-model';
const shots = screenshotDir('console-session-view');
let t: TestPlatform;
let browser: Browser;

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  await addModelCard(t, MODEL);
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

describe.skipIf(BROWSER_SKIP)('console session view in chromium', () => {
  it('confirms a held tool call, answers a custom tool call, downloads outputs and files', async () => {
    const env = await t.client.beta.environments.create({ name: 'session-view-env' });
    const agent = await t.client.beta.agents.create({
      name: 'session-view-agent',
      model: MODEL,
      tools: [
        {
          type: 'agent_toolset_20260401',
          default_config: { permission_policy: { type: 'always_ask' } },
        },
        {
          type: 'custom',
          name: 'lookup',
          description: 'looks a word up',
          input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
    } as any);
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${t.url}/console/`);
    await page.getByLabel('API key').fill(t.operatorKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${t.url}/console/#/sessions/${sid}`);
    await page.getByText('No events yet.').waitFor();
    await page.getByText('No outputs yet.').waitFor();
    await shot(page, '01-empty');

    // (a) thinking + a bash call held for confirmation; Allow runs it, the answer arrives live.
    t.model.script(
      MODEL,
      {
        steps: [
          { thinking: 'I should write the report first.' },
          {
            tool_use: {
              name: 'bash',
              input: {
                command:
                  "mkdir -p /mnt/session/outputs && printf 'report-bytes-42' > /mnt/session/outputs/report.txt && echo wrote-report",
              },
            },
          },
        ],
      },
      { steps: [{ text: 'the report is written' }] },
    );
    await page.getByLabel('Message').fill('write the report');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const confirm = page.getByRole('listitem', { name: 'Confirm bash' });
    await confirm.waitFor({ timeout: 30_000 });
    expect(await confirm.textContent()).toContain('report.txt');
    await expect(confirm.getByRole('button', { name: 'Deny…' }).isVisible()).resolves.toBe(true);
    await shot(page, '02-confirmation');
    await confirm.getByRole('button', { name: 'Allow' }).click();
    await page.getByText('the report is written').waitFor({ timeout: 30_000 });
    await expect(confirm.count()).resolves.toBe(0);
    const timeline = page.getByLabel('Timeline');
    const row = (type: string) => timeline.locator(`li[data-type="${type}"]`);
    // The rows expand to the tool's input and result and the thinking text.
    await row('agent.tool_use')
      .getByRole('button', { name: /Details/ })
      .click();
    expect(await row('agent.tool_use').textContent()).toContain('/mnt/session/outputs/report.txt');
    await row('agent.tool_result')
      .getByRole('button', { name: /Details/ })
      .click();
    expect(await row('agent.tool_result').textContent()).toContain('wrote-report');
    await row('agent.thinking')
      .getByRole('button', { name: /Details/ })
      .click();
    expect(await row('agent.thinking').textContent()).toContain('I should write the report first.');
    expect(await row('user.tool_confirmation').textContent()).toContain('allow');
    await shot(page, '03-allowed');

    // (b) a custom tool call: the form's result goes back and the agent answers with it.
    t.model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'lookup', input: { q: 'fleet' } } }] },
      {
        steps: [{ text: 'unused' }],
        decide: (body) => {
          const last = body.messages.at(-1).content;
          const text = JSON.stringify(last);
          return {
            steps: [{ text: `lookup said ${/ships-in-a-row/.test(text) ? 'ships' : '?'}` }],
          };
        },
      },
    );
    await page.getByLabel('Message').fill('look it up');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const custom = page.getByRole('listitem', { name: 'Answer lookup' });
    await custom.waitFor({ timeout: 30_000 });
    expect(await custom.textContent()).toContain('fleet');
    await custom.getByLabel('Result of lookup').fill('ships-in-a-row');
    await shot(page, '04-custom-tool');
    await custom.getByRole('button', { name: 'Submit result' }).click();
    await page.getByText('lookup said ships').waitFor({ timeout: 30_000 });
    await expect(custom.count()).resolves.toBe(0);
    const sent = await t.client.beta.sessions.events.list(sid);
    expect((sent.data as any[]).find((e) => e.type === 'user.custom_tool_result')).toMatchObject({
      content: [{ type: 'text', text: 'ships-in-a-row' }],
    });

    // The Conversation tab: the messages as text.
    await page.getByRole('tab', { name: 'Conversation' }).click();
    const conv = page.getByLabel('Conversation', { exact: true });
    await conv.waitFor();
    expect(await conv.locator('li').allTextContents()).toEqual([
      'You: write the report',
      'Agent: the report is written',
      'You: look it up',
      'Agent: lookup said ships',
    ]);
    await page.getByRole('tab', { name: 'Timeline' }).click();

    // (c) the output and a file of the session download with their bytes.
    const form = new FormData();
    form.append('file', new Blob(['file-bytes-7'], { type: 'text/plain' }), 'notes.txt');
    form.append('session_id', sid);
    expect((await t.http('/v1/files', { method: 'POST', body: form })).status).toBe(200);
    await page.getByRole('button', { name: 'Refresh outputs and files' }).click();
    const fileLink = page.getByRole('link', { name: 'notes.txt' });
    await fileLink.waitFor();
    const href = (await fileLink.getAttribute('href'))!;
    const fetched = await page.evaluate(
      `fetch(${JSON.stringify(href)}, { credentials: 'same-origin' }).then(async (r) => [r.status, await r.text()])`,
    );
    expect(fetched).toEqual([200, 'file-bytes-7']);
    const outputLink = page.getByRole('link', { name: 'report.txt' });
    await outputLink.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), outputLink.click()]);
    expect(download.suggestedFilename()).toBe('report.txt');
    const path = await download.path();
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(path, 'utf8')).toBe('report-bytes-42');
    await shot(page, '05-outputs');

    // Deny with a reason: the call never runs and its result is the reason, as an error.
    t.model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo never-ran' } } }] },
      { steps: [{ text: 'denied, fine' }] },
    );
    await page.getByLabel('Message').fill('try again');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await confirm.waitFor({ timeout: 30_000 });
    await confirm.getByRole('button', { name: 'Deny…' }).click();
    await confirm.getByLabel('Reason for denying (optional)').fill('not today');
    await confirm.getByRole('button', { name: 'Deny', exact: true }).click();
    await page.getByText('denied, fine').waitFor({ timeout: 30_000 });
    expect(await row('user.tool_confirmation').last().textContent()).toContain('deny: not today');
    expect(await row('agent.tool_result').last().textContent()).toContain('error: not today');
    expect(await axeViolations(page)).toEqual([]);

    // A failed model request: the session.error row shows its message, the detail the error.
    t.model.script(MODEL, {
      steps: [
        { http_error: { status: 400, type: 'invalid_request_error', message: 'scripted refusal' } },
      ],
    });
    await page.getByLabel('Message').fill('fail please');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await row('session.error').waitFor({ timeout: 30_000 });
    expect(await row('session.error').textContent()).toContain('scripted refusal');
    await row('session.error')
      .getByRole('button', { name: /Details/ })
      .click();
    await row('session.error').getByText('Error', { exact: true }).waitFor();

    // 375 px: nothing wider than the viewport.
    await page.setViewportSize({ width: 375, height: 800 });
    const wide = await page.evaluate('document.documentElement.scrollWidth');
    expect(wide).toBeLessThanOrEqual(375);
    await shot(page, '06-narrow');

    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  }, 90_000);
});
