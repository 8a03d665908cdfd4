/**
 * The Slack integration end to end, against the Slack fixture (test/kit/fixtures/slackIntegration.ts:
 * OAuth v2, chat.postMessage, auth.revoke, Events API requests signed v0) on 127.0.0.1 through
 * the egress policy:
 * - the url_verification challenge is answered (no install needed);
 * - install by OAuth records the team and its bot user;
 * - a publication for one channel: an app mention starts a session; the answer is posted in the
 *   message's thread with the bot token; a reply in that thread continues the same session;
 *   a direct message starts its own session;
 * - a timestamp outside the 5-minute window, a wrong signature, a retried event id and the
 *   bot's own message are refused or ignored; the bot token is in no event;
 * - app_uninstalled deletes the install; a later mention is ignored.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, say } from '../../kit/turnHelpers.js';
import {
  startSlackIntegration,
  type SlackIntegrationFixture,
} from '../../kit/fixtures/slackIntegration.js';
import {
  apiJson,
  installByOAuth,
  postWebhook,
  PUBLIC_URL,
  sessionsOfThread,
} from '../../kit/integrations.js';

const MODEL = 'slack-model';
const HOOK = '/v1/svc/integrations/slack/events';
let t: TestPlatform;
let sl: SlackIntegrationFixture;
let agentId: string;
let envId: string;

const json = (path: string, init?: Parameters<TestPlatform['http']>[1]) => apiJson(t, path, init);
const threadSessions = (key: string) => sessionsOfThread(t, key);
const installs = async () =>
  (await json('/v1/svc/integrations')).body.data.find((i: any) => i.id === 'slack').installs;

beforeAll(async () => {
  sl = await startSlackIntegration();
  t = await startPlatform({
    env: {
      INTEGRATIONS_PUBLIC_URL: PUBLIC_URL,
      SLACK_CLIENT_ID: sl.clientId,
      SLACK_CLIENT_SECRET: sl.clientSecret,
      SLACK_SIGNING_SECRET: sl.signingSecret,
      SLACK_API_URL: sl.apiUrl,
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(sl.url).host,
      EGRESS_CA_CERTS: sl.certFile,
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'slack' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'slack', model: MODEL })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await sl?.close();
});

describe('Slack integration', () => {
  it('answers the url_verification challenge', async () => {
    const res = await postWebhook(t, HOOK, sl.event(sl.urlVerification('challenge-abc')));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ challenge: 'challenge-abc' });
    const forged = sl.event(sl.urlVerification('x'), { secret: 'wrong' });
    expect((await postWebhook(t, HOOK, forged)).status).toBe(401);
  });

  it('installs by OAuth with the bot user', async () => {
    const done = await installByOAuth(t, 'slack', sl.certFile);
    expect(done.status, done.page).toBe(200);
    expect(await installs()).toEqual([
      expect.objectContaining({ external_id: sl.team.id, account: sl.team }),
    ]);
  });

  it('a mention starts a session answered in its thread; a thread reply continues it; a DM is its own', async () => {
    const pub = await json('/v1/svc/integrations/slack/publications', {
      method: 'POST',
      json: { agent: agentId, environment_id: envId, workspace: { channel: 'C-ops' } },
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
    expect(pub.body.triggers).toEqual(['mention', 'direct_message']);

    t.model.script(MODEL, say('Checking the deploy.'));
    const mention = sl.appMention({
      channel: 'C-ops',
      user: 'U-ada',
      text: `<@${sl.botUserId}> is prod down?`,
      ts: '1700000000.000100',
    });
    expect((await postWebhook(t, HOOK, sl.event(mention))).status).toBe(202);
    await vi.waitFor(() => expect(sl.messages).toHaveLength(1), { timeout: 20_000, interval: 100 });
    expect(sl.messages[0]).toMatchObject({
      channel: 'C-ops',
      thread_ts: '1700000000.000100',
      text: 'Checking the deploy.',
    });
    const [session] = await threadSessions('C-ops:1700000000.000100');
    expect(session).toBeDefined();

    t.model.script(MODEL, say('It is back.'));
    const reply = sl.appMention({
      channel: 'C-ops',
      user: 'U-ada',
      text: `<@${sl.botUserId}> and now?`,
      ts: '1700000000.000200',
      thread_ts: '1700000000.000100',
    });
    expect((await postWebhook(t, HOOK, sl.event(reply))).status).toBe(202);
    await vi.waitFor(() => expect(sl.messages).toHaveLength(2), { timeout: 20_000, interval: 100 });
    expect(sl.messages[1]).toMatchObject({ thread_ts: '1700000000.000100', text: 'It is back.' });
    expect(await threadSessions('C-ops:1700000000.000100')).toHaveLength(1);
    const events = JSON.stringify(
      (await t.client.beta.sessions.events.list(session!.id, { limit: 100 })).data,
    );
    expect(events).toContain('is prod down?');
    expect(events).not.toContain(`<@${sl.botUserId}>`);
    for (const m of sl.messages) expect(events).not.toContain(m.token);

    // A DM is its own conversation (the publication's channel key does not name the DM).
    const dmPub = await json('/v1/svc/integrations/slack/publications', {
      method: 'POST',
      json: { agent: agentId, environment_id: envId, triggers: ['direct_message'] },
    });
    expect(dmPub.status).toBe(200);
    t.model.script(MODEL, say('Hello in private.'));
    const dm = sl.directMessage({
      channel: 'D-ada',
      user: 'U-ada',
      text: 'hi',
      ts: '1700000001.000100',
    });
    expect((await postWebhook(t, HOOK, sl.event(dm))).status).toBe(202);
    await vi.waitFor(() => expect(sl.messages).toHaveLength(3), { timeout: 20_000, interval: 100 });
    expect(sl.messages[2]).toMatchObject({ channel: 'D-ada', text: 'Hello in private.' });
    expect(await threadSessions('D-ada:1700000001.000100')).toHaveLength(1);
  });

  it('stale, forged, retried and bot-authored events create nothing', async () => {
    const mk = (ts: string, extra?: Record<string, unknown>, event_id?: string) =>
      sl.appMention({
        channel: 'C-ops',
        user: 'U-ada',
        text: `<@${sl.botUserId}> ping`,
        ts,
        ...(extra ? { extra } : {}),
        ...(event_id ? { event_id } : {}),
      });
    const stale = sl.event(mk('1700000002.000100'), {
      timestamp: Math.floor(Date.now() / 1000) - 6 * 60,
    });
    const staleRes = await postWebhook(t, HOOK, stale);
    expect(staleRes.status).toBe(401);
    expect(staleRes.body.error.message).toMatch(/timestamp/i);
    expect(
      (await postWebhook(t, HOOK, sl.event(mk('1700000003.000100'), { secret: 'x' }))).status,
    ).toBe(401);
    const bot = await postWebhook(
      t,
      HOOK,
      sl.event(mk('1700000004.000100', { bot_id: 'B-other' })),
    );
    expect(bot.body.status).toBe('ignored');
    t.model.script(MODEL, say('pong'));
    const once = sl.event(mk('1700000005.000100', undefined, 'Ev-fixed-1'));
    expect((await postWebhook(t, HOOK, once)).status).toBe(202);
    // Slack retries with the same event id (X-Slack-Retry-Num); a new signature does not matter.
    const retry = sl.event(mk('1700000005.000100', undefined, 'Ev-fixed-1'));
    expect((await postWebhook(t, HOOK, retry)).body.status).toBe('duplicate');
    await vi.waitFor(() => expect(sl.messages).toHaveLength(4), { timeout: 20_000, interval: 100 });
    await new Promise((r) => setTimeout(r, 500));
    expect(sl.messages).toHaveLength(4);
    for (const ts of ['1700000002.000100', '1700000003.000100', '1700000004.000100'])
      expect(await threadSessions(`C-ops:${ts}`)).toHaveLength(0);
  });

  it('app_uninstalled deletes the install; a later mention is ignored', async () => {
    const res = await postWebhook(t, HOOK, sl.event(sl.appUninstalled(sl.team.id)));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('uninstalled');
    expect(await installs()).toEqual([]);
    const later = sl.appMention({
      channel: 'C-ops',
      user: 'U-ada',
      text: 'hello',
      ts: '1700000009.000100',
    });
    expect((await postWebhook(t, HOOK, sl.event(later))).body.status).toBe('ignored');
  });
});
