/**
 * Vault credentials taking effect in a real sandbox (local bwrap driver), through the
 * TypeScript SDK, the bash tool and a custom http tool; upstreams of ours on 127.0.0.1 (HTTPS
 * trusted by the proxy through EGRESS_CA_CERTS, and plain HTTP), opened with
 * EGRESS_ALLOW_PRIVATE_HOSTS, each recording what it received:
 * - environment_variable: every exec sees `$<secret_name>` as a placeholder (`afv_ph_…`),
 *   never the secret; the proxy substitutes the secret in header values and bodies on requests
 *   to hosts in allowed_hosts (HTTPS intercepted and plain HTTP), not on other hosts (the
 *   placeholder arrives there); a rotation and an injection_location change apply to the next
 *   request; a credential added after warmup appears on the next command;
 * - cap_cli: GH_TOKEN is a placeholder in the sandbox; `gh`'s header form
 *   (`Authorization: token <t>`) replaces the sandbox's on the CLI's hosts (the runtime's
 *   test seam maps gh to `localhost`, as no real GitHub host can be reached here); an unknown
 *   cli_id is a 400 naming auth.cli_id;
 * - command_secret: in the env of one simple command of a listed program only (not with `;`,
 *   pipes, `$(…)`, assignment prefixes, other programs);
 * - a custom http tool whose endpoint host has a static_bearer credential gets Authorization
 *   injected (the request is sent from the sandbox).
 * Unit cases of the simple-command parser are at the end.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_REGISTRY, simpleCommandProgram } from '@agentfleet/core';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'cred-model';
const ENV_SECRET = 'sk-env-secret-7c1f0a';
const GH_TOKEN = 'ghp-cli-token-52be19';
const CMD_SECRET = 'cmd-secret-a83d44';
const BEARER = 'sk-http-tool-bearer-19ce';

interface Seen {
  scheme: string;
  host: string;
  url: string;
  authorization?: string;
  xkey?: string;
  body: string;
}
const seen: Seen[] = [];
let t: TestPlatform;
let dir: string;
let tlsServer: https.Server;
let plainServer: http.Server;
let tlsPort: number;
let plainPort: number;
let vaultId: string;
let envCredId: string;
let sid: string;

const record = (scheme: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({
      scheme,
      host: String(req.headers.host ?? '').split(':')[0]!,
      url: req.url ?? '',
      authorization: req.headers.authorization,
      xkey: req.headers['x-key'] as string | undefined,
      body: Buffer.concat(chunks).toString(),
    });
    res.end(`${scheme} upstream saw ${req.url}`);
  });
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandbox-cred-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-subj', '/CN=sandbox-credentials upstream',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ]); // prettier-ignore
  tlsServer = https.createServer(
    { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    record('https'),
  );
  plainServer = http.createServer(record('http'));
  await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => plainServer.listen(0, '127.0.0.1', r));
  tlsPort = (tlsServer.address() as AddressInfo).port;
  plainPort = (plainServer.address() as AddressInfo).port;
  const open = [tlsPort, plainPort].flatMap((p) => [`127.0.0.1:${p}`, `localhost:${p}`]);
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: open.join(','),
      EGRESS_CA_CERTS: join(dir, 'cert.pem'),
    },
  });
  await addModelCard(t, MODEL);
  const vault = await t.client.beta.vaults.create({ display_name: 'creds' });
  vaultId = vault.id;
  envCredId = (
    await t.client.beta.vaults.credentials.create(vaultId, {
      auth: {
        type: 'environment_variable',
        secret_name: 'ENV_TOKEN',
        secret_value: ENV_SECRET,
        networking: { type: 'limited', allowed_hosts: ['127.0.0.1'] },
        injection_location: { header: true, body: true },
      },
    })
  ).id;
  const env = await t.client.beta.environments.create({ name: 'creds' });
  const agent = await t.client.beta.agents.create({
    name: 'creds',
    model: MODEL,
    tools: [
      { type: 'agent_toolset_20260401' },
      {
        type: 'custom',
        name: 'lookup',
        description: 'an http tool whose host has a vault credential',
        input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        execution: { type: 'http', endpoint: `https://localhost:${tlsPort}/tool`, method: 'POST' },
      },
    ] as any,
  });
  sid = (
    await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
      vault_ids: [vaultId],
    })
  ).id;
}, 90_000);

afterAll(async () => {
  await t?.close();
  for (const s of [tlsServer, plainServer]) {
    s?.closeAllConnections();
    s?.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

async function bash(command: string): Promise<string> {
  t.model.script(MODEL, call('bash', { command }), say('done'));
  const { toolResults } = await runTurn(t.client, sid, 'run it');
  expect(toolResults).toHaveLength(1);
  return toolResults[0].content[0].text as string;
}

/** curl through the session proxy with the placeholder in a header and in the body. */
const curlWithToken = (url: string) =>
  `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" -H "X-Key: k=$ENV_TOKEN" --data-binary "token=$ENV_TOKEN&x=1" '${url}' -w ' code=%{http_code}\\n'`;

const PLACEHOLDER = /^afv_ph_[0-9a-f]{32}$/;

describe('environment_variable credentials', () => {
  let placeholder: string;

  it('every exec sees only the placeholder, the same in each command', async () => {
    const out = await bash('printenv ENV_TOKEN; echo "piped=$(echo "$ENV_TOKEN" | cat)"');
    const [first, second] = out.split('\n');
    expect(first).toMatch(PLACEHOLDER);
    expect(second).toBe(`piped=${first}`);
    expect(out).not.toContain(ENV_SECRET);
    placeholder = first!;
    expect((await bash('printenv ENV_TOKEN')).split('\n')[0]).toBe(placeholder);
  }, 60_000);

  it('HTTPS to an allowed host: the secret replaces the placeholder in the header and the body', async () => {
    seen.length = 0;
    const out = await bash(curlWithToken(`https://127.0.0.1:${tlsPort}/env`));
    expect(out).toContain('https upstream saw /env code=200');
    expect(out).not.toContain(ENV_SECRET);
    expect(seen).toMatchObject([
      { scheme: 'https', url: '/env', xkey: `k=${ENV_SECRET}`, body: `token=${ENV_SECRET}&x=1` },
    ]);
  }, 60_000);

  it('plain HTTP: substituted for the allowed host; a host outside allowed_hosts gets the placeholder', async () => {
    seen.length = 0;
    const out = await bash(
      `${curlWithToken(`http://127.0.0.1:${plainPort}/allowed`)}; ${curlWithToken(`http://localhost:${plainPort}/other`)}`,
    );
    expect(out).toContain('http upstream saw /allowed code=200');
    expect(out).toContain('http upstream saw /other code=200');
    expect(seen).toEqual([
      expect.objectContaining({
        url: '/allowed',
        xkey: `k=${ENV_SECRET}`,
        body: `token=${ENV_SECRET}&x=1`,
      }),
      expect.objectContaining({
        url: '/other',
        xkey: `k=${placeholder}`,
        body: `token=${placeholder}&x=1`,
      }),
    ]);
  }, 60_000);

  it('a rotation and an injection_location change apply to the next request', async () => {
    await t.client.beta.vaults.credentials.update(envCredId, {
      vault_id: vaultId,
      auth: {
        type: 'environment_variable',
        secret_value: `${ENV_SECRET}-rotated`,
        injection_location: { body: false },
      },
    });
    seen.length = 0;
    await bash(curlWithToken(`https://127.0.0.1:${tlsPort}/rotated`));
    expect(seen).toMatchObject([
      { url: '/rotated', xkey: `k=${ENV_SECRET}-rotated`, body: `token=${placeholder}&x=1` },
    ]);
    expect((await bash('printenv ENV_TOKEN')).split('\n')[0]).toBe(placeholder);
  }, 60_000);

  it('a credential added after warmup is in the next command', async () => {
    await t.client.beta.vaults.credentials.create(vaultId, {
      auth: {
        type: 'environment_variable',
        secret_name: 'LATE_TOKEN',
        secret_value: 'late-secret-value',
        networking: { type: 'unrestricted' },
      },
    });
    const out = await bash('printenv LATE_TOKEN');
    expect(out.split('\n')[0]).toMatch(PLACEHOLDER);
    expect(out).not.toContain('late-secret-value');
  }, 60_000);
});

describe('cap_cli credentials', () => {
  it("inject the CLI's header form on its hosts (gh: Authorization: token …)", async () => {
    await t.client.beta.vaults.credentials.create(vaultId, {
      auth: { type: 'cap_cli', cli_id: 'gh', token: GH_TOKEN } as any,
    });
    // The seam maps gh's hosts to localhost: api.github.com cannot be reached from here.
    t.server.sandboxes!.setCliRegistry({
      ...CLI_REGISTRY,
      gh: { ...CLI_REGISTRY.gh!, hosts: ['localhost'] },
    });
    try {
      seen.length = 0;
      const out = await bash(
        `printenv GH_TOKEN; curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" -H "Authorization: token $GH_TOKEN" 'https://localhost:${tlsPort}/gh' -w ' code=%{http_code}\\n'; env | grep -c '${GH_TOKEN}' || true`,
      );
      // The CLI's token variable is a placeholder; the proxy replaces the whole header.
      expect(out.split('\n')[0]).toMatch(PLACEHOLDER);
      expect(out).toContain('https upstream saw /gh code=200');
      expect(out).not.toContain(GH_TOKEN);
      expect(seen).toMatchObject([{ url: '/gh', authorization: `token ${GH_TOKEN}` }]);
    } finally {
      t.server.sandboxes!.setCliRegistry(null);
    }
    // With the real registry, localhost is no gh host: nothing is injected there.
    seen.length = 0;
    await bash(
      `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" 'http://localhost:${plainPort}/nogh'`,
    );
    expect(seen).toMatchObject([{ url: '/nogh', authorization: undefined }]);
  }, 90_000);

  it('an unknown cli_id is refused with a 400 naming auth.cli_id and the known ids', async () => {
    const err: any = await t.client.beta.vaults.credentials
      .create(vaultId, { auth: { type: 'cap_cli', cli_id: 'nosuchcli', token: 'x' } as any })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(JSON.stringify(err.error)).toContain(
      "auth.cli_id: unknown CLI 'nosuchcli'; known cli_id values: gh, glab, hf, npm",
    );
  }, 30_000);
});

describe('command_secret credentials', () => {
  it('reach one simple command of a listed program, and nothing else', async () => {
    await t.client.beta.vaults.credentials.create(vaultId, {
      auth: {
        type: 'command_secret',
        secret_name: 'CMD_TOKEN',
        secret_value: CMD_SECRET,
        commands: ['printenv'],
      } as any,
    });
    expect(await bash('printenv CMD_TOKEN')).toContain(CMD_SECRET);
    expect(await bash('/usr/bin/printenv CMD_TOKEN')).toContain(CMD_SECRET);
    for (const command of [
      'printenv CMD_TOKEN; true',
      'printenv CMD_TOKEN | cat',
      'printenv CMD_TOKEN && true',
      'true || printenv CMD_TOKEN',
      'echo "$(printenv CMD_TOKEN)"',
      'X=1 printenv CMD_TOKEN',
      'printenv CMD_TOKEN > /tmp/out; cat /tmp/out',
      'printenv CMD_TOKEN &',
      'env',
      'sh -c "printenv CMD_TOKEN"',
    ])
      expect(await bash(command), command).not.toContain(CMD_SECRET);
  }, 180_000);
});

describe('custom http tools', () => {
  it("get the static_bearer credential of their endpoint's host injected (sent from the sandbox)", async () => {
    await t.client.beta.vaults.credentials.create(vaultId, {
      auth: {
        type: 'static_bearer',
        token: BEARER,
        mcp_server_url: `https://localhost:${tlsPort}/`,
      },
    });
    seen.length = 0;
    t.model.script(MODEL, call('lookup', { q: 'abc' }), say('done'));
    const { toolResults } = await runTurn(t.client, sid, 'look it up');
    expect(toolResults[0].content[0].text).toBe('https upstream saw /tool');
    expect(seen).toMatchObject([
      { url: '/tool', authorization: `Bearer ${BEARER}`, body: '{"q":"abc"}' },
    ]);
  }, 60_000);
});

describe('simpleCommandProgram (the command_secret gate)', () => {
  it('names the program of one simple command only', () => {
    expect(simpleCommandProgram('git status -s')).toBe('git');
    expect(simpleCommandProgram("  /usr/bin/git commit -m 'a b'  ")).toBe('git');
    expect(simpleCommandProgram('git log --format="%h %s"')).toBe('git');
    for (const c of [
      '',
      'git status; ls',
      'git status\nls',
      'git status && ls',
      'git status || ls',
      'git status | ls',
      'git status &',
      'git `ls`',
      'git $(ls)',
      'git "$(ls)"',
      'git $HOME',
      'git > out',
      'git < in',
      '(git status)',
      '{ git status; }',
      'A=1 git status',
      "'git' status",
      'git "unbalanced',
      `git "it's"`,
      'exec git status',
      'eval git status',
      'time git status',
      'git status # comment',
      'git \\\nstatus',
      '! git status',
    ])
      expect(simpleCommandProgram(c), JSON.stringify(c)).toBeNull();
  });
});
