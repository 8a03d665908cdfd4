/**
 * The MCP proxy's upstream TLS (core/src/mcp/proxy.ts `upstreamFetch`): the system store plus
 * the operator's EGRESS_CA_CERTS, nothing else. Against HTTPS MCP servers of ours on 127.0.0.1
 * (test/kit/fixtures/mcpServer.ts with `tls`), each with its own self-signed certificate:
 * - the one whose certificate is in EGRESS_CA_CERTS is reached (official MCP SDK client through
 *   the gateway route) with the injected bearer;
 * - the other one (not trusted) is a 502 `upstream_unreachable`, and its server never sees the
 *   bearer.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';
import { clientViaGateway, rnd, rpc, sessionWith, textOf } from './mcpProxyHelpers.js';

const TOKEN = `tls-inline-${rnd()}${rnd()}`;
let dir: string;
let t: TestPlatform;
let trusted: McpServerFixture;
let untrusted: McpServerFixture;

/** A self-signed certificate for 127.0.0.1 (openssl, as test/e2e/credentials/sandbox-ca.test.ts makes it). */
function selfSigned(name: string): { key: Buffer; cert: Buffer; certFile: string } {
  const key = join(dir, `${name}-key.pem`);
  const cert = join(dir, `${name}-cert.pem`);
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=mcp-proxy ${name}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-days',
    '2',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  return { key: readFileSync(key), cert: readFileSync(cert), certFile: cert };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-tls-'));
  const a = selfSigned('trusted');
  const b = selfSigned('untrusted');
  trusted = await startMcpServer({ tokens: [TOKEN], tls: { key: a.key, cert: a.cert } });
  untrusted = await startMcpServer({ tokens: [TOKEN], tls: { key: b.key, cert: b.cert } });
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      EGRESS_ALLOW_PRIVATE_HOSTS: [trusted.url, untrusted.url]
        .map((u) => new URL(u).host)
        .join(','),
      EGRESS_CA_CERTS: a.certFile,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await trusted?.close();
  await untrusted?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('MCP proxy upstream TLS', () => {
  it('an HTTPS server trusted through EGRESS_CA_CERTS is reached with the bearer', async () => {
    const sid = await sessionWith(t.client, [
      { name: 'tls', url: trusted.url, authorization_token: TOKEN },
    ]);
    const c = await clientViaGateway(t, sid, 'tls');
    expect(textOf(await c.callTool({ name: 'echo', arguments: { text: 'tls' } }))).toBe(
      'echo: tls',
    );
    await c.close();
    expect(trusted.seen.at(-1)!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('a certificate nobody trusts: 502 upstream_unreachable, the bearer never sent', async () => {
    const sid = await sessionWith(t.client, [
      { name: 'tls', url: untrusted.url, authorization_token: TOKEN },
    ]);
    const res = await rpc(t, sid, 'tls');
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      error: { details: { reason: 'upstream_unreachable' } },
    });
    expect(text).not.toContain(TOKEN);
    expect(untrusted.seen).toEqual([]);
  });
});
