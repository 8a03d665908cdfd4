import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

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
