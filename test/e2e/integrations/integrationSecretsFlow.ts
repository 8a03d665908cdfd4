/**
 * The flows and the secrets of the integrations secrets scan
 * (test/e2e/integrations/integration-secrets.test.ts, whose header says what is searched and
 * where): the fixtures (GitHub with a git backend, Linear, Slack), the platform's settings for
 * them, the flows driven against the platform running as a child process, and the list of every
 * integration secret known at scan time.
 *
 * Linear and Slack are reached through a recording TLS tap in front of their fixtures, so every
 * token they hand the platform (including a Linear refresh token it never sends back) is known
 * to the scan.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { expect, vi } from 'vitest';
import { BETA, type TestPlatform } from '../../kit/harness.js';
import type { ScriptedModelServer, ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import { call, say } from '../../kit/turnHelpers.js';
import { startGitServer, type GitServer } from '../../kit/gitServer.js';
import {
  issueCommentPayload,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../kit/fixtures/githubIntegration.js';
import {
  startLinearIntegration,
  type LinearIntegrationFixture,
} from '../../kit/fixtures/linearIntegration.js';
import {
  startSlackIntegration,
  type SlackIntegrationFixture,
} from '../../kit/fixtures/slackIntegration.js';
import { apiJson, PUBLIC_URL, sessionsOfThread } from '../../kit/integrations.js';
import { secretForms, type recordingFetch, type Secret } from '../../kit/secretsScan.js';
import { selfSignedCert } from '../../kit/tls.js';
import { boundFileScan, dumpCommand } from '../credentials/secretsScanSandbox.js';

const rand = () => randomBytes(12).toString('hex');
export const OPERATOR_KEY = `iscan-operator-key-${rand()}`;
export const ROOT_SECRET = `iscan-root-secret-${rand()}${rand()}`;
export const VENDOR_KEY = `sk-ant-iscan-vendor-${rand()}`;
export const CARD_KEY = `sk-iscan-card-key-${rand()}`;
export const CANARY = `iscan-canary-${rand()}`;
export const MODELS = { gh: 'iscan-gh', repo: 'iscan-repo', ln: 'iscan-linear', sl: 'iscan-slack' };
export const PR_TOOL = 'mcp__github_integration__open_pull_request';
export const STATE_TOOL = 'mcp__linear_integration__set_issue_state';
/** Token shapes the sandbox also searches for (its control: a `ghs_000…` file it writes). */
const TOKEN_PATTERN =
  'ghs_[0-9a-f]{36}|ghu_[0-9a-f]{32}|lin_(oauth|refresh)_[0-9a-f]{40}|xoxb-[0-9a-f]{24}';

/** An HTTPS pass-through to `upstream` that keeps every response body (a fixture's answers). */
export interface Tap {
  url: string;
  certFile: string;
  bodies: string[];
  close(): Promise<void>;
}

async function startTap(upstream: string, upstreamCertFile: string): Promise<Tap> {
  const tls = selfSignedCert('integration secrets tap');
  const ca = readFileSync(upstreamCertFile);
  const bodies: string[] = [];
  const srv = https.createServer(
    { key: readFileSync(tls.keyFile), cert: readFileSync(tls.certFile) },
    (req, res) => {
      const target = new URL(req.url ?? '/', upstream);
      const headers = { ...req.headers, host: target.host };
      const up = https.request(target, { method: req.method, headers, ca }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => bodies.push(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(up);
    },
  );
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    certFile: tls.certFile,
    bodies,
    async close() {
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
      rmSync(tls.dir, { recursive: true, force: true });
    },
  };
}

export interface Fixtures {
  git: GitServer;
  gh: GithubIntegrationFixture;
  ln: LinearIntegrationFixture;
  sl: SlackIntegrationFixture;
  lnTap: Tap;
  slTap: Tap;
  /** One PEM file trusting every fixture (EGRESS_CA_CERTS takes one file). */
  caFile: string;
  close(): Promise<void>;
}

export async function startFixtures(tmp: string): Promise<Fixtures> {
  const git = await startGitServer();
  await git.createRepo('acme/widgets', { 'README.md': 'hello from acme\n' });
  const gh = await startGithubIntegration();
  gh.gitBackend = { url: `https://127.0.0.1:${git.port}`, ca: readFileSync(git.certFile) };
  const ln = await startLinearIntegration();
  const sl = await startSlackIntegration();
  const lnTap = await startTap(ln.url, ln.certFile);
  const slTap = await startTap(sl.url, sl.certFile);
  const caFile = join(tmp, 'fixtures-ca.pem');
  writeFileSync(
    caFile,
    [gh.certFile, lnTap.certFile, slTap.certFile].map((f) => readFileSync(f, 'utf8')).join('\n'),
  );
  return {
    git,
    gh,
    ln,
    sl,
    lnTap,
    slTap,
    caFile,
    async close() {
      for (const c of [lnTap, slTap, gh, ln, sl, git]) await c.close().catch(() => {});
    },
  };
}

/** The platform's integration settings for the fixtures (Linear and Slack through their taps). */
export function integrationEnv(fx: Fixtures, modelUrl: string): Record<string, string> {
  const { gh, ln, sl } = fx;
  const hosts = [modelUrl, gh.url, fx.lnTap.url, fx.slTap.url].map((u) => new URL(u).host);
  return {
    INTEGRATIONS_PUBLIC_URL: PUBLIC_URL,
    GITHUB_APP_ID: gh.appId,
    GITHUB_APP_PRIVATE_KEY: gh.privateKeyPem,
    GITHUB_CLIENT_ID: gh.clientId,
    GITHUB_CLIENT_SECRET: gh.clientSecret,
    GITHUB_WEBHOOK_SECRET: gh.webhookSecret,
    GITHUB_API_URL: gh.apiUrl,
    GITHUB_WEB_URL: gh.url,
    LINEAR_CLIENT_ID: ln.clientId,
    LINEAR_CLIENT_SECRET: ln.clientSecret,
    LINEAR_WEBHOOK_SECRET: ln.webhookSecret,
    LINEAR_API_URL: fx.lnTap.url,
    SLACK_CLIENT_ID: sl.clientId,
    SLACK_CLIENT_SECRET: sl.clientSecret,
    SLACK_SIGNING_SECRET: sl.signingSecret,
    SLACK_API_URL: `${fx.slTap.url}/api`,
    EGRESS_ALLOW_PRIVATE_HOSTS: hosts.join(','),
    EGRESS_CA_CERTS: fx.caFile,
  };
}

/** Every integration secret known now (tokens minted or issued so far), with the platform's own. */
export function integrationSecrets(fx: Fixtures): Secret[] {
  const { gh, ln, sl } = fx;
  const named = (name: string, values: Iterable<string>): Secret[] =>
    [...new Set([...values].filter((v) => v.length >= 12))].map((value, i) => ({
      name: `${name} #${i + 1}`,
      value,
    }));
  const tapped = (tap: Tap, field: string) =>
    tap.bodies.flatMap((b) => {
      try {
        const v = (JSON.parse(b) as Record<string, unknown>)[field];
        return typeof v === 'string' ? [v] : [];
      } catch {
        return [];
      }
    });
  const bearer = (h: string | null | undefined) => (h ?? '').replace(/^(Bearer|token) /i, '');
  // The PEM body lines after the public modulus and exponent (the first five lines): the key's
  // private part, found even where the PEM was re-encoded as a whole (JSON, base64, URL).
  const pemLines = gh.privateKeyPem
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
    .slice(6)
    .filter((l) => l.length >= 24);
  expect(pemLines.length).toBeGreaterThan(15);
  return [
    { name: 'operator API_KEY', value: OPERATOR_KEY },
    { name: 'PLATFORM_ROOT_SECRET', value: ROOT_SECRET },
    { name: 'ANTHROPIC_API_KEY (vendor)', value: VENDOR_KEY },
    {
      name: 'model card api_key',
      value: CARD_KEY,
      allowedIn: (where) => where.startsWith('model request '),
    },
    ...pemLines.map((value, i) => ({
      name: `GITHUB_APP_PRIVATE_KEY (PEM body line ${i + 7})`,
      value,
    })),
    { name: 'GITHUB_CLIENT_SECRET', value: gh.clientSecret },
    { name: 'GITHUB_WEBHOOK_SECRET', value: gh.webhookSecret },
    ...named(
      'GitHub installation token',
      gh.mintedTokens.map((m) => m.token),
    ),
    ...named(
      'GitHub user-to-server token',
      gh.requests
        .filter((r) => r.path === '/api/v3/user/installations')
        .map((r) => bearer(r.authorization)),
    ),
    { name: 'LINEAR_CLIENT_SECRET', value: ln.clientSecret },
    { name: 'LINEAR_WEBHOOK_SECRET', value: ln.webhookSecret },
    ...named('Linear access token', [
      ...ln.liveTokens(),
      ...ln.refreshes.map((r) => r.accessToken),
      ...ln.comments.map((c) => c.token),
      ...ln.stateChanges.map((c) => c.token),
      ...ln.revoked,
      ...ln.requests.map((r) => bearer(r.headers.authorization as string | undefined)),
      ...tapped(fx.lnTap, 'access_token'),
    ]),
    ...named('Linear refresh token', [
      ...ln.refreshes.map((r) => r.refreshToken),
      ...tapped(fx.lnTap, 'refresh_token'),
    ]),
    { name: 'SLACK_CLIENT_SECRET', value: sl.clientSecret },
    { name: 'SLACK_SIGNING_SECRET', value: sl.signingSecret },
    ...named('Slack bot token', [
      ...sl.messages.map((m) => m.token),
      ...sl.revoked,
      ...sl.requests.map((r) => bearer(r.authorization)).filter((t) => t.startsWith('xox')),
      ...tapped(fx.slTap, 'access_token'),
    ]),
  ];
}

/**
 * The sandbox's own search: writes the canaries, then searches every file it can read for every
 * form of every secret known when the model asks (boundFileScan: no whole value in a command),
 * for token-shaped strings, and counts them in its env.
 */
function sandboxSearch(fx: Fixtures): string {
  const forms = integrationSecrets(fx).flatMap((s) =>
    secretForms(s.value).map((f) => ({ label: `${s.name} ${f.form}`, value: f.bytes.toString() })),
  );
  const excl = '--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr';
  return [
    `echo ${CANARY} > /workspace/canary.txt`,
    `printf '%s%s\\n' ghs_ ${'0'.repeat(36)} > /tmp/pattern-canary.txt`,
    `timeout 90 grep -rlsE ${excl} '${TOKEN_PATTERN}' / 2>/dev/null | sed 's/^/token-pattern: /'`,
    `echo "env-token-count=$(env | grep -cE '${TOKEN_PATTERN}')"`,
    boundFileScan([{ label: 'canary', value: CANARY }, ...forms]),
  ].join('\n');
}

/** Asserts a sandbox search found the canaries and nothing else. */
function expectCleanSearch(out: string) {
  const lines = out.split('\n');
  expect(lines).toContain('bound-file scan done');
  expect(lines).toContain('bound-file canary: /workspace/canary.txt');
  expect(lines).toContain('token-pattern: /tmp/pattern-canary.txt');
  expect(lines).toContain('env-token-count=0');
  const hits = lines.filter(
    (l) =>
      (l.startsWith('bound-file ') &&
        !l.startsWith('bound-file canary:') &&
        l !== 'bound-file scan done') ||
      (l.startsWith('token-pattern: ') && l !== 'token-pattern: /tmp/pattern-canary.txt'),
  );
  // A hit names the secret's label and the file only.
  expect(hits, 'secrets found by the sandbox search').toEqual([]);
}

const PUSH = (branch: string) =>
  [
    'export NO_PROXY= no_proxy=',
    'cd /workspace/widgets',
    `git checkout -q -b ${branch}`,
    `echo ${branch} > scan.txt && git add scan.txt && git -c user.name=a -c user.email=a@x commit -q -m "${branch}"`,
    `git push -q origin ${branch} 2>&1; echo "push=$?"`,
  ].join('; ');
/** Bash calls: push a branch, (a tool), the sandbox search (built when asked), the env dump. */
const sandboxSteps = (fx: Fixtures, branch: string, between: ScriptedResponse[]) => [
  call('bash', { command: PUSH(branch) }),
  ...between,
  { steps: [], decide: () => call('bash', { command: sandboxSearch(fx) }) },
  // The pause lets the host sample the shell's environ and cmdline.
  call('bash', { command: `${dumpCommand(CANARY)}; sleep 1` }),
];

/** What the flows use of the test: recorded HTTP to the platform, the SDK client, the model. */
export interface Drive {
  fx: Fixtures;
  model: ScriptedModelServer;
  rec: ReturnType<typeof recordingFetch>;
  baseUrl: string;
  /** For test/kit/integrations.ts helpers: `http`, `client` and `url` of the child process. */
  platform: TestPlatform;
  client: Anthropic;
  turn: (sid: string, text: string, label: string) => Promise<any[]>;
}

const json = (d: Drive, path: string, init?: Parameters<TestPlatform['http']>[1]) =>
  apiJson(d.platform, path, init);
/** Posts a signed webhook as the provider would (no API key), through the recording fetch. */
async function postWebhook(
  d: Drive,
  path: string,
  signed: { headers: Record<string, string>; body: string },
) {
  const res = await d.rec.fetch(`${d.baseUrl}${path}`, { method: 'POST', ...signed });
  const text = await res.text();
  expect(res.status, text).toBe(202);
}
const toolTexts = (events: any[], type: string) =>
  events
    .filter((e) => e.type === type)
    .map((e) => (e.content ?? []).map((c: any) => c.text ?? '').join('') as string);
const sessionEvents = async (d: Drive, sid: string) =>
  (await json(d, `/v1/sessions/${sid}/events?limit=1000`)).body.data as any[];

/** GitHub: a mention on acme/widgets#5 → the session pushes, opens a PR, searches, dumps, replies. */
export async function githubFlow(d: Drive) {
  const { gh } = d.fx;
  d.model.script(
    MODELS.gh,
    ...sandboxSteps(d.fx, 'agent/scan', [call(PR_TOOL, { head: 'agent/scan', title: 'Scan fix' })]),
    say('Opened the pull request.'),
  );
  const payload = issueCommentPayload({
    owner: 'acme',
    repo: 'widgets',
    number: 5,
    title: 'Issue 5',
    body: `@${gh.slug} please fix it`,
    user: { login: 'octocat', id: 1 },
    installationId: 7001,
  });
  await postWebhook(d, '/v1/svc/integrations/github/webhook', gh.webhook('issue_comment', payload));
  await vi.waitFor(() => expect(gh.comments.filter((c) => c.number === 5)).toHaveLength(1), {
    timeout: 90_000,
    interval: 200,
  });
  const [session] = await sessionsOfThread(d.platform, 'acme/widgets#5');
  const events = await sessionEvents(d, session.id);
  const results = toolTexts(events, 'agent.tool_result');
  expect(results).toHaveLength(3);
  expect(results[0]).toContain('push=0');
  expectCleanSearch(results[1]!);
  expect(results[2]).toContain('== env');
  expect(results[2]).toContain(CANARY);
  const pr = toolTexts(events, 'agent.mcp_tool_result');
  expect(pr).toEqual([expect.stringContaining(`${gh.url}/acme/widgets/pull/`)]);
  // Controls: the fixture got the reply, the pull request and the git traffic with minted tokens.
  const minted = gh.mintedTokens.map((m) => m.token);
  expect(minted.length).toBeGreaterThan(0);
  expect(minted).toContain(gh.comments.find((c) => c.number === 5)!.token);
  expect(gh.pulls).toEqual([expect.objectContaining({ head: 'agent/scan', base: 'main' })]);
  expect(gh.gitRequests.some((r) => r.method === 'POST' && r.authorized)).toBe(true);
  expect(gh.gitRequests.every((r) => r.authorized)).toBe(true);
  expect(Object.keys(await d.fx.git.refs('acme/widgets'))).toContain('refs/heads/agent/scan');
  return session.id as string;
}

/** A github_repository resource without a token: the proxy injects an installation token. */
export async function repositoryFlow(d: Drive, envId: string, agentId: string) {
  const res = await d.platform.http('/v1/sessions', {
    method: 'POST',
    headers: BETA,
    json: {
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'github_repository', url: `${d.fx.gh.url}/acme/widgets.git` }],
    },
  });
  const created = JSON.parse(await res.text());
  expect(res.status, JSON.stringify(created)).toBe(200);
  d.model.script(MODELS.repo, ...sandboxSteps(d.fx, 'agent/direct', []), say('pushed'));
  const events = await d.turn(created.id, 'push a fix', 'repository turn');
  const results = toolTexts(events, 'agent.tool_result');
  expect(results).toHaveLength(3);
  expect(results[0]).toContain('push=0');
  expectCleanSearch(results[1]!);
  expect(results[2]).toContain('== env');
  expect(Object.keys(await d.fx.git.refs('acme/widgets'))).toContain('refs/heads/agent/direct');
  return created.id as string;
}

/** Linear: the stored access token is dead, so the state change refreshes; then the reply. */
export async function linearFlow(d: Drive) {
  const { ln } = d.fx;
  ln.expireAccessTokens();
  d.model.script(
    MODELS.ln,
    call(STATE_TOOL, { state: 'in progress' }),
    say('Moved it to In Progress.'),
  );
  const issue = ln.issueAssigned({
    issueId: 'iss-20',
    title: 'Issue iss-20',
    description: 'The export times out.',
    teamId: 'team-DES',
    teamKey: 'DES',
    assigneeId: ln.appUser.id,
    actor: { id: 'user-ada', name: 'Ada' },
  });
  await postWebhook(d, '/v1/svc/integrations/linear/webhook', ln.webhook(issue));
  await vi.waitFor(() => expect(ln.comments.some((c) => c.issueId === 'iss-20')).toBe(true), {
    timeout: 30_000,
    interval: 100,
  });
  const inProgress = ln.states.find((x) => x.name === 'In Progress')!;
  expect(ln.refreshes.length).toBeGreaterThan(0);
  expect(ln.stateChanges).toEqual([
    expect.objectContaining({ issueId: 'iss-20', stateId: inProgress.id }),
  ]);
  expect(ln.refreshes.map((r) => r.accessToken)).toContain(ln.stateChanges[0]!.token);
  expect(ln.comments.find((c) => c.issueId === 'iss-20')!.token).toMatch(/^lin_oauth_/);
  const [session] = await sessionsOfThread(d.platform, 'iss-20');
  const results = toolTexts(await sessionEvents(d, session.id), 'agent.mcp_tool_result');
  expect(results).toEqual(['Moved ENG-1 to In Progress']);
  return session.id as string;
}

/** Slack: a mention in C-ops is answered in its thread with the bot token. */
export async function slackFlow(d: Drive) {
  const { sl } = d.fx;
  d.model.script(MODELS.sl, say('Checking the deploy.'));
  const mention = sl.appMention({
    channel: 'C-ops',
    user: 'U-ada',
    text: `<@${sl.botUserId}> is prod down?`,
    ts: '1700000000.000100',
  });
  await postWebhook(d, '/v1/svc/integrations/slack/events', sl.event(mention));
  await vi.waitFor(() => expect(sl.messages).toHaveLength(1), { timeout: 20_000, interval: 100 });
  expect(sl.messages[0]).toMatchObject({ channel: 'C-ops', text: 'Checking the deploy.' });
  expect(sl.messages[0]!.token).toMatch(/^xoxb-/);
}

/** Uninstalls every integration: GitHub deletes the installation, Linear and Slack revoke. */
export async function uninstallAll(d: Drive) {
  for (const id of ['github', 'linear', 'slack']) {
    const res = await json(d, `/v1/svc/integrations/${id}/uninstall`, { method: 'POST', json: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.revoked, id).toBe(true);
  }
  expect(d.fx.gh.deletedInstallations).toEqual([7001]);
  expect(d.fx.ln.revoked.length).toBeGreaterThan(0);
  expect(d.fx.sl.revoked).toEqual([d.fx.sl.messages[0]!.token]);
  const list = (await json(d, '/v1/svc/integrations')).body.data;
  expect(list.map((i: any) => i.installs)).toEqual([[], [], []]);
}
