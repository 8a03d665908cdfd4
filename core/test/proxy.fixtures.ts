/**
 * What the outbound proxy tests (core/test/proxy.*.test.ts) share: local destinations (an HTTP
 * origin recording what it saw, a TCP echo server), `startProxy` (a proxy whose egress policy
 * opens exactly those two), and clients speaking to it the way a sandbox does (absolute-URI
 * requests, CONNECT). `useProxyFixtures()` registers the servers' and proxies' lifecycle hooks.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  createOutboundProxy,
  hostPolicy,
  proxyRequestTarget,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyLogEntry,
} from '../src/egress/proxy/proxy.js';
import { createEgressPolicy } from '../src/egress/policy.js';

// --- local destinations ----------------------------------------------------------------------

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let origin: http.Server;
export let originPort: number;
export const seen: Seen[] = [];

let echo: net.Server;
export let echoPort: number;
/** Open connections to the echo server. */
export const echoSockets = new Set<net.Socket>();
/** Proxies started by startProxy, closed after each test. */
export const proxies: OutboundProxy[] = [];

/** Registers the hooks: destinations up for the file, proxies closed after each test. */
export function useProxyFixtures(): void {
  beforeAll(startDestinations);
  afterAll(stopDestinations);
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });
}

async function startDestinations(): Promise<void> {
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
}

async function stopDestinations(): Promise<void> {
  origin.closeAllConnections();
  for (const s of echoSockets) s.destroy();
  await new Promise((r) => origin.close(r));
  await new Promise((r) => echo.close(r));
}

// --- proxy under test ------------------------------------------------------------------------

/**
 * A proxy whose egress policy opens exactly the two local destinations (as the operator would
 * with EGRESS_ALLOW_PRIVATE_HOSTS=127.0.0.1:<origin>,127.0.0.1:<echo>); `over.lookup` feeds
 * that policy's resolver.
 */
export async function startProxy(
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

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An absolute-URI request through the proxy, the way curl -x sends one. */
export function viaProxy(
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

export function connectVia(
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
export const drain = (s: net.Socket, first: Buffer = Buffer.alloc(0)) =>
  new Promise<Buffer>((resolve) => {
    const chunks = [first];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });

/** A port nothing listens on (bound, then released). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A second local HTTP server that counts its requests. */
export async function listenOnce(
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

export const waitFor = async (pred: () => boolean, ms = 3000) => {
  const until = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
};

// --- tests -----------------------------------------------------------------------------------
