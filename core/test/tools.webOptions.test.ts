/**
 * The web tools' settings, below the platform: the domain matching rules (webDomains.ts), the
 * url_sources collection over an event log (webUrlSources.ts) and user_location as the Brave
 * flavour sends it (webSearch.ts, against a local backend). The same settings end to end, through
 * the SDK: test/e2e/sandbox/web-tool-options.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressPolicy } from '../src/egress/policy.js';
import { domainRefusal, urlPassesFilter } from '../src/tools/webDomains.js';
import { allowedConversationUrls, urlSourceRefusal } from '../src/tools/webUrlSources.js';
import { webSearch } from '../src/tools/web.js';

const refusal = (url: string, f: Parameters<typeof domainRefusal>[1]) =>
  domainRefusal(new URL(url), f);

describe('domain filters', () => {
  it('an entry matches itself and its subdomains only, without case or trailing dot', () => {
    const allow = { allowedDomains: ['Docs.Example.com'] };
    expect(refusal('https://docs.example.com/x', allow)).toBeNull();
    expect(refusal('https://a.b.DOCS.example.com./x', allow)).toBeNull();
    expect(refusal('https://evil-docs.example.com/', allow)).toContain('evil-docs.example.com');
    expect(refusal('https://example.com/', allow)).toContain("not in this tool's allowed_domains");
    expect(refusal('https://docs.example.com.evil.test/', allow)).not.toBeNull();
    const block = { blockedDomains: ['example.com'] };
    expect(refusal('http://www.example.com/', block)).toContain(
      "the domain www.example.com is blocked by this tool's blocked_domains",
    );
    expect(refusal('http://example.community/', block)).toBeNull();
  });

  it('IP literals match only themselves; no filter refuses nothing', () => {
    expect(refusal('http://127.0.0.1:8080/', { allowedDomains: ['127.0.0.1'] })).toBeNull();
    expect(refusal('http://127.0.0.10/', { allowedDomains: ['127.0.0.1'] })).toContain(
      'the domain 127.0.0.10 is not',
    );
    expect(refusal('http://anything.test/', undefined)).toBeNull();
    expect(refusal('http://anything.test/', {})).toBeNull();
  });

  it('a web_search entry with a path suffix matches that path on a segment boundary', () => {
    const f = { blockedDomains: ['news.test/ads'] };
    expect(urlPassesFilter('https://news.test/ads', f)).toBe(false);
    expect(urlPassesFilter('https://m.news.test/ads/1', f)).toBe(false);
    expect(urlPassesFilter('https://news.test/adsense', f)).toBe(true);
    expect(urlPassesFilter('https://news.test/', f)).toBe(true);
    expect(urlPassesFilter('not a url', f)).toBe(false);
  });
});

describe('url_sources over the event log', () => {
  const events = [
    {
      _id: 'e1',
      type: 'user.message',
      payload: {
        content: [{ type: 'text', text: 'see https://u.test/a, and (https://u.test/b).' }],
      },
    },
    { _id: 'e2', type: 'agent.tool_use', payload: { name: 'web_search' } },
    {
      _id: 'e3',
      type: 'agent.tool_result',
      payload: {
        tool_use_id: 'e2',
        is_error: false,
        content: [{ type: 'text', text: '1. x\n   https://s.test/hit' }],
      },
    },
    { _id: 'e4', type: 'agent.tool_use', payload: { name: 'bash' } },
    {
      _id: 'e5',
      type: 'agent.tool_result',
      payload: {
        tool_use_id: 'e4',
        is_error: false,
        content: [{ type: 'text', text: 'https://bash.test/' }],
      },
    },
    { _id: 'e6', type: 'agent.custom_tool_use', payload: { name: 'lookup' } },
    {
      _id: 'e7',
      type: 'user.custom_tool_result',
      payload: { custom_tool_use_id: 'e6', content: [{ type: 'text', text: 'https://c.test/x' }] },
    },
    { _id: 'e8', type: 'agent.custom_tool_use', payload: { name: 'other' } },
    {
      _id: 'e9',
      type: 'user.custom_tool_result',
      payload: { custom_tool_use_id: 'e8', content: [{ type: 'text', text: 'https://o.test/y' }] },
    },
  ];
  const everything = { user_input: null, client_tool_results: null, server_tool_results: null };

  it('collects the URLs each source allows; other tools never contribute', () => {
    expect([...allowedConversationUrls(everything, events)].sort()).toEqual([
      'https://c.test/x',
      'https://o.test/y',
      'https://s.test/hit',
      'https://u.test/a',
      'https://u.test/b',
    ]);
    const narrowed = allowedConversationUrls(
      {
        user_input: { type: 'none' },
        client_tool_results: { type: 'except', tools: [{ name: 'other' }] },
        server_tool_results: 'none',
      },
      events,
    );
    expect([...narrowed]).toEqual(['https://c.test/x']);
  });

  it('null url_sources refuses nothing; set, it compares without fragment or trailing slash', () => {
    expect(urlSourceRefusal('https://never.test/', null, events)).toBeNull();
    expect(urlSourceRefusal('https://u.test/a/#top', everything, events)).toBeNull();
    expect(urlSourceRefusal('https://u.test/c', everything, events)).toContain(
      'has not appeared in the conversation',
    );
  });
});

describe('user_location, Brave flavour', () => {
  let server: http.Server;
  let base = '';
  const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url!, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ web: { results: [{ title: 't', url: 'https://a.test/' }] } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('country as a query parameter and the X-Loc-* headers; a non-Latin-1 value is left out', async () => {
    const r = await webSearch(
      { query: 'weather' },
      {
        backend: { url: `${base}/res/v1/web/search`, apiKey: 'k', flavor: 'brave' },
        egress: createEgressPolicy({ allowPrivateHosts: [new URL(base).host] }),
        userLocation: {
          type: 'approximate',
          country: 'JP',
          region: 'Tokyo',
          city: '東京',
          timezone: 'Asia/Tokyo',
        },
      },
    );
    expect(r.is_error).toBe(false);
    const got = seen.at(-1)!;
    expect(new URL(got.url, base).searchParams.get('country')).toBe('JP');
    expect(got.headers['x-loc-country']).toBe('JP');
    expect(got.headers['x-loc-state-name']).toBe('Tokyo');
    expect(got.headers['x-loc-timezone']).toBe('Asia/Tokyo');
    expect(got.headers['x-loc-city']).toBeUndefined();
  });
});
