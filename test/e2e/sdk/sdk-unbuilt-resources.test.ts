/**
 * What the official TypeScript SDK (@anthropic-ai/sdk 1.12) gets from this server for the
 * `client.beta.*` resources that are not built here: `tunnels` (+ certificates), `userProfiles` (+ actionURLs), `messages`
 * (create, countTokens, batches, toolRunner) and every `organization.*` resource. Each call is
 * answered by the not-found handler: a 404 `not_found` in the API error shape naming the
 * method and path ("no route …"), which the SDK raises as its NotFoundError; nothing is
 * created. The docs/COVERAGE.md rows of these resources rest on this test. A repository
 * session resource (`github_repository`) on a deployment with no sandbox (SANDBOX_DRIVER=none,
 * no egress enforcement point) is refused at create too (self_hosted:
 * test/e2e/work/self-hosted-lane.test.ts; where it is served: session-repository.test.ts), and
 * no session is stored.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let sid: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  const agent = await t.client.beta.agents.create({ name: 'unbuilt', model: 'claude-sonnet-4-5' });
  const env = await t.client.beta.environments.create({ name: 'unbuilt' });
  sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

type Call = [string, (b: any) => Promise<unknown>];
const message = {
  model: 'unbuilt-model',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hi' }],
};

const calls = (): Call[] => [
  ['tunnels.list', (b) => b.tunnels.list()],
  ['tunnels.create', (b) => b.tunnels.create({ name: 'x' })],
  ['tunnels.certificates.list', (b) => b.tunnels.certificates.list('tun_x')],
  ['userProfiles.list', (b) => b.userProfiles.list()],
  ['userProfiles.create', (b) => b.userProfiles.create({})],
  ['userProfiles.actionURLs.create', (b) => b.userProfiles.actionURLs.create('up_x', {})],
  ['messages.create', (b) => b.messages.create(message)],
  ['messages.countTokens', (b) => b.messages.countTokens(message)],
  ['messages.batches.list', (b) => b.messages.batches.list()],
  ['messages.batches.create', (b) => b.messages.batches.create({ requests: [] })],
  ['messages.toolRunner', (b) => b.messages.toolRunner({ ...message, tools: [] }).runUntilDone()],
  ['organization.retrieve', (b) => b.organization.retrieve()],
  ['organization.analytics.usageReport.list', (b) => b.organization.analytics.usageReport.list({})],
  ['organization.analytics.costReport.list', (b) => b.organization.analytics.costReport.list({})],
  ['organization.apiKeys.list', (b) => b.organization.apiKeys.list()],
  [
    'organization.claudeCode.managedSettings.configuration.retrieve',
    (b) => b.organization.claudeCode.managedSettings.configuration.retrieve(),
  ],
  ['organization.claudeTag.bundles.list', (b) => b.organization.claudeTag.bundles.list()],
  ['organization.complianceSettings.retrieve', (b) => b.organization.complianceSettings.retrieve()],
  ['organization.externalKeys.list', (b) => b.organization.externalKeys.list()],
  ['organization.federation.issuers.list', (b) => b.organization.federation.issuers.list()],
  ['organization.federation.rules.list', (b) => b.organization.federation.rules.list()],
  ['organization.invites.list', (b) => b.organization.invites.list()],
  ['organization.pluginMarketplaces.list', (b) => b.organization.pluginMarketplaces.list()],
  ['organization.plugins.list', (b) => b.organization.plugins.list()],
  ['organization.rateLimits.list', (b) => b.organization.rateLimits.list()],
  ['organization.rbacGroups.list', (b) => b.organization.rbacGroups.list()],
  ['organization.rbacRoles.list', (b) => b.organization.rbacRoles.list()],
  ['organization.serviceAccounts.list', (b) => b.organization.serviceAccounts.list()],
  ['organization.spendLimits.list', (b) => b.organization.spendLimits.list()],
  ['organization.telemetryDestinations.list', (b) => b.organization.telemetryDestinations.list()],
  ['organization.users.list', (b) => b.organization.users.list()],
  ['organization.webhooks.list', (b) => b.organization.webhooks.list()],
  ['organization.workspaces.list', (b) => b.organization.workspaces.list()],
  ['organization.workspaces.create', (b) => b.organization.workspaces.create({ name: 'w' })],
];

describe('SDK resources not built here', () => {
  it('every call is a 404 not_found naming the route, raised as the SDK NotFoundError', async () => {
    const beta = t.client.beta;
    for (const [name, call] of calls()) {
      const err = await call(beta).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(Anthropic.NotFoundError);
      const e = err as InstanceType<typeof Anthropic.NotFoundError>;
      expect(e.status, name).toBe(404);
      expect(e.error, name).toMatchObject({
        type: 'error',
        error: {
          type: 'not_found',
          message: expect.stringMatching(/^no route (GET|POST|DELETE) /),
        },
      });
    }
    // Nothing was attached to the session by the refused resource calls.
    expect((await t.client.beta.sessions.retrieve(sid)).resources).toEqual([]);
  });

  it('a github_repository session resource is a 400 naming resources[0].type; no session is stored', async () => {
    const agent = await t.client.beta.agents.create({ name: 'repo', model: 'claude-sonnet-4-5' });
    const env = await t.client.beta.environments.create({ name: 'repo-cloud' });
    const before = (await t.client.beta.sessions.list({ agent_id: agent.id })).data.length;
    await expect(
      t.client.beta.sessions.create({
        agent: agent.id,
        environment_id: env.id,
        resources: [{ type: 'github_repository', url: 'https://github.com/octo/repo' } as any],
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('resources[0].type') });
    expect(before).toBe(0);
    expect((await t.client.beta.sessions.list({ agent_id: agent.id })).data).toEqual([]);
  });
});
