/**
 * TLS interception in the outbound proxy (core/src/egress/proxy/intercept.ts) and the
 * deployment CA (core/src/egress/ca.ts), against an HTTPS upstream of ours on 127.0.0.1 whose
 * certificate comes from a test CA the proxy trusts only through an EGRESS_CA_CERTS file:
 * - a host with a credential: the client sees a leaf chaining to the deployment CA, the
 *   upstream receives the injected Authorization (replacing the sandbox's), looked up live
 *   per request (a rotation applies inside an open connection);
 * - no credential, or an object-store host: a raw tunnel (the upstream's own certificate, no
 *   header added);
 * - a private address the operator did not open stays refused, credential or not;
 * - an upstream the proxy does not trust gets no request (502 tls_certificate_error);
 * - the CA is created once in the store, its key only sealed, and needs the same root secret.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer as netServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/store/embedded/documentStore.js';
import { loadConfig } from '../src/config/config.js';
import { SecretBox } from '../src/crypto.js';
import {
  createCertificateAuthority,
  EGRESS_CA_COLLECTION,
  issueServerCertificate,
  loadDeploymentCa,
  newServerKey,
  upstreamTrust,
  type CertificateAuthority,
  type DeploymentCa,
  type EgressCaDoc,
} from '../src/egress/ca.js';
import { createEgressPolicy } from '../src/egress/policy.js';
import {
  createOutboundProxy,
  hostPolicy,
  type CredentialHook,
  type OutboundProxy,
  type ProxyLogEntry,
} from '../src/egress/proxy/proxy.js';
import { connectVia, drain, waitFor } from './proxy.fixtures.js';

const ROOT_SECRET = 'intercept-test-root-secret-0123456789abcdef';
const SECRET = 'sk-vault-intercept-7f3a9c21';

let dir: string;
let testCa: CertificateAuthority;
let caFile: string;
let upstream: https.Server;
let upPort: number;
const received: Array<{ url: string; authorization?: string; host?: string }> = [];
let deployment: DeploymentCa;
const proxies: OutboundProxy[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'proxy-intercept-'));
  testCa = await createCertificateAuthority('agentfleet test upstream CA');
  caFile = join(dir, 'upstream-ca.pem');
  writeFileSync(caFile, testCa.certPem);
  const key = await newServerKey();
  const cert = issueServerCertificate(
    testCa,
    ['api.example.test', '127.0.0.1', 'localhost', 'bucket.s3.amazonaws.com'],
    key,
  );
  upstream = https.createServer({ key, cert }, (req, res) => {
    received.push({
      url: req.url ?? '',
      authorization: req.headers.authorization,
      host: req.headers.host,
    });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`upstream saw ${req.url}`);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as AddressInfo).port;
  const store = await openEmbeddedStore({ dir: join(dir, 'store') });
  deployment = await loadDeploymentCa(store, new SecretBox(ROOT_SECRET));
  await store.close();
}, 60_000);
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  received.length = 0;
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

/** A proxy opening the upstream's port; every name resolves to 127.0.0.1. */
async function startProxy(o: {
  hook?: CredentialHook;
  open?: boolean;
  trustFile?: string | null;
}): Promise<{ proxy: OutboundProxy; logs: ProxyLogEntry[] }> {
  const logs: ProxyLogEntry[] = [];
  const proxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    policy: hostPolicy({}),
    egress: createEgressPolicy({
      allowPrivateHosts: o.open === false ? [] : [{ host: '127.0.0.1', port: upPort }],
      lookup: async () => ({ address: '127.0.0.1', family: 4 }),
    }),
    credentialHook: o.hook,
    intercept: {
      ca: deployment,
      upstream: await upstreamTrust(o.trustFile === undefined ? caFile : o.trustFile),
    },
    log: (e) => logs.push(e),
    context: { tenantId: 'ten_1', sessionId: 'sesn_1' },
  });
  proxies.push(proxy);
  return { proxy, logs };
}

interface HttpsReply {
  status: number;
  body: string;
  headers: string;
  issuerCn: string;
  authorized: boolean;
}

/** CONNECT through the proxy, TLS trusting only `ca`, one GET sent as a sandbox would. */
async function getVia(
  proxy: OutboundProxy,
  host: string,
  ca: string,
  path = '/hello',
): Promise<HttpsReply> {
  const { status, socket } = await connectVia(proxy, `${host}:${upPort}`);
  expect(status).toBe(200);
  const t = tls.connect({
    socket,
    servername: host === '127.0.0.1' ? undefined : host,
    ca: [ca],
    rejectUnauthorized: false,
  });
  await new Promise<void>((resolve, reject) => {
    t.once('secureConnect', () => resolve());
    t.once('error', reject);
  });
  const peer = t.getPeerCertificate();
  const authorized = t.authorized;
  t.write(
    `GET ${path} HTTP/1.1\r\nHost: ${host}:${upPort}\r\nAuthorization: Bearer placeholder\r\nConnection: close\r\n\r\n`,
  );
  const raw = (await drain(t as unknown as Socket)).toString('utf8');
  const [head, ...rest] = raw.split('\r\n\r\n');
  return {
    status: Number(head.split(' ')[1]),
    headers: head,
    body: rest.join('\r\n\r\n'),
    issuerCn: String(peer.issuer?.CN ?? ''),
    authorized,
  };
}

const deploymentCn = () => new X509Certificate(deployment.certPem).subject;

describe('outbound proxy: TLS interception', () => {
  it('injects the credential for a host that has one, behind a leaf of the deployment CA', async () => {
    let value = `Bearer ${SECRET}`;
    const asked: string[] = [];
    const { proxy, logs } = await startProxy({
      hook: async (host) => {
        asked.push(host);
        return host === 'api.example.test' ? { Authorization: value } : null;
      },
    });
    const r = await getVia(proxy, 'api.example.test', deployment.certPem, '/v1/things?q=1');
    expect(r.authorized).toBe(true);
    expect(deploymentCn()).toContain(`CN=${r.issuerCn}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('upstream saw /v1/things?q=1');
    expect(received).toEqual([
      {
        url: '/v1/things?q=1',
        authorization: `Bearer ${SECRET}`,
        host: `api.example.test:${upPort}`,
      },
    ]);
    // Rotation: the next request uses the hook's current answer.
    value = 'Bearer rotated-2';
    await getVia(proxy, 'api.example.test', deployment.certPem);
    expect(received[1].authorization).toBe('Bearer rotated-2');
    expect(asked.length).toBeGreaterThanOrEqual(4);
    await waitFor(() => logs.filter((l) => l.method === 'GET').length === 2);
    const inner = logs.filter((l) => l.method === 'GET');
    expect(inner[0]).toMatchObject({
      host: 'api.example.test',
      port: upPort,
      path: '/v1/things?q',
      status: 200,
      reason: 'intercepted',
    });
    expect(JSON.stringify(logs)).not.toContain(SECRET);
  });

  it('asks for the credential per request: a rotation applies inside an open connection', async () => {
    let value = 'Bearer first';
    const { proxy } = await startProxy({ hook: async () => ({ authorization: value }) });
    const { socket } = await connectVia(proxy, `api.example.test:${upPort}`);
    const t = tls.connect({ socket, servername: 'api.example.test', ca: [deployment.certPem] });
    await new Promise<void>((resolve, reject) => {
      t.once('secureConnect', () => resolve());
      t.once('error', reject);
    });
    let text = '';
    t.on('data', (c: Buffer) => (text += c.toString('utf8')));
    const closed = new Promise<void>((r) => t.once('close', () => r()));
    t.write(`GET /one HTTP/1.1\r\nHost: api.example.test\r\n\r\n`);
    await waitFor(() => text.includes('upstream saw /one'));
    value = 'Bearer second';
    t.write(`GET /two HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n`);
    await closed;
    expect(text).toContain('upstream saw /two');
    expect(received.map((r) => [r.url, r.authorization])).toEqual([
      ['/one', 'Bearer first'],
      ['/two', 'Bearer second'],
    ]);
  });

  it('keeps a raw tunnel for a host without a credential: the upstream cert, no header added', async () => {
    let asked = 0;
    const { proxy } = await startProxy({
      hook: async () => {
        asked++;
        return null;
      },
    });
    const r = await getVia(proxy, 'api.example.test', testCa.certPem);
    expect(r.authorized).toBe(true);
    expect(r.issuerCn).toBe('agentfleet test upstream CA');
    expect(r.status).toBe(200);
    expect(asked).toBe(1);
    expect(received).toEqual([
      {
        url: '/hello',
        authorization: 'Bearer placeholder',
        host: `api.example.test:${upPort}`,
      },
    ]);
  });

  it('passes object-store hosts through raw even when a credential matches', async () => {
    const { proxy } = await startProxy({
      hook: async () => ({ authorization: `Bearer ${SECRET}` }),
    });
    const r = await getVia(proxy, 'bucket.s3.amazonaws.com', testCa.certPem);
    expect(r.authorized).toBe(true);
    expect(r.issuerCn).toBe('agentfleet test upstream CA');
    expect(received.map((x) => x.authorization)).toEqual(['Bearer placeholder']);
  });

  it('still refuses a private address the operator did not open, credential or not', async () => {
    const { proxy, logs } = await startProxy({
      open: false,
      hook: async () => ({ authorization: `Bearer ${SECRET}` }),
    });
    const { status, socket, head } = await connectVia(proxy, `api.example.test:${upPort}`);
    expect(status).toBe(403);
    const body = (await drain(socket, head)).toString('utf8');
    expect(body).not.toContain(SECRET);
    expect(received).toEqual([]);
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({ method: 'CONNECT', status: 403, reason: 'private_address' });
  });

  it('sends nothing to an upstream whose certificate it does not trust (no EGRESS_CA_CERTS)', async () => {
    const { proxy, logs } = await startProxy({
      trustFile: null,
      hook: async () => ({ authorization: `Bearer ${SECRET}` }),
    });
    const r = await getVia(proxy, 'api.example.test', deployment.certPem);
    expect(r.status).toBe(502);
    expect(r.headers).toContain('proxy-status: agentfleet; error=tls_certificate_error');
    expect(received).toEqual([]);
    await waitFor(() => logs.some((l) => l.method === 'GET'));
    expect(logs.find((l) => l.method === 'GET')).toMatchObject({ reason: 'upstream_tls_error' });
  });
});

describe('deployment CA', () => {
  it('is created once in the store, its key only sealed, and needs the same root secret', async () => {
    const storeDir = join(dir, 'ca-store');
    let store = await openEmbeddedStore({ dir: storeDir });
    const first = await loadDeploymentCa(store, new SecretBox(ROOT_SECRET));
    const again = await loadDeploymentCa(store, new SecretBox(ROOT_SECRET));
    expect(again.certPem).toBe(first.certPem);
    const docs = await store.collection<EgressCaDoc>({ name: EGRESS_CA_COLLECTION }).find({});
    expect(docs).toHaveLength(1);
    expect(docs[0].cert_pem).toBe(first.certPem);
    expect(docs[0].key_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(docs[0])).not.toContain('PRIVATE KEY');
    await store.close();
    // Nothing on disk holds the key in clear (only the certificate is public).
    const files = (d: string): string[] =>
      readdirSync(d).flatMap((f) =>
        statSync(join(d, f)).isDirectory() ? files(join(d, f)) : [join(d, f)],
      );
    for (const f of files(storeDir)) expect(readFileSync(f, 'latin1')).not.toContain('PRIVATE KEY');
    store = await openEmbeddedStore({ dir: storeDir });
    const reopened = await loadDeploymentCa(store, new SecretBox(ROOT_SECRET));
    expect(reopened.certPem).toBe(first.certPem);
    await expect(
      loadDeploymentCa(store, new SecretBox('another-root-secret-0123456789abcdef0123')),
    ).rejects.toThrow(/PLATFORM_ROOT_SECRET/);
    await store.close();
  });

  it('two processes creating it at once end up with one CA (the insert race is lost cleanly)', async () => {
    const store = await openEmbeddedStore({ dir: join(dir, 'race-store') });
    const box = new SecretBox(ROOT_SECRET);
    const [a, b] = await Promise.all([loadDeploymentCa(store, box), loadDeploymentCa(store, box)]);
    expect(a.certPem).toBe(b.certPem);
    const docs = await store.collection<EgressCaDoc>({ name: EGRESS_CA_COLLECTION }).find({});
    expect(docs.map((d) => d.cert_pem)).toEqual([a.certPem]);
    await store.close();
  });

  it('mints a leaf per host (DNS or IP) that chains to the CA', async () => {
    for (const host of ['api.example.test', '127.0.0.1']) {
      const ctx = await deployment.contextFor(host);
      // Served the way the proxy serves it: a TLSSocket over a plain connection.
      const server = netServer((s) => {
        const t = new tls.TLSSocket(s, { isServer: true, secureContext: ctx });
        t.on('error', () => s.destroy());
        t.on('secure', () => t.end());
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      const ok = await new Promise<boolean>((resolve) => {
        const c = tls.connect({
          host: '127.0.0.1',
          port,
          servername: host === '127.0.0.1' ? undefined : host,
          ca: [deployment.certPem],
        });
        c.once('secureConnect', () => {
          resolve(c.authorized);
          c.destroy();
        });
        c.once('error', () => resolve(false));
      });
      server.close();
      expect(ok).toBe(true);
    }
  });

  it('EGRESS_CA_CERTS: the config keeps the path; a file without a certificate is refused', async () => {
    const cfg = loadConfig('all', { DATA_DIR: join(dir, 'd'), EGRESS_CA_CERTS: caFile });
    expect(cfg.egress.caCertsFile).toBe(caFile);
    expect(loadConfig('all', { DATA_DIR: join(dir, 'd') }).egress.caCertsFile).toBeNull();
    const empty = join(dir, 'empty.pem');
    writeFileSync(empty, 'nothing here');
    await expect(upstreamTrust(empty)).rejects.toThrow(/EGRESS_CA_CERTS/);
    await expect(upstreamTrust(join(dir, 'missing.pem'))).rejects.toThrow(/EGRESS_CA_CERTS/);
  });
});
