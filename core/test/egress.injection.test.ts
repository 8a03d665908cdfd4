/**
 * The session proxy's vault injection (core/src/egress/injection/vaultInjection.ts injectionFor) at the
 * proxy's public interface, with names the real registry uses: the proxy's egress lookup maps
 * api.github.com, gitlab.com, a bucket of S3 and api.example.test to an HTTP server of ours on
 * 127.0.0.1 (opened for those names only), so the real CLI_REGISTRY entries are proved without
 * reaching the internet. Plain HTTP through the forwarder (the HTTPS interceptor shares the same
 * header and body code: test/e2e/credentials/sandbox-credentials.test.ts proves it in a real sandbox):
 * - cap_cli: gh's `Authorization: token <t>` on api.github.com, glab's `PRIVATE-TOKEN` on
 *   gitlab.com, nothing on other hosts; a static_bearer for the host wins over a cap_cli;
 * - object-store hosts pass through raw: no header injected, no placeholder substituted;
 * - environment_variable bodies over MAX_SUBSTITUTION_BODY_BYTES pass unchanged (placeholder
 *   kept), one just under it is substituted with a corrected content-length.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createEgressPolicy,
  createOutboundProxy,
  hostPolicy,
  injectionFor,
  MAX_SUBSTITUTION_BODY_BYTES,
} from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const NAMES = ['api.github.com', 'gitlab.com', 'bucket.s3.amazonaws.com', 'api.example.test'];
const PH = 'afv_ph_0123456789abcdef0123456789abcdef';
const SECRET = 'env-secret-value-3f9a';

const cred = (type: string, auth: Record<string, unknown>, secrets: Record<string, string>) => ({
  credential_id: `vcrd_${type}`,
  vault_id: 'vlt_1',
  type,
  auth: { type, ...auth },
  secrets,
});
let creds: any[] = [];

interface Seen {
  host: string;
  authorization?: string;
  privateToken?: string;
  xkey?: string;
  length: number;
  contentLength?: string;
  tail: string;
}
const seen: Seen[] = [];
let upstream: http.Server;
let port: number;
let proxy: Awaited<ReturnType<typeof createOutboundProxy>>;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({
        host: String(req.headers.host).split(':')[0]!,
        authorization: req.headers.authorization,
        privateToken: req.headers['private-token'] as string | undefined,
        xkey: req.headers['x-key'] as string | undefined,
        length: body.length,
        contentLength: req.headers['content-length'],
        tail: body.subarray(Math.max(0, body.length - 64)).toString(),
      });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as AddressInfo).port;
  proxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    context: { tenantId: 'ten_1', sessionId: 'ses_1' },
    policy: hostPolicy({}),
    egress: createEgressPolicy({
      allowPrivateHosts: NAMES.map((n) => `${n}:${port}`),
      lookup: async (host) => {
        if (!NAMES.includes(host)) throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
        return { address: '127.0.0.1', family: 4 };
      },
    }),
    egressCredentials: async (host) => injectionFor(creds, host),
    log: () => {},
  });
});
afterAll(async () => {
  await proxy?.close();
  upstream?.closeAllConnections();
  upstream?.close();
});

/** A plain-HTTP request through the proxy (absolute URI). */
function send(host: string, opts: { body?: Buffer; headers?: Record<string, string> } = {}) {
  const target = new URL(proxy.address);
  return new Promise<number>((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: Number(target.port),
        method: opts.body ? 'POST' : 'GET',
        path: `http://${host}:${port}/x`,
        headers: {
          host: `${host}:${port}`,
          ...(opts.body ? { 'content-length': String(opts.body.length) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

describe('cap_cli through the real CLI registry', () => {
  it("gh and glab get their header forms on their own hosts only; a host's static_bearer wins", async () => {
    creds = [
      cred('cap_cli', { cli_id: 'gh' }, { token: 'gh-token-1' }),
      cred('cap_cli', { cli_id: 'glab' }, { token: 'glab-token-1' }),
    ];
    seen.length = 0;
    for (const h of ['api.github.com', 'gitlab.com', 'api.example.test'])
      expect(await send(h, { headers: { authorization: 'from-sandbox' } })).toBe(200);
    expect(seen).toMatchObject([
      { host: 'api.github.com', authorization: 'token gh-token-1', privateToken: undefined },
      { host: 'gitlab.com', authorization: 'from-sandbox', privateToken: 'glab-token-1' },
      { host: 'api.example.test', authorization: 'from-sandbox', privateToken: undefined },
    ]);
    creds.unshift(
      cred('static_bearer', { mcp_server_url: 'https://api.github.com/mcp' }, { token: 'sb-1' }),
    );
    seen.length = 0;
    await send('api.github.com');
    expect(seen).toMatchObject([{ authorization: 'Bearer sb-1' }]);
  });
});

describe('object-store hosts pass through raw', () => {
  it('get no header and no substitution, while another host does', async () => {
    creds = [
      cred('static_bearer', { mcp_server_url: 'http://bucket.s3.amazonaws.com/' }, { token: 'sb' }),
      cred(
        'environment_variable',
        {
          secret_name: 'T',
          networking: { type: 'unrestricted' },
          injection_location: { header: true, body: true },
        },
        { secret_value: SECRET, placeholder: PH },
      ),
    ];
    seen.length = 0;
    for (const h of ['bucket.s3.amazonaws.com', 'api.example.test'])
      await send(h, { headers: { 'x-key': PH }, body: Buffer.from(`v=${PH}`) });
    expect(seen).toMatchObject([
      { host: 'bucket.s3.amazonaws.com', authorization: undefined, xkey: PH, tail: `v=${PH}` },
      { host: 'api.example.test', authorization: undefined, xkey: SECRET, tail: `v=${SECRET}` },
    ]);
  });
});

describe('environment_variable body substitution is bounded', () => {
  it('substitutes in a body under the bound (new content-length) and leaves a larger one unchanged', async () => {
    creds = [
      cred(
        'environment_variable',
        {
          secret_name: 'T',
          networking: { type: 'limited', allowed_hosts: ['*.example.test'] },
          injection_location: { header: false, body: true },
        },
        { secret_value: SECRET, placeholder: PH },
      ),
    ];
    const body = (size: number) =>
      Buffer.concat([Buffer.alloc(size - PH.length, 'a'), Buffer.from(PH)]);
    seen.length = 0;
    await send('api.example.test', { body: body(MAX_SUBSTITUTION_BODY_BYTES) });
    await send('api.example.test', { body: body(MAX_SUBSTITUTION_BODY_BYTES + 1) });
    await send('api.example.test', { body: Buffer.from(PH), headers: { 'x-key': PH } });
    const small = MAX_SUBSTITUTION_BODY_BYTES - PH.length + SECRET.length;
    expect(seen).toMatchObject([
      {
        length: small,
        contentLength: String(small),
        tail: expect.stringMatching(new RegExp(`${SECRET}$`)),
      },
      {
        length: MAX_SUBSTITUTION_BODY_BYTES + 1,
        tail: expect.stringMatching(new RegExp(`${PH}$`)),
      },
      // header: false: the header keeps the placeholder, the body is substituted.
      { xkey: PH, tail: SECRET },
    ]);
  });
});
