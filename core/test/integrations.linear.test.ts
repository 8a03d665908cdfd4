/**
 * The Linear adapter (core/src/integrations/providers/linear.ts) against the Linear fixture
 * (test/kit/fixtures/linearIntegration.ts) over real HTTPS, through the egress policy's fetch
 * as the platform builds it: install by OAuth with actor=app, signed webhooks, parse, reply
 * and revoke.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressPolicy, egressFetch } from '../src/egress/index.js';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type InstallCredentials,
  type ProviderContext,
} from '../src/integrations/port.js';
import { LinearProvider, linearWebOrigin } from '../src/integrations/providers/linear.js';
import {
  startLinearIntegration,
  type LinearIntegrationFixture,
} from '../../test/kit/fixtures/linearIntegration.js';

const REDIRECT = 'https://fleet.example/integrations/linear/callback';
const human = { id: 'user-human-1', name: 'Ada' };
const hmac = (raw: string) => createHmac('sha256', fx.webhookSecret).update(raw).digest('hex');

let fx: LinearIntegrationFixture;
let fetcher: ReturnType<typeof egressFetch>;
let clock = Date.now();
let ctx: ProviderContext;
let linear: LinearProvider;

const install = (): InstallCredentials => ({
  external_id: fx.organization.id,
  access_token: null,
  refresh_token: null,
  data: {
    app_user_id: fx.appUser.id,
    app_user_name: fx.appUser.name,
    organization_url_key: 'acme',
  },
});

/** Authorize at the fixture (following its 302 by hand) and complete: the install it yields. */
async function installApp() {
  const res = await fetcher(linear.authorizeUrl({ state: 'st-1', redirectUri: REDIRECT }), {
    redirect: 'manual',
  });
  expect(res.status).toBe(302);
  const back = new URL(res.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  expect(back.searchParams.get('state')).toBe('st-1');
  const [done] = await linear.complete(back.searchParams, REDIRECT);
  return { done, query: back.searchParams };
}

beforeAll(async () => {
  fx = await startLinearIntegration();
  fetcher = egressFetch(createEgressPolicy({ allowPrivateHosts: ['127.0.0.1'] }), {
    ca: readFileSync(fx.certFile),
  });
  ctx = { fetch: fetcher, now: () => clock };
  linear = new LinearProvider(
    {
      clientId: fx.clientId,
      clientSecret: fx.clientSecret,
      webhookSecret: fx.webhookSecret,
      apiUrl: fx.url,
    },
    ctx,
  );
});

afterAll(async () => {
  await fetcher?.close();
  await fx?.close();
});

describe('settings and web origin', () => {
  it('missingSettings names the unset environment variables', () => {
    const p = (over: object) =>
      new LinearProvider(
        { clientId: 'c', clientSecret: 's', webhookSecret: 'w', apiUrl: fx.url, ...over },
        ctx,
      );
    expect(p({}).missingSettings()).toEqual([]);
    expect(p({ clientId: null, webhookSecret: null }).missingSettings()).toEqual([
      'LINEAR_CLIENT_ID',
      'LINEAR_WEBHOOK_SECRET',
    ]);
    expect(p({ clientSecret: null }).missingSettings()).toEqual(['LINEAR_CLIENT_SECRET']);
  });

  it('web origin: an api. host loses that label, any other host keeps the origin', () => {
    expect(linearWebOrigin('https://api.linear.app')).toBe('https://linear.app');
    expect(linearWebOrigin('https://api.linear.app/')).toBe('https://linear.app');
    expect(linearWebOrigin('https://api.example.test:8443')).toBe('https://example.test:8443');
    expect(linearWebOrigin('https://linear.internal:9000')).toBe('https://linear.internal:9000');
    const real = new LinearProvider(
      { clientId: 'cid', clientSecret: 's', webhookSecret: 'w', apiUrl: 'https://api.linear.app' },
      ctx,
    );
    const u = new URL(real.authorizeUrl({ state: 'x y', redirectUri: REDIRECT }));
    expect(u.origin + u.pathname).toBe('https://linear.app/oauth/authorize');
    expect(Object.fromEntries(u.searchParams)).toEqual({
      client_id: 'cid',
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'read,write',
      state: 'x y',
      actor: 'app',
    });
  });
});

describe('authorize → complete', () => {
  it('yields the organization and the app user, with the token Linear issued', async () => {
    const { done } = await installApp();
    expect(done.external_id).toBe(fx.organization.id);
    expect(done.account).toEqual({ id: fx.organization.id, name: fx.organization.name });
    expect(done.data).toEqual({
      app_user_id: fx.appUser.id,
      app_user_name: fx.appUser.name,
      organization_url_key: fx.organization.urlKey,
    });
    expect(fx.liveTokens()).toContain(done.access_token);
    expect(done.refresh_token).toMatch(/^lin_refresh_/);
    expect(done.scopes).toEqual(['read', 'write']);
    expect(done.expires_at).toBe(new Date(clock + 86399_000).toISOString());
    const authorize = fx.requests.find((r) => r.path === '/oauth/authorize')!;
    expect(authorize.query.actor).toBe('app');
    const token = fx.requests.find((r) => r.path === '/oauth/token')!;
    expect(Object.fromEntries(new URLSearchParams(token.body))).toEqual({
      grant_type: 'authorization_code',
      code: expect.any(String),
      redirect_uri: REDIRECT,
      client_id: fx.clientId,
      client_secret: fx.clientSecret,
    });
    const gql = fx.requests.find((r) => r.path === '/graphql')!;
    expect(gql.headers.authorization).toBe(`Bearer ${done.access_token}`);
  });

  it('refuses a reused code with Linear’s error and no secret in the message', async () => {
    const { query } = await installApp();
    const err = await linear.complete(query, REDIRECT).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrationError);
    expect((err as IntegrationError).status).toBe(400);
    expect((err as Error).message).toContain('Invalid grant');
    expect((err as Error).message).not.toContain(fx.clientSecret);
    expect((err as Error).message).not.toContain(query.get('code')!);
  });

  it('refuses error= and a missing code before calling Linear', async () => {
    const before = fx.requests.length;
    await expect(
      linear.complete(new URLSearchParams({ error: 'access_denied' }), REDIRECT),
    ).rejects.toThrow(new IntegrationError('Linear did not authorize the app: access_denied'));
    await expect(linear.complete(new URLSearchParams({ state: 's' }), REDIRECT)).rejects.toThrow(
      new IntegrationError('Linear sent no authorization code'),
    );
    expect(fx.requests.length).toBe(before);
  });
});

describe('verify', () => {
  const signed = (o?: Parameters<LinearIntegrationFixture['webhook']>[1]) =>
    fx.webhook(
      fx.commentCreated({ issueId: 'i-1', issueTitle: 'T', body: 'hi', teamId: 't', user: human }),
      o,
    );

  it('accepts what Linear signs', () => {
    const w = signed({ timestamp: clock - 59_000 });
    expect(linear.verify(w.headers, Buffer.from(w.body))).toEqual({ ok: true });
  });

  it('refuses a wrong secret, a changed byte, a missing or malformed header', () => {
    const wrong = signed({ secret: 'not-the-secret' });
    expect(linear.verify(wrong.headers, Buffer.from(wrong.body))).toEqual({
      ok: false,
      reason: 'Linear-Signature does not match the body',
    });
    const w = signed();
    const changed = Buffer.from(w.body);
    changed[changed.indexOf('hi')] = 'H'.charCodeAt(0);
    expect(linear.verify(w.headers, changed)).toEqual({
      ok: false,
      reason: 'Linear-Signature does not match the body',
    });
    const { 'linear-signature': _, ...noSig } = w.headers;
    expect(linear.verify(noSig, Buffer.from(w.body))).toEqual({
      ok: false,
      reason: 'missing Linear-Signature header',
    });
    for (const bad of ['zz', 'a'.repeat(63), `${'a'.repeat(64)}00`]) {
      const m = signed({ signature: bad });
      expect(linear.verify(m.headers, Buffer.from(m.body))).toEqual({
        ok: false,
        reason: 'malformed Linear-Signature header',
      });
    }
  });

  it('refuses a webhookTimestamp 61 s old (or ahead), and one missing', () => {
    for (const ts of [clock - 61_000, clock + 61_000]) {
      const w = signed({ timestamp: ts });
      expect(linear.verify(w.headers, Buffer.from(w.body))).toEqual({
        ok: false,
        reason: 'webhookTimestamp is outside the 60 s window',
      });
    }
    const raw = JSON.stringify({ type: 'Comment' });
    const sig = fx.webhook({ type: 'Comment' }).headers;
    const own = { ...sig, 'linear-signature': hmac(raw) };
    expect(linear.verify(own, Buffer.from(raw))).toEqual({
      ok: false,
      reason: 'missing webhookTimestamp',
    });
  });

  it('delivery id and organization come from the header and the body', () => {
    const w = signed({ deliveryId: 'dlv-1' });
    const body = JSON.parse(w.body) as { webhookId: string; webhookTimestamp: number };
    expect(linear.deliveryId(w.headers, body)).toBe('dlv-1');
    expect(linear.deliveryId({}, body)).toBe(`${body.webhookId}:${body.webhookTimestamp}`);
    expect(linear.deliveryId({}, null)).toBeNull();
    expect(linear.externalIdOf(body)).toBe(fx.organization.id);
    expect(linear.externalIdOf('x')).toBeNull();
  });
});

describe('parse', () => {
  const parse = (payload: Record<string, unknown>) => {
    const w = fx.webhook(payload);
    return linear.parse(w.headers, JSON.parse(w.body), install());
  };
  const assigned = (over: Partial<Parameters<LinearIntegrationFixture['issueAssigned']>[0]> = {}) =>
    fx.issueAssigned({
      issueId: 'issue-1',
      title: 'Fix login',
      description: 'It 500s',
      teamId: 'team-1',
      teamKey: 'ENG',
      assigneeId: fx.appUser.id,
      actor: human,
      labels: ['bug', 'p1'],
      ...over,
    });

  it('an issue (re-)assigned to the app is an assignment', () => {
    const ev = parse(assigned());
    expect(ev).toEqual({
      kind: 'event',
      external_id: fx.organization.id,
      workspace: { team_id: 'team-1', team_key: 'ENG' },
      trigger: 'assignment',
      labels: ['bug', 'p1'],
      thread: { key: 'issue-1', title: 'Fix login', target: { issue_id: 'issue-1' } },
      text: 'Fix login\n\nIt 500s',
      author: human,
      url: `${fx.url}/acme/issue/issue-1`,
    });
    expect(parse(assigned({ action: 'create', description: null }))).toMatchObject({
      trigger: 'assignment',
      text: 'Fix login\n\n',
    });
  });

  it('ignores an assignment to someone else, an edit that keeps the assignee, and the app’s own', () => {
    expect(parse(assigned({ assigneeId: human.id }))).toEqual({
      kind: 'ignored',
      reason: 'issue not assigned to the app',
    });
    const edit = assigned();
    edit.updatedFrom = { title: 'Old title' };
    expect(parse(edit)).toEqual({ kind: 'ignored', reason: 'assignee unchanged' });
    expect(parse(assigned({ previousAssigneeId: fx.appUser.id }))).toEqual({
      kind: 'ignored',
      reason: 'assignee unchanged',
    });
    expect(parse(assigned({ actor: fx.appUser }))).toEqual({
      kind: 'ignored',
      reason: 'written by the app',
    });
  });

  const comment = (body: string, user = human) =>
    fx.commentCreated({
      issueId: 'issue-2',
      issueTitle: 'Flaky CI',
      body,
      teamId: 'team-1',
      teamKey: 'ENG',
      user,
    });

  it('a comment mentioning the app is a mention (cut to MAX_EVENT_TEXT)', () => {
    const ev = parse(comment(`@${fx.appUser.name.toUpperCase()} can you look?`));
    expect(ev).toMatchObject({
      kind: 'event',
      trigger: 'mention',
      workspace: { team_id: 'team-1', team_key: 'ENG' },
      labels: [],
      thread: { key: 'issue-2', title: 'Flaky CI', target: { issue_id: 'issue-2' } },
      text: `@${fx.appUser.name.toUpperCase()} can you look?`,
      author: human,
    });
    const link = `see [${fx.appUser.name}](${fx.url}/acme/profiles/${fx.appUser.name})`;
    expect(parse(comment(link))).toMatchObject({ trigger: 'mention' });
    const long = parse(comment(`@${fx.appUser.name} ${'x'.repeat(MAX_EVENT_TEXT)}`));
    expect(long.kind === 'event' && long.text.length).toBe(MAX_EVENT_TEXT);
  });

  it('ignores a comment without a mention, a longer name, and the app’s own comment', () => {
    for (const body of [
      'no mention here',
      `@${fx.appUser.name}-other hi`,
      `mail@${fx.appUser.name}`,
    ])
      expect(parse(comment(body))).toEqual({
        kind: 'ignored',
        reason: 'comment does not mention the app',
      });
    expect(parse(comment(`@${fx.appUser.name} done`, fx.appUser))).toEqual({
      kind: 'ignored',
      reason: 'written by the app',
    });
  });

  it('inbox notifications to the app user map to the same triggers', () => {
    const n = (
      type: 'issueAssignedToYou' | 'issueMention' | 'issueCommentMention',
      actor = human,
    ) =>
      fx.appUserNotification({
        type,
        issueId: 'issue-3',
        issueTitle: 'Docs',
        teamId: 'team-2',
        teamKey: 'DOC',
        actor,
        ...(type === 'issueCommentMention' ? { commentBody: 'please help' } : {}),
      });
    expect(parse(n('issueAssignedToYou'))).toMatchObject({
      trigger: 'assignment',
      workspace: { team_id: 'team-2', team_key: 'DOC' },
      thread: { key: 'issue-3', target: { issue_id: 'issue-3' } },
      author: human,
    });
    expect(parse(n('issueMention'))).toMatchObject({ trigger: 'mention' });
    expect(parse(n('issueCommentMention'))).toMatchObject({
      trigger: 'mention',
      text: 'please help',
    });
    expect(parse(n('issueCommentMention', fx.appUser))).toEqual({
      kind: 'ignored',
      reason: 'written by the app',
    });
  });

  it('ignores garbage of every JSON shape without throwing', () => {
    const values: unknown[] = [
      null,
      0,
      'Issue',
      true,
      [],
      [{ type: 'Issue' }],
      {},
      { type: 'Issue', action: 'update', data: null },
      { type: 'Issue', action: 'update', data: { assigneeId: fx.appUser.id } },
      { type: 'Issue', action: 'create', data: { assigneeId: fx.appUser.id, labels: 'x' } },
      { type: 'Comment', action: 'create', data: { body: 42 } },
      { type: 'Comment', action: 'create', data: { body: `@${fx.appUser.name}` } },
      { type: 'AppUserNotification', notification: 'x' },
      { type: 'AppUserNotification', notification: { type: 'issueMention' } },
      { type: 'Project', action: 'create', data: {} },
    ];
    for (const v of values) {
      const out = linear.parse({}, v, install());
      expect(out.kind, JSON.stringify(v)).toBe('ignored');
    }
    expect(linear.parse({}, assigned(), { ...install(), data: {} })).toEqual({
      kind: 'ignored',
      reason: 'install has no app user id',
    });
  });
});

describe('reply and revoke', () => {
  it('reply posts a comment on the issue with the install’s token', async () => {
    const { done } = await installApp();
    fx.commentCreated({ issueId: 'issue-9', issueTitle: 'T', body: 'x', teamId: 't', user: human });
    const creds = { ...install(), access_token: done.access_token };
    await linear.reply(creds, { issue_id: 'issue-9' }, 'On it.');
    expect(fx.comments.at(-1)).toMatchObject({
      issueId: 'issue-9',
      body: 'On it.',
      token: done.access_token,
    });
    const err = await linear
      .reply(creds, { issue_id: 'no-such-issue' }, 'x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrationError);
    expect((err as Error).message).toBe('Linear refused the request: Entity not found: Issue');
  });

  it('revoke kills the token at Linear; a second revoke counts as done', async () => {
    const { done } = await installApp();
    const creds = { ...install(), access_token: done.access_token };
    await linear.revoke(creds);
    expect(fx.revoked).toContain(done.access_token);
    expect(fx.liveTokens()).not.toContain(done.access_token);
    const call = fx.requests.filter((r) => r.path === '/oauth/revoke').at(-1)!;
    expect(call.headers.authorization).toBe(`Bearer ${done.access_token}`);
    await linear.revoke(creds);
    const err = await linear.reply(creds, { issue_id: 'issue-9' }, 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrationError);
    expect((err as IntegrationError).status).toBe(401);
    expect((err as Error).message).not.toContain(done.access_token!);
  });
});
