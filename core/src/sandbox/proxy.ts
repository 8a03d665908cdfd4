/**
 * Outbound proxy for one session sandbox. The sandbox has no network of its own: its only way
 * out is this HTTP forward proxy, which the platform runs next to it (on a unix socket bound
 * into the sandbox, or on 127.0.0.1).
 *
 * - Absolute-URI `http://` requests are forwarded (hop-by-hop headers removed). The
 *   `credentialHook` is asked for headers to add per host: this is where outbound credentials
 *   (vault) are injected.
 * - `CONNECT host:port` opens a byte-for-byte tunnel (HTTPS). Credentials cannot be injected
 *   into a tunnel without TLS interception, which is not done (see the TODO in `handleConnect`).
 * - Every request, allowed or refused, is checked first against the session's network policy
 *   (`hostPolicy`, ./proxyPolicy.ts: the environment's allowlist/denylist of names), then
 *   against the platform's egress policy (core/src/egress): the destination is resolved once,
 *   every address is checked, and loopback, private, link-local, CGNAT, metadata and the IPv6
 *   forms embedding them are refused (403, before any connection) unless the operator opened
 *   the host with EGRESS_ALLOW_PRIVATE_HOSTS, whatever the environment's allowlist says. The
 *   connection goes to the checked address, so a name cannot re-resolve in between.
 * - Each request is logged as one `outbound.request` entry: method, host, port, path without
 *   query values, status, sizes, duration. Header values are never logged.
 * - Everything is bounded: connect timeout, idle timeout, header size, connection count.
 *
 * Tested in core/test/proxy.test.ts and core/test/tools.web.test.ts; custom http tools and
 * web_fetch through it end to end in test/sandbox-tools.test.ts.
 */
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import {
  createEgressPolicy,
  EgressRefusedError,
  normalizeHost,
  type ResolvedAddress,
} from '../egress/policy.js';
import type { PolicyDecision, ProxyRequestContext } from './proxyPolicy.js';
import {
  DEFAULTS,
  HOP_BY_HOP,
  loggablePath,
  ProxyError,
  refusalText,
  upstreamError,
  withTimeout,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyLogEntry,
} from './proxyHelpers.js';

export {
  hostMatches,
  hostPolicy,
  type PolicyDecision,
  type ProxyPolicy,
  type ProxyRequestContext,
} from './proxyPolicy.js';
export { isNonPublicAddress } from '../egress/addresses.js';
export {
  proxyRequestTarget,
  type CredentialHook,
  type OutboundProxy,
  type OutboundProxyOptions,
  type ProxyLimits,
  type ProxyLogEntry,
} from './proxyHelpers.js';

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

  const credentials = async (ctx: ProxyRequestContext): Promise<Record<string, string> | null> => {
    if (!opts.credentialHook) return null;
    try {
      return await opts.credentialHook(ctx.host, ctx);
    } catch {
      throw new ProxyError(
        502,
        'credential_lookup_failed',
        'proxy_internal_error',
        'outbound credential lookup failed',
      );
    }
  };

  // --- absolute-URI HTTP requests ------------------------------------------------------------

  const handleRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
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
      kind: 'http',
    };

    const decision = decide(ctx);
    reason = decision.reason;
    if (!decision.allow) {
      req.resume();
      return fail(
        new ProxyError(403, decision.reason ?? 'policy', 'http_request_denied', refusalText(host)),
      );
    }
    entry.allowed = true;

    void (async () => {
      const to = () =>
        new ProxyError(
          504,
          'connect_timeout',
          'connection_timeout',
          'timed out connecting to the destination',
        );
      const [dest, extra] = await withTimeout(
        Promise.all([resolve(host, port), credentials(ctx)]),
        limits.connectTimeoutMs,
        to,
      );
      if (res.destroyed) return;

      const headers: Record<string, string | string[]> = {};
      const listed = new Set(
        String(req.headers.connection ?? '')
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      );
      for (const [k, v] of Object.entries(req.headers)) {
        if (v === undefined || HOP_BY_HOP.has(k) || listed.has(k) || k === 'host') continue;
        headers[k] = v;
      }
      headers.host = target.host;
      // Injected credentials replace whatever the sandbox sent under the same name.
      for (const [k, v] of Object.entries(extra ?? {})) headers[k.toLowerCase()] = v;

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
      up.setTimeout(limits.idleTimeoutMs, () =>
        up.destroy(
          new ProxyError(
            504,
            'idle_timeout',
            'http_response_timeout',
            'the destination stopped responding',
          ),
        ),
      );
      up.on('error', (err) => {
        clearTimeout(connectTimer);
        fail(upstreamError(err));
      });
      up.on('response', (ur) => {
        const out: string[] = [];
        const listedBack = new Set(
          String(ur.headers.connection ?? '')
            .split(',')
            .map((s) => s.trim().toLowerCase())
            .filter(Boolean),
        );
        for (let i = 0; i + 1 < ur.rawHeaders.length; i += 2) {
          const k = ur.rawHeaders[i].toLowerCase();
          if (HOP_BY_HOP.has(k) || listedBack.has(k)) continue;
          out.push(ur.rawHeaders[i], ur.rawHeaders[i + 1]);
        }
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
      req.on('data', (c: Buffer) => {
        entry.bytes_out += c.length;
      });
      req.on('error', () => up.destroy());
      req.pipe(up);
    })().catch((err) => fail(upstreamError(err)));
  };

  // --- CONNECT tunnels -----------------------------------------------------------------------

  const handleConnect = (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    const started = performance.now();
    sockets.add(client);
    client.on('error', () => {});
    const entry: ProxyLogEntry = {
      op: 'outbound.request',
      tenant_id: tenantId,
      session_id: sessionId,
      method: 'CONNECT',
      host: '',
      port: 0,
      path: null,
      status: 0,
      allowed: false,
      ms: 0,
      bytes_in: 0,
      bytes_out: 0,
    };
    let upstream: net.Socket | null = null;
    let logged = false;
    const finish = () => {
      if (logged) return;
      logged = true;
      entry.ms = Math.round(performance.now() - started);
      emit(entry);
    };
    client.once('close', () => {
      sockets.delete(client);
      upstream?.destroy();
      finish();
    });
    (client as net.Socket).setTimeout?.(limits.idleTimeoutMs, () => client.destroy());

    const reply = (e: ProxyError) => {
      entry.status = e.status;
      entry.reason = e.reason;
      if (e.status === 403) entry.allowed = false;
      const body = e.message.endsWith('\n') ? e.message : `${e.message}\n`;
      const text = e.status === 403 ? 'Forbidden' : (http.STATUS_CODES[e.status] ?? 'Error');
      client.end(
        `HTTP/1.1 ${e.status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
          `proxy-status: agentfleet; error=${e.proxyStatus}\r\nconnection: close\r\n\r\n${body}`,
      );
      // Do not wait forever for the client to read the refusal.
      setTimeout(() => client.destroy(), 1000).unref();
    };

    const m =
      /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(req.url ?? '') ??
      /^([A-Za-z0-9._-]+):(\d{1,5})$/.exec(req.url ?? '');
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535)
      return reply(
        new ProxyError(400, 'bad_request', 'http_request_error', 'CONNECT needs host:port'),
      );
    const host = normalizeHost(m[1]);
    entry.host = host;
    entry.port = port;
    const ctx: ProxyRequestContext = {
      tenantId,
      sessionId,
      method: 'CONNECT',
      host,
      port,
      kind: 'connect',
    };
    const decision = decide(ctx);
    if (decision.reason) entry.reason = decision.reason;
    if (!decision.allow)
      return reply(
        new ProxyError(403, decision.reason ?? 'policy', 'http_request_denied', refusalText(host)),
      );
    entry.allowed = true;

    // TODO(vault): credential injection for HTTPS. A CONNECT tunnel carries end-to-end TLS, so
    // `credentialHook` cannot add an Authorization header here without TLS interception (a
    // per-session CA trusted inside the sandbox, terminating TLS for hosts that have a
    // credential). Not implemented: tunnels pass through untouched, the hook is not consulted.

    void (async () => {
      const to = () =>
        new ProxyError(
          504,
          'connect_timeout',
          'connection_timeout',
          'timed out connecting to the destination',
        );
      const dest = await withTimeout(resolve(host, port), limits.connectTimeoutMs, to);
      if (client.destroyed) return;
      const up = net.connect({ host: dest.address, port, family: dest.family });
      upstream = up;
      await new Promise<void>((resolveConnect, reject) => {
        const timer = setTimeout(() => reject(to()), limits.connectTimeoutMs);
        up.once('connect', () => {
          clearTimeout(timer);
          resolveConnect();
        });
        up.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
      if (client.destroyed) {
        up.destroy();
        return;
      }
      entry.status = 200;
      up.on('error', () => client.destroy());
      up.setTimeout(limits.idleTimeoutMs, () => {
        up.destroy();
        client.destroy();
      });
      up.on('close', () => client.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) {
        entry.bytes_out += head.length;
        up.write(head);
      }
      up.on('data', (c: Buffer) => {
        entry.bytes_in += c.length;
      });
      client.on('data', (c: Buffer) => {
        entry.bytes_out += c.length;
      });
      up.pipe(client);
      client.pipe(up);
    })().catch((err) => {
      upstream?.destroy();
      upstream = null;
      if (!client.destroyed) reply(upstreamError(err));
    });
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
  server.on('request', handleRequest);
  server.on('connect', handleConnect);
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
    address = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
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
