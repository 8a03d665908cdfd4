/**
 * TLS interception for the outbound proxy's CONNECT tunnels (./tunnel.ts), used only for
 * hosts that have a credential to inject or a placeholder to substitute. This is how a vault credential reaches an HTTPS
 * upstream without the sandbox ever holding it.
 *
 * Guarantees:
 * - A tunnel is intercepted only when interception is configured, the host is not an
 *   object-store host (those always pass through raw, spec "Outbound HTTPS"), and the
 *   credential hook returns headers or placeholder substitutions for it (../injection/placeholders.ts). Every other tunnel stays today's byte-for-byte
 *   tunnel: the proxy never sees its plaintext.
 * - The egress policy has already run on the CONNECT (./tunnel.ts): the upstream connection
 *   goes to the checked address, so a credential never opens a private address.
 * - The sandbox side is a Node TLSSocket over the CONNECT socket, presenting a leaf for the
 *   CONNECT host minted by the deployment CA (core/src/egress/ca.ts); HTTP/1.1 only (ALPN).
 * - Each request inside is sent to the CONNECT host (its Host header is set to it, whatever
 *   the sandbox wrote), with hop-by-hop headers removed and the credential hook asked again
 *   (live: a rotated credential takes effect on the next request); its headers replace any the
 *   sandbox sent under the same names and its placeholders are substituted in header values
 *   and bodies as each credential's injection_location says.
 * - The upstream TLS is verified against the proxy's upstream trust (Node's roots, the system
 *   bundle, EGRESS_CA_CERTS) and the CONNECT host name; a failure answers 502 with
 *   `proxy-status: agentfleet; error=tls_certificate_error`, never an unverified request.
 * - Each request is logged as its own `outbound.request` entry (method, path without query
 *   values, status, sizes; header values never).
 *
 * Tested in core/test/proxy.intercept.test.ts; a real sandbox's curl through it in
 * test/e2e/credentials/sandbox-ca.test.ts.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { DeploymentCa } from '../ca.js';
import type { ResolvedAddress } from '../policy.js';
import type { ProxyRequestContext } from './policy.js';
import {
  downstreamResponseHeaders,
  idleTimeoutError,
  upstreamRequestHeaders,
  ProxyError,
  loggablePath,
  upstreamError,
  injects,
  type EgressInjection,
  type ProxyCore,
  type ProxyLogEntry,
} from './helpers.js';
import {
  bodyHeaders,
  prepareBody,
  sendBody,
  substituteHeaders,
} from '../injection/placeholders.js';

/** How the proxy intercepts: the CA that mints leaves and what upstream TLS trusts. */
export interface ProxyInterception {
  ca: DeploymentCa;
  /** Trust for upstream TLS (core/src/egress/ca.ts upstreamTrust). */
  upstream: tls.SecureContext;
  /** Hosts never intercepted; default: isObjectStoreHost. */
  rawHost?: (host: string) => boolean;
}

/** The object-store host pattern (S3, R2, GCS, Azure Blob): always a raw tunnel. */
const OBJECT_STORE_HOSTS = [
  /^(.+\.)?s3([.-][a-z0-9-]+)*\.amazonaws\.com(\.cn)?$/,
  /^(.+\.)?r2\.cloudflarestorage\.com$/,
  /^(.+\.)?storage\.googleapis\.com$/,
  /^.+\.blob\.core\.windows\.net$/,
];
export const isObjectStoreHost = (host: string) => OBJECT_STORE_HOSTS.some((r) => r.test(host));

const TLS_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

const tlsError = (err: unknown) =>
  TLS_ERRORS.has((err as NodeJS.ErrnoException)?.code ?? '')
    ? new ProxyError(
        502,
        'upstream_tls_error',
        'tls_certificate_error',
        'the destination presented a TLS certificate that is not trusted',
      )
    : upstreamError(err);

/** Whether this tunnel is intercepted: what to inject, or null for a raw tunnel. */
export async function interceptionFor(
  core: ProxyCore,
  ctx: ProxyRequestContext,
): Promise<EgressInjection | null> {
  const i = core.intercept;
  if (!i || (i.rawHost ?? isObjectStoreHost)(ctx.host)) return null;
  const injection = await core.credentials(ctx);
  return injects(injection) ? injection : null;
}

/**
 * Answers the CONNECT with 200, terminates TLS with a leaf for `ctx.host`, and serves the
 * HTTP/1.1 requests inside by forwarding them over verified TLS to `dest` with credentials
 * injected. Resolves once the TLS server side is set up (before any request).
 */
export async function serveIntercepted(
  core: ProxyCore,
  client: Duplex,
  head: Buffer,
  ctx: ProxyRequestContext,
  dest: ResolvedAddress,
): Promise<void> {
  const i = core.intercept!;
  const { limits, emit } = core;
  const secureContext = await i.ca.contextFor(ctx.host);
  if (client.destroyed) return;
  const authority = ctx.port === 443 ? ctx.host : `${ctx.host}:${ctx.port}`;
  const hostHeader = net.isIPv6(ctx.host)
    ? ctx.port === 443
      ? `[${ctx.host}]`
      : `[${ctx.host}]:${ctx.port}`
    : authority;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 4, timeout: limits.idleTimeoutMs });
  client.once('close', () => agent.destroy());

  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length) client.unshift(head);
  const tlsSocket = new tls.TLSSocket(client as net.Socket, {
    isServer: true,
    secureContext,
    ALPNProtocols: ['http/1.1'],
  });
  tlsSocket.on('error', () => client.destroy());
  tlsSocket.on('close', () => client.destroy());

  const server = http.createServer({ maxHeaderSize: limits.maxHeaderBytes });
  server.on('clientError', (_err, s: Duplex) => s.destroy());
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = performance.now();
    const url = new URL(req.url ?? '/', 'https://intercepted.invalid');
    const entry: ProxyLogEntry = {
      op: 'outbound.request',
      tenant_id: core.tenantId,
      session_id: core.sessionId,
      method: req.method ?? 'GET',
      host: ctx.host,
      port: ctx.port,
      path: loggablePath(url.pathname, url.search),
      status: 0,
      allowed: true,
      reason: 'intercepted',
      ms: 0,
      bytes_in: 0,
      bytes_out: 0,
    };
    let logged = false;
    const finish = () => {
      if (logged) return;
      logged = true;
      entry.ms = Math.round(performance.now() - started);
      emit(entry);
    };
    res.once('close', finish);
    const fail = (e: ProxyError) => {
      entry.status = e.status;
      entry.reason = e.reason;
      if (res.headersSent) return res.destroy();
      res.writeHead(e.status, {
        'content-type': 'text/plain; charset=utf-8',
        'proxy-status': `agentfleet; error=${e.proxyStatus}`,
      });
      res.end(e.message.endsWith('\n') ? e.message : `${e.message}\n`);
    };

    void (async () => {
      // Live per request: a credential rotated since the CONNECT is used from now on.
      const extra = await core.credentials({ ...ctx, method: entry.method, path: url.pathname });
      if (res.destroyed) return;
      // Injected credentials replace whatever the sandbox sent under the same name; the
      // placeholders of the host's environment_variable credentials become their secrets.
      const headers = upstreamRequestHeaders(req, hostHeader, extra?.headers);
      const subs = extra?.substitutions ?? [];
      substituteHeaders(headers, subs);
      const body = await prepareBody(req, subs);
      bodyHeaders(headers, body);
      if (res.destroyed) return;

      // The CONNECT name is what the certificate must match (an IP host: that IP).
      const upOptions: https.RequestOptions & { secureContext: tls.SecureContext } = {
        host: dest.address,
        family: dest.family,
        port: ctx.port,
        servername: net.isIP(ctx.host) ? undefined : ctx.host,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        agent,
        setHost: false,
        secureContext: i.upstream,
        maxHeaderSize: limits.maxHeaderBytes,
      };
      const up = https.request(upOptions);
      up.setTimeout(limits.idleTimeoutMs, () => up.destroy(idleTimeoutError()));
      up.on('error', (err) => fail(tlsError(err)));
      up.on('response', (ur) => {
        const out = downstreamResponseHeaders(ur);
        entry.status = ur.statusCode ?? 502;
        res.writeHead(entry.status, ur.statusMessage, out);
        ur.on('data', (c: Buffer) => {
          entry.bytes_in += c.length;
        });
        ur.on('aborted', () => res.destroy());
        ur.on('error', () => res.destroy());
        ur.pipe(res);
      });
      req.on('error', () => up.destroy());
      sendBody(req, up, body, (n) => {
        entry.bytes_out += n;
      });
    })().catch((err) => fail(upstreamError(err)));
  });
  server.emit('connection', tlsSocket);
}
