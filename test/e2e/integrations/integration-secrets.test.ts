/**
 * Secrets scan of the integrations (GitHub, Linear, Slack). The platform runs as a real child
 * process (LOG_LEVEL=debug, stdout and stderr captured, local bubblewrap sandboxes) against the
 * fixtures of test/kit/fixtures (GitHub with a real git backend; Linear and Slack behind a
 * recording tap, test/e2e/integrations/integrationSecretsFlow.ts). The test drives:
 * - an OAuth install of each integration, the list of integrations and publications;
 * - GitHub: a publication with ['reply', 'pull_request'] for acme/widgets; a signed
 *   issue_comment starts a session that mounts the repository, commits and `git push`es a branch
 *   (the proxy injects the installation token), opens a pull request with
 *   `mcp__github_integration__open_pull_request`, searches its sandbox, prints `env` and every
 *   /proc environ and cmdline, and replies;
 * - a `github_repository` session created through the API without a token: the same push,
 *   search and dump;
 * - Linear: a publication with ['reply', 'state_change']; the stored access token is expired
 *   first, so the `mcp__linear_integration__set_issue_state` call refreshes; then the reply;
 * - Slack: a publication with ['reply']; a mention is answered in its thread;
 * - the uninstall of each (GitHub deletes the installation, Linear and Slack revoke).
 *
 * Then every secret (GITHUB_APP_PRIVATE_KEY's PEM body lines, GITHUB_CLIENT_SECRET,
 * GITHUB_WEBHOOK_SECRET, every minted installation token, the user-to-server token,
 * LINEAR_CLIENT_SECRET, LINEAR_WEBHOOK_SECRET, every Linear access and refresh token,
 * SLACK_CLIENT_SECRET, SLACK_SIGNING_SECRET, the Slack bot token, the operator key, the root
 * secret, the vendor key and the model card key), in clear and in its URL/base64 forms, is
 * searched in every HTTP response the test received, every event of every session, every request
 * the model received (the card key allowed there: it is its credential), every log line of the
 * process through its shutdown, every file under DATA_DIR (gzip members decompressed: sandbox
 * snapshots), the environ and cmdline of every sandbox process sampled from the host's /proc, and
 * by the sandbox itself (every file it can read, token-shaped strings, its env). A failure names
 * the secret and the place, never the value.
 *
 * Positive controls: the sandbox's canaries are found by its own searches, and the canary is
 * found in a response, an event, a model request, a data-dir file and a snapshot's gzip member;
 * the fixtures received the secrets in use (a reply and a pull request made with a minted
 * installation token, authorized git requests, a Linear refresh and a state change made with the
 * refreshed token, a Slack reply with the bot token, the revocations); a bwrap process and a
 * tool's shell were sampled; the log holds debug lines, the sessions' ids, the integration
 * actions, the proxied git traffic and the last shutdown step.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, waitFor, type TestPlatform } from '../../kit/harness.js';
import { apiJson, installByOAuth } from '../../kit/integrations.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import {
  describeFindings,
  findSecrets,
  readTree,
  recordingFetch,
  sandboxProcesses,
  watchProcesses,
  type Finding,
  type ProcessSeen,
  type Secret,
} from '../../kit/secretsScan.js';
import { dumpSectionsHolding } from '../credentials/secretsScanSandbox.js';
import {
  CANARY,
  CARD_KEY,
  MODELS,
  OPERATOR_KEY,
  ROOT_SECRET,
  VENDOR_KEY,
  githubFlow,
  integrationEnv,
  integrationSecrets,
  linearFlow,
  repositoryFlow,
  slackFlow,
  startFixtures,
  uninstallAll,
  type Drive,
  type Fixtures,
} from './integrationSecretsFlow.js';

describe('integration secrets scan', () => {
  let model: ScriptedModelServer;
  let fx: Fixtures;
  let tmp: string;
  let dataDir: string;
  let child: ChildProcess;
  let logs: () => string;
  let baseUrl: string;
  const rec = recordingFetch();
  /** Events as the client saw them: `where` → event objects. */
  const events: Array<{ where: string; event: any }> = [];
  let sandboxSeen: ProcessSeen[] = [];
  let secrets: Secret[] = [];
  let sessionIds: string[] = [];
  /** The drive ran to its end: every secret to search for is known. */
  const expectSecretsKnown = () => expect(secrets.length).toBeGreaterThan(30);
  /** Sessions the log must name (sandboxes, integration actions). */
  const logged: string[] = [];

  const http: TestPlatform['http'] = (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key !== null) headers.set('x-api-key', init.key ?? OPERATOR_KEY);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return rec.fetch(`${baseUrl}${path}`, { ...init, headers, body });
  };
  let client: Anthropic;
  /** What test/kit/integrations.ts uses of a TestPlatform, for the child process. */
  const platform = {
    get url() {
      return baseUrl;
    },
    http,
    get client() {
      return client;
    },
  } as unknown as TestPlatform;

  /** One turn through the SDK: the live stream is opened first, then the message is sent. */
  async function turn(sid: string, text: string, label: string): Promise<any[]> {
    const stream = await client.beta.sessions.events.stream(sid);
    await client.beta.sessions.events.send(sid, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      events.push({ where: `event ${ev.type} of ${sid} (SSE live, ${label})`, event: ev });
      if (ev.type === 'session.status_idle') break;
    }
    return seen;
  }

  /** Model cards, an environment, an agent per flow; an OAuth install and a publication of each integration. */
  async function setUp() {
    const json = (path: string, init?: Parameters<TestPlatform['http']>[1]) =>
      apiJson(platform, path, init);
    for (const m of Object.values(MODELS)) {
      const card = await json('/v1/svc/model_cards', {
        method: 'POST',
        json: {
          model_id: m,
          provider: 'anthropic',
          model: m,
          base_url: model.url,
          api_key: CARD_KEY,
        },
      });
      expect(card.status, JSON.stringify(card.body)).toBe(200);
    }
    const envId = (await client.beta.environments.create({ name: 'iscan' })).id;
    const toolset = [{ type: 'agent_toolset_20260401' as const }];
    const agents: Record<keyof typeof MODELS, string> = { gh: '', repo: '', ln: '', sl: '' };
    for (const k of Object.keys(MODELS) as Array<keyof typeof MODELS>) {
      const tools = k === 'gh' || k === 'repo' ? { tools: toolset } : {};
      agents[k] = (await client.beta.agents.create({ name: k, model: MODELS[k], ...tools })).id;
    }
    for (const [id, cert] of [
      ['github', fx.gh.certFile],
      ['linear', fx.lnTap.certFile],
      ['slack', fx.slTap.certFile],
    ] as const) {
      const done = await installByOAuth(platform, id, cert);
      expect(done.status, done.page).toBe(200);
    }
    const list = (await json('/v1/svc/integrations')).body.data;
    expect(list.map((i: any) => [i.id, i.installs.length])).toEqual([
      ['github', 1],
      ['linear', 1],
      ['slack', 1],
    ]);
    for (const [id, workspace, capabilities, agent] of [
      ['github', { owner: 'acme', repo: 'widgets' }, ['reply', 'pull_request'], agents.gh],
      ['linear', { team_key: 'DES' }, ['reply', 'state_change'], agents.ln],
      ['slack', { channel: 'C-ops' }, ['reply'], agents.sl],
    ] as const) {
      const pub = await json(`/v1/svc/integrations/${id}/publications`, {
        method: 'POST',
        json: { agent, environment_id: envId, workspace, capabilities },
      });
      expect(pub.status, JSON.stringify(pub.body)).toBe(200);
      expect(pub.body.capabilities).toEqual(capabilities);
    }
    return { envId, agents };
  }

  beforeAll(async () => {
    model = await startScriptedModelServer();
    tmp = mkdtempSync(join(tmpdir(), 'agentfleet-iscan-'));
    dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-iscan-data-'));
    fx = await startFixtures(tmp);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    client = new Anthropic({
      apiKey: OPERATOR_KEY,
      baseURL: baseUrl,
      maxRetries: 0,
      timeout: 90_000,
      fetch: rec.fetch,
    });
    const started = await startProcess('all', {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      API_KEY: OPERATOR_KEY,
      PLATFORM_ROOT_SECRET: ROOT_SECRET,
      ANTHROPIC_API_KEY: VENDOR_KEY,
      ANTHROPIC_BASE_URL: model.url,
      LOG_LEVEL: 'debug',
      SANDBOX_DRIVER: 'local',
      SANDBOX_SLEEP_AFTER_MS: '1500',
      RECOVERY_SCAN_MS: '500',
      SHUTDOWN_GRACE_MS: '2000',
      ...integrationEnv(fx, model.url),
    });
    child = started.child;
    logs = started.output;
  }, 60_000);

  afterAll(async () => {
    if (child) await kill9(child);
    await model?.close();
    await fx?.close();
    for (const d of [tmp, dataDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('drives install, publication, webhook sessions (sandbox push, pull request, state change, replies) and uninstall of each integration', async () => {
    const watcher = watchProcesses(() => sandboxProcesses([child.pid!]));
    try {
      const d: Drive = {
        fx,
        model,
        rec,
        baseUrl,
        platform,
        client,
        turn: (sid, text, label) => turn(sid, text, label),
      };
      const { envId, agents } = await setUp();
      logged.push(await githubFlow(d));
      logged.push(await repositoryFlow(d, envId, agents.repo));
      logged.push(await linearFlow(d));
      await slackFlow(d);
      await uninstallAll(d);
      // Idle: a sandbox is snapshotted (its /workspace holds the canary and the repository's .git).
      await waitFor(
        async () =>
          readTree(join(dataDir, 'objects')).some(
            (f) => f.path.endsWith('.tar.gz!gunzip') && f.bytes.includes(CANARY),
          ),
        30_000,
        250,
      );
      // Every event of every session, and every read of the sessions.
      const list = await http('/v1/sessions?limit=100', { headers: BETA });
      sessionIds = ((await list.json()) as any).data.map((s: any) => s.id);
      expect(sessionIds).toHaveLength(4);
      for (const sid of sessionIds) {
        const page = (await (
          await http(`/v1/sessions/${sid}/events?limit=1000`, { headers: BETA })
        ).json()) as any;
        for (const e of page.data)
          events.push({ where: `event seq ${e.seq} ${e.type} of ${sid} (list)`, event: e });
        await (await http(`/v1/sessions/${sid}`, { headers: BETA })).text();
      }
      await (await http('/v1/svc/integrations', { headers: BETA })).text();
      for (const id of ['github', 'linear', 'slack'])
        await (await http(`/v1/svc/integrations/${id}/publications`, { headers: BETA })).text();
    } finally {
      sandboxSeen = watcher.stop();
    }
    secrets = integrationSecrets(fx);
    const names = secrets.map((s) => s.name);
    for (const n of [
      'GitHub installation token #1',
      'GitHub user-to-server token #1',
      'Linear access token #2',
      'Linear refresh token #2',
      'Slack bot token #1',
    ])
      expect(names).toContain(n);
  }, 180_000);

  it("no sandbox process (bwrap and everything under it, read from the host's /proc) has a secret in its environ or cmdline", () => {
    expectSecretsKnown();
    expect(sandboxSeen.some((p) => /(^|\/)bwrap /.test(p.cmdline))).toBe(true);
    expect(sandboxSeen.some((p) => p.cmdline.includes('sleep 1'))).toBe(true); // the tools' shells too
    const findings = sandboxSeen.flatMap((p) =>
      findSecrets(
        secrets,
        p.bytes,
        `host /proc/${p.pid} (${p.cmdline.split(' ')[0]}) environ or cmdline`,
      ),
    );
    expect(findings, `secrets found in sandbox processes:\n${describeFindings(findings)}`).toEqual(
      [],
    );
  });

  it('no HTTP response the test received (status, headers, body) carries a secret', () => {
    expectSecretsKnown();
    expect(rec.responses.length).toBeGreaterThan(40);
    const all = (r: (typeof rec.responses)[number]) =>
      Buffer.concat([Buffer.from(`${r.status}\n${r.headers}\n\n`), r.body()]);
    expect(rec.responses.some((r) => r.label.includes('/callback?') && r.status === 200)).toBe(
      true,
    );
    expect(rec.responses.some((r) => r.label.includes('/webhook') && r.status === 202)).toBe(true);
    expect(rec.responses.some((r) => all(r).includes(CANARY))).toBe(true);
    const findings: Finding[] = rec.responses.flatMap((r) =>
      findSecrets(secrets, all(r), `response ${r.label} (HTTP ${r.status})`),
    );
    expect(findings, `secrets found in HTTP responses:\n${describeFindings(findings)}`).toEqual([]);
  });

  it('no event of any session (listed, or streamed live) carries a secret', () => {
    expectSecretsKnown();
    const listed = new Set(events.map((e) => / of (\S+) \(list\)$/.exec(e.where)?.[1]));
    for (const sid of sessionIds) expect(listed).toContain(sid);
    expect(events.some((e) => e.where.includes('SSE live'))).toBe(true);
    expect(events.filter((e) => JSON.stringify(e.event).includes(CANARY)).length).toBeGreaterThan(
      2,
    );
    const findings = events.flatMap((e) =>
      findSecrets(secrets, JSON.stringify(e.event), e.where).map((f) => {
        const value = secrets.find((x) => x.name === f.secret)!.value;
        const sections = dumpSectionsHolding(e.event, value);
        return sections.length ? { ...f, where: `${f.where}, in ${sections.join(', ')}` } : f;
      }),
    );
    expect(findings, `secrets found in events:\n${describeFindings(findings)}`).toEqual([]);
  });

  it("no request the model received (the model's context) carries an integration secret", () => {
    expectSecretsKnown();
    expect(model.requests.some((r) => r.headers['x-api-key'] === CARD_KEY)).toBe(true);
    expect(model.requests.some((r) => JSON.stringify(r.body).includes(CANARY))).toBe(true);
    const findings = model.requests.flatMap((r, i) =>
      findSecrets(
        secrets,
        JSON.stringify({ headers: r.headers, body: r.body }),
        `model request #${i + 1} (${r.model})`,
      ),
    );
    expect(findings, `secrets found in model requests:\n${describeFindings(findings)}`).toEqual([]);
  });

  it('no log line of the process (debug level, through shutdown) carries a secret', async () => {
    expectSecretsKnown();
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
    const lines = logs().split('\n');
    expect(lines.filter((l) => l.includes('"level":"debug"')).length).toBeGreaterThan(10);
    // Controls: the log covers the flows (the sandbox sessions and the Linear one, both
    // integration actions, the repository traffic through the proxy) and the shutdown, and the
    // search finds what is there (each of those session ids).
    for (const sid of logged)
      expect(findSecrets([{ name: 'control', value: sid }], logs(), 'logs')).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"msg":"integration action"'))).toHaveLength(2);
    expect(
      lines.some((l) => l.includes('"msg":"outbound request"') && l.includes('widgets.git')),
    ).toBe(true);
    expect(lines.some((l) => l.includes('"step":"adapters"'))).toBe(true);
    const msgOf = (line: string) => {
      try {
        return String(JSON.parse(line).msg).slice(0, 80);
      } catch {
        return line.slice(0, 80);
      }
    };
    const findings = lines.flatMap((line, i) =>
      findSecrets(secrets, line, `log line ${i + 1} (${msgOf(line)})`),
    );
    // The location quotes the start of the line: make sure that prefix itself cannot hold a value.
    const safe = findings.map((f) => ({
      ...f,
      where: secrets.reduce((w, s) => w.split(s.value).join(`<${s.name}>`), f.where),
    }));
    expect(safe, `secrets found in log lines:\n${describeFindings(safe)}`).toEqual([]);
  }, 30_000);

  it('no file under DATA_DIR (store, objects, outputs, snapshots decompressed) carries a secret', () => {
    expectSecretsKnown();
    expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
    expect(existsSync(dataDir)).toBe(true);
    const files = readTree(dataDir);
    expect(files.some((f) => !f.path.endsWith('!gunzip') && f.bytes.includes(CANARY))).toBe(true);
    expect(files.some((f) => f.path.endsWith('.tar.gz!gunzip') && f.bytes.includes(CANARY))).toBe(
      true,
    );
    const findings = files.flatMap((f) => findSecrets(secrets, f.bytes, `file DATA_DIR/${f.path}`));
    expect(findings, `secrets found in data-dir files:\n${describeFindings(findings)}`).toEqual([]);
  });
});
