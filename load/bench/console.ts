/**
 * Section h of `npm run bench`: the web console in Debian's chromium (playwright-core,
 * /usr/bin/chromium; the section prints one "skipped" line without it), on the embedded
 * platform with BENCH_CONSOLE_SESSIONS sessions (default 1,000):
 * - time to the session list: a fresh page at /console/#/sessions, signed in by cookie;
 *   first contentful paint and the moment the list's first rows are in the DOM (page clock),
 *   beside the same-run baseline of the list's API call alone (GET /v1/sessions?limit=20);
 * - live latency: a session view open, `user.message` events appended through REST one at a
 *   time; each event's append (its `processed_at`) to its row in the DOM (a MutationObserver,
 *   epoch clock of the same machine), p50/p99, beside the REST SSE stream's append → frame
 *   latency for the same events (same-run baseline);
 * - the initial JavaScript: the scripts index.html loads, gzipped.
 * Figures only; the goals table (goals.ts) prints them beside their targets.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import type { BenchPlatform } from './context.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, printSection, printTable, summarize } from './stats.js';

const CHROMIUM = '/usr/bin/chromium';
const DIST = join(import.meta.dirname, '../../console/dist');

export interface ConsoleFigures {
  listFcpMs: number;
  listRenderedMs: number;
  apiListMs: number;
  liveP50Ms: number;
  liveP99Ms: number;
  sseP50Ms: number;
  sseP99Ms: number;
  jsGzipKb: number;
}

/** The gzipped size of the scripts index.html loads (entry and module preloads). */
export function initialJsGzipKb(dist = DIST): number {
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const srcs = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+\.js)"/g)].map(
    (m) => m[1]!,
  );
  return srcs.reduce((n, f) => n + gzipSync(readFileSync(join(dist, f))).length, 0) / 1024;
}

export async function consoleSection(
  p: BenchPlatform,
  s: BenchSettings,
): Promise<ConsoleFigures | null> {
  const title = `h. Console in chromium (${fmtInt(s.consoleSessions)} sessions)`;
  printSection(title);
  if (!existsSync(CHROMIUM)) {
    console.log(`  skipped: ${CHROMIUM} is absent (apt-get install chromium)`);
    return null;
  }
  if (!existsSync(join(DIST, 'index.html'))) {
    console.log('  skipped: the console is not built (npm run build)');
    return null;
  }
  const { sessionIds } = await p.sessions(s.consoleSessions);
  const signIn = await fetch(`${p.url}/v1/svc/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: p.apiKey }),
  });
  const cookie = /af_console=([^;]+)/.exec(signIn.headers.get('set-cookie') ?? '')![1]!;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  try {
    const context = await browser.newContext();
    await context.addCookies([{ name: 'af_console', value: cookie, url: p.url }]);
    // Time to the session list: fresh pages (the first warms the HTTP cache, as a return visit).
    const fcp: number[] = [];
    const rendered: number[] = [];
    for (let i = 0; i < 6; i++) {
      const page = await context.newPage();
      await page.goto(`${p.url}/console/#/sessions`);
      await page.locator('main a[href^="#/sessions/"]').first().waitFor({ timeout: 30_000 });
      const t = await page.evaluate(() => ({
        rendered: performance.now(),
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      }));
      if (i > 0) {
        fcp.push(t.fcp);
        rendered.push(t.rendered);
      }
      await page.close();
    }
    const api: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await p.json('GET', '/v1/sessions?limit=20');
      api.push(performance.now() - t0);
    }

    // Live latency: append → row in the DOM, and append → SSE frame for the same events.
    const sid = sessionIds[0]!;
    const page = await context.newPage();
    await page.goto(`${p.url}/console/#/sessions/${sid}`);
    await page.getByLabel('Message').waitFor({ timeout: 30_000 });
    // Page code as a string: this package's types have no DOM.
    await page.evaluate(`(() => {
      window.seen = {};
      new MutationObserver(() => {
        for (const el of document.querySelectorAll('li'))
          for (const m of (el.textContent ?? '').matchAll(/mark-(\\d+)/g))
            window.seen[m[1]] ??= performance.timeOrigin + performance.now();
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    })()`);
    const sse = await fetch(`${p.url}/v1/sessions/${sid}/events/stream`, {
      headers: { 'x-api-key': p.apiKey, accept: 'text/event-stream' },
    });
    const frames: Record<string, number> = {};
    const reader = sse.body!.getReader();
    let buf = '';
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        buf += Buffer.from(value!).toString('utf8');
        for (const m of buf.matchAll(/mark-(\d+)/g)) frames[m[1]!] ??= Date.now();
        buf = buf.slice(-64);
      }
    })();
    const live: number[] = [];
    const stream: number[] = [];
    const n = 40;
    for (let i = 0; i < n; i++) {
      const r = await p.json<{ data: Array<{ processed_at?: string; created_at?: string }> }>(
        'POST',
        `/v1/sessions/${sid}/events`,
        { events: [{ type: 'user.message', content: [{ type: 'text', text: `mark-${i}` }] }] },
      );
      const at = Date.parse(r.body.data[0]?.processed_at ?? r.body.data[0]?.created_at ?? '');
      const shown = await page
        .waitForFunction(
          (k) => (globalThis as unknown as { seen: Record<string, number> }).seen[k],
          String(i),
          { timeout: 15_000 },
        )
        .then((h) => h.jsonValue() as Promise<number>);
      if (Number.isFinite(at)) {
        live.push(Math.max(0, shown - at));
        if (frames[i] !== undefined) stream.push(Math.max(0, frames[i]! - at));
      }
      // Let the turn the message started finish before the next one.
      await page.waitForTimeout(30);
    }
    await reader.cancel().catch(() => {});
    const l = summarize(live);
    const st = summarize(stream);
    const f: ConsoleFigures = {
      listFcpMs: summarize(fcp).p50,
      listRenderedMs: summarize(rendered).p50,
      apiListMs: summarize(api).p50,
      liveP50Ms: l.p50,
      liveP99Ms: l.p99,
      sseP50Ms: st.p50,
      sseP99Ms: st.p99,
      jsGzipKb: initialJsGzipKb(),
    };
    printTable(
      'the console as built by npm run build, signed in by cookie, on 127.0.0.1',
      ['measure', 'console', 'baseline (same run)'],
      [
        [
          'session list: first contentful paint / list rendered (p50 of 5 loads)',
          `${fmt(f.listFcpMs)} ms / ${fmt(f.listRenderedMs)} ms`,
          `GET /v1/sessions?limit=20 alone: ${fmt(f.apiListMs)} ms`,
        ],
        [
          `live: append → row in the DOM p50 / p99 (${live.length} events)`,
          `${fmt(f.liveP50Ms)} ms / ${fmt(f.liveP99Ms)} ms`,
          `append → REST SSE frame: ${fmt(f.sseP50Ms)} ms / ${fmt(f.sseP99Ms)} ms`,
        ],
        ['initial JavaScript (gzipped)', `${fmt(f.jsGzipKb)} KB`, '—'],
      ],
    );
    return f;
  } finally {
    await browser.close();
  }
}
