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
 * - Every request, allowed or refused, is checked against the session's network policy
 *   (`hostPolicy` builds one from an environment's allowlist/denylist) and logged as one
 *   `outbound.request` entry: method, host, port, path without query values, status, sizes,
 *   duration. Header values are never logged.
 * - Private, loopback and link-local destinations are refused after DNS resolution unless the
 *   policy says otherwise (an explicit allowlist entry), and the connection goes to the
 *   address that was checked, so a name cannot re-resolve to a private address in between.
 * - Everything is bounded: connect timeout, idle timeout, header size, connection count.
 */
import dns from 'node:dns';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/** What the policy and the credential hook see of one outbound request. */
export interface ProxyRequestContext {
  tenantId: string;
  sessionId: string;
  /** HTTP method; `CONNECT` for tunnels. */
  method: string;
  /** Lower case, without IPv6 brackets or a trailing dot. */
  host: string;
  port: number;
  /** `http`: a forwarded absolute-URI request; `connect`: a tunnel (usually HTTPS). */
  kind: 'http' | 'connect';
}

export interface PolicyDecision {
  allow: boolean;
  /** Short machine-readable reason (logged), e.g. `denylist`, `not_in_allowlist`, `allowlist`. */
  reason?: string;
  /**
   * Allow the destination even if it resolves to a private, loopback, link-local or otherwise
   * non-public address. Off by default: an unrestricted sandbox must not reach the platform's
   * own services through its proxy.
   */
  allowPrivateAddress?: boolean;
}

export type ProxyPolicy = (ctx: ProxyRequestContext) => PolicyDecision;

/**
 * Per-host credential lookup. Returns headers to set on the forwarded request (replacing any
 * the sandbox sent under the same names), or null to pass through unchanged.
 */
export type CredentialHook = (host: string, ctx: ProxyRequestContext) => Promise<Record<string, string> | null>;

export interface ProxyLogEntry {
  op: 'outbound.request';
  tenant_id: string;
  session_id: string;
  method: string;
  host: string;
  port: number;
  /** Path with query parameter names only (`/search?q&page`); null for CONNECT (inside TLS). */
  path: string | null;
  /** Status returned to the sandbox (200 for an established tunnel). 0 if none was sent. */
  status: number;
  allowed: boolean;
  reason?: string;
  ms: number;
  /** Bytes received from the destination (response body, or tunnel origin → sandbox). */
  bytes_in: number;
  /** Bytes sent to the destination (request body, or tunnel sandbox → origin). */
  bytes_out: number;
}

export interface ProxyLimits {
  /** DNS lookup + TCP connect (+ credential lookup) to the destination. Default 10 s. */
  connectTimeoutMs?: number;
  /** A request or tunnel with no traffic in either direction this long is closed. Default 60 s. */
  idleTimeoutMs?: number;
  /** Max request/response header size, bytes. Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Max concurrent client connections to the proxy. Default 256. */
  maxConnections?: number;
  /** Time allowed for the sandbox to send a request's headers. Default 30 s. */
  headersTimeoutMs?: number;
}

export interface OutboundProxyOptions {
  listen: { socketPath: string } | { host: '127.0.0.1'; port: number };
  policy: ProxyPolicy;
  credentialHook?: CredentialHook;
  log: (entry: ProxyLogEntry) => void;
  context: { tenantId: string; sessionId: string };
  limits?: ProxyLimits;
  /** Name resolution (default `dns.lookup`); tests and pinned deployments may override it. */
  lookup?: (host: string) => Promise<{ address: string; family: 4 | 6 }>;
}

export interface OutboundProxy {
  /** `http://127.0.0.1:<port>` or `unix:<socket path>` (see `proxyRequestTarget`). */
  address: string;
  close(): Promise<void>;
}

const DEFAULTS: Required<ProxyLimits> = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxHeaderBytes: 16 * 1024,
  maxConnections: 256,
  headersTimeoutMs: 30_000,
};

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1, plus proxy ones). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

// ---------------------------------------------------------------------------------------------
// Policy

const normalizeHost = (h: string): string => {
  let s = h.trim().toLowerCase();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  while (s.endsWith('.')) s = s.slice(0, -1);
  return s;
};

/** `*.example.com` matches any subdomain of example.com (not example.com itself); else exact. */
export function hostMatches(pattern: string, host: string): boolean {
  const p = normalizeHost(pattern);
  const h = normalizeHost(host);
  if (!p) return false;
  if (p.startsWith('*.')) {
    const suffix = p.slice(1); // ".example.com"
    return h.length > suffix.length && h.endsWith(suffix);
  }
  return p === h;
}

/**
 * The policy of an environment's `network` settings:
 * - a host on the denylist is always refused (the denylist wins);
 * - when the allowlist is non-empty, or `unrestricted` is false, only allowlisted hosts pass
 *   (an allowlist entry also permits private addresses: the environment named it explicitly);
 * - otherwise every public destination is allowed.
 */
export function hostPolicy(cfg: { allowlist?: readonly string[]; denylist?: readonly string[]; unrestricted?: boolean }): ProxyPolicy {
  const allow = (cfg.allowlist ?? []).filter((h) => h.trim() !== '');
  const deny = (cfg.denylist ?? []).filter((h) => h.trim() !== '');
  const restricted = allow.length > 0 || cfg.unrestricted === false;
  return (ctx) => {
    if (deny.some((p) => hostMatches(p, ctx.host))) return { allow: false, reason: 'denylist' };
    if (restricted) {
      if (allow.some((p) => hostMatches(p, ctx.host))) return { allow: true, reason: 'allowlist', allowPrivateAddress: true };
      return { allow: false, reason: 'not_in_allowlist' };
    }
    return { allow: true, reason: 'unrestricted' };
  };
}

// ---------------------------------------------------------------------------------------------
// Address checks

const NON_PUBLIC = new net.BlockList();
for (const [a, p] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) NON_PUBLIC.addSubnet(a, p, 'ipv4');
for (const [a, p] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) NON_PUBLIC.addSubnet(a, p, 'ipv6');

/** The IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::/96) address. */
function embeddedIPv4(addr: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(addr);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2], 16);
  const lo = parseInt(m[3], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True for loopback, private, link-local, CGNAT, multicast, documentation and reserved ranges. */
export function isNonPublicAddress(addr: string): boolean {
  const family = net.isIP(addr);
  if (family === 4) return NON_PUBLIC.check(addr, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIPv4(addr);
    if (v4) return NON_PUBLIC.check(v4, 'ipv4');
    return NON_PUBLIC.check(addr, 'ipv6');
  }
  return true;
}

const defaultLookup = async (host: string): Promise<{ address: string; family: 4 | 6 }> => {
  const r = await dns.promises.lookup(host, { verbatim: true });
  return { address: r.address, family: r.family === 6 ? 6 : 4 };
};

// ---------------------------------------------------------------------------------------------
// Helpers

class ProxyError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    /** RFC 9209 Proxy-Status error type. */
    readonly proxyStatus: string,
    message: string,
  ) {
    super(message);
  }
}

/** Path for the log: the path itself, query parameter names without their values, capped. */
function loggablePath(pathname: string, search: string): string {
  let out = pathname.length > 256 ? `${pathname.slice(0, 256)}…` : pathname;
  if (search.length > 1) {
    const names = [...new URLSearchParams(search).keys()].map((k) => (k.length > 64 ? `${k.slice(0, 64)}…` : k));
    out += `?${names.slice(0, 32).join('&')}`;
  }
  return out;
}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function upstreamError(err: unknown): ProxyError {
  if (err instanceof ProxyError) return err;
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return new ProxyError(502, 'dns_error', 'dns_error', 'the destination host could not be resolved');
  if (code === 'ECONNREFUSED') return new ProxyError(502, 'connection_refused', 'connection_refused', 'the destination refused the connection');
  if (code === 'ETIMEDOUT') return new ProxyError(504, 'connect_timeout', 'connection_timeout', 'timed out connecting to the destination');
  if (code === 'HPE_HEADER_OVERFLOW') return new ProxyError(502, 'response_header_too_large', 'http_response_header_section_size', 'the destination sent too large a header');
  return new ProxyError(502, 'upstream_error', 'proxy_internal_error', 'the request to the destination failed');
}

const refusalText = (host: string) => `outbound request to ${host} refused by the network policy\n`;

/**
 * How to reach a proxy `address` with `http.request`: `{ socketPath }` for `unix:<path>`,
 * `{ host, port }` for `http://host:port`.
 */
export function proxyRequestTarget(address: string): { socketPath: string } | { host: string; port: number } {
  if (address.startsWith('unix:')) return { socketPath: address.slice('unix:'.length) };
  if (address.startsWith('/')) return { socketPath: address };
  const u = new URL(address);
  if (u.protocol !== 'http:') throw new Error(`unsupported proxy address ${address}`);
  return { host: normalizeHost(u.hostname), port: Number(u.port || 80) };
}

// ---------------------------------------------------------------------------------------------
// The proxy

export async function createOutboundProxy(opts: OutboundProxyOptions): Promise<OutboundProxy> {
  const limits = { ...DEFAULTS, ...(opts.limits ?? {}) };
  const lookup = opts.lookup ?? defaultLookup;
  const { tenantId, sessionId } = opts.context;
  const sockets = new Set<Duplex>();
  let closing = false;

  const agent = new http.Agent({ keepAlive: true, maxSockets: 32, maxTotalSockets: 128, timeout: limits.idleTimeoutMs });

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

  /** Resolves the destination and checks the address the connection will actually use. */
  const resolve = async (host: string, decision: PolicyDecision): Promise<{ address: string; family: 4 | 6 }> => {
    let target: { address: string; family: 4 | 6 };
    const literal = net.isIP(host);
    if (literal) target = { address: host, family: literal === 6 ? 6 : 4 };
    else target = await lookup(host);
    if (!decision.allowPrivateAddress && isNonPublicAddress(target.address)) {
      throw new ProxyError(403, 'private_address', 'destination_ip_prohibited', refusalText(host));
    }
    return target;
  };

  const credentials = async (ctx: ProxyRequestContext): Promise<Record<string, string> | null> => {
    if (!opts.credentialHook) return null;
    try {
      return await opts.credentialHook(ctx.host, ctx);
    } catch {
      throw new ProxyError(502, 'credential_lookup_failed', 'proxy_internal_error', 'outbound credential lookup failed');
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
      return fail(new ProxyError(400, 'bad_request', 'http_request_error', 'this is a forward proxy: send absolute-URI requests (http://host/path) or CONNECT'));
    }
    if (target.protocol !== 'http:') {
      req.resume();
      entry.host = normalizeHost(target.hostname);
      return fail(new ProxyError(400, 'unsupported_scheme', 'http_request_error', 'only http:// URLs are forwarded; use CONNECT for https'));
    }
    const host = normalizeHost(target.hostname);
    const port = Number(target.port || 80);
    entry.host = host;
    entry.port = port;
    entry.path = loggablePath(target.pathname, target.search);
    const ctx: ProxyRequestContext = { tenantId, sessionId, method: entry.method, host, port, kind: 'http' };

    const decision = decide(ctx);
    reason = decision.reason;
    if (!decision.allow) {
      req.resume();
      return fail(new ProxyError(403, decision.reason ?? 'policy', 'http_request_denied', refusalText(host)));
    }
    entry.allowed = true;

    void (async () => {
      const to = () => new ProxyError(504, 'connect_timeout', 'connection_timeout', 'timed out connecting to the destination');
      const [dest, extra] = await withTimeout(Promise.all([resolve(host, decision), credentials(ctx)]), limits.connectTimeoutMs, to);
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
      up.setTimeout(limits.idleTimeoutMs, () => up.destroy(new ProxyError(504, 'idle_timeout', 'http_response_timeout', 'the destination stopped responding')));
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

    const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(req.url ?? '') ?? /^([A-Za-z0-9._-]+):(\d{1,5})$/.exec(req.url ?? '');
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) return reply(new ProxyError(400, 'bad_request', 'http_request_error', 'CONNECT needs host:port'));
    const host = normalizeHost(m[1]);
    entry.host = host;
    entry.port = port;
    const ctx: ProxyRequestContext = { tenantId, sessionId, method: 'CONNECT', host, port, kind: 'connect' };
    const decision = decide(ctx);
    if (decision.reason) entry.reason = decision.reason;
    if (!decision.allow) return reply(new ProxyError(403, decision.reason ?? 'policy', 'http_request_denied', refusalText(host)));
    entry.allowed = true;

    // TODO(vault): credential injection for HTTPS. A CONNECT tunnel carries end-to-end TLS, so
    // `credentialHook` cannot add an Authorization header here without TLS interception (a
    // per-session CA trusted inside the sandbox, terminating TLS for hosts that have a
    // credential). Not implemented: tunnels pass through untouched, the hook is not consulted.

    void (async () => {
      const to = () => new ProxyError(504, 'connect_timeout', 'connection_timeout', 'timed out connecting to the destination');
      const dest = await withTimeout(resolve(host, decision), limits.connectTimeoutMs, to);
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
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    s.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
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
