/**
 * The Slack adapter (core/src/integrations/providers/slack.ts) against the Slack fixture
 * (test/kit/fixtures/slackIntegration.ts) over real HTTPS, through the egress policy's fetch
 * with 127.0.0.1:<fixture port> opened as the operator would (EGRESS_ALLOW_PRIVATE_HOSTS).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startSlackIntegration,
  type SlackIntegrationFixture,
} from '../../test/kit/fixtures/slackIntegration.js';
import { createEgressPolicy, egressFetch, egressRefusalIn } from '../src/egress/index.js';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type CompletedInstall,
  type InstallCredentials,
  type ProviderContext,
} from '../src/integrations/port.js';
import { SLACK_SCOPES, SlackProvider } from '../src/integrations/providers/slack.js';

const REDIRECT = 'https://agentfleet.test/integrations/slack/callback';

let fx: SlackIntegrationFixture;
let fetchVia: ReturnType<typeof egressFetch>;
let now = Date.now();
let ctx: ProviderContext;
let slack: SlackProvider;

const settings = () => ({
  clientId: fx.clientId,
  clientSecret: fx.clientSecret,
  signingSecret: fx.signingSecret,
  apiUrl: fx.apiUrl,
});

beforeAll(async () => {
  fx = await startSlackIntegration();
  const port = new URL(fx.url).port;
  fetchVia = egressFetch(createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${port}`] }), {
    ca: readFileSync(fx.certFile),
  });
  ctx = { fetch: fetchVia, now: () => now };
  slack = new SlackProvider(settings(), ctx);
});

afterAll(async () => {
  await fetchVia?.close();
  await fx?.close();
});

/** The user approves at the fixture: the callback query Slack redirects back with. */
async function authorize(state = 'st-1'): Promise<URLSearchParams> {
  const res = await ctx.fetch(slack.authorizeUrl({ state, redirectUri: REDIRECT }), {
    redirect: 'manual',
  });
  expect(res.status).toBe(302);
  const back = new URL(res.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  return back.searchParams;
}

async function install(): Promise<{ done: CompletedInstall; creds: InstallCredentials }> {
  const [done] = await slack.complete(await authorize(), REDIRECT);
  return {
    done,
    creds: {
      external_id: done.external_id,
      access_token: done.access_token,
      refresh_token: done.refresh_token,
      data: done.data,
    },
  };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e as IntegrationError,
  );

describe('Slack install', () => {
  it('missingSettings names the unset environment variables', () => {
    expect(slack.missingSettings()).toEqual([]);
    const bare = new SlackProvider(
      { clientId: null, clientSecret: 'x', signingSecret: null, apiUrl: fx.apiUrl },
      ctx,
    );
    expect(bare.missingSettings()).toEqual(['SLACK_CLIENT_ID', 'SLACK_SIGNING_SECRET']);
    expect(
      new SlackProvider(
        { clientId: 'a', clientSecret: null, signingSecret: 's', apiUrl: fx.apiUrl },
        ctx,
      ).missingSettings(),
    ).toEqual(['SLACK_CLIENT_SECRET']);
  });

  it('authorizeUrl is /oauth/v2/authorize on the origin of the Web API base', () => {
    const u = new URL(
      new SlackProvider({ ...settings(), apiUrl: 'https://slack.com/api' }, ctx).authorizeUrl({
        state: 's t',
        redirectUri: REDIRECT,
      }),
    );
    expect(u.origin + u.pathname).toBe('https://slack.com/oauth/v2/authorize');
    expect(Object.fromEntries(u.searchParams)).toEqual({
      client_id: fx.clientId,
      scope: 'app_mentions:read,chat:write,im:history',
      redirect_uri: REDIRECT,
      state: 's t',
    });
  });

  it('authorize, follow the redirect, complete: one install of the team with its bot user', async () => {
    const query = await authorize('state-42');
    expect(query.get('state')).toBe('state-42');
    const before = fx.requests.length;
    const installs = await slack.complete(query, REDIRECT);
    expect(installs).toHaveLength(1);
    const [i] = installs;
    expect(i).toMatchObject({
      external_id: fx.team.id,
      account: { id: fx.team.id, name: fx.team.name },
      refresh_token: null,
      expires_at: null,
      scopes: [...SLACK_SCOPES],
      data: { bot_user_id: fx.botUserId, app_id: fx.appId },
    });
    expect(i.access_token).toMatch(/^xoxb-/);
    // The client credentials went as HTTP Basic auth, to oauth.v2.access.
    const token = fx.requests.slice(before).find((r) => r.path === '/api/oauth.v2.access');
    expect(token?.method).toBe('POST');
    expect(token?.authorization).toBe(
      'Basic ' + Buffer.from(`${fx.clientId}:${fx.clientSecret}`).toString('base64'),
    );
  });

  it('with token rotation, the refresh token and expiry are kept', async () => {
    fx.tokenRotation = true;
    try {
      const { done } = await install();
      expect(done.refresh_token).toMatch(/^xoxe-1-/);
      expect(done.expires_at).toBe(new Date(now + 43200 * 1000).toISOString());
    } finally {
      fx.tokenRotation = false;
    }
  });

  it('a reused code is refused with Slack’s error code, no secret in the message', async () => {
    const query = await authorize();
    await slack.complete(query, REDIRECT);
    const err = await refusal(slack.complete(query, REDIRECT));
    expect(err).toBeInstanceOf(IntegrationError);
    expect(err.message).toBe('Slack refused the install (invalid_code)');
    expect(err.message).not.toContain(fx.clientSecret);
  });

  it('a wrong client secret is refused', async () => {
    const wrong = new SlackProvider({ ...settings(), clientSecret: 'not-the-secret' }, ctx);
    const err = await refusal(wrong.complete(await authorize(), REDIRECT));
    expect(err).toBeInstanceOf(IntegrationError);
    expect(err.message).toBe('Slack refused the install (bad_client_secret)');
    expect(err.message).not.toContain('not-the-secret');
  });

  it('access_denied is refused, and so is a callback without a code, before any request', async () => {
    const before = fx.requests.length;
    const denied = await refusal(
      slack.complete(new URLSearchParams({ error: 'access_denied', state: 's' }), REDIRECT),
    );
    expect(denied).toBeInstanceOf(IntegrationError);
    expect(denied.message).toBe('Slack did not grant the install (access_denied)');
    const none = await refusal(slack.complete(new URLSearchParams({ state: 's' }), REDIRECT));
    expect(none).toBeInstanceOf(IntegrationError);
    expect(none.message).toBe('Slack sent no authorization code');
    expect(fx.requests.length).toBe(before);
  });

  it('every request goes through ctx.fetch: a policy without the opened host refuses it', async () => {
    const closed = egressFetch(createEgressPolicy(), { ca: readFileSync(fx.certFile) });
    try {
      const p = new SlackProvider(settings(), { fetch: closed, now: () => now });
      const before = fx.requests.length;
      const err = await refusal(p.complete(new URLSearchParams({ code: 'c' }), REDIRECT));
      expect(err).toBeInstanceOf(IntegrationError);
      expect(err.message).toBe('Slack could not be reached (oauth.v2.access)');
      expect(egressRefusalIn(err)).not.toBeNull();
      expect(fx.requests.length).toBe(before);
    } finally {
      await closed.close();
    }
  });
});

describe('Slack answers and revoke', () => {
  it('reply posts in the thread with the bot token', async () => {
    const { creds } = await install();
    const before = fx.requests.length;
    await slack.reply(creds, { channel: 'C0CHAN', thread_ts: '1700000000.000100' }, 'Done: #12');
    expect(fx.messages.at(-1)).toEqual({
      channel: 'C0CHAN',
      thread_ts: '1700000000.000100',
      text: 'Done: #12',
      token: creds.access_token,
    });
    expect(fx.requests.slice(before)).toEqual([
      {
        method: 'POST',
        path: '/api/chat.postMessage',
        authorization: `Bearer ${creds.access_token}`,
      },
    ]);
  });

  it('revoke makes the fixture refuse the token; a second revoke counts as done', async () => {
    const { creds } = await install();
    await slack.revoke(creds);
    expect(fx.revoked).toContain(creds.access_token);
    const err = await refusal(slack.reply(creds, { channel: 'C1', thread_ts: '1.2' }, 'hi'));
    expect(err).toBeInstanceOf(IntegrationError);
    expect(err.message).toBe('Slack refused the message (invalid_auth)');
    expect(err.message).not.toContain(creds.access_token!);
    await expect(slack.revoke(creds)).resolves.toBeUndefined();
    expect(fx.revoked.filter((t) => t === creds.access_token)).toHaveLength(1);
  });
});

describe('Slack events: verify', () => {
  const payload = () =>
    fx.appMention({ channel: 'C1', user: 'U1', text: 'hi', ts: '1700000000.000001' });
  const nowS = () => Math.floor(now / 1000);

  it('accepts a request signed as Slack signs it', () => {
    const e = fx.event(payload(), { timestamp: nowS() });
    expect(slack.verify(e.headers, Buffer.from(e.body))).toEqual({ ok: true });
  });

  it('refuses a wrong secret and a changed body', () => {
    const bad = fx.event(payload(), { timestamp: nowS(), secret: 'other-secret' });
    expect(slack.verify(bad.headers, Buffer.from(bad.body))).toEqual({
      ok: false,
      reason: 'X-Slack-Signature does not match',
    });
    const e = fx.event(payload(), { timestamp: nowS() });
    expect(slack.verify(e.headers, Buffer.from(e.body.replace('hi', 'ho')))).toEqual({
      ok: false,
      reason: 'X-Slack-Signature does not match',
    });
  });

  it('refuses missing and malformed headers', () => {
    const e = fx.event(payload(), { timestamp: nowS() });
    const raw = Buffer.from(e.body);
    const { 'x-slack-signature': sig, 'x-slack-request-timestamp': ts } = e.headers;
    expect(slack.verify({ 'x-slack-signature': sig }, raw)).toEqual({
      ok: false,
      reason: 'missing X-Slack-Request-Timestamp',
    });
    expect(slack.verify({ 'x-slack-request-timestamp': ts }, raw)).toEqual({
      ok: false,
      reason: 'missing X-Slack-Signature',
    });
    expect(slack.verify({ ...e.headers, 'x-slack-signature': 'v0=abc' }, raw)).toEqual({
      ok: false,
      reason: 'malformed X-Slack-Signature',
    });
    expect(slack.verify({ ...e.headers, 'x-slack-signature': [sig, sig] }, raw)).toEqual({
      ok: false,
      reason: 'missing X-Slack-Signature',
    });
    expect(slack.verify({ ...e.headers, 'x-slack-request-timestamp': 'soon' }, raw)).toEqual({
      ok: false,
      reason: 'malformed X-Slack-Request-Timestamp',
    });
  });

  it('refuses a timestamp 6 minutes old and 6 minutes ahead (ctx.now moved)', () => {
    const e = fx.event(payload(), { timestamp: nowS() });
    const raw = Buffer.from(e.body);
    const stale = { ok: false, reason: 'X-Slack-Request-Timestamp is outside the 5-minute window' };
    const saved = now;
    try {
      now = saved + 6 * 60_000;
      expect(slack.verify(e.headers, raw)).toEqual(stale);
      now = saved - 6 * 60_000;
      expect(slack.verify(e.headers, raw)).toEqual(stale);
      now = saved + 4 * 60_000;
      expect(slack.verify(e.headers, raw)).toEqual({ ok: true });
    } finally {
      now = saved;
    }
  });
});

describe('Slack events: parse', () => {
  const creds = (): InstallCredentials => ({
    external_id: fx.team.id,
    access_token: 'xoxb-unused',
    refresh_token: null,
    data: { bot_user_id: fx.botUserId, app_id: fx.appId },
  });

  it('url_verification answers the challenge', () => {
    expect(slack.parse({}, fx.urlVerification('ch-123'), creds())).toEqual({
      kind: 'challenge',
      response: { challenge: 'ch-123' },
    });
    expect(slack.deliveryId({}, fx.urlVerification('x'))).toBeNull();
  });

  it('app_mention starts a session in the thread, the bot’s mention stripped', () => {
    const body = fx.appMention({
      channel: 'C0GEN',
      user: 'U0ALICE',
      text: `<@${fx.botUserId}> fix the build\nit fails on main`,
      ts: '1700000000.000200',
      event_id: 'Ev0MENTION',
    });
    expect(slack.deliveryId({}, body)).toBe('Ev0MENTION');
    expect(slack.externalIdOf(body)).toBe(fx.team.id);
    expect(slack.parse({}, body, creds())).toEqual({
      kind: 'event',
      external_id: fx.team.id,
      workspace: { channel: 'C0GEN', channel_type: 'channel' },
      trigger: 'mention',
      labels: [],
      thread: {
        key: 'C0GEN:1700000000.000200',
        title: 'fix the build',
        target: { channel: 'C0GEN', thread_ts: '1700000000.000200' },
      },
      text: 'fix the build\nit fails on main',
      author: { id: 'U0ALICE', name: 'U0ALICE' },
      url: null,
    });
  });

  it('a mention inside a thread continues that thread; long text is cut', () => {
    const long = 'x'.repeat(MAX_EVENT_TEXT + 50);
    const parsed = slack.parse(
      {},
      fx.appMention({
        channel: 'C0GEN',
        user: 'U0BOB',
        text: `${long} <@${fx.botUserId}>`,
        ts: '1700000000.000300',
        thread_ts: '1700000000.000200',
      }),
      creds(),
    );
    expect(parsed.kind).toBe('event');
    if (parsed.kind !== 'event') return;
    expect(parsed.thread.key).toBe('C0GEN:1700000000.000200');
    expect(parsed.thread.target).toEqual({ channel: 'C0GEN', thread_ts: '1700000000.000200' });
    expect(parsed.text).toHaveLength(MAX_EVENT_TEXT);
    expect(parsed.thread.title).toHaveLength(80);
  });

  it('a direct message is a direct_message in the im channel', () => {
    const parsed = slack.parse(
      {},
      fx.directMessage({ channel: 'D0DM', user: 'U0ALICE', text: 'hello', ts: '1.5' }),
      creds(),
    );
    expect(parsed).toMatchObject({
      kind: 'event',
      trigger: 'direct_message',
      workspace: { channel: 'D0DM', channel_type: 'im' },
      thread: { key: 'D0DM:1.5', title: 'hello', target: { channel: 'D0DM', thread_ts: '1.5' } },
      text: 'hello',
    });
  });

  it('what the app wrote, edits and channel messages without a mention are ignored', () => {
    const dm = { channel: 'D0DM', user: 'U0ALICE', text: 'x', ts: '1.1' };
    const ignored = (body: unknown) => expect(slack.parse({}, body, creds()).kind).toBe('ignored');
    ignored(fx.directMessage({ ...dm, extra: { bot_id: 'B0FIXBOT1' } }));
    ignored(fx.directMessage({ ...dm, user: fx.botUserId }));
    ignored(fx.appMention({ ...dm, user: fx.botUserId }));
    ignored(fx.directMessage({ ...dm, extra: { subtype: 'message_changed' } }));
    ignored(fx.directMessage({ ...dm, extra: { channel_type: 'channel' } }));
    ignored(fx.directMessage({ ...dm, extra: { channel_type: 'group' } }));
  });

  it('app_uninstalled and a revoked bot token are uninstalled', () => {
    expect(slack.parse({}, fx.appUninstalled(), creds())).toEqual({
      kind: 'uninstalled',
      external_id: fx.team.id,
    });
    const revoked = fx.appUninstalled('T0OTHER') as Record<string, unknown>;
    revoked.event = { type: 'tokens_revoked', tokens: { bot: [fx.botUserId] } };
    expect(slack.parse({}, revoked, creds())).toEqual({
      kind: 'uninstalled',
      external_id: 'T0OTHER',
    });
    for (const tokens of [
      { oauth: ['U0ALICE'] },
      { oauth: ['U0ALICE'], bot: [] },
      { bot: ['U0SOMEOTHERBOT'] },
    ]) {
      revoked.event = { type: 'tokens_revoked', tokens };
      expect(slack.parse({}, revoked, creds()).kind, JSON.stringify(tokens)).toBe('ignored');
    }
    // An install that does not know its bot user: any revoked bot token is the app's.
    const unknownBot = { ...creds(), data: {} };
    revoked.event = { type: 'tokens_revoked', tokens: { oauth: ['U0ALICE'], bot: [] } };
    expect(slack.parse({}, revoked, unknownBot).kind).toBe('ignored');
    revoked.event = { type: 'tokens_revoked', tokens: { bot: ['U0ANYBOT'] } };
    expect(slack.parse({}, revoked, unknownBot).kind).toBe('uninstalled');
  });

  it('garbage values are ignored without throwing', () => {
    const values: unknown[] = [
      null,
      undefined,
      0,
      'text',
      true,
      [],
      [1, 2],
      {},
      { type: 'event_callback' },
      { type: 'event_callback', event: null },
      { type: 'event_callback', event: [] },
      { type: 'event_callback', event: { type: 'app_mention' } },
      { type: 'event_callback', event: { type: 'app_mention', user: 1, channel: {}, ts: [] } },
      { type: 'event_callback', event: { type: 'tokens_revoked', tokens: 'x' } },
      { type: 'url_verification', challenge: 42 },
      { type: 'block_actions' },
    ];
    for (const v of values) {
      expect(slack.parse({}, v, creds()).kind, JSON.stringify(v)).toBe('ignored');
      expect(() => slack.deliveryId({}, v)).not.toThrow();
      expect(() => slack.externalIdOf(v)).not.toThrow();
    }
    expect(slack.externalIdOf({ authorizations: [{ team_id: 'T9' }] })).toBe('T9');
    expect(slack.externalIdOf({ authorizations: 'x' })).toBeNull();
  });
});
