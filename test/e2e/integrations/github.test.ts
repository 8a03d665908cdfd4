/**
 * The GitHub integration end to end, against the GitHub fixture (test/kit/fixtures/githubIntegration.ts:
 * a GitHub App's OAuth, installations, App-JWT installation tokens, issue comments, signed
 * webhooks) on 127.0.0.1, through the platform's egress policy (EGRESS_ALLOW_PRIVATE_HOSTS,
 * EGRESS_CA_CERTS):
 * - the list shows GitHub configured and Linear/Slack not, naming their missing settings; their
 *   install is a 400 naming them;
 * - install by OAuth: the callback records the installation; the state works once;
 * - a publication for the org; a signed issue_comment mentioning the app starts a session with
 *   the publication's agent; the agent's answer arrives at the fixture as an issue comment made
 *   with an installation token; a second comment continues the same session;
 * - a replayed delivery id, a bad signature, a changed body and a comment without a mention
 *   create nothing; the installation token is in no event or response;
 * - another tenant sees none of it (installs, publications, uninstall, publication delete: 404);
 * - uninstall deletes the installation at GitHub; later webhooks are ignored.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, say } from '../../kit/turnHelpers.js';
import {
  issueCommentPayload,
  githubPlatformEnv,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../kit/fixtures/githubIntegration.js';
import {
  apiJson,
  installByOAuth,
  postWebhook,
  PUBLIC_URL,
  sessionsOfThread,
} from '../../kit/integrations.js';

const MODEL = 'gh-model';
const HOOK = '/v1/svc/integrations/github/webhook';
let t: TestPlatform;
let gh: GithubIntegrationFixture;
let agentId: string;
let envId: string;
let pubId: string;

const json = (path: string, init?: Parameters<TestPlatform['http']>[1]) => apiJson(t, path, init);
const mention = (number: number, body: string, extra: { deliveryId?: string } = {}) =>
  gh.webhook(
    'issue_comment',
    issueCommentPayload({
      owner: 'acme',
      repo: 'widgets',
      number,
      title: `Issue ${number}`,
      body,
      user: { login: 'octocat', id: 1 },
      installationId: 7001,
    }),
    extra,
  );
const threadSessions = (key: string) => sessionsOfThread(t, key);

beforeAll(async () => {
  gh = await startGithubIntegration();
  t = await startPlatform({
    env: {
      ...githubPlatformEnv(gh, PUBLIC_URL),
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'gh' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'gh', model: MODEL })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await gh?.close();
});

describe('GitHub integration', () => {
  it('lists what is configured; an unconfigured install is a 400 naming the settings', async () => {
    const list = await json('/v1/svc/integrations');
    expect(list.status).toBe(200);
    const byId = Object.fromEntries(list.body.data.map((i: any) => [i.id, i]));
    expect(byId.github).toMatchObject({ configured: true, missing_settings: [], installs: [] });
    expect(byId.github.webhook_url).toBe(`${PUBLIC_URL}${HOOK}`);
    expect(byId.linear.configured).toBe(false);
    expect(byId.linear.missing_settings).toEqual([
      'LINEAR_CLIENT_ID',
      'LINEAR_CLIENT_SECRET',
      'LINEAR_WEBHOOK_SECRET',
    ]);
    expect(byId.slack.missing_settings).toContain('SLACK_SIGNING_SECRET');
    const slack = await json('/v1/svc/integrations/slack/install');
    expect(slack.status).toBe(400);
    expect(slack.body.error.message).toMatch(
      /SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_SIGNING_SECRET/,
    );
    expect((await json('/v1/svc/integrations/jira/install')).status).toBe(404);
    // The un-prefixed form serves the same list.
    expect((await json('/v1/integrations')).body.data.map((i: any) => i.id)).toEqual([
      'github',
      'linear',
      'slack',
    ]);
  });

  it('installs by OAuth; the state works once', async () => {
    const done = await installByOAuth(t, 'github', gh.certFile);
    expect(done.status, done.page).toBe(200);
    expect(done.page).toContain('installed for acme');
    const again = await t.http(`${done.callback.pathname}${done.callback.search}`, { key: null });
    expect(again.status).toBe(400);
    expect(await again.text()).toMatch(/unknown, used or expired/);
    const list = await json('/v1/svc/integrations');
    const installs = list.body.data.find((i: any) => i.id === 'github').installs;
    expect(installs).toHaveLength(1);
    expect(installs[0]).toMatchObject({ external_id: '7001', account: { name: 'acme' } });
    const served = JSON.stringify(list.body);
    expect(served).not.toMatch(/ghs_|ghu_/);
    for (const s of [gh.clientSecret, gh.webhookSecret]) expect(served).not.toContain(s);
  });

  it('refuses bad publications with a 400 naming the field', async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ environment_id: envId, workspace: { owner: 'acme' } }, 'agent'],
      [{ agent: 'agent_nope', environment_id: envId, workspace: { owner: 'acme' } }, 'agent'],
      [{ agent: agentId, environment_id: envId, workspace: {} }, 'workspace.owner'],
      [
        { agent: agentId, environment_id: envId, workspace: { owner: 'acme', team: 'x' } },
        'workspace.team',
      ],
      [
        {
          agent: agentId,
          environment_id: envId,
          workspace: { owner: 'acme' },
          triggers: ['direct_message'],
        },
        'triggers[0]',
      ],
      [
        {
          agent: agentId,
          environment_id: envId,
          workspace: { owner: 'acme' },
          triggers: ['label'],
        },
        'label',
      ],
      [
        {
          agent: agentId,
          environment_id: envId,
          workspace: { owner: 'acme' },
          capabilities: ['open_pull_request'],
        },
        'capabilities[0]',
      ],
      [
        {
          agent: agentId,
          environment_id: envId,
          workspace: { owner: 'acme' },
          capabilities: ['reply', 'state_change'],
        },
        'capabilities[1]',
      ],
      [
        { agent: agentId, environment_id: envId, workspace: { owner: 'acme' }, webhook: 'x' },
        'webhook',
      ],
    ];
    for (const [body, field] of bad) {
      const res = await json('/v1/svc/integrations/github/publications', {
        method: 'POST',
        json: body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toContain(field);
      if (field.startsWith('capabilities'))
        expect(res.body.error.message).toContain('supported: reply, pull_request');
    }
    expect((await json('/v1/svc/integrations/github/publications')).body.data).toEqual([]);
  });

  it('a signed mention starts a session; the answer is an issue comment; a second comment continues it', async () => {
    const pub = await json('/v1/svc/integrations/github/publications', {
      method: 'POST',
      json: { agent: agentId, environment_id: envId, workspace: { owner: 'acme' } },
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
    expect(pub.body).toMatchObject({
      triggers: ['mention', 'assignment'],
      capabilities: ['reply'],
    });
    pubId = pub.body.id;

    t.model.script(MODEL, say('Looking into it.'));
    const first = await postWebhook(t, HOOK, mention(12, `@${gh.slug} why is the build red?`));
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    await vi.waitFor(() => expect(gh.comments).toHaveLength(1), { timeout: 20_000, interval: 100 });
    expect(gh.comments[0]).toMatchObject({
      owner: 'acme',
      repo: 'widgets',
      number: 12,
      body: 'Looking into it.',
    });
    expect(gh.comments[0]!.token).toMatch(/^ghs_/);
    const [session] = await threadSessions('acme/widgets#12');
    expect(session).toBeDefined();
    expect((session as any).agent.id).toBe(agentId);
    expect((session as any).environment_id).toBe(envId);

    t.model.script(MODEL, say('Fixed in the lockfile.'));
    const second = await postWebhook(t, HOOK, mention(12, `@${gh.slug} and now?`));
    expect(second.status).toBe(202);
    await vi.waitFor(() => expect(gh.comments).toHaveLength(2), { timeout: 20_000, interval: 100 });
    expect(gh.comments[1]!.body).toBe('Fixed in the lockfile.');
    expect(await threadSessions('acme/widgets#12')).toHaveLength(1);

    const events = await t.client.beta.sessions.events.list(session!.id, { limit: 100 });
    const users = events.data.filter((e: any) => e.type === 'user.message');
    expect(users.map((e: any) => e.content[0].text)).toEqual([
      expect.stringContaining('why is the build red?'),
      expect.stringContaining('and now?'),
    ]);
    const all = JSON.stringify(events.data);
    for (const m of gh.mintedTokens) expect(all).not.toContain(m.token);
  });

  it('a replay, a bad signature, a changed body and a comment without a mention create nothing', async () => {
    const before = gh.comments.length;
    const signed = mention(13, `@${gh.slug} please look`);
    t.model.script(MODEL, say('On it.'));
    expect((await postWebhook(t, HOOK, signed)).status).toBe(202);
    const replay = await postWebhook(t, HOOK, signed);
    expect(replay.status).toBe(200);
    expect(replay.body.status).toBe('duplicate');
    const wrong = mention(14, `@${gh.slug} x`);
    const forged = {
      ...wrong,
      headers: { ...wrong.headers, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
    };
    const badSig = await postWebhook(t, HOOK, forged);
    expect(badSig.status).toBe(401);
    expect(badSig.body.error.message).toMatch(/signature/);
    const changed = { ...wrong, body: String(wrong.body).replace('x', 'y') };
    expect((await postWebhook(t, HOOK, changed)).status).toBe(401);
    const unsigned = {
      headers: { 'content-type': 'application/json', 'x-github-event': 'issue_comment' },
      body: '{}',
    };
    expect((await postWebhook(t, HOOK, unsigned)).status).toBe(401);
    const quiet = await postWebhook(t, HOOK, mention(15, 'no mention here'));
    expect(quiet.status).toBe(200);
    expect(quiet.body.status).toBe('ignored');
    await vi.waitFor(() => expect(gh.comments.length).toBe(before + 1), {
      timeout: 20_000,
      interval: 100,
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(gh.comments.length).toBe(before + 1);
    expect(await threadSessions('acme/widgets#14')).toHaveLength(0);
    expect(await threadSessions('acme/widgets#15')).toHaveLength(0);
  });

  it('another tenant sees none of it', async () => {
    const other = await t.newTenant('gh-other');
    const as = (path: string, init: Parameters<TestPlatform['http']>[1] = {}) =>
      json(path, { key: other.apiKey, ...init });
    const list = await as('/v1/svc/integrations');
    expect(list.body.data.find((i: any) => i.id === 'github').installs).toEqual([]);
    expect((await as('/v1/svc/integrations/github/publications')).body.data).toEqual([]);
    expect(
      (await as(`/v1/svc/integrations/github/publications/${pubId}`, { method: 'DELETE' })).status,
    ).toBe(404);
    expect(
      (await as('/v1/svc/integrations/github/uninstall', { method: 'POST', json: {} })).status,
    ).toBe(404);
    // The other tenant cannot claim the same installation: the callback refuses it.
    const claim = await installByOAuth(t, 'github', gh.certFile, { key: other.apiKey });
    expect(claim.status).toBe(400);
    expect(claim.page).toMatch(/another tenant/);
  });

  it('uninstall deletes the installation at GitHub; later webhooks are ignored', async () => {
    const res = await json('/v1/svc/integrations/github/uninstall', { method: 'POST', json: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ type: 'integration_uninstalled', revoked: true });
    expect(gh.deletedInstallations).toEqual([7001]);
    const list = await json('/v1/svc/integrations');
    expect(list.body.data.find((i: any) => i.id === 'github').installs).toEqual([]);
    const after = await postWebhook(t, HOOK, mention(16, `@${gh.slug} hello?`));
    expect(after.status).toBe(200);
    expect(after.body.status).toBe('ignored');
  });
});
