/**
 * The Nomad driver's side of the egress CA and the session proxy, against the Nomad API fake
 * (test/kit/nomad/fake.ts: it runs the registered task's command on this machine, launcher +
 * bubblewrap + sandbox agent, as a raw_exec client would). What this proves is the job the
 * driver registers and what runs from it on one host; not a real Nomad client on another host.
 * - with the driver's `proxy` option, the job's sandbox gets the proxy (HTTP(S)_PROXY through the
 *   launcher's forwarder to a TCP proxy of ours) and the egress CA: the CA file, the combined
 *   bundle over the system bundle path, NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, REQUESTS_CA_BUNDLE;
 * - curl in that sandbox reaches an HTTPS upstream of ours through the proxy, which intercepts
 *   with the deployment CA (trusted by curl through the system path) and injects the
 *   credential; the secret is in no job the fake holds;
 * - the TCP proxy answers 407 without its Proxy-Authorization (from the host, and from the
 *   sandbox with the credentials stripped from the URL);
 * - the proxy is released once when the sandbox stops;
 * - the sandbox runtime's `proxyEndpoint` wiring (core/src/sandbox/proxies.ts) on a real platform:
 *   a Nomad sandbox (driver built on that wiring) of a session with a vault reaches the upstream
 *   with the session's static_bearer injected, read from the vault; a process it starts without
 *   a shell (startProcess, as stdio MCP servers are) sees an environment_variable placeholder
 *   and no command_secret.
 * NOT proved here: the composition root's use of it (server/src/sandboxDriver.ts does not pass
 * `proxy` yet, so platform sandboxes on Nomad still have no network).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createCertificateAuthority,
  createEgressPolicy,
  createLogger,
  createOutboundProxy,
  deploymentCa,
  hostPolicy,
  upstreamTrust,
  writeSandboxTrust,
} from '@agentfleet/core';
import { createNomadDriver, nomadAgentCommand, sandboxProgram } from '@agentfleet/core/adapters';
import { createSandboxRuntime } from '@agentfleet/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNomadFake, type NomadFake } from '../../kit/nomad/fake.js';
import { startPlatform } from '../../kit/harness.js';

const SECRET = 'sk-nomad-proxy-secret-61d2';
const PASSWORD = randomBytes(16).toString('hex');
let dir: string;
let fake: NomadFake;
let upstream: https.Server;
let upPort: number;
let proxy: Awaited<ReturnType<typeof createOutboundProxy>>;
let proxyPort: number;
let trust: Awaited<ReturnType<typeof writeSandboxTrust>>;
const seen: Array<{ url: string; authorization?: string }> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sbx-cred-nomad-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-subj', '/CN=nomad upstream', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ]); // prettier-ignore
  upstream = https.createServer(
    { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    (req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.end(`upstream saw ${req.url}`);
    },
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as AddressInfo).port;
  const ca = deploymentCa(await createCertificateAuthority('nomad test egress CA'));
  proxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    proxyAuthorization: `Basic ${Buffer.from(`sandbox:${PASSWORD}`).toString('base64')}`,
    context: { tenantId: 'tnt_nomad', sessionId: 'sesn_nomad' },
    policy: hostPolicy({}),
    egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${upPort}`] }),
    credentialHook: async (host) =>
      host === '127.0.0.1' ? { authorization: `Bearer ${SECRET}` } : null,
    intercept: { ca, upstream: await upstreamTrust(join(dir, 'cert.pem')) },
    log: () => {},
  });
  proxyPort = Number(new URL(proxy.address).port);
  trust = await writeSandboxTrust(join(dir, 'ca'), ca.certPem);
  fake = await startNomadFake({ node: { cpuMhz: 16_000, memoryMb: 65_536 } });
}, 60_000);

afterAll(async () => {
  await fake?.close();
  await proxy?.close();
  upstream?.closeAllConnections();
  upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Nomad sandboxes: the session proxy and the egress CA', () => {
  it('get the proxy and the CA trust; curl is intercepted and the credential injected', async () => {
    const scripts = {
      launcher: await sandboxProgram('launcher', join(dir, 'scripts')),
      agent: await sandboxProgram('agent', join(dir, 'scripts')),
    };
    let released = 0;
    const driver = createNomadDriver({
      client: { address: fake.address },
      agentCommand: (spec, extra) =>
        nomadAgentCommand(spec, { node: process.execPath, ...scripts, trust: extra.trust }),
      proxy: async () => ({
        url: `http://sandbox:${PASSWORD}@127.0.0.1:${proxyPort}`,
        trust,
        release: () => released++,
      }),
      job: { datacenters: ['dc1'], killTimeoutMs: 3000 },
      startTimeoutMs: 30_000,
      watchWait: '5s',
    });
    try {
      const h = await driver.start({
        tenantId: 'tnt_nomad',
        environmentId: 'env_nomad',
        sessionId: `sesn_nomad_${Date.now().toString(36)}`,
        size: 'small',
        env: {},
        proxyUrl: null,
      });
      const r = await h.api.exec({
        command: [
          'echo "vars=$NODE_EXTRA_CA_CERTS|$SSL_CERT_FILE|$REQUESTS_CA_BUNDLE"',
          'cmp -s "$SSL_CERT_FILE" /etc/ssl/certs/ca-certificates.crt && echo system=same',
          `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" 'https://127.0.0.1:${upPort}/nomad' -w ' code=%{http_code}\\n'`,
          `curl -sS --max-time 20 --noproxy '' -x "$(echo "$HTTP_PROXY" | sed 's#//.*@#//#')" 'http://127.0.0.1:${upPort}/' -o /dev/null -w 'noauth=%{http_code}\\n'`,
        ].join('; '),
        timeoutMs: 60_000,
      });
      expect(r.stdout).toContain(
        'vars=/opt/agentfleet/egress-ca.pem|/opt/agentfleet/ca-bundle.pem|/opt/agentfleet/ca-bundle.pem',
      );
      expect(r.stdout).toContain('system=same');
      expect(r.stdout).toContain('upstream saw /nomad code=200');
      expect(r.stdout).toContain('noauth=407');
      expect(seen).toEqual([{ url: '/nomad', authorization: `Bearer ${SECRET}` }]);
      expect(JSON.stringify(fake.jobs())).not.toContain(SECRET);
      await h.stop();
      await h.exited;
      expect(released).toBe(1);
    } finally {
      await driver.close();
    }
  }, 120_000);

  it('the TCP proxy refuses a request without its Proxy-Authorization (407)', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: proxyPort, path: `http://127.0.0.1:${upPort}/`, method: 'GET' },
        (res) => {
          res.resume();
          expect(res.headers['proxy-authenticate']).toMatch(/^Basic /);
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(407);
  });
});

describe('the sandbox runtime wiring for Nomad (proxyEndpoint) on a platform', () => {
  it("gives a Nomad sandbox the session's proxy: its vault's credential is injected", async () => {
    const t = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'local',
        EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${upPort}`,
        EGRESS_CA_CERTS: join(dir, 'cert.pem'),
      },
    });
    try {
      const { tenantId, client } = await t.newTenant('nomad-wiring');
      const vault = await client.beta.vaults.create({ display_name: 'nomad' });
      await client.beta.vaults.credentials.create(vault.id, {
        auth: {
          type: 'static_bearer',
          token: `${SECRET}-vault`,
          mcp_server_url: `https://127.0.0.1:${upPort}/mcp`,
        },
      });
      const env = await client.beta.environments.create({ name: 'nomad-wiring' });
      const agent = await client.beta.agents.create({ name: 'nomad-wiring', model: 'any-model' });
      const session = await client.beta.sessions.create({
        agent: agent.id,
        environment_id: env.id,
        vault_ids: [vault.id],
      });
      const scripts = {
        launcher: await sandboxProgram('launcher', join(dir, 'scripts')),
        agent: await sandboxProgram('agent', join(dir, 'scripts')),
      };
      const runtime = await createSandboxRuntime(
        t.server.platform,
        createLogger('warn', { test: 'nomad-wiring' }),
        async (wiring) =>
          createNomadDriver({
            client: { address: fake.address },
            agentCommand: (spec, extra) =>
              nomadAgentCommand(spec, { node: process.execPath, ...scripts, trust: extra.trust }),
            proxy: (spec) =>
              wiring.proxyEndpoint(spec, { bind: '127.0.0.1', advertise: '127.0.0.1' }),
            job: { datacenters: ['dc1'], killTimeoutMs: 3000 },
            startTimeoutMs: 30_000,
            watchWait: '5s',
          }),
      );
      try {
        seen.length = 0;
        const ref = { tenantId, sessionId: session.id, environmentId: env.id };
        const r = await runtime.manager.run(ref, (api) =>
          api.exec({
            command: `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" 'https://127.0.0.1:${upPort}/wired' -w ' code=%{http_code}'`,
            timeoutMs: 60_000,
          }),
        );
        expect(r.stdout).toContain('upstream saw /wired code=200');
        expect(seen).toEqual([{ url: '/wired', authorization: `Bearer ${SECRET}-vault` }]);
        // A process started without a shell (as stdio MCP servers are) sees the env var
        // credential's placeholder, and never a command_secret (even for a listed program).
        for (const auth of [
          {
            type: 'environment_variable',
            secret_name: 'ENV_TOKEN',
            secret_value: 'nomad-env-secret',
            networking: { type: 'unrestricted' },
          },
          {
            type: 'command_secret',
            secret_name: 'CMD_TOKEN',
            secret_value: 'nomad-cmd-secret',
            commands: ['printenv'],
          },
        ])
          await client.beta.vaults.credentials.create(vault.id, { auth } as any);
        const printed = await runtime.manager.run(ref, async (api) => {
          const proc = await api.startProcess({ command: 'printenv' });
          let out = '';
          for (;;) {
            const chunk = await proc.read();
            out += Buffer.from(chunk.data).toString();
            if (chunk.eof) break;
          }
          await proc.close();
          return out;
        });
        expect(printed).toMatch(/^ENV_TOKEN=afv_ph_[0-9a-f]{32}$/m);
        expect(printed).not.toContain('nomad-env-secret');
        expect(printed).not.toContain('CMD_TOKEN');
      } finally {
        await runtime.close();
      }
    } finally {
      await t.close();
    }
  }, 120_000);
});
