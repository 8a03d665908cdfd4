/**
 * The web_fetch / web_search settings of the built-in toolset take effect or are refused:
 * through the official TypeScript SDK against an in-process platform, a
 * scripted model calling the tools, and local 127.0.0.1 fixtures (a web site and a generic
 * search backend) that count every request they get. A refused URL is proved never requested,
 * including a redirect into a refused domain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, say, untilIdle, userMessage } from '../../kit/turnHelpers.js';

const MODEL = 'web-options-model';
const TOOLSET = 'agent_toolset_20260401';

const listen = (s: Server) =>
  new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as any).port)));
const close = (s: Server) => {
  s.closeAllConnections();
  return new Promise<void>((r) => s.close(() => r()));
};

let t: TestPlatform;
let envId: string;
/** The web site: every path requested, in order. */
const siteHits: string[] = [];
let sitePort = 0;
const site = createServer((req, res) => {
  siteHits.push(req.url!);
  if (req.url === '/redirect-to-ip') {
    res.writeHead(302, { location: `http://127.0.0.1:${sitePort}/target` });
    return res.end();
  }
  if (req.url === '/long') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    return res.end(`${'A'.repeat(100)}${'B'.repeat(900)}`);
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<html><body><p>page ${req.url}</p></body></html>`);
});
/** The search backend (generic flavour): each request's query parameters, in order. */
const searches: URLSearchParams[] = [];
let searchHitUrls: string[] = [];
const search = createServer((req, res) => {
  searches.push(new URL(req.url!, 'http://x').searchParams);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      results: searchHitUrls.map((url, i) => ({ title: `hit ${i}`, url, snippet: 's' })),
    }),
  );
});

beforeAll(async () => {
  sitePort = await listen(site);
  const searchPort = await listen(search);
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${sitePort},127.0.0.1:${searchPort}`,
      WEB_SEARCH_URL: `http://127.0.0.1:${searchPort}/search`,
      WEB_SEARCH_API_KEY: 'search-key',
      WEB_SEARCH_FLAVOR: 'generic',
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'web' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await close(site);
  await close(search);
});

const agentWith = (configs: unknown[], extra: unknown[] = []) =>
  t.client.beta.agents.create({
    name: 'web',
    model: MODEL,
    tools: [{ type: TOOLSET, configs }, ...extra] as any,
  });

/** Runs one turn (a user message, or the given events) and returns the tool results in order. */
async function turn(sid: string, events?: any[]) {
  const seen = await untilIdle(t.client, sid, events ?? [userMessage('go')]);
  const results = seen
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => ({ text: e.content[0].text as string, is_error: e.is_error as boolean }));
  return { seen, results };
}

async function sessionFor(configs: unknown[], extra: unknown[] = []) {
  const agent = await agentWith(configs, extra);
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
}

/** The 400 an SDK call fails with: its message names `field`. */
async function refused(p: Promise<unknown>, field: string) {
  const err: any = await p.then(
    () => null,
    (e) => e,
  );
  expect(err, `expected a 400 naming ${field}`).not.toBeNull();
  expect(err.status).toBe(400);
  expect(err.error.error.message).toContain(field);
  return err.error.error.message as string;
}

describe('validation at agent create', () => {
  const f = (name: string, settings: Record<string, unknown>) => [{ name, ...settings }];
  it('domain lists: both set, empty, too long, not a plain hostname → 400 naming the field', async () => {
    await refused(
      agentWith(f('web_fetch', { allowed_domains: ['a.com'], blocked_domains: ['b.com'] })),
      'tools[0].configs[0].blocked_domains',
    );
    await refused(
      agentWith(f('web_search', { allowed_domains: [] })),
      'tools[0].configs[0].allowed_domains',
    );
    const many = Array.from({ length: 65 }, (_, i) => `d${i}.com`);
    await refused(agentWith(f('web_fetch', { blocked_domains: many })), 'blocked_domains');
    for (const bad of ['https://a.com', 'a.com:8080', 'a b.com', '*.a.com'])
      await refused(
        agentWith(f('web_fetch', { allowed_domains: ['ok.com', bad] })),
        'tools[0].configs[0].allowed_domains[1]',
      );
    // web_fetch takes no path; web_search accepts a path suffix.
    await refused(
      agentWith(f('web_fetch', { allowed_domains: ['a.com/docs'] })),
      'allowed_domains[0]',
    );
    const ok = await agentWith(f('web_search', { allowed_domains: ['a.com/docs'] }));
    expect((ok.tools[0] as any).configs[0].allowed_domains).toEqual(['a.com/docs']);
  });

  it('max_content_tokens, user_location and unknown settings (max_uses, citations) → 400 naming the field', async () => {
    for (const v of [0, -1, 1.5, 'ten'])
      await refused(
        agentWith(f('web_fetch', { max_content_tokens: v })),
        'tools[0].configs[0].max_content_tokens',
      );
    await refused(
      agentWith(f('web_search', { user_location: { type: 'exact', city: 'Oslo' } })),
      'user_location.type',
    );
    await refused(
      agentWith(f('web_search', { user_location: { type: 'approximate', country: 'no' } })),
      'user_location.country',
    );
    await refused(
      agentWith(f('web_search', { user_location: { type: 'approximate', timezone: 'Mars/Base' } })),
      'user_location.timezone',
    );
    await refused(agentWith(f('web_search', { max_uses: 3 })), 'tools[0].configs[0].max_uses');
    await refused(
      agentWith(f('web_fetch', { citations: { enabled: true } })),
      'tools[0].configs[0].citations',
    );
    await refused(agentWith(f('web_fetch', { user_location: null })), 'user_location');
    await refused(agentWith(f('bash', { allowed_domains: ['a.com'] })), 'allowed_domains');
  });

  it('url_sources: shorthands served in object form; bad lists and all-"none" → 400', async () => {
    const lookup = {
      type: 'custom',
      name: 'lookup',
      description: 'd',
      input_schema: { type: 'object' },
    };
    const agent = await agentWith(
      f('web_fetch', {
        url_sources: {
          user_input: 'none',
          client_tool_results: {
            type: 'only',
            tools: [{ type: 'tool_reference', name: 'lookup' }],
          },
        },
      }),
      [lookup],
    );
    expect((agent.tools[0] as any).configs[0].url_sources).toEqual({
      user_input: { type: 'none' },
      client_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'lookup' }] },
      server_tool_results: null,
    });
    // The served tools sent back unchanged are accepted as they are (no new version).
    const same = await t.client.beta.agents.update(agent.id, {
      version: agent.version,
      tools: agent.tools as any,
    });
    expect(same.version).toBe(agent.version);
    expect(same.tools).toEqual(agent.tools);
    const all = await agentWith(f('web_fetch', {}));
    expect((all.tools[0] as any).configs[0].url_sources).toBeNull();
    const src = (url_sources: unknown) => agentWith(f('web_fetch', { url_sources }), [lookup]);
    await refused(
      src({ user_input: 'none', client_tool_results: 'none', server_tool_results: 'none' }),
      'tools[0].configs[0].url_sources',
    );
    await refused(
      src({ client_tool_results: { type: 'only', tools: [{ name: 'nope' }] } }),
      'url_sources.client_tool_results.tools[0].name',
    );
    await refused(
      src({ server_tool_results: { type: 'except', tools: [{ name: 'bash' }] } }),
      'url_sources.server_tool_results.tools[0].name',
    );
    await refused(
      src({ server_tool_results: { type: 'only', tools: [] } }),
      'url_sources.server_tool_results.tools',
    );
    await refused(
      src({ user_input: { type: 'only', tools: [{ name: 'lookup' }] } }),
      'url_sources.user_input.type',
    );
    await refused(src({ everything: 'all' }), 'url_sources.everything');
  });

  it('agent_with_overrides tools are validated the same way', async () => {
    const agent = await agentWith([]);
    const message = await refused(
      t.client.beta.sessions.create({
        environment_id: envId,
        agent: {
          type: 'agent_with_overrides',
          id: agent.id,
          tools: [{ type: TOOLSET, configs: [{ name: 'web_fetch', max_uses: 2 }] }],
        } as any,
      }),
      'configs[0].max_uses',
    );
    expect(message).toContain('not supported');
  });
});

describe('web_fetch', () => {
  it('allowed_domains: other hosts and a redirect out of the list are refused, naming the domain, never requested', async () => {
    const sid = await sessionFor([{ name: 'web_fetch', allowed_domains: ['localhost'] }]);
    t.model.script(
      MODEL,
      call('web_fetch', { url: `http://localhost:${sitePort}/allowed` }),
      call('web_fetch', { url: `http://127.0.0.1:${sitePort}/by-ip` }),
      call('web_fetch', { url: `http://localhost:${sitePort}/redirect-to-ip` }),
      say('done'),
    );
    siteHits.length = 0;
    const { results } = await turn(sid);
    expect(results[0]!.is_error).toBe(false);
    expect(results[0]!.text).toContain('page /allowed');
    expect(results[1]!.is_error).toBe(true);
    expect(results[1]!.text).toContain(
      "the domain 127.0.0.1 is not in this tool's allowed_domains",
    );
    expect(results[2]!.is_error).toBe(true);
    expect(results[2]!.text).toContain(`redirect to http://127.0.0.1:${sitePort}/target refused`);
    expect(results[2]!.text).toContain('127.0.0.1');
    // The redirecting page was requested; neither refused URL was.
    expect(siteHits).toEqual(['/allowed', '/redirect-to-ip']);
    // The model was told the limit in the tool's description.
    const offered = (t.model.requests.at(-1)!.body as any).tools.find(
      (x: any) => x.name === 'web_fetch',
    );
    expect(offered.description).toContain('Only these domains and their subdomains: localhost.');
  });

  it('blocked_domains: the domain and its subdomains are refused (also after a redirect), other hosts are not', async () => {
    const sid = await sessionFor([
      { name: 'web_fetch', blocked_domains: ['127.0.0.1', 'example.test'] },
    ]);
    t.model.script(
      MODEL,
      call('web_fetch', { url: `http://localhost:${sitePort}/fine` }),
      call('web_fetch', { url: `http://localhost:${sitePort}/redirect-to-ip` }),
      call('web_fetch', { url: 'http://deep.sub.example.test/x' }),
      call('web_fetch', { url: 'http://notexample.test/x' }),
      say('done'),
    );
    siteHits.length = 0;
    const { results } = await turn(sid);
    expect(results[0]).toMatchObject({ is_error: false });
    expect(results[0]!.text).toContain('page /fine');
    expect(results[1]!.is_error).toBe(true);
    expect(results[1]!.text).toContain(
      "the domain 127.0.0.1 is blocked by this tool's blocked_domains",
    );
    expect(results[2]!.is_error).toBe(true);
    expect(results[2]!.text).toContain(
      "the domain deep.sub.example.test is blocked by this tool's blocked_domains",
    );
    // Not a subdomain of example.test: not refused by the filter (it fails later: no such host).
    expect(results[3]!.is_error).toBe(true);
    expect(results[3]!.text).not.toContain('blocked_domains');
    expect(siteHits).toEqual(['/fine', '/redirect-to-ip']);
  });

  it('max_content_tokens cuts the fetched text at 4 characters a token and says so', async () => {
    const sid = await sessionFor([{ name: 'web_fetch', max_content_tokens: 10 }]);
    t.model.script(
      MODEL,
      call('web_fetch', { url: `http://localhost:${sitePort}/long` }),
      say('ok'),
    );
    const { results } = await turn(sid);
    expect(results[0]!.is_error).toBe(false);
    const body = results[0]!.text.split('\n\n')[1]!;
    expect(body).toBe('A'.repeat(40));
    expect(results[0]!.text).toContain(
      '[truncated: content exceeded max_content_tokens (10 tokens',
    );
    // Without the setting the whole text comes back.
    const whole = await sessionFor([{ name: 'web_fetch' }]);
    t.model.script(
      MODEL,
      call('web_fetch', { url: `http://localhost:${sitePort}/long` }),
      say('ok'),
    );
    const r2 = await turn(whole);
    expect(r2.results[0]!.text).toContain('B'.repeat(900));
  });
});

describe('web_search', () => {
  it('allowed_domains keeps only hits on the domain or its subdomains; blocked_domains with a path drops only that path', async () => {
    searchHitUrls = [
      'https://docs.example.com/a',
      'https://api.docs.example.com/b',
      'https://evil-docs.example.com/c',
      'https://example.com/d',
    ];
    const sid = await sessionFor([{ name: 'web_search', allowed_domains: ['docs.example.com'] }]);
    t.model.script(MODEL, call('web_search', { query: 'docs' }), say('ok'));
    const { results } = await turn(sid);
    expect(results[0]!.is_error).toBe(false);
    expect(results[0]!.text).toContain('https://docs.example.com/a');
    expect(results[0]!.text).toContain('https://api.docs.example.com/b');
    expect(results[0]!.text).not.toContain('evil-docs');
    expect(results[0]!.text).not.toContain('https://example.com/d');

    searchHitUrls = [
      'https://news.test/ads/1',
      'https://news.test/adsense',
      'https://news.test/blog',
    ];
    const sid2 = await sessionFor([{ name: 'web_search', blocked_domains: ['news.test/ads'] }]);
    t.model.script(MODEL, call('web_search', { query: 'news' }), say('ok'));
    const r2 = await turn(sid2);
    expect(r2.results[0]!.text).not.toContain('https://news.test/ads/1');
    expect(r2.results[0]!.text).toContain('https://news.test/adsense');
    expect(r2.results[0]!.text).toContain('https://news.test/blog');
  });

  it('user_location reaches the search backend', async () => {
    searchHitUrls = ['https://example.com/'];
    const sid = await sessionFor([
      {
        name: 'web_search',
        user_location: {
          type: 'approximate',
          city: 'Oslo',
          region: 'Oslo',
          country: 'NO',
          timezone: 'Europe/Oslo',
        },
      },
    ]);
    t.model.script(MODEL, call('web_search', { query: 'weather' }), say('ok'));
    searches.length = 0;
    await turn(sid);
    expect(searches).toHaveLength(1);
    const q = searches[0]!;
    expect([
      q.get('q'),
      q.get('country'),
      q.get('region'),
      q.get('city'),
      q.get('timezone'),
    ]).toEqual(['weather', 'NO', 'Oslo', 'Oslo', 'Europe/Oslo']);
  });
});

describe('url_sources', () => {
  it('fetches only URLs the conversation showed from allowed sources', async () => {
    const base = `http://localhost:${sitePort}`;
    const lookup = {
      type: 'custom',
      name: 'lookup',
      description: 'looks up a link',
      input_schema: { type: 'object', properties: {} },
    };
    const sid = await sessionFor(
      [
        {
          name: 'web_fetch',
          url_sources: {
            user_input: 'none',
            client_tool_results: {
              type: 'only',
              tools: [{ type: 'tool_reference', name: 'lookup' }],
            },
            server_tool_results: {
              type: 'only',
              tools: [{ type: 'tool_reference', name: 'web_search' }],
            },
          },
        },
      ],
      [lookup],
    );
    searchHitUrls = [`${base}/from-search`];
    t.model.script(
      MODEL,
      call('web_fetch', { url: `${base}/from-user` }),
      call('web_search', { query: 'links' }),
      call('web_fetch', { url: `${base}/from-search#part` }),
      call('web_fetch', { url: `${base}/never-shown` }),
      call('lookup', {}),
      call('web_fetch', { url: `${base}/from-client-tool` }),
      say('done'),
    );
    siteHits.length = 0;
    const first = await turn(sid, [
      { type: 'user.message', content: [{ type: 'text', text: `read ${base}/from-user please` }] },
    ]);
    const r = first.results;
    expect(r[0]!.is_error).toBe(true);
    expect(r[0]!.text).toContain('url_sources');
    expect(r[1]!.text).toContain(`${base}/from-search`); // the search result
    expect(r[2]).toMatchObject({ is_error: false });
    expect(r[2]!.text).toContain('page /from-search');
    expect(r[3]!.is_error).toBe(true);
    expect(r[3]!.text).toContain('has not appeared in the conversation');
    const use = first.seen.find((e) => e.type === 'agent.custom_tool_use');
    expect(first.seen.at(-1).stop_reason.type).toBe('requires_action');
    const second = await turn(sid, [
      {
        type: 'user.custom_tool_result',
        custom_tool_use_id: use.id,
        content: [{ type: 'text', text: `see ${base}/from-client-tool.` }],
      },
    ]);
    expect(second.results[0]).toMatchObject({ is_error: false });
    expect(second.results[0]!.text).toContain('page /from-client-tool');
    expect(siteHits).toEqual(['/from-search', '/from-client-tool']);
  });
});
