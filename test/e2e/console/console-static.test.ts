/**
 * The console's static serving (gateway/src/console.ts): `/` redirects to /console/, the SPA
 * fallback answers index.html with no-cache, hashed assets are immutable, every answer carries
 * the strict CSP, and the routes need no key; no served file holds a deployment secret. Needs
 * console/dist (`npm run build`).
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist', import.meta.url));
let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('console static files', () => {
  it('redirects / and /console to /console/', async () => {
    for (const path of ['/', '/console']) {
      const res = await fetch(t.url + path, { redirect: 'manual' });
      expect(res.status, path).toBe(302);
      expect(res.headers.get('location'), path).toBe('/console/');
    }
  });

  it('serves index.html with no-cache and the CSP, also for client routes', async () => {
    for (const path of ['/console/', '/console/sessions/abc']) {
      const res = await fetch(t.url + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(/text\/html/);
      expect(res.headers.get('cache-control'), path).toBe('no-cache');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      const html = await res.text();
      expect(html).toContain('<div id="root">');
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it('serves hashed assets as immutable; a missing asset is 404', async () => {
    const file = readdirSync(`${CONSOLE_DIST}/assets`).find((f) => f.endsWith('.js'))!;
    const res = await fetch(`${t.url}/console/assets/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    const missing = await fetch(`${t.url}/console/assets/nope-123.js`);
    expect(missing.status).toBe(404);
  });

  it('no asset or page as served holds a deployment secret', async () => {
    const secrets = [
      t.operatorKey,
      'test-root-secret-0123456789abcdef0123456789',
      'test-console-secret-0123456789abcdef0123456',
    ];
    const paths = [
      '/console/',
      ...readdirSync(`${CONSOLE_DIST}/assets`).map((f) => `/console/assets/${f}`),
    ];
    for (const path of paths) {
      const text = await (await fetch(t.url + path)).text();
      for (const s of secrets) expect(text, path).not.toContain(s);
    }
  });
});
