/**
 * The GitHub adapter (core/src/integrations/providers/github.ts) against the GitHub App
 * fixture (test/kit/fixtures/githubIntegration.ts) over real HTTPS, through the egress policy
 * the platform uses: install by OAuth, installation tokens, replies, revoke, webhook
 * signatures and event parsing.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  installationDeletedPayload,
  issueCommentPayload,
  issuesPayload,
  pullRequestPayload,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../test/kit/fixtures/githubIntegration.js';
import { createEgressPolicy, egressFetch } from '../src/egress/index.js';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type GithubSettings,
  type InstallCredentials,
} from '../src/integrations/port.js';
import { GithubProvider } from '../src/integrations/providers/github.js';

const REDIRECT = 'https://agentfleet.example/integrations/github/callback';

let fx: GithubIntegrationFixture;
let fetcher: ReturnType<typeof egressFetch>;

beforeAll(async () => {
  fx = await startGithubIntegration();
  fetcher = egressFetch(createEgressPolicy({ allowPrivateHosts: [new URL(fx.url).host] }), {
    ca: readFileSync(fx.certFile),
  });
});
afterAll(async () => {
  await fetcher.close();
  await fx.close();
});

const settings = (): GithubSettings => ({
  appId: fx.appId,
  privateKey: fx.privateKeyPem,
  clientId: fx.clientId,
  clientSecret: fx.clientSecret,
  webhookSecret: fx.webhookSecret,
  apiUrl: fx.apiUrl,
  webUrl: fx.url,
});
const provider = (over: Partial<GithubSettings> = {}) =>
  new GithubProvider({ ...settings(), ...over }, { fetch: fetcher, now: () => Date.now() });

/** Runs the user's side of the OAuth flow; the query the callback receives. */
async function authorize(p: GithubProvider, extra: Record<string, string> = {}) {
  const res = await fetcher(p.authorizeUrl({ state: 'st-1', redirectUri: REDIRECT }), {
    redirect: 'manual',
  });
  expect(res.status).toBe(302);
  const back = new URL(res.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  expect(back.searchParams.get('state')).toBe('st-1');
  for (const [k, v] of Object.entries(extra)) back.searchParams.set(k, v);
  return back.searchParams;
}

async function refusal(p: Promise<unknown>): Promise<IntegrationError> {
  const err = await p.then(() => null).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(IntegrationError);
  const message = (err as Error).message;
  for (const secret of [fx.clientSecret, fx.webhookSecret, ...fx.mintedTokens.map((t) => t.token)])
    expect(message).not.toContain(secret);
  return err as IntegrationError;
}

/** An installation at the fixture (of this App unless `appId` is given). */
const inst = (id: number, login: string, accountId: number, appId = Number(fx.appId)) => ({
  id,
  account: { login, id: accountId, type: 'Organization' as const },
  app_id: appId,
});
const completed = (id: string, accountId: string, login: string, type = 'Organization') => ({
  external_id: id,
  account: { id: accountId, name: login },
  access_token: null,
  refresh_token: null,
  expires_at: null,
  scopes: [],
  data: { account_login: login, account_type: type, app_slug: 'agentfleet-fixture' },
});

const install: () => InstallCredentials = () => ({
  external_id: '7001',
  access_token: null,
  refresh_token: null,
  data: { account_login: 'acme', account_type: 'Organization', app_slug: fx.slug },
});

describe('settings', () => {
  it('missingSettings lists exactly the unset names', () => {
    const missing = (over: Partial<GithubSettings>) => provider(over).missingSettings();
    expect(missing({})).toEqual([]);
    expect(missing({ privateKey: null, webhookSecret: null })).toEqual([
      'GITHUB_APP_PRIVATE_KEY',
      'GITHUB_WEBHOOK_SECRET',
    ]);
    expect(missing({ appId: null, clientId: null, clientSecret: null })).toEqual([
      'GITHUB_APP_ID',
      'GITHUB_CLIENT_ID',
      'GITHUB_CLIENT_SECRET',
    ]);
  });
});

describe('install by OAuth', () => {
  afterEach(() => {
    fx.installations = [inst(7001, 'acme', 501)];
  });

  it('complete returns the installs of this App the user reaches, with app_slug', async () => {
    fx.installations.push(
      { id: 7002, account: { login: 'octocat', id: 1, type: 'User' }, app_id: Number(fx.appId) },
      inst(8001, 'other', 9, 1),
    );
    const p = provider();
    const before = fx.requests.length;
    const installs = await p.complete(await authorize(p), REDIRECT);
    expect(installs).toEqual([
      completed('7001', '501', 'acme'),
      completed('7002', '1', 'octocat', 'User'),
    ]);
    const calls = fx.requests.slice(before).map((r) => `${r.method} ${r.path}`);
    expect(calls).toEqual([
      'GET /login/oauth/authorize',
      'POST /login/oauth/access_token',
      'GET /api/v3/user/installations',
      'GET /api/v3/app',
    ]);
    // the installation list is read with the user's token, /app with the App JWT
    expect(fx.requests.at(-2)!.authorization).toMatch(/^Bearer ghu_/);
    expect(fx.requests.at(-1)!.authorization).toMatch(/^Bearer eyJ/);
  });

  it('the installation flow keeps only the installation_id it names', async () => {
    fx.installations.push(inst(7002, 'octocat', 1));
    const p = provider();
    const q = await authorize(p, { installation_id: '7002', setup_action: 'install' });
    expect((await p.complete(q, REDIRECT)).map((i) => i.external_id)).toEqual(['7002']);
  });

  it('a forged installation_id is refused', async () => {
    fx.installations.push(inst(8001, 'other', 9, 1));
    const p = provider();
    // 8001 is reachable but another App's; 9999 is not reachable at all
    for (const forged of ['8001', '9999']) {
      const err = await refusal(
        p.complete(await authorize(p, { installation_id: forged }), REDIRECT),
      );
      expect(err.message).toBe(
        `GitHub installation ${forged} is not one your GitHub account can reach`,
      );
    }
  });

  it('a reused code is refused', async () => {
    const p = provider();
    const q = await authorize(p);
    await p.complete(q, REDIRECT);
    const err = await refusal(p.complete(q, REDIRECT));
    expect(err.message).toBe(
      'GitHub refused the authorization code: The code passed is incorrect or expired.',
    );
  });

  it('a wrong client secret is refused without showing it', async () => {
    const p = provider({ clientSecret: 'not-the-secret-123' });
    const err = await refusal(p.complete(await authorize(p), REDIRECT));
    expect(err.message).toBe(
      'GitHub refused the authorization code: The client_id and/or client_secret passed are incorrect.',
    );
    expect(err.message).not.toContain('not-the-secret-123');
  });

  it('no installation of this App tells where to install it', async () => {
    fx.installations = [inst(8001, 'other', 9, 1)];
    const p = provider();
    const err = await refusal(p.complete(await authorize(p), REDIRECT));
    expect(err.message).toBe(
      `The GitHub App is not installed on any account you can reach: install it first at ${fx.url}/apps/agentfleet-fixture/installations/new`,
    );
  });

  it('error= and a missing code are refused before any request', async () => {
    const p = provider();
    const before = fx.requests.length;
    const denied = new URLSearchParams({
      error: 'access_denied',
      error_description: 'The user has denied your application access.',
    });
    expect((await refusal(p.complete(denied, REDIRECT))).message).toBe(
      'GitHub refused the authorization: The user has denied your application access.',
    );
    expect((await refusal(p.complete(new URLSearchParams({ state: 'x' }), REDIRECT))).message).toBe(
      'GitHub sent no authorization code',
    );
    expect(fx.requests.length).toBe(before);
  });
});

describe('reply', () => {
  const target = { owner: 'acme', repo: 'widgets', number: '12' };
  const mints = () => fx.mintedTokens.filter((t) => t.installationId === 7001).length;
  afterEach(() => {
    fx.tokenTtlMs = 3_600_000;
  });

  it('mints a token once and reuses it for a second reply', async () => {
    const p = provider();
    const before = mints();
    const commentsBefore = fx.comments.length;
    await p.reply(install(), target, 'first answer');
    await p.reply(install(), target, 'second answer');
    expect(mints() - before).toBe(1);
    const token = fx.mintedTokens.at(-1)!.token;
    expect(fx.comments.slice(commentsBefore)).toEqual([
      { owner: 'acme', repo: 'widgets', number: 12, body: 'first answer', token },
      { owner: 'acme', repo: 'widgets', number: 12, body: 'second answer', token },
    ]);
    const q = provider(); // concurrent replies share one mint
    await Promise.all([q.reply(install(), target, 'x'), q.reply(install(), target, 'y')]);
    expect(mints() - before).toBe(2);
    const mint = fx.requests.find((r) => r.path === '/api/v3/app/installations/7001/access_tokens');
    expect(mint!.authorization).toMatch(/^Bearer eyJ/);
  });

  it('keeps a token with more than 5 minutes left, mints again within 5 minutes of expiry', async () => {
    fx.tokenTtlMs = 6 * 60_000;
    const p = provider();
    let before = mints();
    await p.reply(install(), target, 'a');
    await p.reply(install(), target, 'b');
    expect(mints() - before).toBe(1);

    fx.tokenTtlMs = 4 * 60_000;
    const q = provider();
    before = mints();
    await q.reply(install(), target, 'c');
    await q.reply(install(), target, 'd');
    expect(mints() - before).toBe(2);
    const [t1, t2] = fx.mintedTokens.slice(-2).map((t) => t.token);
    expect(fx.comments.slice(-2).map((c) => c.token)).toEqual([t1, t2]);
  });

  it('a token GitHub no longer accepts (401) is dropped and minted once more', async () => {
    const p = provider();
    await p.reply(install(), target, 'before revocation');
    fx.revokeTokens();
    const before = mints();
    const requestsBefore = fx.requests.length;
    await p.reply(install(), target, 'after revocation');
    expect(mints() - before).toBe(1);
    expect(fx.comments.at(-1)).toMatchObject({
      body: 'after revocation',
      token: fx.mintedTokens.at(-1)!.token,
    });
    expect(fx.requests.slice(requestsBefore).map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /api/v3/repos/acme/widgets/issues/12/comments',
      'POST /api/v3/app/installations/7001/access_tokens',
      'POST /api/v3/repos/acme/widgets/issues/12/comments',
    ]);
  });

  it('an installation GitHub does not know is an IntegrationError with its status', async () => {
    const err = await refusal(provider().reply({ ...install(), external_id: '4242' }, target, 'x'));
    expect(err.status).toBe(404);
    expect(err.message).toBe(
      'GitHub refused minting a token for installation 4242: HTTP 404 (Not Found)',
    );
  });
});

describe('revoke', () => {
  it('deletes the installation at GitHub (PKCS#8 key); its tokens stop working; again is fine', async () => {
    fx.installations.push(inst(7100, 'gone', 600));
    const pkcs8 = createPrivateKey(fx.privateKeyPem).export({ type: 'pkcs8', format: 'pem' });
    expect(pkcs8.toString()).toContain('BEGIN PRIVATE KEY');
    const p = provider({ privateKey: pkcs8.toString() });
    const gone = { ...install(), external_id: '7100' };
    await p.reply(gone, { owner: 'gone', repo: 'r', number: '1' }, 'hello');
    await p.revoke(gone);
    expect(fx.deletedInstallations).toContain(7100);
    expect(fx.installations.some((i) => i.id === 7100)).toBe(false);
    const del = fx.requests.find((r) => r.method === 'DELETE');
    expect(del).toMatchObject({ path: '/api/v3/app/installations/7100' });
    expect(del!.authorization).toMatch(/^Bearer eyJ/);
    await p.revoke(gone); // 404: already gone
    expect(fx.deletedInstallations.filter((i) => i === 7100)).toHaveLength(1);
    const err = await refusal(p.reply(gone, { owner: 'gone', repo: 'r', number: '1' }, 'x'));
    expect(err.status).toBe(404);
  });
});

describe('verify', () => {
  const p = () => provider();
  const payload = () =>
    issueCommentPayload({
      owner: 'acme',
      repo: 'widgets',
      number: 3,
      title: 't',
      body: '@agentfleet-fixture hi',
      user: { login: 'octocat', id: 1 },
      installationId: 7001,
    });

  it("accepts the fixture's signature; refuses a wrong secret, a missing or malformed header, a changed byte", () => {
    const no = (reason: string) => ({ ok: false, reason });
    const wrong = fx.webhook('issue_comment', payload(), { secret: 'not-the-secret' });
    const mismatch = no('X-Hub-Signature-256 does not match the body');
    expect(p().verify(wrong.headers, Buffer.from(wrong.body))).toEqual(mismatch);
    const d = fx.webhook('issue_comment', payload());
    expect(p().verify(d.headers, Buffer.from(d.body))).toEqual({ ok: true });
    const { ['x-hub-signature-256']: _, ...unsigned } = d.headers;
    expect(p().verify(unsigned, Buffer.from(d.body))).toEqual(no('missing X-Hub-Signature-256'));
    const malformed = no('malformed X-Hub-Signature-256');
    for (const signature of ['sha256=ab', `sha1=${'a'.repeat(40)}`, `sha256=${'g'.repeat(64)}`]) {
      const bad = fx.webhook('issue_comment', payload(), { signature });
      expect(p().verify(bad.headers, Buffer.from(bad.body))).toEqual(malformed);
    }
    const raw = Buffer.from(d.body);
    raw[raw.length - 2] ^= 1;
    expect(p().verify(d.headers, raw)).toEqual(mismatch);
    const twice = { 'x-hub-signature-256': [d.headers['x-hub-signature-256']] };
    expect(p().verify(twice, Buffer.from(d.body))).toEqual(malformed);
  });

  it('deliveryId and externalIdOf read the delivery header and installation id', () => {
    const d = fx.webhook('issue_comment', payload(), { deliveryId: 'd-123' });
    expect(p().deliveryId(d.headers, JSON.parse(d.body))).toBe('d-123');
    expect(p().deliveryId({}, {})).toBeNull();
    expect(p().externalIdOf(JSON.parse(d.body))).toBe('7001');
    for (const v of [null, [], 'x', 1, {}, { installation: {} }, { installation: null }])
      expect(p().externalIdOf(v)).toBeNull();
  });
});

describe('parse', () => {
  const base = {
    owner: 'acme',
    repo: 'widgets',
    number: 12,
    title: 'Widgets break on Tuesdays',
    body: 'They do.',
    user: { login: 'octocat', id: 1 },
    installationId: 7001,
    labels: ['bug'],
  };
  const ignored = (reason: string) => ({ kind: 'ignored', reason });
  const parse = (event: string, payload: unknown) =>
    provider().parse({ 'x-github-event': event }, payload, install());
  const thread = {
    key: 'acme/widgets#12',
    title: 'Widgets break on Tuesdays',
    target: { owner: 'acme', repo: 'widgets', number: '12' },
  };

  it('a comment mentioning the App is a mention (issues and PRs)', () => {
    for (const isPullRequest of [false, true]) {
      const payload = issueCommentPayload({
        ...base,
        body: 'Hey @Agentfleet-Fixture, can you look?',
        isPullRequest,
      });
      expect(parse('issue_comment', payload)).toEqual({
        kind: 'event',
        external_id: '7001',
        workspace: { owner: 'acme', repo: 'widgets' },
        trigger: 'mention',
        labels: ['bug'],
        thread,
        text: 'Hey @Agentfleet-Fixture, can you look?',
        author: { id: '1', name: 'octocat' },
        url: payload.comment.html_url,
      });
    }
  });

  it('no whole-word mention is ignored', () => {
    for (const body of ['no mention', 'ask @agentfleet-fixtures', 'mail me@agentfleet-fixture'])
      expect(parse('issue_comment', issueCommentPayload({ ...base, body }))).toEqual(
        ignored('no @agentfleet-fixture mention'),
      );
  });

  it("the App's own comment and other bots' are ignored", () => {
    const own = issueCommentPayload({
      ...base,
      body: '@agentfleet-fixture says hi',
      user: { login: 'agentfleet-fixture[bot]', id: 900, type: 'Bot' },
    });
    expect(parse('issue_comment', own)).toEqual(ignored('sent by a bot'));
    const other = issueCommentPayload({
      ...base,
      body: '@agentfleet-fixture ping',
      user: { login: 'dependabot[bot]', id: 901, type: 'Bot' },
    });
    expect(parse('issue_comment', other)).toEqual(ignored('sent by a bot'));
  });

  it('an issue opened with a mention is a mention with title and body; without, ignored', () => {
    const got = parse(
      'issues',
      issuesPayload('opened', { ...base, body: '@agentfleet-fixture fix it' }),
    );
    expect(got).toMatchObject({
      kind: 'event',
      trigger: 'mention',
      text: 'Widgets break on Tuesdays\n\n@agentfleet-fixture fix it',
      url: 'https://github.example/acme/widgets/issues/12',
      thread,
    });
    expect(parse('issues', issuesPayload('opened', base))).toEqual(
      ignored('no @agentfleet-fixture mention'),
    );
  });

  it('assigning the App is an assignment; assigning someone else is ignored', () => {
    const bot = { login: 'agentfleet-fixture[bot]', id: 900, type: 'Bot' as const };
    expect(parse('issues', issuesPayload('assigned', { ...base, assignee: bot }))).toMatchObject({
      kind: 'event',
      trigger: 'assignment',
      text: 'Widgets break on Tuesdays\n\nThey do.',
      author: { id: '1', name: 'octocat' },
      thread,
    });
    const pr = parse('pull_request', pullRequestPayload('assigned', { ...base, assignee: bot }));
    expect(pr).toMatchObject({
      trigger: 'assignment',
      url: 'https://github.example/acme/widgets/pull/12',
    });
    expect(
      parse('issues', issuesPayload('assigned', { ...base, assignee: { login: 'hubot', id: 5 } })),
    ).toEqual(ignored('assigned to someone else'));
  });

  it('labeling is a label event carrying the labels', () => {
    expect(parse('issues', issuesPayload('labeled', { ...base, label: 'agent' }))).toMatchObject({
      kind: 'event',
      trigger: 'label',
      labels: ['bug', 'agent'],
      thread,
    });
  });

  it('installation deleted is uninstalled; other actions and events are ignored', () => {
    expect(parse('installation', installationDeletedPayload(7001))).toEqual({
      kind: 'uninstalled',
      external_id: '7001',
    });
    expect(
      parse('installation', { ...installationDeletedPayload(7001), action: 'created' }).kind,
    ).toBe('ignored');
    expect(parse('push', issuesPayload('opened', base))).toEqual(
      ignored('event push starts nothing'),
    );
    expect(parse('issues', issuesPayload('closed', base))).toEqual(
      ignored('issues closed starts nothing'),
    );
  });

  it('texts are cut to MAX_EVENT_TEXT', () => {
    const body = '@agentfleet-fixture ' + 'x'.repeat(MAX_EVENT_TEXT * 2);
    const got = parse('issue_comment', issueCommentPayload({ ...base, body }));
    expect(got.kind === 'event' && got.text.length).toBe(MAX_EVENT_TEXT);
  });

  it('garbage JSON values are ignored without throwing', () => {
    const installation = { id: 7001 };
    const comment = issueCommentPayload({ ...base, body: '@agentfleet-fixture' });
    const values: unknown[] = [null, [], 'x', 0, true, {}, { installation: {} }, { installation }];
    values.push({ installation, action: 'created', comment: null, issue: [], repository: 'r' });
    values.push({
      installation,
      action: 'created',
      comment: { body: 5 },
      repository: { owner: {} },
    });
    values.push(
      { ...comment, issue: { number: 'x; rm -rf' } },
      { ...comment, comment: { body: 1 } },
    );
    for (const event of ['issue_comment', 'issues', 'pull_request', 'installation'])
      for (const v of values) expect(parse(event, v).kind).not.toBe('event');
    expect(provider().parse({}, comment, install())).toEqual(ignored('no X-GitHub-Event header'));
  });
});
