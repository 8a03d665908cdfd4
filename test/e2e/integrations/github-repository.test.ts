/**
 * A `github_repository` resource without its own token, on a tenant with the GitHub App
 * installed: the session's egress proxy injects an installation token (minted from the App
 * JWT by the control plane) for git over HTTPS to repositories of the installation's account.
 * The GitHub fixture (test/kit/fixtures/githubIntegration.ts) serves git only with a live
 * installation token of the repository's owner and passes it through to a real git server
 * (test/kit/gitServer.ts, `git http-backend`) in a real sandbox (local bwrap driver):
 * - the clone at warmup, the agent's commit and `git push` all go through with the
 *   installation token, which is nowhere in the sandbox (env, .git) or the events;
 * - a repository of an owner the App is not installed on gets no token: the first turn ends
 *   with repository_authentication_error before any model request.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, BETA, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';
import { startGitServer, type GitServer } from '../../kit/gitServer.js';
import {
  githubPlatformEnv,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../kit/fixtures/githubIntegration.js';
import { installByOAuth, PUBLIC_URL } from '../../kit/integrations.js';

const MODEL = 'gh-repo-model';
let t: TestPlatform;
let gh: GithubIntegrationFixture;
let git: GitServer;
let agentId: string;
let envId: string;

beforeAll(async () => {
  git = await startGitServer();
  await git.createRepo('acme/widgets', { 'README.md': 'hello from acme\n' });
  await git.createRepo('other/private', { 'README.md': 'not yours\n' });
  gh = await startGithubIntegration();
  gh.gitBackend = { url: `https://127.0.0.1:${git.port}`, ca: readFileSync(git.certFile) };
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      ...githubPlatformEnv(gh, PUBLIC_URL),
    },
  });
  expect((await installByOAuth(t, 'github', gh.certFile)).status).toBe(200);
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'gh-repo' })).id;
  agentId = (
    await t.client.beta.agents.create({
      name: 'gh-repo',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
}, 90_000);
afterAll(async () => {
  await t?.close();
  await gh?.close();
  await git?.close();
});

const sessionWith = async (repoPath: string) => {
  const res = await t.http('/v1/sessions', {
    method: 'POST',
    headers: BETA,
    json: {
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'github_repository', url: `${gh.url}/${repoPath}.git` }],
    },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: string }).id;
};

describe('repository resources with the GitHub installation token', () => {
  it('clones, commits and pushes with an installation token the sandbox never sees', async () => {
    const sid = await sessionWith('acme/widgets');
    // The fixture is on 127.0.0.1, which the sandbox's NO_PROXY would send around the proxy.
    const command = [
      'export NO_PROXY= no_proxy=',
      'cd /workspace/widgets',
      'cat README.md',
      'git checkout -q -b agent/fix',
      'echo fixed > fix.txt && git add fix.txt && git -c user.name=a -c user.email=a@x commit -q -m "agent fix"',
      'git push -q origin agent/fix 2>&1; echo "push=$?"',
      'env | grep -c ghs_ ; grep -rl ghs_ .git | wc -l',
    ].join('; ');
    t.model.script(MODEL, call('bash', { command }), say('pushed'));
    const { toolResults } = await runTurn(t.client, sid, 'push a fix');
    const out = toolResults[0].content[0].text as string;
    expect(out).toContain('hello from acme');
    expect(out).toContain('push=0');
    expect(out).toMatch(/push=0\n0\n0\n/);
    expect(Object.keys(await git.refs('acme/widgets'))).toContain('refs/heads/agent/fix');
    expect((await git.log('acme/widgets', 'agent/fix'))[0]).toBe('agent fix');
    expect(gh.gitRequests.length).toBeGreaterThan(2);
    expect(gh.gitRequests.every((r) => r.authorized)).toBe(true);
    expect(gh.mintedTokens.length).toBeGreaterThan(0);
    const events = await (
      await t.http(`/v1/sessions/${sid}/events?limit=1000`, { headers: BETA })
    ).text();
    for (const m of gh.mintedTokens) expect(events).not.toContain(m.token);
  }, 120_000);

  it("another owner's repository gets no token: repository_authentication_error before the model", async () => {
    const before = t.model.requests.length;
    const sid = await sessionWith('other/private');
    const { events } = await runTurn(t.client, sid, 'read it');
    const err = events.find((e: any) => e.type === 'session.error');
    expect(err?.error?.type, JSON.stringify(err)).toBe('repository_authentication_error');
    expect(t.model.requests.length).toBe(before);
    expect(
      gh.gitRequests.filter((r) => r.path.startsWith('/other/')).every((r) => !r.authorized),
    ).toBe(true);
  }, 120_000);
});
