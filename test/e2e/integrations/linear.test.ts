/**
 * The Linear integration end to end, against the Linear fixture (test/kit/fixtures/linearIntegration.ts:
 * OAuth with `actor=app`, the GraphQL API, signed webhooks) on 127.0.0.1 through the egress
 * policy:
 * - install by OAuth records the organization and the app user;
 * - a publication for one team: an issue assigned to the app starts a session; the answer is a
 *   Linear comment made with the install's token; a comment mentioning the app on the same
 *   issue continues the same session;
 * - an issue of another team starts nothing (no publication serves it);
 * - a stale webhookTimestamp, a wrong signature and a duplicate delivery are refused or ignored;
 * - a publication with `state_change`: the agent moves its issue with the tool
 *   `mcp__linear_integration__set_issue_state` by the state's name (any case); an unknown name
 *   changes nothing and the error lists the team's states; an access token Linear refuses (401)
 *   is refreshed once and the call retried; a token expiring within 5 minutes is refreshed
 *   before use; the rotated refresh token is stored (each later refresh needs it);
 * - the OAuth token is in no event or response; uninstall revokes it at Linear.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, say } from '../../kit/turnHelpers.js';
import {
  startLinearIntegration,
  type LinearIntegrationFixture,
} from '../../kit/fixtures/linearIntegration.js';
import {
  apiJson,
  installByOAuth,
  postWebhook,
  PUBLIC_URL,
  sessionsOfThread,
} from '../../kit/integrations.js';

const MODEL = 'linear-model';
const HOOK = '/v1/svc/integrations/linear/webhook';
let t: TestPlatform;
let ln: LinearIntegrationFixture;
let agentId: string;
let envId: string;
const person = { id: 'user-ada', name: 'Ada' };

const json = (path: string, init?: Parameters<TestPlatform['http']>[1]) => apiJson(t, path, init);
const threadSessions = (key: string) => sessionsOfThread(t, key);
const assigned = (issueId: string, teamKey = 'ENG') =>
  ln.issueAssigned({
    issueId,
    title: `Issue ${issueId}`,
    description: 'The export times out.',
    teamId: `team-${teamKey}`,
    teamKey,
    assigneeId: ln.appUser.id,
    actor: person,
  });

beforeAll(async () => {
  ln = await startLinearIntegration();
  t = await startPlatform({
    env: {
      INTEGRATIONS_PUBLIC_URL: PUBLIC_URL,
      LINEAR_CLIENT_ID: ln.clientId,
      LINEAR_CLIENT_SECRET: ln.clientSecret,
      LINEAR_WEBHOOK_SECRET: ln.webhookSecret,
      LINEAR_API_URL: ln.url,
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(ln.url).host,
      EGRESS_CA_CERTS: ln.certFile,
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'linear' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'linear', model: MODEL })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await ln?.close();
});

describe('Linear integration', () => {
  it('installs by OAuth as the app', async () => {
    const done = await installByOAuth(t, 'linear', ln.certFile);
    expect(done.status, done.page).toBe(200);
    const list = await json('/v1/svc/integrations');
    const linear = list.body.data.find((i: any) => i.id === 'linear');
    expect(linear.configured).toBe(true);
    expect(linear.installs).toEqual([
      expect.objectContaining({
        external_id: ln.organization.id,
        account: { id: ln.organization.id, name: ln.organization.name },
      }),
    ]);
    expect(JSON.stringify(list.body)).not.toContain(ln.clientSecret);
    for (const token of ln.liveTokens()) expect(JSON.stringify(list.body)).not.toContain(token);
  });

  it('an assignment starts a session; the answer is a comment; a mention continues it', async () => {
    const pub = await json('/v1/svc/integrations/linear/publications', {
      method: 'POST',
      json: { agent: agentId, environment_id: envId, workspace: { team_key: 'ENG' } },
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);

    t.model.script(MODEL, say('I will look at the export.'));
    const first = await postWebhook(t, HOOK, ln.webhook(assigned('iss-1')));
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    await vi.waitFor(() => expect(ln.comments).toHaveLength(1), { timeout: 20_000, interval: 100 });
    expect(ln.comments[0]).toMatchObject({ issueId: 'iss-1', body: 'I will look at the export.' });
    const [session] = await threadSessions('iss-1');
    expect(session).toBeDefined();

    t.model.script(MODEL, say('The index was missing.'));
    const comment = ln.commentCreated({
      issueId: 'iss-1',
      issueTitle: 'Issue iss-1',
      body: `@${ln.appUser.name} any news?`,
      teamId: 'team-ENG',
      teamKey: 'ENG',
      user: person,
    });
    expect((await postWebhook(t, HOOK, ln.webhook(comment))).status).toBe(202);
    await vi.waitFor(() => expect(ln.comments).toHaveLength(2), { timeout: 20_000, interval: 100 });
    expect(ln.comments[1]!.body).toBe('The index was missing.');
    expect(await threadSessions('iss-1')).toHaveLength(1);

    const events = JSON.stringify(
      (await t.client.beta.sessions.events.list(session!.id, { limit: 100 })).data,
    );
    expect(events).toContain('any news?');
    for (const c of ln.comments) expect(events).not.toContain(c.token);
  });

  it("another team's issue starts nothing; stale, forged and repeated deliveries are refused", async () => {
    expect((await postWebhook(t, HOOK, ln.webhook(assigned('iss-9', 'OPS')))).status).toBe(202);
    const stale = ln.webhook(assigned('iss-2'), { timestamp: Date.now() - 120_000 });
    const staleRes = await postWebhook(t, HOOK, stale);
    expect(staleRes.status).toBe(401);
    expect(staleRes.body.error.message).toMatch(/timestamp/i);
    const forged = ln.webhook(assigned('iss-3'), { secret: 'not-the-secret' });
    expect((await postWebhook(t, HOOK, forged)).status).toBe(401);
    const once = ln.webhook(assigned('iss-4'), { deliveryId: 'delivery-fixed-1' });
    t.model.script(MODEL, say('Taking iss-4.'));
    expect((await postWebhook(t, HOOK, once)).status).toBe(202);
    const again = await postWebhook(t, HOOK, once);
    expect(again.body.status).toBe('duplicate');
    await vi.waitFor(() => expect(ln.comments).toHaveLength(3), { timeout: 20_000, interval: 100 });
    await new Promise((r) => setTimeout(r, 500));
    expect(ln.comments).toHaveLength(3);
    for (const id of ['iss-9', 'iss-2', 'iss-3']) expect(await threadSessions(id)).toHaveLength(0);
  });

  it('state_change: the agent moves its issue; an unknown state lists the states; tokens are refreshed', async () => {
    const TOOL = 'mcp__linear_integration__set_issue_state';
    const pub = await json('/v1/svc/integrations/linear/publications', {
      method: 'POST',
      json: {
        agent: agentId,
        environment_id: envId,
        workspace: { team_key: 'DES' },
        capabilities: ['reply', 'state_change'],
      },
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
    // The stored access token now gets a 401; the refreshed ones expire within the margin.
    ln.expireAccessTokens();
    ln.tokenTtlSeconds = 60;
    t.model.script(
      MODEL,
      call(TOOL, { state: 'Shipped' }),
      call(TOOL, { state: 'in progress' }),
      say('Moved it to In Progress.'),
    );
    const before = t.model.requests.length;
    expect((await postWebhook(t, HOOK, ln.webhook(assigned('iss-20', 'DES')))).status).toBe(202);
    await vi.waitFor(() => expect(ln.comments.some((c) => c.issueId === 'iss-20')).toBe(true), {
      timeout: 30_000,
      interval: 100,
    });
    const inProgress = ln.states.find((x) => x.name === 'In Progress')!;
    // 401 → refresh #1 and retry (the unknown name); within the margin → refresh #2 before the
    // move and #3 before the reply; #2 and #3 work only with the rotated refresh tokens.
    expect(ln.refreshes).toHaveLength(3);
    expect(ln.stateChanges).toEqual([
      { issueId: 'iss-20', stateId: inProgress.id, token: ln.refreshes[1]!.accessToken },
    ]);
    const reply = ln.comments.find((c) => c.issueId === 'iss-20')!;
    expect(reply).toMatchObject({ body: 'Moved it to In Progress.' });
    expect(reply.token).toBe(ln.refreshes[2]!.accessToken);
    const offered = t.model.requests
      .slice(before)
      .filter((r) => r.model === MODEL)
      .map((r) => ((r.body as any).tools ?? []).map((x: any) => x.name));
    for (const tools of offered) expect(tools).toContain(TOOL);

    const [session] = await threadSessions('iss-20');
    const events = (await t.client.beta.sessions.events.list(session!.id, { limit: 100 })).data;
    const results = events.filter((e: any) => e.type === 'agent.mcp_tool_result') as any[];
    expect(results.map((r) => r.is_error)).toEqual([true, false]);
    expect(results[0].content[0].text).toContain('its states: Todo, In Progress, Done');
    expect(results[1].content[0].text).toBe('Moved ENG-1 to In Progress');
    const served = JSON.stringify(events);
    for (const r of ln.refreshes) {
      expect(served).not.toContain(r.accessToken);
      expect(served).not.toContain(r.refreshToken);
    }
    ln.tokenTtlSeconds = 86399;
  });

  it('uninstall revokes the token at Linear', async () => {
    const res = await json('/v1/svc/integrations/linear/uninstall', { method: 'POST', json: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.revoked).toBe(true);
    // The stored token expired within the margin: refreshed, then that one revoked.
    expect(ln.revoked).toEqual([ln.refreshes.at(-1)!.accessToken]);
    expect((await postWebhook(t, HOOK, ln.webhook(assigned('iss-5')))).body.status).toBe('ignored');
  });
});
