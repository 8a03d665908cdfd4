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
 *   with repository_authentication_error before any model request;
 * - an issue served by a publication with the `pull_request` capability: the session mounts the
 *   issue's repository, the agent pushes a branch and opens a pull request with the tool
 *   `mcp__github_integration__open_pull_request` (run by the control plane: the fixture records
 *   the pull request made with an installation token); a head GitHub does not have is the
 *   tool's error result with GitHub's message; a publication without the capability offers no
 *   such tool and mounts nothing.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, BETA, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';
import { startGitServer, type GitServer } from '../../kit/gitServer.js';
import {
  githubPlatformEnv,
  issueCommentPayload,
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

  const PR_TOOL = 'mcp__github_integration__open_pull_request';
  const publish = async (workspace: Record<string, string>, capabilities: string[]) => {
    const pub = await apiJson(t, '/v1/svc/integrations/github/publications', {
      method: 'POST',
      json: { agent: agentId, environment_id: envId, workspace, capabilities },
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
    expect(pub.body.capabilities).toEqual(capabilities);
  };
  const mention = (repo: string, number: number) =>
    postWebhook(
      t,
      '/v1/svc/integrations/github/webhook',
      gh.webhook(
        'issue_comment',
        issueCommentPayload({
          owner: 'acme',
          repo,
          number,
          title: `Issue ${number}`,
          body: `@${gh.slug} please fix it`,
          user: { login: 'octocat', id: 1 },
          installationId: 7001,
        }),
      ),
    );
  const offeredTools = (from: number) =>
    t.model.requests
      .slice(from)
      .filter((r) => r.model === MODEL)
      .map((r) => ((r.body as any).tools ?? []).map((x: any) => x.name) as string[]);

  it('an issue served with pull_request: the agent pushes a branch and opens a pull request it holds no token for', async () => {
    await publish({ owner: 'acme', repo: 'widgets' }, ['reply', 'pull_request']);
    const command = [
      'export NO_PROXY= no_proxy=',
      'cd /workspace/widgets',
      'git checkout -q -b agent/pr',
      'echo better > pr.txt && git add pr.txt && git -c user.name=a -c user.email=a@x commit -q -m "agent pr"',
      'git push -q origin agent/pr 2>&1; echo "push=$?"',
    ].join('; ');
    t.model.script(
      MODEL,
      call(PR_TOOL, { head: 'agent/not-pushed', title: 'Too early' }),
      call('bash', { command }),
      call(PR_TOOL, { head: 'agent/pr', title: 'Fix the widget' }),
      say('Opened the pull request.'),
    );
    const before = t.model.requests.length;
    const hook = await mention('widgets', 5);
    expect(hook.status, JSON.stringify(hook.body)).toBe(202);
    await vi.waitFor(() => expect(gh.comments.filter((c) => c.number === 5)).toHaveLength(1), {
      timeout: 90_000,
      interval: 200,
    });
    expect(gh.comments.find((c) => c.number === 5)!.body).toContain('Opened the pull request.');
    expect(gh.pulls).toEqual([
      expect.objectContaining({
        owner: 'acme',
        repo: 'widgets',
        head: 'agent/pr',
        base: 'main',
        title: 'Fix the widget',
        body: 'For #5.',
        draft: false,
      }),
    ]);
    for (const tools of offeredTools(before)) expect(tools).toContain(PR_TOOL);

    const [session] = await sessionsOfThread(t, 'acme/widgets#5');
    expect(session.resources).toEqual([
      expect.objectContaining({ type: 'github_repository', mount_path: '/workspace/widgets' }),
    ]);
    const events: any[] = [];
    for await (const e of t.client.beta.sessions.events.list(session.id, { limit: 100 }))
      events.push(e);
    const uses = events.filter((e) => e.type === 'agent.mcp_tool_use');
    expect(uses.map((u) => [u.mcp_server_name, u.name, u.evaluated_permission])).toEqual([
      ['github_integration', PR_TOOL, 'allow'],
      ['github_integration', PR_TOOL, 'allow'],
    ]);
    const results = events.filter((e) => e.type === 'agent.mcp_tool_result');
    expect(results.map((r) => r.is_error)).toEqual([true, false]);
    expect(results[0].content[0].text).toMatch(/GitHub refused opening a pull request.*422/);
    expect(results[1].content[0].text).toContain(`${gh.url}/acme/widgets/pull/100`);
    const bash = events.find((e) => e.type === 'agent.tool_result');
    expect(bash.content[0].text).toContain('push=0');
    const served = JSON.stringify(events);
    for (const m of gh.mintedTokens) expect(served).not.toContain(m.token);
  }, 150_000);

  it('a publication without pull_request offers no pull request tool and mounts nothing', async () => {
    await git.createRepo('acme/gadgets', { 'README.md': 'gadgets\n' });
    await publish({ owner: 'acme', repo: 'gadgets' }, ['reply']);
    t.model.script(MODEL, say('No pull requests from me.'));
    const before = t.model.requests.length;
    expect((await mention('gadgets', 9)).status).toBe(202);
    await vi.waitFor(() => expect(gh.comments.some((c) => c.repo === 'gadgets')).toBe(true), {
      timeout: 60_000,
      interval: 200,
    });
    const offered = offeredTools(before);
    expect(offered.length).toBeGreaterThan(0);
    for (const tools of offered)
      expect(tools.some((n) => n.includes('github_integration'))).toBe(false);
    const [session] = await sessionsOfThread(t, 'acme/gadgets#9');
    expect(session.resources).toEqual([]);
    expect(gh.pulls).toHaveLength(1);
  }, 120_000);
});
