/**
 * The outbound proxy forwarding absolute-URI http:// requests (core/src/egress/proxy/forward.ts):
 * status, headers and body intact; policy refusals; credential injection and its failure;
 * hop-by-hop headers; what is logged; bad requests, upstream failures and header bounds.
 */
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { hostPolicy, proxyRequestTarget } from '../src/egress/proxy/proxy.js';
import { createEgressPolicy } from '../src/egress/policy.js';
import {
  connectVia,
  originPort,
  seen,
  startProxy,
  useProxyFixtures,
  viaProxy,
  waitFor,
} from './proxy.fixtures.js';

useProxyFixtures();

describe('outbound proxy: HTTP forwarding', () => {
  it('forwards an allowed request with status, headers and body intact, and logs it', async () => {
    const { proxy, logs } = await startProxy();
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/created/x`, {
      method: 'POST',
      body: 'hello world',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toBe('created:hello world');
    expect(r.headers['x-origin']).toBe('yes');
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/created/x', body: 'hello world' });
    expect(seen.at(-1)!.headers.host).toBe(`127.0.0.1:${originPort}`);
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      op: 'outbound.request',
      tenant_id: 'ten_1',
      session_id: 'sesn_1',
      method: 'POST',
      host: '127.0.0.1',
      port: originPort,
      path: '/created/x',
      status: 201,
      allowed: true,
      bytes_out: 11,
      bytes_in: 'created:hello world'.length,
    });
    expect(typeof logs[0].ms).toBe('number');
  });

  it('refuses a denylisted host with 403 naming the host, without contacting it', async () => {
    const { proxy, logs } = await startProxy({ policy: hostPolicy({ denylist: ['127.0.0.1'] }) });
    const before = seen.length;
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/nope`);
    expect(r.status).toBe(403);
    expect(r.body).toContain('127.0.0.1');
    expect(r.headers['proxy-status']).toMatch(/http_request_denied/);
    expect(seen.length).toBe(before);
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      host: '127.0.0.1',
      status: 403,
      allowed: false,
      reason: 'denylist',
      path: '/nope',
    });
  });

  it('applies a *.suffix allowlist', async () => {
    const { proxy, logs } = await startProxy({
      policy: hostPolicy({ allowlist: ['*.example.test'] }),
      lookup: async () => ({ address: '127.0.0.1', family: 4 }),
    });
    const ok = await viaProxy(proxy, `http://api.example.test:${originPort}/a`);
    expect(ok.status).toBe(200);
    expect(seen.at(-1)!.headers.host).toBe(`api.example.test:${originPort}`);
    const apex = await viaProxy(proxy, `http://example.test:${originPort}/a`);
    expect(apex.status).toBe(403);
    expect(apex.body).toContain('example.test');
    const other = await viaProxy(proxy, `http://evilexample.test:${originPort}/a`);
    expect(other.status).toBe(403);
    await waitFor(() => logs.length === 3);
    expect(logs.map((l) => [l.host, l.allowed, l.reason])).toEqual([
      ['api.example.test', true, 'allowlist'],
      ['example.test', false, 'not_in_allowlist'],
      ['evilexample.test', false, 'not_in_allowlist'],
    ]);
  });

  it('injects credentialHook headers for plain HTTP, replacing what the sandbox sent', async () => {
    const asked: string[] = [];
    const { proxy, logs } = await startProxy({
      credentialHook: async (host) => {
        asked.push(host);
        return host === '127.0.0.1'
          ? { Authorization: 'Bearer injected-secret-123', 'X-Extra': 'yes' }
          : null;
      },
    });
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/cred`, {
      headers: { authorization: 'Bearer from-sandbox' },
    });
    expect(r.status).toBe(200);
    expect(asked).toEqual(['127.0.0.1']);
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer injected-secret-123');
    expect(seen.at(-1)!.headers['x-extra']).toBe('yes');
    await waitFor(() => logs.length === 1);
    expect(JSON.stringify(logs)).not.toContain('injected-secret');
  });

  it('fails closed with 502 when the credential lookup throws', async () => {
    const { proxy, logs } = await startProxy({
      credentialHook: async () => {
        throw new Error('vault down');
      },
    });
    const before = seen.length;
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/cred`);
    expect(r.status).toBe(502);
    expect(seen.length).toBe(before);
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({ status: 502, reason: 'credential_lookup_failed' });
  });

  it('strips hop-by-hop headers in both directions', async () => {
    const { proxy } = await startProxy();
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/hop`, {
      headers: {
        connection: 'keep-alive, x-drop-me',
        'x-drop-me': 'listed-in-connection',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic c2VjcmV0',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        'x-keep': 'end-to-end',
      },
    });
    expect(r.status).toBe(200);
    const h = seen.at(-1)!.headers;
    expect(h['x-keep']).toBe('end-to-end');
    for (const k of ['x-drop-me', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te'])
      expect(h[k], k).toBeUndefined();
    expect(String(h.connection ?? '')).not.toContain('x-drop-me');
    expect(r.headers['x-end-to-end']).toBe('kept');
    expect(r.headers['x-resp-hop']).toBeUndefined();
    expect(String(r.headers.connection ?? '')).not.toContain('x-resp-hop');
  });

  it('logs no header values and no query string values', async () => {
    const { proxy, logs } = await startProxy();
    const r = await viaProxy(
      proxy,
      `http://127.0.0.1:${originPort}/search?token=QUERYSECRET&page=2`,
      {
        headers: {
          'x-api-key': 'HEADERSECRET',
          cookie: 'sid=COOKIESECRET',
          authorization: 'Bearer AUTHSECRET',
        },
      },
    );
    expect(r.status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/search?token=QUERYSECRET&page=2');
    await waitFor(() => logs.length === 1);
    expect(logs[0].path).toBe('/search?token&page');
    const line = JSON.stringify(logs);
    for (const secret of ['QUERYSECRET', 'HEADERSECRET', 'COOKIESECRET', 'AUTHSECRET', 'x-api-key'])
      expect(line).not.toContain(secret);
  });

  it('answers 400 to origin-form requests and non-http absolute URIs', async () => {
    const { proxy } = await startProxy();
    const { port } = proxyRequestTarget(proxy.address) as { port: number };
    const direct = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/not-absolute', agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(direct).toBe(400);
    const ftp = await viaProxy(proxy, `ftp://127.0.0.1:${originPort}/x`);
    expect(ftp.status).toBe(400);
  });

  it('reports 502 when the destination refuses the connection and 504 on connect timeout', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const { proxy, logs } = await startProxy({
      egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${deadPort}`] }),
    });
    const refused = await viaProxy(proxy, `http://127.0.0.1:${deadPort}/`);
    expect(refused.status).toBe(502);

    const slow = await startProxy({
      policy: hostPolicy({ allowlist: ['slow.test'] }),
      lookup: () => new Promise(() => {}),
      limits: { connectTimeoutMs: 150 },
    });
    const t0 = Date.now();
    const timedOut = await viaProxy(slow.proxy, 'http://slow.test/');
    expect(timedOut.status).toBe(504);
    expect(Date.now() - t0).toBeLessThan(3000);
    const tunnel = await connectVia(slow.proxy, 'slow.test:443');
    expect(tunnel.status).toBe(504);
    tunnel.socket.destroy();
    await waitFor(() => logs.length === 1 && slow.logs.length === 2);
    expect(logs[0]).toMatchObject({ status: 502, allowed: true, reason: 'connection_refused' });
    expect(slow.logs.map((l) => l.reason)).toEqual(['connect_timeout', 'connect_timeout']);
  });

  it('bounds request header size', async () => {
    const { proxy } = await startProxy({ limits: { maxHeaderBytes: 2048 } });
    const r = await viaProxy(proxy, `http://127.0.0.1:${originPort}/`, {
      headers: { 'x-big': 'a'.repeat(8000) },
    }).catch(() => ({ status: -1 }));
    expect(r.status).toBe(431);
  });
});
