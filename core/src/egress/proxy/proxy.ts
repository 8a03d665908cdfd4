/**
 * Outbound proxy for one session sandbox. The sandbox has no network of its own: its only way
 * out is this HTTP forward proxy, which the platform runs next to it (on a unix socket bound
 * into the sandbox, or on 127.0.0.1).
 *
 * - Absolute-URI `http://` requests are forwarded (hop-by-hop headers removed). The
 *   `credentialHook` (or `egressCredentials`) is asked per request for headers to add and
 *   placeholders to replace (../injection/placeholders.ts): this is where outbound credentials (vault)
 *   are injected.
 * - `CONNECT host:port` opens a byte-for-byte tunnel (HTTPS), except, with `intercept`
 *   configured, for a host the hook has headers or substitutions for (object stores excepted): TLS
 *   is then terminated with a leaf of the deployment CA and the credential injected
 *   (./intercept.ts).
 * - Every request, allowed or refused, is checked first against the session's network policy
 *   (`hostPolicy`, ./policy.ts: the environment's allowlist/denylist of names), then
 *   against the platform's egress policy (core/src/egress): the destination is resolved once,
 *   every address is checked, and loopback, private, link-local, CGNAT, metadata and the IPv6
 *   forms embedding them are refused (403, before any connection) unless the operator opened
 *   the host with EGRESS_ALLOW_PRIVATE_HOSTS, whatever the environment's allowlist says. The
 *   connection goes to the checked address, so a name cannot re-resolve in between.
 * - Each request is logged as one `outbound.request` entry: method, host, port, path without
 *   query values, status, sizes, duration. Header values are never logged.
 * - Everything is bounded: connect timeout, idle timeout, header size, connection count.
 * - With `proxyAuthorization` (a proxy on a TCP address, the Nomad driver's), a request or
 *   CONNECT without that exact `Proxy-Authorization` is answered 407 before anything else.
 *
 * This file: the server (listening on a socket or port, limits, close) and what its parts
 * share; request forwarding in ./forward.ts, CONNECT tunnelling in ./tunnel.ts, policy in
 * ./policy.ts, types and helpers in ./helpers.ts.
 *
 * Tested in core/test/proxy.*.test.ts (interception: proxy.intercept.test.ts) and core/test/tools.web.test.ts; custom http tools and
 * web_fetch through it end to end in test/e2e/sandbox/sandbox-tools.test.ts.
 */
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { createEgressPolicy, EgressRefusedError, type ResolvedAddress } from '../policy.js';
import type { PolicyDecision, ProxyRequestContext } from './policy.js';
import {
  DEFAULTS,
  ProxyError,
  proxyAuthChecker,
  refusalText,
  type EgressInjection,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyCore,
  type ProxyLogEntry,
} from './helpers.js';
import { forwardRequests } from './forward.js';
import { tunnelConnects } from './tunnel.js';

export {
  hostMatches,
  hostPolicy,
  type PolicyDecision,
  type ProxyPolicy,
  type ProxyRequestContext,
} from './policy.js';
export { isNonPublicAddress } from '../addresses.js';
export { isObjectStoreHost, type ProxyInterception } from './intercept.js';
export {
  proxyRequestTarget,
  credentialHookFrom,
  type CredentialHook,
  type EgressCredentials,
  type EgressInjection,
  type CredentialLookup,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyLimits,
  type ProxyLogEntry,
} from './helpers.js';

// ---------------------------------------------------------------------------------------------
// The proxy

export async function createOutboundProxy(opts: OutboundProxyOptions): Promise<OutboundProxy> {
  const limits = { ...DEFAULTS, ...(opts.limits ?? {}) };
  const egress = opts.egress ?? createEgressPolicy({ lookup: opts.lookup });
  const { tenantId, sessionId } = opts.context;
  const sockets = new Set<Duplex>();
  let closing = false;

  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: 32,
    maxTotalSockets: 128,
    timeout: limits.idleTimeoutMs,
  });

  const emit = (entry: ProxyLogEntry) => {
    try {
      opts.log(entry);
    } catch {
      /* a failing logger never breaks the request */
    }
  };

  const decide = (ctx: ProxyRequestContext): PolicyDecision => {
    try {
      return opts.policy(ctx);
    } catch {
      return { allow: false, reason: 'policy_error' };
    }
  };

  /** Resolves the destination once and checks every address (egress policy); returns the one to use. */
  const resolve = async (host: string, port: number): Promise<ResolvedAddress> => {
    try {
      return await egress.resolve(host, port);
    } catch (err) {
      if (err instanceof EgressRefusedError)
        throw new ProxyError(
          403,
          'private_address',
          'destination_ip_prohibited',
          refusalText(host),
        );
      throw err;
    }
  };

  const credentials = async (ctx: ProxyRequestContext): Promise<EgressInjection | null> => {
    try {
      if (opts.egressCredentials) return await opts.egressCredentials(ctx.host, ctx);
      if (!opts.credentialHook) return null;
      const headers = await opts.credentialHook(ctx.host, ctx);
      return headers ? { headers, substitutions: [] } : null;
    } catch {
      throw new ProxyError(
        502,
        'credential_lookup_failed',
        'proxy_internal_error',
        'outbound credential lookup failed',
      );
    }
  };

  const core: ProxyCore = {
    tenantId,
    sessionId,
    limits,
    agent,
    sockets,
    emit,
    decide,
    resolve,
    credentials,
    intercept: opts.intercept ?? null,
    authorized: proxyAuthChecker(opts.proxyAuthorization),
  };

  // --- server --------------------------------------------------------------------------------

  const server = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
  });
  server.maxConnections = limits.maxConnections;
  server.setTimeout(limits.idleTimeoutMs, (s) => s.destroy());
  server.on('connection', (s: net.Socket) => {
    if (closing) {
      s.destroy();
      return;
    }
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('request', forwardRequests(core));
  server.on('connect', tunnelConnects(core));
  server.on('upgrade', (_req: http.IncomingMessage, s: Duplex) => {
    s.end('HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  server.on('clientError', (err: NodeJS.ErrnoException, s: Duplex) => {
    if (!s.writable) return s.destroy();
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 431
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 408
          : 400;
    s.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
    );
  });

  let address: string;
  let socketPath: string | null = null;
  if ('socketPath' in opts.listen) {
    const p = opts.listen.socketPath;
    socketPath = p;
    // A stale socket from a previous run would make listen fail; only ever remove a socket.
    const st = await fsp.lstat(p).catch(() => null);
    if (st?.isSocket()) await fsp.unlink(p);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, () => {
        server.off('error', reject);
        resolve();
      });
    });
    address = `unix:${p}`;
  } else {
    const { host, port } = opts.listen;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const bound = (server.address() as net.AddressInfo).port;
    address = `http://${net.isIPv6(host) ? `[${host}]` : host}:${bound}`;
  }

  let closed: Promise<void> | null = null;
  return {
    address,
    close() {
      if (closed) return closed;
      closing = true;
      closed = new Promise<void>((resolve) => {
        server.close(() => {
          if (!socketPath) return resolve();
          const p = socketPath;
          void fsp
            .lstat(p)
            .then((st) => (st.isSocket() ? fsp.unlink(p) : undefined))
            .catch(() => {})
            .then(() => resolve());
        });
        for (const s of sockets) s.destroy();
        sockets.clear();
        server.closeAllConnections();
        agent.destroy();
      });
      return closed;
    },
  };
}
