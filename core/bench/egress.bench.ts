/**
 * Egress figures (no assertions): the latency a credential-injecting session proxy adds to an
 * HTTPS request, beside a direct request to the same upstream in the same run.
 *
 * One HTTPS upstream of ours on 127.0.0.1 (certificate from a throw-away test CA that the proxy
 * trusts through an EGRESS_CA_CERTS-style file). Three clients, each an undici dispatcher with
 * keep-alive, sending sequential GETs:
 *   - direct:   straight to the upstream (the floor);
 *   - tunnel:   through the session proxy with no credential for the host (raw CONNECT tunnel);
 *   - injected: through the session proxy with a credential hook for the host: TLS terminated
 *               with a leaf of the deployment CA, `Authorization` injected, re-encrypted upstream.
 * Each also measured with a new connection per request (the first request of a sandbox process),
 * where the CONNECT and both TLS handshakes are part of the figure.
 * Run: npx tsx core/bench/egress.bench.ts [requests=400]
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import { openEmbeddedStore } from '../src/adapters/embedded/documentStore.js';
import { SecretBox } from '../src/crypto.js';
import {
  createCertificateAuthority,
  issueServerCertificate,
  loadDeploymentCa,
  newServerKey,
  upstreamTrust,
} from '../src/egress/ca.js';
import { createEgressPolicy } from '../src/egress/policy.js';
import { createOutboundProxy, hostPolicy, type CredentialHook } from '../src/sandbox/proxy.js';
import { latencyRow, type LatencyRow } from './latencyRow.js';

export type EgressBenchRow = LatencyRow;
const row = latencyRow;

async function timed(n: number, make: () => Dispatcher, url: string, fresh: boolean) {
  const samples: number[] = [];
  let d = make();
  for (let i = 0; i < n + 10; i++) {
    if (fresh && i > 0) {
      await d.close();
      d = make();
    }
    const t0 = performance.now();
    const r = await request(url, { dispatcher: d });
    await r.body.text();
    if (r.statusCode !== 200) throw new Error(`bench request answered ${r.statusCode}`);
    if (i >= 10) samples.push(performance.now() - t0); // the first 10 warm up
  }
  await d.close();
  return samples;
}

export async function egressBench(o: { requests?: number } = {}): Promise<EgressBenchRow[]> {
  const n = o.requests ?? 400;
  const dir = mkdtempSync(join(tmpdir(), 'egress-bench-'));
  const testCa = await createCertificateAuthority('agentfleet bench upstream CA');
  const caFile = join(dir, 'upstream-ca.pem');
  writeFileSync(caFile, testCa.certPem);
  const key = await newServerKey();
  const cert = issueServerCertificate(testCa, ['127.0.0.1', 'localhost'], key);
  let injected = 0;
  const upstream = https.createServer({ key, cert }, (req, res) => {
    if (req.headers.authorization) injected++;
    res.end('ok');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as AddressInfo).port;
  const store = await openEmbeddedStore({ dir: join(dir, 'store') });
  const deployment = await loadDeploymentCa(
    store,
    new SecretBox('egress-bench-root-secret-0123456789'),
  );
  const trust = await upstreamTrust(caFile);
  const proxyWith = (hook?: CredentialHook) =>
    createOutboundProxy({
      listen: { host: '127.0.0.1', port: 0 },
      policy: hostPolicy({}),
      egress: createEgressPolicy({ allowPrivateHosts: [{ host: '127.0.0.1', port }] }),
      credentialHook: hook,
      intercept: { ca: deployment, upstream: trust },
      log: () => {},
      context: { tenantId: 'tnt_bench', sessionId: 'sesn_bench' },
    });
  const plain = await proxyWith();
  const injecting = await proxyWith(async () => ({ authorization: 'Bearer bench-token' }));
  const url = `https://127.0.0.1:${port}/bench`;
  const rows: EgressBenchRow[] = [];
  try {
    const direct = () => new Agent({ connect: { ca: testCa.certPem } });
    const via = (address: string, ca: string) => () =>
      new ProxyAgent({ uri: address, requestTls: { ca } });
    for (const fresh of [false, true]) {
      const suffix = fresh ? ', new connection each' : ', keep-alive';
      rows.push(row(`direct${suffix}`, await timed(n, direct, url, fresh)));
      rows.push(
        row(
          `proxy tunnel, no credential${suffix}`,
          await timed(n, via(plain.address, testCa.certPem), url, fresh),
        ),
      );
      rows.push(
        row(
          `proxy injected (intercepted)${suffix}`,
          await timed(n, via(injecting.address, deployment.certPem), url, fresh),
        ),
      );
    }
    if (injected === 0) throw new Error('bench: the injecting proxy never injected');
  } finally {
    await plain.close();
    await injecting.close();
    await store.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
  console.table(rows);
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await egressBench({ requests: Number(process.argv[2] ?? 400) });
}
