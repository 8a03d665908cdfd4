import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOutboundProxy,
  hostPolicy,
  type OutboundProxy,
  type ProxyLogEntry,
} from '../src/egress/proxy/proxy.js';
import { createEgressPolicy, type EgressPolicy } from '../src/egress/policy.js';
import { TEST_CERT, TEST_KEY } from './fixtures/testCert.js';
import { htmlToText, WEB_SEARCH_NOT_CONFIGURED, webFetch, webSearch } from '../src/tools/web.js';
import { loadConfig } from '../src/config/config.js';

const PAGE = `<!doctype html>
<html><head><title>Test &amp; Page</title>
<style>body { color: red; }</style>
<script>window.secret = "do-not-show";</script></head>
<body><!-- a comment -->
<h1>Hello&nbsp;World</h1>
<p>First paragraph with <a href="/x">a link</a> &lt;tag&gt; &#8212; &#x263A;.</p>
<ul><li>one</li><li>two</li></ul>
<noscript>enable js</noscript>
</body></html>`;

const BIG = 'abcdefghij'.repeat(50_000); // 500 KB

let origin: http.Server;
let base: string;
let secure: https.Server;
let secureBase: string;
let search: http.Server;
let searchBase: string;
const searchSeen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];

const listen = async (s: http.Server | https.Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
};

function route(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = req.url ?? '/';
  originHits.push(url);
  if (url === '/page.html') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  } else if (url === '/gz.html') {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
    res.end(gzipSync(PAGE));
  } else if (url === '/big.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(BIG);
  } else if (url === '/data.json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"a":1,"b":[1,2]}');
  } else if (url === '/image.png') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
  } else if (url === '/redirect') {
    res.writeHead(302, { location: '/page.html' });
    res.end();
  } else if (url === '/to-metadata') {
    res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
    res.end();
  } else if (url === '/to-loopback') {
    res.writeHead(302, { location: `http://127.0.0.2:${req.socket.localPort}/page.html` }); // same port, another loopback address: not opened
    res.end();
  } else if (url === '/loop') {
    res.writeHead(302, { location: '/loop' });
    res.end();
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not here');
  }
}

let proxy: OutboundProxy;
let denyProxy: OutboundProxy;
/** Opens the three local test servers, as the operator would with EGRESS_ALLOW_PRIVATE_HOSTS. */
let opened: EgressPolicy;
const originHits: string[] = [];
const logs: ProxyLogEntry[] = [];
const denyLogs: ProxyLogEntry[] = [];

beforeAll(async () => {
  origin = http.createServer(route);
  base = `http://127.0.0.1:${await listen(origin)}`;
  secure = https.createServer({ key: TEST_KEY, cert: TEST_CERT }, route);
  secureBase = `https://127.0.0.1:${await listen(secure)}`;
  search = http.createServer((req, res) => {
    searchSeen.push({ url: req.url ?? '', headers: req.headers });
    const u = new URL(req.url ?? '/', 'http://x');
    const q = u.searchParams.get('q') ?? '';
    if (u.pathname === '/brave') {
      if (req.headers['x-subscription-token'] !== 'brave-key') return void res.writeHead(401).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({
          web: {
            results: [
              {
                title: `Brave ${q}`,
                url: 'https://brave.example/1',
                description: 'A <strong>bold</strong> snippet &amp; more',
              },
            ],
          },
        }),
      );
    }
    if (req.headers.authorization !== 'Bearer good-key') return void res.writeHead(401).end();
    res.writeHead(200, { 'content-type': 'application/json' });
    if (q === 'nothing') return void res.end(JSON.stringify({ results: [] }));
    res.end(
      JSON.stringify({
        results: [
          { title: `Result one for ${q}`, url: 'https://one.example/a', snippet: 'first snippet' },
          { name: 'Result two', link: 'https://two.example/b', description: 'second snippet' },
          { title: 'no url, skipped' },
        ],
      }),
    );
  });
  searchBase = `http://127.0.0.1:${await listen(search)}`;
  opened = createEgressPolicy({
    allowPrivateHosts: [base, secureBase, searchBase].map((u) => new URL(u).host),
  });

  proxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    policy: hostPolicy({ allowlist: ['127.0.0.1'] }),
    egress: opened,
    log: (e) => logs.push(e),
    context: { tenantId: 'ten_w', sessionId: 'sesn_w' },
  });
  denyProxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    policy: hostPolicy({ allowlist: ['docs.example.com'], denylist: ['127.0.0.1'] }),
    egress: opened,
    log: (e) => denyLogs.push(e),
    context: { tenantId: 'ten_w', sessionId: 'sesn_w' },
  });
});

afterAll(async () => {
  await proxy?.close();
  await denyProxy?.close();
  for (const s of [origin, secure, search]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const textOf = (r: { content: Array<{ text: string }> }) => r.content.map((c) => c.text).join('');

describe('htmlToText', () => {
  it('drops scripts, styles and comments and decodes entities', () => {
    const { title, text } = htmlToText(PAGE);
    expect(title).toBe('Test & Page');
    expect(text).toContain('Hello World');
    expect(text).toContain('First paragraph with a link <tag> — ☺.');
    expect(text).toMatch(/- one\n+- two/);
    for (const gone of ['do-not-show', 'color: red', 'a comment', 'enable js', '<h1>', '&nbsp;'])
      expect(text).not.toContain(gone);
  });
});

describe('webFetch through the session proxy', () => {
  it('fetches an HTML page as readable text, through the proxy', async () => {
    const before = logs.length;
    const r = await webFetch({ url: `${base}/page.html` }, { proxy: proxy.address });
    expect(r.is_error).toBe(false);
    const t = textOf(r);
    expect(t).toContain(`URL: ${base}/page.html`);
    expect(t).toContain('Status: 200');
    expect(t).toContain('Title: Test & Page');
    expect(t).toContain('Hello World');
    expect(t).not.toContain('do-not-show');
    expect(t).not.toContain('<p>');
    await expect.poll(() => logs.length).toBe(before + 1);
    expect(logs.at(-1)).toMatchObject({
      method: 'GET',
      host: '127.0.0.1',
      path: '/page.html',
      status: 200,
      allowed: true,
      session_id: 'sesn_w',
    });
  });

  it('decompresses, follows redirects through the proxy and returns JSON as text', async () => {
    expect(textOf(await webFetch({ url: `${base}/gz.html` }, { proxy: proxy.address }))).toContain(
      'Hello World',
    );
    const before = logs.length;
    const red = await webFetch({ url: `${base}/redirect` }, { proxy: proxy.address });
    expect(red.is_error).toBe(false);
    expect(textOf(red)).toContain(`URL: ${base}/page.html`);
    await expect.poll(() => logs.length).toBe(before + 2); // both hops went through the proxy
    const json = await webFetch({ url: `${base}/data.json` }, { proxy: proxy.address });
    expect(textOf(json)).toContain('{"a":1,"b":[1,2]}');
    const loop = await webFetch({ url: `${base}/loop` }, { proxy: proxy.address, maxRedirects: 2 });
    expect(loop.is_error).toBe(true);
    expect(textOf(loop)).toContain('too many redirects');
  });

  it('fetches https through a CONNECT tunnel with TLS verified end to end', async () => {
    const before = logs.length;
    const r = await webFetch(
      { url: `${secureBase}/page.html` },
      { proxy: proxy.address, ca: TEST_CERT },
    );
    expect(r.is_error).toBe(false);
    expect(textOf(r)).toContain('Hello World');
    await expect.poll(() => logs.length).toBe(before + 1);
    expect(logs.at(-1)).toMatchObject({
      method: 'CONNECT',
      host: '127.0.0.1',
      path: null,
      status: 200,
      allowed: true,
    });
    // Without trusting the test certificate, verification fails: no silent insecure fallback.
    const untrusted = await webFetch({ url: `${secureBase}/page.html` }, { proxy: proxy.address });
    expect(untrusted.is_error).toBe(true);
    expect(textOf(untrusted)).toMatch(/TLS|certificate/i);
  });

  it('caps the size of what it returns', async () => {
    const r = await webFetch({ url: `${base}/big.txt`, max_bytes: 1000 }, { proxy: proxy.address });
    expect(r.is_error).toBe(false);
    const t = textOf(r);
    expect(t).toContain('[truncated');
    expect(t.length).toBeLessThan(1300);
    const def = textOf(await webFetch({ url: `${base}/big.txt` }, { proxy: proxy.address }));
    expect(def.length).toBeLessThan(101_000);
    expect(def).toContain('[truncated');
  });

  it('returns an error result for a host the policy refuses (http and https)', async () => {
    const r = await webFetch({ url: `${base}/page.html` }, { proxy: denyProxy.address });
    expect(r.is_error).toBe(true);
    expect(textOf(r)).toContain('refused');
    expect(textOf(r)).toContain('127.0.0.1');
    const s = await webFetch(
      { url: `${secureBase}/page.html` },
      { proxy: denyProxy.address, ca: TEST_CERT },
    );
    expect(s.is_error).toBe(true);
    expect(textOf(s)).toContain('refused');
    await expect.poll(() => denyLogs.length).toBe(2);
    expect(denyLogs.every((l) => !l.allowed && l.status === 403)).toBe(true);
  });

  it('refuses non-http(s) URLs and bad input, and marks binary and error statuses', async () => {
    for (const url of [
      'file:///etc/passwd',
      'ftp://127.0.0.1/x',
      'javascript:alert(1)',
      'not a url',
      '',
    ]) {
      const r = await webFetch({ url }, { proxy: proxy.address });
      expect(r.is_error, url).toBe(true);
    }
    expect(
      textOf(await webFetch({ url: 'file:///etc/passwd' }, { proxy: proxy.address })),
    ).toContain('only http and https');
    const bin = await webFetch({ url: `${base}/image.png` }, { proxy: proxy.address });
    expect(bin.is_error).toBe(true);
    expect(textOf(bin)).toContain('binary content');
    const missing = await webFetch({ url: `${base}/missing` }, { proxy: proxy.address });
    expect(missing.is_error).toBe(true);
    expect(textOf(missing)).toContain('Status: 404');
    expect(textOf(missing)).toContain('not here');
  });

  it('reports an unreachable proxy as an error result', async () => {
    const r = await webFetch(
      { url: `${base}/page.html` },
      { proxy: 'http://127.0.0.1:1', timeoutMs: 2000 },
    );
    expect(r.is_error).toBe(true);
    expect(textOf(r)).toContain('failed');
  });
});

describe('web tools: egress policy', () => {
  it('web_fetch to loopback is refused whatever the allowlist says, before any connection (http, https, by name)', async () => {
    const logs: ProxyLogEntry[] = [];
    // The environment allow-lists loopback; the operator opened nothing.
    const strict = await createOutboundProxy({
      listen: { host: '127.0.0.1', port: 0 },
      policy: hostPolicy({ allowlist: ['127.0.0.1', 'localhost'] }),
      log: (e) => logs.push(e),
      context: { tenantId: 'ten_w', sessionId: 'sesn_w' },
    });
    try {
      const hitsBefore = originHits.length;
      const port = new URL(base).port;
      for (const url of [
        `${base}/page.html`,
        `http://localhost:${port}/page.html`,
        `${secureBase}/page.html`,
      ]) {
        const r = await webFetch({ url }, { proxy: strict.address, ca: TEST_CERT });
        expect(r.is_error, url).toBe(true);
        expect(textOf(r), url).toContain('web_fetch refused');
      }
      expect(originHits.length).toBe(hitsBefore);
      await expect.poll(() => logs.length).toBe(3);
      expect(logs.every((l) => l.reason === 'private_address' && l.status === 403)).toBe(true);
    } finally {
      await strict.close();
    }
  });

  it('checks every redirect hop: an opened origin cannot redirect into metadata or loopback', async () => {
    for (const path of ['/to-metadata', '/to-loopback']) {
      const r = await webFetch({ url: `${base}${path}` }, { proxy: proxy.address });
      expect(r.is_error, path).toBe(true);
      expect(textOf(r), path).toContain('web_fetch refused');
    }
  });

  it('a direct request (web_search without a proxy) goes through the egress policy too', async () => {
    const seenBefore = searchSeen.length;
    const r = await webSearch(
      { query: 'x' },
      { backend: { url: `${searchBase}/search`, apiKey: 'good-key' } },
    );
    expect(r.is_error).toBe(true);
    expect(textOf(r)).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
    expect(textOf(r)).not.toContain('good-key');
    expect(searchSeen.length).toBe(seenBefore);
  });
});

describe('webSearch', () => {
  it('without a backend returns a clear error result', async () => {
    const r = await webSearch({ query: 'anything' }, {});
    expect(r).toEqual({
      content: [{ type: 'text', text: WEB_SEARCH_NOT_CONFIGURED }],
      is_error: true,
    });
    expect(WEB_SEARCH_NOT_CONFIGURED).toBe(
      'web_search is not configured: set WEB_SEARCH_URL and WEB_SEARCH_API_KEY',
    );
    expect((await webSearch({ query: 'x' }, { backend: null })).is_error).toBe(true);
  });

  it('queries a generic JSON backend and formats the results', async () => {
    const r = await webSearch(
      { query: 'vitest proxies' },
      {
        backend: { url: `${searchBase}/search`, apiKey: 'good-key' },
        maxResults: 3,
        egress: opened,
      },
    );
    expect(r.is_error).toBe(false);
    const t = textOf(r);
    expect(t).toContain('Search results for "vitest proxies"');
    expect(t).toContain('1. Result one for vitest proxies');
    expect(t).toContain('https://one.example/a');
    expect(t).toContain('first snippet');
    expect(t).toContain('2. Result two');
    expect(t).toContain('https://two.example/b');
    expect(t).not.toContain('skipped');
    const req = new URL(searchSeen.at(-1)!.url, 'http://x');
    expect(req.searchParams.get('q')).toBe('vitest proxies');
    expect(req.searchParams.get('count')).toBe('3');
  });

  it('speaks the Brave flavour', async () => {
    const r = await webSearch(
      { query: 'q1' },
      {
        backend: { url: `${searchBase}/brave`, apiKey: 'brave-key', flavor: 'brave' },
        egress: opened,
      },
    );
    expect(r.is_error).toBe(false);
    expect(textOf(r)).toContain('Brave q1');
    expect(textOf(r)).toContain('A bold snippet & more');
  });

  it('reports no results, a rejected key and bad input as results, never throwing', async () => {
    const none = await webSearch(
      { query: 'nothing' },
      { backend: { url: `${searchBase}/search`, apiKey: 'good-key' }, egress: opened },
    );
    expect(none).toMatchObject({ is_error: false });
    expect(textOf(none)).toContain('No results');
    const bad = await webSearch(
      { query: 'x' },
      { backend: { url: `${searchBase}/search`, apiKey: 'wrong-key' }, egress: opened },
    );
    expect(bad.is_error).toBe(true);
    expect(textOf(bad)).toContain('rejected the API key');
    expect(textOf(bad)).not.toContain('wrong-key');
    expect(
      (
        await webSearch(
          { query: '   ' },
          { backend: { url: `${searchBase}/search`, apiKey: 'good-key' }, egress: opened },
        )
      ).is_error,
    ).toBe(true);
    expect(
      (await webSearch({ query: 'x' }, { backend: { url: 'not a url', apiKey: 'k' } })).is_error,
    ).toBe(true);
    expect(
      (
        await webSearch(undefined as unknown as { query: string }, {
          backend: { url: `${searchBase}/search`, apiKey: 'good-key' },
          egress: opened,
        })
      ).is_error,
    ).toBe(true);
  });

  it('goes through the session proxy when one is given, without logging the key or query', async () => {
    const before = logs.length;
    const r = await webSearch(
      { query: 'private words' },
      { backend: { url: `${searchBase}/search`, apiKey: 'good-key' }, proxy: proxy.address },
    );
    expect(r.is_error).toBe(false);
    await expect.poll(() => logs.length).toBe(before + 1);
    expect(logs.at(-1)).toMatchObject({ path: '/search?q&count', allowed: true });
    expect(JSON.stringify(logs)).not.toContain('good-key');
    expect(JSON.stringify(logs)).not.toContain('private');
    const refused = await webSearch(
      { query: 'x' },
      { backend: { url: `${searchBase}/search`, apiKey: 'good-key' }, proxy: denyProxy.address },
    );
    expect(refused.is_error).toBe(true);
    expect(textOf(refused)).toContain('refused');
  });

  it('gets its backend from the config (WEB_SEARCH_URL / WEB_SEARCH_API_KEY / WEB_SEARCH_FLAVOR), every problem listed', () => {
    const base = { DATA_DIR: '/tmp/agentfleet-web-config-test' };
    expect(loadConfig('all', base).sandbox.webSearch).toBeNull();
    expect(
      loadConfig('all', {
        ...base,
        WEB_SEARCH_URL: 'https://s.example/api',
        WEB_SEARCH_API_KEY: 'k',
        WEB_SEARCH_FLAVOR: 'brave',
      }).sandbox.webSearch,
    ).toEqual({ url: 'https://s.example/api', apiKey: 'k', flavor: 'brave' });
    expect(() =>
      loadConfig('all', { ...base, WEB_SEARCH_URL: 'ftp://s.example', WEB_SEARCH_FLAVOR: 'bing' }),
    ).toThrow(
      /WEB_SEARCH_URL must be an http\(s\) URL[\s\S]*WEB_SEARCH_URL needs WEB_SEARCH_API_KEY[\s\S]*WEB_SEARCH_FLAVOR must be 'brave' or 'generic'/,
    );
  });
});
