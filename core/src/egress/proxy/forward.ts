/**
 * Request forwarding of the outbound proxy (proxy.ts): an absolute-URI `http://` request is
 * checked (session policy, then egress policy on every resolved address), sent to the checked
 * address with hop-by-hop headers removed, the credential hook's headers replacing the
 * sandbox's and its placeholders substituted (../injection/placeholders.ts) except on object-store hosts,
 * which pass through raw (as their CONNECT tunnels do), and logged as one `outbound.request` entry (no header values, no query values).
 * Tested in core/test/proxy.forward.test.ts and proxy.egress.test.ts.
 */
import http from 'node:http';
import type net from 'node:net';
import { normalizeHost } from '../policy.js';
import type { ProxyRequestContext } from './policy.js';
import {
  downstreamResponseHeaders,
  idleTimeoutError,
  upstreamRequestHeaders,
  loggablePath,
  ProxyError,
  connectTimeoutError,
  deniedError,
  upstreamError,
  withTimeout,
  proxyAuthError,
  PROXY_AUTHENTICATE,
  type ProxyCore,
  type ProxyLogEntry,
} from './helpers.js';
import {
  bodyHeaders,
  prepareBody,
  sendBody,
  substituteHeaders,
} from '../injection/placeholders.js';
import { isObjectStoreHost } from './intercept.js';

/** The request handler of the proxy's server for absolute-URI `http://` requests. */
export const forwardRequests =
  (core: ProxyCore) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    const { tenantId, sessionId, limits, agent, emit, decide, resolve, credentials } = core;
    const started = performance.now();
    req.on('error', () => {});
    res.on('error', () => {});
    const entry: ProxyLogEntry = {
      op: 'outbound.request',
      tenant_id: tenantId,
      session_id: sessionId,
      method: (req.method ?? 'GET').slice(0, 16),
      host: '',
      port: 0,
      path: null,
      status: 0,
      allowed: false,
      ms: 0,
      bytes_in: 0,
      bytes_out: 0,
    };
    let reason: string | undefined;
    let upstream: http.ClientRequest | null = null;
    res.once('close', () => {
      // The sandbox went away before the response completed: stop the upstream request too.
      if (!res.writableFinished) upstream?.destroy();
      entry.status = res.headersSent ? res.statusCode : 0;
      entry.ms = Math.round(performance.now() - started);
      if (reason) entry.reason = reason;
      emit(entry);
    });

    const fail = (e: ProxyError) => {
      reason = e.reason;
      if (e.status === 403) entry.allowed = false;
      if (res.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const body = e.message.endsWith('\n') ? e.message : `${e.message}\n`;
      res.writeHead(e.status, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'proxy-status': `agentfleet; error=${e.proxyStatus}`,
        ...(e.status === 407 ? { 'proxy-authenticate': PROXY_AUTHENTICATE } : {}),
      });
      res.end(body);
    };

    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      req.resume();
      return fail(
        new ProxyError(
          400,
          'bad_request',
          'http_request_error',
          'this is a forward proxy: send absolute-URI requests (http://host/path) or CONNECT',
        ),
      );
    }
    if (target.protocol !== 'http:') {
      req.resume();
      entry.host = normalizeHost(target.hostname);
      return fail(
        new ProxyError(
          400,
          'unsupported_scheme',
          'http_request_error',
          'only http:// URLs are forwarded; use CONNECT for https',
        ),
      );
    }
    const host = normalizeHost(target.hostname);
    const port = Number(target.port || 80);
    entry.host = host;
    entry.port = port;
    entry.path = loggablePath(target.pathname, target.search);
    const ctx: ProxyRequestContext = {
      tenantId,
      sessionId,
      method: entry.method,
      host,
      port,
      path: target.pathname,
      kind: 'http',
    };

    if (!core.authorized(req)) {
      req.resume();
      return fail(proxyAuthError());
    }
    const decision = decide(ctx);
    reason = decision.reason;
    if (!decision.allow) {
      req.resume();
      return fail(deniedError(decision.reason, host));
    }
    entry.allowed = true;

    void (async () => {
      const to = connectTimeoutError;
      const [dest, extra] = await withTimeout(
        // Object-store hosts pass through raw here too: nothing injected, nothing substituted.
        Promise.all([
          resolve(host, port),
          (core.intercept?.rawHost ?? isObjectStoreHost)(host) ? null : credentials(ctx),
        ]),
        limits.connectTimeoutMs,
        to,
      );
      if (res.destroyed) return;

      // Injected credentials replace whatever the sandbox sent under the same name; the
      // placeholders of the hosts' environment_variable credentials become their secrets.
      const headers = upstreamRequestHeaders(req, target.host, extra?.headers);
      const subs = extra?.substitutions ?? [];
      substituteHeaders(headers, subs);
      const body = await prepareBody(req, subs);
      bodyHeaders(headers, body);
      if (res.destroyed) return;

      const up = http.request({
        host: dest.address,
        family: dest.family,
        port,
        method: req.method,
        path: `${target.pathname}${target.search}`,
        headers,
        agent,
        setHost: false,
        maxHeaderSize: limits.maxHeaderBytes,
      });
      upstream = up;
      let connectTimer: NodeJS.Timeout | undefined;
      up.on('socket', (s) => {
        if ((s as net.Socket).connecting) {
          connectTimer = setTimeout(() => up.destroy(to()), limits.connectTimeoutMs);
          s.once('connect', () => clearTimeout(connectTimer));
        }
      });
      up.setTimeout(limits.idleTimeoutMs, () => up.destroy(idleTimeoutError()));
      up.on('error', (err) => {
        clearTimeout(connectTimer);
        fail(upstreamError(err));
      });
      up.on('response', (ur) => {
        const out = downstreamResponseHeaders(ur);
        res.writeHead(ur.statusCode ?? 502, ur.statusMessage, out);
        ur.on('data', (c: Buffer) => {
          entry.bytes_in += c.length;
        });
        ur.on('aborted', () => {
          reason = 'upstream_aborted';
          res.destroy();
        });
        ur.on('error', () => res.destroy());
        ur.pipe(res);
      });
      req.on('error', () => up.destroy());
      sendBody(req, up, body, (n) => {
        entry.bytes_out += n;
      });
    })().catch((err) => fail(upstreamError(err)));
  };
