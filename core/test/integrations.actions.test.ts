/**
 * The provider actions (core/src/integrations/providers/{github,linear}Actions.ts) and Linear's
 * refresh grant, against the GitHub and Linear fixtures over real HTTPS through the egress
 * policy: inputs checked before any request, the providers' refusals as IntegrationError with
 * their message and no token, the refresh token rotating.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../test/kit/fixtures/githubIntegration.js';
import {
  startLinearIntegration,
  type LinearIntegrationFixture,
} from '../../test/kit/fixtures/linearIntegration.js';
import { createEgressPolicy, egressFetch } from '../src/egress/index.js';
import { IntegrationError, type InstallCredentials } from '../src/integrations/port.js';
import { GithubProvider } from '../src/integrations/providers/github.js';
import { LinearProvider } from '../src/integrations/providers/linear.js';

const REDIRECT = 'https://fleet.example/integrations/linear/callback';
let gh: GithubIntegrationFixture;
let ln: LinearIntegrationFixture;
let ghFetch: ReturnType<typeof egressFetch>;
let lnFetch: ReturnType<typeof egressFetch>;
let github: GithubProvider;
let linear: LinearProvider;

beforeAll(async () => {
  [gh, ln] = await Promise.all([startGithubIntegration(), startLinearIntegration()]);
  const policy = createEgressPolicy({ allowPrivateHosts: ['127.0.0.1'] });
  ghFetch = egressFetch(policy, { ca: readFileSync(gh.certFile) });
  lnFetch = egressFetch(policy, { ca: readFileSync(ln.certFile) });
  github = new GithubProvider(
    {
      appId: gh.appId,
      privateKey: gh.privateKeyPem,
      clientId: gh.clientId,
      clientSecret: gh.clientSecret,
      webhookSecret: gh.webhookSecret,
      apiUrl: gh.apiUrl,
      webUrl: gh.url,
    },
    { fetch: ghFetch, now: () => Date.now() },
  );
  linear = new LinearProvider(
    {
      clientId: ln.clientId,
      clientSecret: ln.clientSecret,
      webhookSecret: ln.webhookSecret,
      apiUrl: ln.url,
    },
    { fetch: lnFetch, now: () => Date.now() },
  );
});
afterAll(async () => {
  await Promise.all([ghFetch?.close(), lnFetch?.close()]);
  await Promise.all([gh?.close(), ln?.close()]);
});

async function refusal(p: Promise<unknown>, secrets: string[] = []): Promise<string> {
  const err = await p.then(() => null).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(IntegrationError);
  const message = (err as Error).message;
  for (const s of secrets) expect(message).not.toContain(s);
  return message;
}

describe('open_pull_request (GitHub pull_request)', () => {
  const action = () => github.actions.find((a) => a.tool === 'open_pull_request')!;
  const install: InstallCredentials = {
    external_id: '7001',
    access_token: null,
    refresh_token: null,
    data: { account_login: 'acme' },
  };
  const target = { owner: 'acme', repo: 'widgets', number: '3' };

  it('is the pull_request capability; bad inputs are refused before any request', async () => {
    expect(action().capability).toBe('pull_request');
    const before = gh.requests.length;
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ title: 'x' }, /head is required/],
      [{ head: 'a' }, /title is required/],
      [{ head: '../etc', title: 'x' }, /head is not a branch name/],
      [{ head: 'a..b', title: 'x' }, /head is not a branch name/],
      [{ head: 'x.lock', title: 'x' }, /head is not a branch name/],
      [{ head: 'ok', title: 'x', base: 'a b' }, /base is not a branch name/],
      [{ head: 'ok', title: '' }, /title must be/],
      [{ head: 'ok', title: 'x'.repeat(257) }, /title must be/],
      [{ head: 'ok', title: 'x', draft: 'yes' }, /draft must be/],
      [{ head: 'ok', title: 'x', assignees: ['me'] }, /assignees is not an input/],
    ];
    for (const [input, why] of bad)
      expect(await refusal(action().run(install, target, input)), JSON.stringify(input)).toMatch(
        why,
      );
    expect(
      await refusal(action().run(install, { owner: 'acme' }, { head: 'a', title: 'x' })),
    ).toMatch(/not a GitHub owner\/repo#number/);
    expect(gh.requests.length).toBe(before);
  });

  it("GitHub's refusal (a head it does not have) is its message, without the token", async () => {
    const message = await refusal(
      action().run(install, target, { head: 'agent/none', title: 'x', base: 'main' }),
    );
    for (const m of gh.mintedTokens) expect(message).not.toContain(m.token);
    expect(message).toMatch(/HTTP 422 \(Validation Failed\)/);
    expect(gh.pulls).toEqual([]);
  });

  it('sessionResources: the repository with pull_request, nothing without', () => {
    expect(github.sessionResources(target, ['reply'])).toEqual([]);
    expect(github.sessionResources(target, ['reply', 'pull_request'])).toEqual([
      {
        type: 'github_repository',
        url: `${gh.url}/acme/widgets.git`,
        mount_path: '/workspace/widgets',
      },
    ]);
    expect(github.sessionResources({ owner: '..', repo: 'x' }, ['pull_request'])).toEqual([]);
  });
});

describe('Linear: set_issue_state and refresh', () => {
  let creds: InstallCredentials;
  beforeAll(async () => {
    const res = await lnFetch(linear.authorizeUrl({ state: 's', redirectUri: REDIRECT }), {
      redirect: 'manual',
    });
    const [done] = await linear.complete(
      new URL(res.headers.get('location')!).searchParams,
      REDIRECT,
    );
    creds = {
      external_id: done!.external_id,
      access_token: done!.access_token,
      refresh_token: done!.refresh_token,
      data: done!.data,
    };
    // An issue the fixture knows (a webhook payload builder records it).
    ln.issueAssigned({
      issueId: 'iss-u1',
      title: 'Unit',
      teamId: 't',
      teamKey: 'ENG',
      assigneeId: ln.appUser.id,
      actor: { id: 'u', name: 'U' },
    });
  });
  const action = () => linear.actions.find((a) => a.tool === 'set_issue_state')!;

  it('bad inputs are refused before any request', async () => {
    expect(action().capability).toBe('state_change');
    const before = ln.requests.length;
    for (const input of [{}, { state: '' }, { state: 7 }, { state: 'x'.repeat(101) }])
      expect(await refusal(action().run(creds, { issue_id: 'iss-u1' }, input))).toMatch(
        /state must be/,
      );
    expect(
      await refusal(action().run(creds, { issue_id: 'iss-u1' }, { state: 'Done', x: 1 })),
    ).toMatch(/x is not an input/);
    expect(await refusal(action().run(creds, {}, { state: 'Done' }))).toMatch(/no Linear issue/);
    expect(ln.requests.length).toBe(before);
  });

  it('moves the issue by name (any case); the same state again changes nothing', async () => {
    const done = ln.states.find((s) => s.name === 'Done')!;
    expect(await action().run(creds, { issue_id: 'iss-u1' }, { state: 'DONE' })).toBe(
      'Moved ENG-1 to Done',
    );
    expect(ln.stateChanges).toEqual([
      { issueId: 'iss-u1', stateId: done.id, token: creds.access_token },
    ]);
    expect(await action().run(creds, { issue_id: 'iss-u1' }, { state: 'done' })).toBe(
      'ENG-1 is already in Done',
    );
    expect(ln.stateChanges).toHaveLength(1);
    expect(await refusal(action().run(creds, { issue_id: 'iss-nope' }, { state: 'Done' }))).toMatch(
      /Entity not found/,
    );
  });

  it('refresh rotates the refresh token; the old one is refused without showing it', async () => {
    const fresh = await linear.refresh(creds);
    expect(fresh.access_token).not.toBe(creds.access_token);
    expect(fresh.refresh_token).not.toBe(creds.refresh_token);
    expect(Date.parse(fresh.expires_at!)).toBeGreaterThan(Date.now());
    expect(ln.liveTokens()).toContain(fresh.access_token);
    const message = await refusal(linear.refresh(creds), [
      creds.refresh_token!,
      creds.access_token!,
      ln.clientSecret,
    ]);
    expect(message).toMatch(/Linear refused the refresh token: Invalid grant/);
    expect(await refusal(linear.refresh({ ...creds, refresh_token: null }))).toMatch(
      /no refresh token/,
    );
  });
});
