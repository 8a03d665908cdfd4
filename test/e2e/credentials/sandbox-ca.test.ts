/**
 * The deployment's egress CA in a real sandbox (local bwrap driver), through the TypeScript
 * SDK and the bash tool:
 * - every sandbox process sees NODE_EXTRA_CA_CERTS (the CA), SSL_CERT_FILE and
 *   REQUESTS_CA_BUNDLE (system bundle + CA), and the system bundle path shows that same bundle;
 * - with a credential for the upstream's host, curl's HTTPS through the session proxy is
 *   intercepted: curl (default trust store) accepts the minted certificate, and the upstream
 *   (an HTTPS server of ours on 127.0.0.1 whose self-signed certificate the proxy trusts only
 *   through EGRESS_CA_CERTS) receives the injected Authorization; the secret is nowhere in the
 *   sandbox's environment or the tool result;
 * - web_fetch, which runs on the worker through the same proxy, trusts that CA too;
 * - an unreadable EGRESS_CA_CERTS stops the worker from starting;
 * - with no test seam, a session's vault (vault_ids) supplies the credential: a static_bearer
 *   whose mcp_server_url host matches is injected, rotated live, and gone once the vault is
 *   archived; a session without the vault never gets it;
 * - without a credential the tunnel is raw: curl sees the upstream's own certificate (which
 *   the sandbox does not trust) and the upstream receives nothing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'ca-model';
const SECRET = 'sk-sandbox-ca-secret-4e91b7';

let t: TestPlatform;
let dir: string;
let upstream: https.Server;
let port: number;
const seen: Array<{ url: string; authorization?: string }> = [];
let sid: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandbox-ca-'));
  // The upstream's own certificate: self-signed for 127.0.0.1, trusted by the proxy only.
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=sandbox-ca upstream',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-days',
    '2',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
  ]);
  upstream = https.createServer(
    { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    (req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.end(`upstream saw ${req.url}`);
    },
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as AddressInfo).port;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port}`,
      EGRESS_CA_CERTS: join(dir, 'cert.pem'),
    },
  });
  await addModelCard(t, MODEL);
  const env = await t.client.beta.environments.create({ name: 'ca' });
  const agent = await t.client.beta.agents.create({
    name: 'ca',
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}, 90_000);
afterAll(async () => {
  await t?.close();
  upstream?.closeAllConnections();
  upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function bash(command: string): Promise<string> {
  t.model.script(MODEL, call('bash', { command }), say('done'));
  const { toolResults } = await runTurn(t.client, sid, 'run it');
  expect(toolResults).toHaveLength(1);
  return toolResults[0].content[0].text as string;
}

const curl = (path: string) =>
  `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" 'https://127.0.0.1:${port}${path}' -w ' code=%{http_code}\\n'; echo "exit=$?"`;

describe('egress CA in the sandbox trust store (local driver)', () => {
  it('points the TLS variables at the CA and the combined bundle, also at the system path', async () => {
    const out = await bash(
      [
        'echo "vars=$NODE_EXTRA_CA_CERTS|$SSL_CERT_FILE|$REQUESTS_CA_BUNDLE"',
        'openssl x509 -in "$NODE_EXTRA_CA_CERTS" -noout -subject',
        'cmp -s "$SSL_CERT_FILE" /etc/ssl/certs/ca-certificates.crt && echo system=same',
        'echo "certs=$(grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE")"',
        'tail -c 2000 "$SSL_CERT_FILE" | grep -q "$(sed -n 2p "$NODE_EXTRA_CA_CERTS")" && echo ca-in-bundle',
      ].join('; '),
    );
    expect(out).toContain(
      'vars=/opt/agentfleet/egress-ca.pem|/opt/agentfleet/ca-bundle.pem|/opt/agentfleet/ca-bundle.pem',
    );
    expect(out).toMatch(/subject=.*agentfleet egress CA [0-9a-f]{8}/);
    expect(out).toContain('system=same');
    expect(Number(/certs=(\d+)/.exec(out)?.[1])).toBeGreaterThan(1);
    expect(out).toContain('ca-in-bundle');
  }, 60_000);

  it('with a credential for the host: curl trusts the minted certificate and the upstream gets the header', async () => {
    t.server.sandboxes!.setCredentialLookup(async (host) =>
      host === '127.0.0.1' ? { header: 'Authorization', value: `Bearer ${SECRET}` } : null,
    );
    seen.length = 0;
    const out = await bash(`${curl('/injected')}; echo "env_hits=$(env | grep -c '${SECRET}')"`);
    expect(out).toContain('upstream saw /injected code=200');
    expect(out).toContain('exit=0');
    expect(seen).toEqual([{ url: '/injected', authorization: `Bearer ${SECRET}` }]);
    // The secret never reached the sandbox: not in its environment (grep counted 0), nor in the result.
    expect(out).toContain('env_hits=0');
    expect(out).not.toContain(SECRET);
  }, 60_000);

  it('web_fetch (on the worker, through the same proxy) trusts the CA and gets the credential injected', async () => {
    t.server.sandboxes!.setCredentialLookup(async (host) =>
      host === '127.0.0.1' ? { header: 'Authorization', value: `Bearer ${SECRET}` } : null,
    );
    seen.length = 0;
    t.model.script(
      MODEL,
      call('web_fetch', { url: `https://127.0.0.1:${port}/fetched` }),
      say('done'),
    );
    const { events } = await runTurn(t.client, sid, 'fetch it');
    const result = JSON.stringify(events.filter((e) => /tool_result/.test(e.type)));
    expect(result).toContain('upstream saw /fetched');
    expect(result).not.toContain(SECRET);
    expect(seen).toEqual([{ url: '/fetched', authorization: `Bearer ${SECRET}` }]);
  }, 60_000);

  it('a worker does not start with an unreadable EGRESS_CA_CERTS', async () => {
    await expect(
      startPlatform({
        model: t.model,
        env: { SANDBOX_DRIVER: 'local', EGRESS_CA_CERTS: join(dir, 'missing.pem') },
      }),
    ).rejects.toThrow(/EGRESS_CA_CERTS: cannot read/);
  }, 60_000);

  it("a session's vault credential is injected: static_bearer by its mcp_server_url host, rotated live, gone when archived", async () => {
    t.server.sandboxes!.setCredentialLookup(null); // the default: the session's vaults
    const vault = await t.client.beta.vaults.create({ display_name: 'ca-vault' });
    const cred = await t.client.beta.vaults.credentials.create(vault.id, {
      auth: {
        type: 'static_bearer',
        token: SECRET,
        mcp_server_url: `https://127.0.0.1:${port}/mcp`,
      },
    });
    const env = await t.client.beta.environments.create({ name: 'ca-vault' });
    const agent = await t.client.beta.agents.create({
      name: 'ca-vault',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const vsid = (
      await t.client.beta.sessions.create({
        agent: agent.id,
        environment_id: env.id,
        vault_ids: [vault.id],
      })
    ).id;
    const run = async (path: string) => {
      t.model.script(
        MODEL,
        call('bash', { command: `${curl(path)}; env | grep -c sk- || true` }),
        say('done'),
      );
      const { toolResults } = await runTurn(t.client, vsid, 'run it');
      return toolResults[0].content[0].text as string;
    };
    seen.length = 0;
    const first = await run('/vault');
    expect(first).toContain('exit=0');
    expect(first).not.toContain(SECRET);
    expect(seen).toEqual([{ url: '/vault', authorization: `Bearer ${SECRET}` }]);
    // Rotation takes effect on the next request; an archived vault injects nothing.
    await t.client.beta.vaults.credentials.update(cred.id, {
      vault_id: vault.id,
      auth: { type: 'static_bearer', token: `${SECRET}-rotated` },
    });
    seen.length = 0;
    await run('/rotated');
    expect(seen).toEqual([{ url: '/rotated', authorization: `Bearer ${SECRET}-rotated` }]);
    await t.client.beta.vaults.archive(vault.id);
    seen.length = 0;
    const raw = await run('/archived');
    expect(raw).toContain('exit=60');
    expect(seen).toEqual([]);
    // The session without vault_ids never gets it.
    await t.client.beta.vaults.credentials.create(
      (await t.client.beta.vaults.create({ display_name: 'unattached' })).id,
      {
        auth: {
          type: 'static_bearer',
          token: SECRET,
          mcp_server_url: `https://127.0.0.1:${port}/`,
        },
      },
    );
    seen.length = 0;
    expect(await bash(curl('/unattached'))).toContain('exit=60');
    expect(seen).toEqual([]);
  }, 120_000);

  it('without a credential the tunnel is raw: the upstream certificate, untrusted by the sandbox', async () => {
    t.server.sandboxes!.setCredentialLookup(null);
    seen.length = 0;
    const out = await bash(curl('/raw'));
    expect(out).toContain('exit=60');
    expect(out).not.toContain('upstream saw');
    expect(seen).toEqual([]);
  }, 60_000);
});
