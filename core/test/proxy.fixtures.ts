import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createOutboundProxy,
  hostMatches,
  hostPolicy,
  isNonPublicAddress,
  proxyRequestTarget,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyLogEntry,
} from '../src/sandbox/proxy.js';
import { createEgressPolicy } from '../src/egress/policy.js';

// --- local destinations ----------------------------------------------------------------------

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let origin: http.Server;
let originPort: number;
const seen: Seen[] = [];

let echo: net.Server;
let echoPort: number;
const echoSockets = new Set<net.Socket>();

beforeAll(async () => {
  origin = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url?.startsWith('/hop')) {
        res.setHeader('connection', 'keep-alive, x-resp-hop');
        res.setHeader('x-resp-hop', 'should-not-pass');
        res.setHeader('keep-alive', 'timeout=5');
        res.setHeader('x-end-to-end', 'kept');
      }
      if (req.url?.startsWith('/created')) {
        res.writeHead(201, { 'content-type': 'text/plain', 'x-origin': 'yes' });
        res.end(`created:${body}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, url: req.url, body }));
    });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originPort = (origin.address() as net.AddressInfo).port;

  echo = net.createServer((s) => {
    echoSockets.add(s);
    s.on('close', () => echoSockets.delete(s));
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
});

afterAll(async () => {
  origin.closeAllConnections();
  for (const s of echoSockets) s.destroy();
  await new Promise((r) => origin.close(r));
  await new Promise((r) => echo.close(r));
});

// --- proxy under test ------------------------------------------------------------------------

const proxies: OutboundProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

/**
 * A proxy whose egress policy opens exactly the two local destinations (as the operator would
 * with EGRESS_ALLOW_PRIVATE_HOSTS=127.0.0.1:<origin>,127.0.0.1:<echo>); `over.lookup` feeds
 * that policy's resolver.
 */
async function startProxy(
  over: Partial<OutboundProxyOptions> = {},
): Promise<{ proxy: OutboundProxy; logs: ProxyLogEntry[] }> {
  const logs: ProxyLogEntry[] = [];
  const proxy = await createOutboundProxy({
    listen: { host: '127.0.0.1', port: 0 },
    policy: hostPolicy({ allowlist: ['127.0.0.1'] }),
    egress: createEgressPolicy({
      allowPrivateHosts: [`127.0.0.1:${originPort}`, `127.0.0.1:${echoPort}`],
      lookup: over.lookup,
    }),
    log: (e) => logs.push(e),
    context: { tenantId: 'ten_1', sessionId: 'sesn_1' },
    ...over,
  });
  proxies.push(proxy);
  return { proxy, logs };
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An absolute-URI request through the proxy, the way curl -x sends one. */
function viaProxy(
  proxy: OutboundProxy,
  url: string,
  init: { method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({
      ...proxyRequestTarget(proxy.address),
      method: init.method ?? 'GET',
      path: url,
      headers: { host: u.host, ...init.headers },
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.end(init.body);
  });
}

function connectVia(
  proxy: OutboundProxy,
  authority: string,
): Promise<{ status: number; socket: net.Socket; head: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      ...proxyRequestTarget(proxy.address),
      method: 'CONNECT',
      path: authority,
      headers: { host: authority },
      agent: false,
    });
    req.on('error', reject);
    req.on('connect', (res, socket: net.Socket, head: Buffer) =>
      resolve({ status: res.statusCode ?? 0, socket, head }),
    );
    req.end();
  });
}

/** Reads the rest of a socket until it closes. */
const drain = (s: net.Socket, first: Buffer = Buffer.alloc(0)) =>
  new Promise<Buffer>((resolve) => {
    const chunks = [first];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });

/** A port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A second local HTTP server that counts its requests. */
async function listenOnce(
  body: string,
): Promise<{ port: number; hits(): number; close(): Promise<void> }> {
  let hits = 0;
  const s = http.createServer((_q, res) => {
    hits++;
    res.end(body);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    port: (s.address() as net.AddressInfo).port,
    hits: () => hits,
    close: async () => {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
  };
}

const waitFor = async (pred: () => boolean, ms = 3000) => {
  const until = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
};

// --- tests -----------------------------------------------------------------------------------

describe('hostPolicy', () => {
  it('denylist wins, allowlist restricts, *.suffix matches subdomains only', () => {
    const ctx = (host: string) => ({
      tenantId: 't',
      sessionId: 's',
      method: 'GET',
      host,
      port: 443,
      kind: 'connect' as const,
    });
    const p = hostPolicy({
      allowlist: ['*.example.com', 'api.other.org'],
      denylist: ['bad.example.com'],
    });
    expect(p(ctx('a.example.com'))).toMatchObject({ allow: true, reason: 'allowlist' });
    expect(p(ctx('deep.a.example.com')).allow).toBe(true);
    expect(p(ctx('example.com'))).toMatchObject({ allow: false, reason: 'not_in_allowlist' });
    expect(p(ctx('evilexample.com')).allow).toBe(false);
    expect(p(ctx('api.other.org')).allow).toBe(true);
    expect(p(ctx('bad.example.com'))).toMatchObject({ allow: false, reason: 'denylist' });

    const open = hostPolicy({ allowlist: [], denylist: ['*.tracker.net'], unrestricted: true });
    expect(open(ctx('anything.io'))).toMatchObject({ allow: true, reason: 'unrestricted' });
    expect(open(ctx('x.tracker.net')).allow).toBe(false);
    // An allowlist entry only lets a NAME through; it opens no address (egress policy).
    expect(Object.keys(hostPolicy({ allowlist: ['127.0.0.1'] })(ctx('127.0.0.1')))).toEqual([
      'allow',
      'reason',
    ]);

    // limited networking with no hosts: nothing goes out
    expect(hostPolicy({ allowlist: [], unrestricted: false })(ctx('a.example.com')).allow).toBe(
      false,
    );
    expect(hostMatches('API.Example.COM.', 'api.example.com')).toBe(true);
  });

  it('classifies non-public addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ]) {
      expect(isNonPublicAddress(a), a).toBe(true);
    }
    for (const a of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isNonPublicAddress(a), a).toBe(false);
  });
});

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

  it('refuses private addresses whatever the allowlist says: literal, localhost and other names after resolution, every IPv4 form', async () => {
    const lookups: string[] = [];
    const system = createEgressPolicy(); // nothing opened, the system resolver
    const allowAll = hostPolicy({
      allowlist: [
        '127.0.0.1',
        'localhost',
        '::1',
        '::ffff:7f00:1',
        '2130706433',
        '0x7f000001',
        'rebind.example',
      ],
    });
    const { proxy, logs } = await startProxy({ policy: allowAll, egress: system });
    const before = seen.length;
    for (const url of [
      `http://127.0.0.1:${originPort}/x`,
      `http://localhost:${originPort}/x`,
      `http://[::1]:${originPort}/x`,
      `http://[::ffff:127.0.0.1]:${originPort}/x`,
      `http://2130706433:${originPort}/x`, // decimal: the URL parser makes it 127.0.0.1
      `http://0x7f.0.0.1:${originPort}/x`, // hex
      `http://0177.0.0.1:${originPort}/x`, // octal
    ]) {
      const r = await viaProxy(proxy, url);
      expect(r.status, url).toBe(403);
      expect(r.headers['proxy-status'], url).toMatch(/destination_ip_prohibited/);
      expect(r.body, url).not.toMatch(/refused the connection|ECONNREFUSED/);
    }
    for (const authority of [
      `127.0.0.1:${echoPort}`,
      `localhost:${echoPort}`,
      `[::1]:${echoPort}`,
      `2130706433:${echoPort}`,
      `0x7f000001:${echoPort}`,
    ]) {
      const tunnel = await connectVia(proxy, authority);
      expect(tunnel.status, authority).toBe(403);
      tunnel.socket.destroy();
    }
    // A name the (injected) resolver points at loopback.
    const named = await startProxy({
      policy: allowAll,
      egress: createEgressPolicy({
        lookup: async (h) => {
          lookups.push(h);
          return { address: '127.0.0.1', family: 4 };
        },
      }),
    });
    const r = await viaProxy(named.proxy, `http://rebind.example:${originPort}/x`);
    expect(r.status).toBe(403);
    expect(lookups).toEqual(['rebind.example']);
    expect(seen.length).toBe(before);
    await waitFor(() => logs.length === 12 && named.logs.length === 1);
    for (const l of [...logs, ...named.logs])
      expect(l).toMatchObject({ allowed: false, reason: 'private_address', status: 403 });
  });

  it('gives the same refusal for an open and a closed private port (no port scanning through the proxy)', async () => {
    const closedPort = await freePort();
    const { proxy } = await startProxy({ egress: createEgressPolicy() });
    const open = await viaProxy(proxy, `http://127.0.0.1:${originPort}/`);
    const closed = await viaProxy(proxy, `http://127.0.0.1:${closedPort}/`);
    expect([open.status, closed.status]).toEqual([403, 403]);
    expect(open.body).toBe(closed.body);
    expect(open.headers['proxy-status']).toBe(closed.headers['proxy-status']);
    const refusal = async (authority: string) => {
      const t = await connectVia(proxy, authority);
      return { status: t.status, body: (await drain(t.socket, t.head)).toString() };
    };
    const [t1, t2] = [
      await refusal(`127.0.0.1:${echoPort}`),
      await refusal(`127.0.0.1:${closedPort}`),
    ];
    expect([t1.status, t2.status]).toEqual([403, 403]);
    expect(t1.body).toBe(t2.body);
  });

  it('EGRESS_ALLOW_PRIVATE_HOSTS host:port opens exactly that port', async () => {
    const otherPort = await listenOnce('other');
    const { proxy, logs } = await startProxy({
      policy: hostPolicy({ unrestricted: true }),
      egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${originPort}`] }),
    });
    expect((await viaProxy(proxy, `http://127.0.0.1:${originPort}/opened`)).status).toBe(200);
    const other = await viaProxy(proxy, `http://127.0.0.1:${otherPort.port}/closed`);
    expect(other.status).toBe(403);
    expect(otherPort.hits()).toBe(0);
    // A bare host opens every port of that host, by name.
    const byName = await startProxy({
      policy: hostPolicy({ unrestricted: true }),
      egress: createEgressPolicy({ allowPrivateHosts: ['localhost'] }),
    });
    expect((await viaProxy(byName.proxy, `http://localhost:${otherPort.port}/x`)).status).toBe(200);
    expect((await viaProxy(byName.proxy, `http://127.0.0.1:${otherPort.port}/x`)).status).toBe(403);
    await otherPort.close();
    await waitFor(() => logs.length === 2);
    expect(logs.map((l) => [l.status, l.reason])).toEqual([
      [200, 'unrestricted'],
      [403, 'private_address'],
    ]);
  });

  it('connects to the address it checked: a rebinding resolver cannot switch it', async () => {
    // Same port on 127.0.0.2: where a second, different answer would lead.
    const decoy = http.createServer((_q, res) => res.end('decoy'));
    await new Promise<void>((r) => decoy.listen(originPort, '127.0.0.2', () => r()));
    let calls = 0;
    const lookup = async () => ({
      address: calls++ % 2 === 0 ? '127.0.0.1' : '127.0.0.2',
      family: 4 as const,
    });
    try {
      const { proxy } = await startProxy({
        policy: hostPolicy({ unrestricted: true }),
        egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${originPort}`], lookup }),
      });
      const first = await viaProxy(proxy, `http://flip.test:${originPort}/flip`);
      expect(first.status).toBe(200);
      expect(JSON.parse(first.body)).toMatchObject({ url: '/flip' });
      expect(calls).toBe(1);
      // The next request resolves again: this time to the unopened address, refused.
      const second = await viaProxy(proxy, `http://flip.test:${originPort}/flip`);
      expect(second.status).toBe(403);
      expect(second.body).not.toContain('decoy');
      // An answer mixing an opened and an unopened address is refused whole.
      const mixed = await startProxy({
        policy: hostPolicy({ unrestricted: true }),
        egress: createEgressPolicy({
          allowPrivateHosts: [`127.0.0.1:${originPort}`],
          lookup: async () => [
            { address: '127.0.0.1', family: 4 },
            { address: '127.0.0.2', family: 4 },
          ],
        }),
      });
      expect((await viaProxy(mixed.proxy, `http://both.test:${originPort}/`)).status).toBe(403);
    } finally {
      decoy.closeAllConnections();
      await new Promise((r) => decoy.close(r));
    }
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

describe('outbound proxy: CONNECT tunnels', () => {
  it('tunnels byte-for-byte to an allowed host and logs sizes without a path', async () => {
    const { proxy, logs } = await startProxy();
    const { status, socket, head } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    expect(head.length).toBe(0);
    const payload = randomBytes(256 * 1024);
    const received: Buffer[] = [];
    let total = 0;
    const got = new Promise<Buffer>((resolve) => {
      socket.on('data', (c: Buffer) => {
        received.push(c);
        total += c.length;
        if (total >= payload.length) resolve(Buffer.concat(received));
      });
    });
    socket.write(payload);
    const back = await got;
    expect(back.equals(payload)).toBe(true);
    socket.end();
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      method: 'CONNECT',
      host: '127.0.0.1',
      port: echoPort,
      path: null,
      status: 200,
      allowed: true,
      bytes_in: payload.length,
      bytes_out: payload.length,
    });
  });

  it('refuses a CONNECT to a host outside the policy with 403', async () => {
    const { proxy, logs } = await startProxy({
      policy: hostPolicy({ allowlist: ['only.example.com'] }),
    });
    const { status, socket, head } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(403);
    const body = (await drain(socket, head)).toString('utf8');
    expect(body).toContain('127.0.0.1');
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      method: 'CONNECT',
      host: '127.0.0.1',
      status: 403,
      allowed: false,
      reason: 'not_in_allowlist',
    });
  });

  it('rejects a malformed CONNECT target', async () => {
    const { proxy } = await startProxy();
    const { status, socket } = await connectVia(proxy, 'no-port-here');
    expect(status).toBe(400);
    socket.destroy();
  });

  it('does not consult the credential hook for tunnels (no TLS interception)', async () => {
    let calls = 0;
    const { proxy } = await startProxy({
      credentialHook: async () => {
        calls++;
        return { authorization: 'x' };
      },
    });
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    socket.destroy();
    expect(calls).toBe(0);
  });

  it('closes idle tunnels', async () => {
    const { proxy, logs } = await startProxy({ limits: { idleTimeoutMs: 200 } });
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('error', () => {});
    await closed;
    await waitFor(() => logs.length === 1);
    expect(logs[0].status).toBe(200);
  });

  it('closing the proxy closes open tunnels', async () => {
    const { proxy, logs } = await startProxy();
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    socket.write('ping');
    await new Promise<void>((r) => socket.once('data', () => r()));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('error', () => {});
    await proxy.close();
    await closed;
    await waitFor(() => echoSockets.size === 0);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 200, bytes_in: 4, bytes_out: 4 });
  });
});

describe('outbound proxy: unix socket', () => {
  it('listens on a unix socket and removes it on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'af-proxy-'));
    try {
      const socketPath = join(dir, 'proxy.sock');
      const { proxy, logs } = await startProxy({ listen: { socketPath } });
      expect(proxy.address).toBe(`unix:${socketPath}`);
      const r = await new Promise<Reply>((resolve, reject) => {
        const req = http.request({
          socketPath,
          method: 'GET',
          path: `http://127.0.0.1:${originPort}/via-unix`,
          headers: { host: `127.0.0.1:${originPort}` },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
        });
        req.end();
      });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ url: '/via-unix' });
      const tunnel = await connectVia(proxy, `127.0.0.1:${echoPort}`);
      expect(tunnel.status).toBe(200);
      tunnel.socket.destroy();
      await waitFor(() => logs.length === 2);
      await proxy.close();
      expect(existsSync(socketPath)).toBe(false);

      // A stale socket file left behind does not prevent listening again.
      // (A process killed while listening leaves its socket file behind.)
      spawnSync(process.execPath, [
        '-e',
        `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
      ]);
      expect(existsSync(socketPath)).toBe(true);
      const again = await startProxy({ listen: { socketPath } });
      expect(again.proxy.address).toBe(`unix:${socketPath}`);
    } finally {
      await Promise.all(proxies.splice(0).map((p) => p.close()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
