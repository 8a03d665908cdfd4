/**
 * The console's session view of a coordinator session in a real browser (Debian chromium via
 * playwright-core), signed in with the operator key (console/src/session/Threads.tsx): a
 * session without child threads shows no thread tabs; once the scripted coordinator started two
 * threads, the view shows a tab per thread, the primary first, each labelled with its agent's
 * name; the primary's tab shows the session's events (its answer); a child's tab shows that
 * thread's own log (its task, its answer) and not the primary's, live when the coordinator sends
 * it another message; back on the primary tab its events return. No axe violations, no console
 * errors. Screenshots: $TMPDIR/agentfleet-screenshots/console-threads.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { axeViolations, BROWSER_SKIP, launchBrowser, screenshotDir } from '../../kit/browser.js';
import { addModelCard, decide, say, sentText, userMessage } from '../../kit/turnHelpers.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';

const COORD = 'console-threads-coordinator';
const WA = 'console-threads-writer-a';
const WB = 'console-threads-writer-b';
const shots = screenshotDir('console-threads');
let t: TestPlatform;
let browser: Browser;
let envId: string;
let coord: any;

const toolsets = [{ type: 'agent_toolset_20260401' as const }];
const idles = async (sid: string) =>
  (
    ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[]
  ).filter((e) => e.type === 'session.status_idle').length;
let alphaId = '';
/**
 * The coordinator's every later response, chosen from what it was told so far (a response left
 * over from one turn serves the next one alike): ask alpha again once asked to, then wait for
 * its reply; else sum up once both threads answered.
 */
const lead = (body: any): ScriptedResponse => {
  const told = sentText(body);
  if (told.includes('ask alpha again')) {
    if (told.includes('alpha replies twice')) return say('the lead is done');
    if (!told.includes('alpha second task'))
      return {
        steps: [
          {
            tool_use: {
              name: 'send_to_thread',
              input: { session_thread_id: alphaId, message: 'alpha second task' },
            },
          },
        ],
        stop_reason: 'tool_use',
      };
    return say('waiting for alpha');
  }
  return told.includes('alpha answered') && told.includes('beta answered')
    ? say('the lead sums up')
    : say('the lead waits');
};
const leadTurns = () => Array.from({ length: 4 }, () => decide(lead));
const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (BROWSER_SKIP) return;
  t = await startPlatform();
  for (const m of [COORD, WA, WB]) await addModelCard(t, m);
  envId = (await t.client.beta.environments.create({ name: 'console-threads' })).id;
  const a = await t.client.beta.agents.create({ name: 'writer-alpha', model: WA, tools: toolsets });
  const b = await t.client.beta.agents.create({ name: 'writer-beta', model: WB, tools: toolsets });
  coord = await t.client.beta.agents.create({
    name: 'lead-coordinator',
    model: COORD,
    tools: toolsets,
    multiagent: { type: 'coordinator', agents: [a.id, b.id] },
  });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe.skipIf(BROWSER_SKIP)('console thread tabs in chromium', () => {
  it('shows a tab per thread; a child tab shows its own events, live', async () => {
    const sid = (await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId }))
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
    // No child thread yet: no thread tabs.
    const tabs = page.getByRole('tablist', { name: 'Threads' });
    await expect(tabs.count()).resolves.toBe(0);

    t.model.script(
      COORD,
      {
        steps: [
          {
            tool_use: {
              name: 'start_thread',
              input: { agent_name: 'writer-alpha', task: 'alpha task text' },
            },
          },
          {
            tool_use: {
              name: 'start_thread',
              input: { agent_name: 'writer-beta', task: 'beta task text' },
            },
          },
        ],
        stop_reason: 'tool_use',
      },
      ...leadTurns(),
    );
    t.model.script(WA, say('alpha answered'));
    t.model.script(WB, say('beta answered'));
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('split the work')] });
    await page.getByText('the lead sums up').waitFor({ timeout: 60_000 });

    // A tab per thread, the primary first, labelled with the agent names; the primary selected.
    await tabs.waitFor();
    const tab = (name: string) => tabs.getByRole('tab', { name, exact: true });
    await tab('writer-beta').waitFor();
    expect(await tabs.getByRole('tab').allTextContents()).toEqual([
      'lead-coordinator',
      'writer-alpha',
      'writer-beta',
    ]);
    expect(await tab('lead-coordinator').getAttribute('aria-selected')).toBe('true');
    const timeline = page.getByLabel('Timeline');
    expect(await timeline.textContent()).toContain('session.thread_created');
    await timeline.getByText('from writer-alpha: alpha answered').waitFor();
    await shot(page, '01-primary');

    // A child's tab: its own log (its task, its answer), none of the primary's events.
    await tab('writer-alpha').click();
    expect(await tab('writer-alpha').getAttribute('aria-selected')).toBe('true');
    await timeline.getByText('from the coordinator: alpha task text').waitFor();
    await timeline.getByText('alpha answered', { exact: true }).waitFor();
    const text = await timeline.textContent();
    expect(text).not.toContain('the lead sums up');
    expect(text).not.toContain('beta answered');
    expect(text).not.toContain('session.thread_created');
    await shot(page, '02-writer-alpha');
    expect(await axeViolations(page)).toEqual([]);

    // Live on the child's tab: the coordinator sends alpha another message; it arrives there.
    alphaId = await waitFor(async () => {
      const th = ((await (await t.http(`/v1/sessions/${sid}/threads`)).json()) as any).data;
      return (th as any[]).find((x) => x.agent.name === 'writer-alpha')?.id;
    });
    t.model.script(COORD, ...leadTurns());
    t.model.script(WA, say('alpha replies twice'));
    const before = await idles(sid);
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('ask alpha again')] });
    await timeline.getByText('alpha second task').waitFor({ timeout: 30_000 });
    await timeline.getByText('alpha replies twice', { exact: true }).waitFor({ timeout: 30_000 });
    await waitFor(async () => (await idles(sid)) > before, 60_000);

    // The other child, then back to the primary: each tab its own events.
    await tab('writer-beta').click();
    await timeline.getByText('beta task text').waitFor();
    expect(await timeline.textContent()).not.toContain('alpha');
    await tab('lead-coordinator').click();
    await timeline.getByText('the lead is done').waitFor();
    // The Conversation tab follows the selected thread too.
    await tab('writer-alpha').click();
    await page.getByRole('tab', { name: 'Conversation' }).click();
    const conv = page.getByLabel('Conversation', { exact: true });
    await conv.getByText('alpha replies twice').waitFor();
    expect(await conv.locator('li').allTextContents()).toEqual([
      'Coordinator: alpha task text',
      'Agent: alpha answered',
      'Coordinator: alpha second task',
      'Agent: alpha replies twice',
    ]);
    await shot(page, '03-conversation');

    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  }, 120_000);
});
