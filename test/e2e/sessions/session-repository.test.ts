/**
 * Repository resources (`github_repository`, the spec's `code_host_repository`) in a real
 * sandbox (local bwrap driver), against a real git server (git http-backend behind HTTPS,
 * test/kit/gitServer.ts) that checks a token:
 * - session create clones the repository at the branch into /workspace/<name> during warmup,
 *   through the session's egress proxy, which injects the token by host and path: the agent's
 *   bash sees the branch, commits and pushes a new branch, and the git server has the commit;
 * - the token is nowhere in the sandbox (env, the clone's .git), the events, or any response;
 * - sessions.resources (TypeScript SDK): list, retrieve, update (the rotated token is what the
 *   proxy sends from the next request: a wrong one makes `git fetch` fail, the right one heals
 *   it), delete (the token goes with it), add (a file, in the sandbox at its next warmup);
 *   the Python SDK's round trip: test/e2e/sdk/sdk_suite/test_session_resources.py;
 * - a sandbox restored from its workspace checkpoint keeps the clone (unpushed commits too) and
 *   does not clone again;
 * - a wrong token or a missing repository ends the first turn with the SDK's
 *   repository_authentication_error / repository_not_found_error, before any model request;
 * - bad params are 400s naming the field (http URL, credentials in the URL, a bad branch, a
 *   reserved mount path), and another tenant's session resource is a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, BETA, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';
import { startGitServer, type GitServer } from '../../kit/gitServer.js';

const MODEL = 'repo-model';
const TOKEN = 'ghs_repoFixtureToken_7c1d93f0a2';
/** The token as two adjacent shell words: the command (an event) never holds it whole. */
const SPLIT = `'${TOKEN.slice(0, 10)}''${TOKEN.slice(10)}'`;

let t: TestPlatform;
let git: GitServer;
let url: string;
let envId: string;
let agentId: string;

beforeAll(async () => {
  git = await startGitServer({ token: TOKEN });
  ({ url } = await git.createRepo(
    'acme/widgets',
    { 'README.md': 'hello widgets\n' },
    { branches: { feature: { 'feature.txt': 'on feature\n' } } },
  ));
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${git.port}`,
      EGRESS_CA_CERTS: git.certFile,
      // Idle sandboxes stop (snapshotting /workspace) soon, so a restore can be observed.
      SANDBOX_SLEEP_AFTER_MS: '1500',
    },
  });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'repo' })).id;
  agentId = (
    await t.client.beta.agents.create({
      name: 'repo',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
}, 90_000);
afterAll(async () => {
  await t?.close();
  await git?.close();
});

const createWith = (resource: Record<string, unknown>) =>
  t.http('/v1/sessions', {
    method: 'POST',
    headers: BETA,
    json: { agent: agentId, environment_id: envId, resources: [resource] },
  });

/**
 * Runs `command` with the sandbox's NO_PROXY cleared: the git server is on 127.0.0.1, which
 * the sandbox's NO_PROXY (localhost, 127.0.0.1) would otherwise send around the proxy.
 */
async function bash(sid: string, command: string): Promise<string> {
  command = `export NO_PROXY= no_proxy=; ${command}`;
  t.model.script(MODEL, call('bash', { command }), say('done'));
  const { toolResults } = await runTurn(t.client, sid, 'run it');
  expect(toolResults).toHaveLength(1);
  return toolResults[0].content[0].text as string;
}

describe('repository resources', () => {
  let sid: string;
  let rid: string;

  it('clones the branch through the proxy; the agent commits and pushes a branch', async () => {
    const s = await t.client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [
        {
          type: 'github_repository',
          url,
          authorization_token: TOKEN,
          checkout: { type: 'branch', name: 'feature' },
        },
      ],
    });
    sid = s.id;
    const [res] = s.resources as any[];
    rid = res.id;
    expect(res).toMatchObject({
      type: 'github_repository',
      url,
      mount_path: '/workspace/widgets',
      checkout: { type: 'branch', name: 'feature' },
    });
    expect(JSON.stringify(s)).not.toContain(TOKEN);

    const out = await bash(
      sid,
      [
        'cd /workspace/widgets',
        'cat feature.txt',
        'git rev-parse --abbrev-ref HEAD',
        'git checkout -q -b agent/x',
        'echo change > agent.txt',
        'git add agent.txt',
        'git commit -q -m "agent change"',
        'git push -q origin agent/x 2>&1; echo "push=$?"',
        `echo "env_hits=$(env | grep -c ${SPLIT})"`,
        `echo "git_hits=$(grep -rc ${SPLIT} .git | grep -vc ':0$')"`,
      ].join('; '),
    );
    expect(out).toContain('on feature');
    expect(out).toContain('feature\n');
    expect(out).toContain('push=0');
    expect(out).toContain('env_hits=0');
    expect(out).toContain('git_hits=0');
    expect(out).not.toContain(TOKEN);
    expect(Object.keys(await git.refs('acme/widgets'))).toContain('refs/heads/agent/x');
    expect((await git.log('acme/widgets', 'agent/x'))[0]).toBe('agent change');
    // Only the proxy ever sent the token: every request the git server saw was authorized.
    expect(git.requests.length).toBeGreaterThan(2);
    expect(git.requests.every((r) => r.authorized)).toBe(true);

    const events = await t.http(`/v1/sessions/${sid}/events?limit=1000`, { headers: BETA });
    expect(await events.text()).not.toContain(TOKEN);
  }, 120_000);

  it('sessions.resources: list, retrieve, rotate the token (live), delete', async () => {
    const page = await t.client.beta.sessions.resources.list(sid);
    expect(page.data.map((r: any) => r.id)).toEqual([rid]);
    const got = await t.client.beta.sessions.resources.retrieve(rid, { session_id: sid });
    expect(got).toMatchObject({ id: rid, type: 'github_repository', url });
    expect(JSON.stringify(got)).not.toContain(TOKEN);

    await t.client.beta.sessions.resources.update(rid, {
      session_id: sid,
      authorization_token: 'ghs_wrong_token',
    });
    const fetchCmd = 'cd /workspace/widgets && git fetch -q origin 2>&1; echo "fetch=$?"';
    expect(await bash(sid, fetchCmd)).toMatch(/fetch=[1-9]/);
    const rotated = await t.client.beta.sessions.resources.update(rid, {
      session_id: sid,
      authorization_token: TOKEN,
    });
    expect(JSON.stringify(rotated)).not.toContain(TOKEN);
    expect(await bash(sid, fetchCmd)).toContain('fetch=0');

    const gone = await t.client.beta.sessions.resources.delete(rid, { session_id: sid });
    expect(gone).toEqual({ id: rid, type: 'session_resource_deleted' });
    expect(await bash(sid, fetchCmd)).toMatch(/fetch=[1-9]/);
    const after = await t.client.beta.sessions.resources.list(sid);
    expect(after.data).toEqual([]);
  }, 120_000);

  it('a file added through sessions.resources is in the sandbox at its next warmup', async () => {
    const s = await t.client.beta.sessions.create({ agent: agentId, environment_id: envId });
    const file = await t.client.beta.files.upload({
      file: new File(['added later\n'], 'later.txt', { type: 'text/plain' }),
    });
    const r = await t.client.beta.sessions.resources.add(s.id, { type: 'file', file_id: file.id });
    expect(r.mount_path).toBe(`/mnt/session/uploads/${file.id}`);
    expect(await bash(s.id, `cat ${r.mount_path}`)).toContain('added later');
  }, 60_000);

  it('a restored workspace checkpoint skips the clone: unpushed work survives, git is not asked', async () => {
    const s = await t.client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'github_repository', url, authorization_token: TOKEN }],
    });
    const first = await bash(
      s.id,
      'cd /workspace/widgets && echo local > local.txt && git add local.txt && git commit -q -m "local only" && echo committed',
    );
    expect(first).toContain('committed');
    const manager = t.server.sandboxes!.manager;
    for (let i = 0; i < 200 && manager.state(s.id) !== 'cold'; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(manager.state(s.id)).toBe('cold');
    const asked = git.requests.length;
    const again = await bash(s.id, 'cd /workspace/widgets && git log -1 --format=%s');
    expect(again).toContain('local only');
    expect(git.requests.length).toBe(asked);
  }, 60_000);

  it('a wrong token or a missing repository ends the first turn with the SDK error type', async () => {
    for (const [resource, type] of [
      [
        { type: 'github_repository', url, authorization_token: 'nope' },
        'repository_authentication_error',
      ],
      [
        { type: 'code_host_repository', url: git.url('acme/missing'), authorization_token: TOKEN },
        'repository_not_found_error',
      ],
    ] as const) {
      const res = await createWith(resource);
      expect(res.status, await res.clone().text()).toBe(200);
      const s = (await res.json()) as { id: string };
      const calls = t.model.requests.length;
      const { events } = await runTurn(t.client, s.id, 'hello');
      const err = events.find((e) => e.type === 'session.error');
      expect(err?.error, JSON.stringify(events)).toMatchObject({
        type,
        repository_url: resource.url,
        retry_status: { type: 'terminal' },
      });
      expect(t.model.requests.length).toBe(calls);
      expect(events.some((e) => e.type === 'agent.message')).toBe(false);
    }
  }, 120_000);

  it('refuses bad params with a 400 naming the field; another tenant gets 404', async () => {
    for (const [resource, field] of [
      [{ type: 'github_repository', url: 'http://127.0.0.1/acme/widgets.git' }, 'resources[0].url'],
      [
        { type: 'github_repository', url: url.replace('https://', `https://x:${TOKEN}@`) },
        'resources[0].url',
      ],
      [
        { type: 'github_repository', url, checkout: { type: 'branch', name: '-bad..name' } },
        'resources[0].checkout.name',
      ],
      [{ type: 'github_repository', url, mount_path: '/etc/widgets' }, 'resources[0].mount_path'],
    ] as const) {
      const res = await createWith(resource);
      const body = await res.text();
      expect(res.status, body).toBe(400);
      expect(body).toContain(field);
      expect(body).not.toContain(TOKEN);
    }
    const other = await t.newTenant('repo-other');
    const res = await t.http(`/v1/sessions/${sid}/resources`, { key: other.apiKey, headers: BETA });
    expect(res.status).toBe(404);
  }, 60_000);
});
