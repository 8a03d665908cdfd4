/**
 * The HTTP client web_fetch and web_search share. Guarantees: with a proxy, every request and
 * every redirect hop goes through it (`http://` as absolute-URI requests, `https://` through a
 * CONNECT tunnel with TLS verified end to end by this client), so the session's network policy,
 * the egress policy and the request log apply to each hop; without a proxy the destination is
 * resolved once, checked against the egress policy and connected to the checked address; a
 * body is read (and decompressed) up to a byte cap, never unbounded; sockets are not reused.
 * Tested in core/test/tools.web.test.ts (including "egress policy").
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import type { Readable } from 'node:stream';
import { proxyRequestTarget } from '../egress/proxy/helpers.js';
import { createEgressPolicy, type EgressPolicy } from '../egress/policy.js';

/** Same shape as the worker's tool result. */
export interface WebToolResult {
  content: Array<{ type: 'text'; text: string }>;
  is_error: boolean;
}

export const result = (text: string, isError = false): WebToolResult => ({
  content: [{ type: 'text', text }],
  is_error: isError,
});

/** Extra trusted CA certificates (PEM) for https destinations, e.g. a private CA. */
export type TrustedCa = string | Buffer | Array<string | Buffer>;

/** Direct requests without an explicit policy: nothing private is opened. */
export const DIRECT_EGRESS = createEgressPolicy();

export const USER_AGENT = 'agentfleet-web/0.1';

export function timeoutSignal(ms: number, outer?: AbortSignal): AbortSignal {
  const t = AbortSignal.timeout(ms);
  return outer ? AbortSignal.any([t, outer]) : t;
}

// ---------------------------------------------------------------------------------------------
// HTTP through the proxy

export interface FetchedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
  /** The proxy (not the destination) answered: refused or could not connect. */
  fromProxy: boolean;
}

export class FetchError extends Error {}

/** A URL (the first or a redirect's) refused by the caller's check before any request to it. */
export class RefusedUrlError extends FetchError {}

export interface Transport {
  proxy?: string;
  /** For direct requests (no proxy). */
  egress?: EgressPolicy;
  ca?: TrustedCa;
  signal: AbortSignal;
}

/** Reads a (possibly compressed) body, keeping at most `maxBytes` decoded bytes. */
function readBody(
  res: http.IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const enc = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  let stream: Readable = res;
  if (enc === 'gzip' || enc === 'x-gzip') stream = res.pipe(zlib.createGunzip());
  else if (enc === 'deflate') stream = res.pipe(zlib.createInflate());
  else if (enc === 'br') stream = res.pipe(zlib.createBrotliDecompress());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      resolve({ body: Buffer.concat(chunks), truncated });
    };
    stream.on('data', (c: Buffer) => {
      if (done) return;
      const room = maxBytes - size;
      if (c.length > room) {
        chunks.push(c.subarray(0, room));
        size = maxBytes;
        finish(true);
        res.destroy();
        if (stream !== res) stream.destroy();
        return;
      }
      chunks.push(c);
      size += c.length;
    });
    stream.on('end', () => finish(false));
    const onError = (err: Error) => {
      if (!done) {
        done = true;
        reject(new FetchError(`reading the response failed: ${err.message}`));
      }
    };
    stream.on('error', onError);
    if (stream !== res) res.on('error', onError);
    res.on('aborted', () => {
      if (!done) {
        done = true;
        reject(new FetchError('the connection closed before the response was complete'));
      }
    });
  });
}

/** One request (no redirects) through the proxy, or direct when no proxy is given. */
export async function requestOnce(
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: Buffer },
  t: Transport,
  maxBytes: number,
): Promise<FetchedResponse> {
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    'accept-encoding': 'gzip, deflate, br',
    ...init.headers,
    host: url.host,
  };
  if (init.body) headers['content-length'] = String(init.body.length);
  const path = `${url.pathname}${url.search}`;
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const cleanup: Array<() => void> = [];
  const onAbort = () => cleanup.forEach((f) => f());
  t.signal.addEventListener('abort', onAbort, { once: true });

  const send = (req: http.ClientRequest) =>
    new Promise<FetchedResponse>((resolve, reject) => {
      cleanup.push(() => req.destroy(new FetchError('timed out')));
      req.on('error', (err) =>
        reject(err instanceof FetchError ? err : new FetchError(err.message)),
      );
      req.on('response', (res) => {
        readBody(res, maxBytes).then(
          ({ body, truncated }) =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body,
              truncated,
              fromProxy:
                !!t.proxy && /^agentfleet\s*;/.test(String(res.headers['proxy-status'] ?? '')),
            }),
          reject,
        );
      });
      req.end(init.body);
    });

  try {
    if (t.signal.aborted) throw new FetchError('timed out');
    if (!t.proxy) {
      // Resolved once and checked by the egress policy; the connection goes to that address,
      // TLS is verified against the host name.
      const dest = await (t.egress ?? DIRECT_EGRESS).resolve(hostname, port);
      const mod = url.protocol === 'https:' ? https : http;
      const tlsOpts =
        url.protocol === 'https:'
          ? {
              ...(net.isIP(hostname) ? {} : { servername: hostname }),
              ...(t.ca ? { ca: t.ca } : {}),
            }
          : {};
      return await send(
        mod.request({
          host: dest.address,
          family: dest.family,
          port,
          method: init.method,
          path,
          headers,
          setHost: false,
          agent: false,
          ...tlsOpts,
        }),
      );
    }
    const target = proxyRequestTarget(t.proxy);
    if (url.protocol === 'http:') {
      return await send(
        http.request({
          ...target,
          method: init.method,
          path: url.href.replace(/#.*$/, ''),
          headers,
          setHost: false,
          agent: false,
        }),
      );
    }
    // https: a CONNECT tunnel through the proxy, then TLS to the destination inside it.
    const authority = `${net.isIPv6(hostname) ? `[${hostname}]` : hostname}:${port}`;
    const tunnel = await new Promise<{ socket: net.Socket } | FetchedResponse>(
      (resolve, reject) => {
        const req = http.request({
          ...target,
          method: 'CONNECT',
          path: authority,
          headers: { host: authority, 'user-agent': USER_AGENT },
          agent: false,
        });
        cleanup.push(() => req.destroy(new FetchError('timed out')));
        req.on('error', (err) =>
          reject(err instanceof FetchError ? err : new FetchError(`proxy: ${err.message}`)),
        );
        req.on('connect', (res, socket: net.Socket, head: Buffer) => {
          if (res.statusCode === 200) {
            if (head.length) socket.unshift(head);
            cleanup.push(() => socket.destroy());
            return resolve({ socket });
          }
          // The refusal body arrives with (or right after) the status line.
          const chunks: Buffer[] = head.length ? [head] : [];
          const timer = setTimeout(() => socket.destroy(), 2000);
          socket.on('data', (c: Buffer) => chunks.push(c));
          socket.on('error', () => {});
          socket.on('close', () => {
            clearTimeout(timer);
            resolve({
              status: res.statusCode ?? 502,
              headers: res.headers,
              body: Buffer.concat(chunks).subarray(0, 4096),
              truncated: false,
              fromProxy: true,
            });
          });
        });
        req.end();
      },
    );
    if (!('socket' in tunnel)) return tunnel;
    const secure = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({
        socket: tunnel.socket,
        host: hostname,
        ...(net.isIP(hostname) ? {} : { servername: hostname }),
        ALPNProtocols: ['http/1.1'],
        ...(t.ca ? { ca: t.ca } : {}),
      });
      cleanup.push(() => s.destroy());
      s.once('secureConnect', () => resolve(s));
      s.once('error', (err: NodeJS.ErrnoException) => {
        // OpenSSL's own messages are long and cryptic; certificate errors read well as they are.
        const detail =
          err.code && /^ERR_SSL_/.test(err.code) ? err.code : err.message.split('\n')[0];
        reject(new FetchError(`TLS handshake with ${hostname} failed: ${detail}`));
      });
    });
    return await send(
      http.request({
        host: hostname,
        port,
        method: init.method,
        path,
        headers,
        setHost: false,
        createConnection: () => secure,
      }),
    );
  } finally {
    t.signal.removeEventListener('abort', onAbort);
    // Sockets of a finished exchange are not reused.
    for (const f of cleanup) f();
  }
}

/**
 * Follows redirects (each hop through the proxy, so each hop is checked by the policy).
 * `refuse`, when given, is asked about every URL before it is requested (the first one and
 * each redirect target); a reason it returns ends the fetch with a RefusedUrlError, nothing
 * sent to that URL.
 */
export async function fetchFollowing(
  start: URL,
  init: { method: string; headers: Record<string, string>; body?: Buffer },
  t: Transport,
  maxBytes: number,
  maxRedirects: number,
  refuse?: (url: URL) => string | null,
): Promise<{ url: URL; res: FetchedResponse }> {
  let url = start;
  let req = init;
  for (let hop = 0; ; hop++) {
    const why = refuse?.(url);
    if (why)
      throw new RefusedUrlError(`${hop ? `redirect to ${url.href} refused` : 'refused'}: ${why}`);
    const res = await requestOnce(url, req, t, maxBytes);
    const loc = res.headers.location;
    if (res.fromProxy || ![301, 302, 303, 307, 308].includes(res.status) || !loc)
      return { url, res };
    if (hop >= maxRedirects) throw new FetchError(`too many redirects (more than ${maxRedirects})`);
    const next = new URL(loc, url);
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new FetchError(`redirect to an unsupported URL scheme (${next.protocol})`);
    if (
      res.status === 303 ||
      ((res.status === 301 || res.status === 302) && req.method === 'POST')
    ) {
      const { 'content-type': _ct, ...rest } = req.headers;
      req = { method: 'GET', headers: rest };
    }
    url = next;
  }
}
