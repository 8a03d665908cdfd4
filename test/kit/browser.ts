import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (.ci/run installs it); tests skip with BROWSER_SKIP when it is absent. */
export const CHROMIUM = '/usr/bin/chromium';
export const BROWSER_SKIP = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} is absent: install Debian's chromium (apt-get install chromium; .ci/run does)`;

/** Headless chromium with no GPU, sandbox or background traffic (containers, CI). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Screenshots go here (outside the repository), one folder per suite. */
export function screenshotDir(suite: string): string {
  const dir = join(tmpdir(), 'agentfleet-screenshots', suite);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** axe-core's source, read once (injected with page.evaluate: the console's CSP refuses inline scripts). */
let axeSource: string | null = null;

export type AxeFinding = { id: string; impact: string; help: string; nodes: string[] };

/**
 * Runs axe-core on the page as it stands and answers its violations of the given impacts
 * (serious and critical by default), each with up to five of its nodes' selectors.
 */
export async function axeViolations(
  page: Page,
  impacts: string[] = ['serious', 'critical'],
): Promise<AxeFinding[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Strings, not functions: the page's globals (window, axe) are not in this tsconfig's lib.
  if (!(await page.evaluate("typeof axe !== 'undefined'"))) await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
  )) as Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }>;
  return violations
    .filter((v) => impacts.includes(v.impact))
    .map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    }));
}
