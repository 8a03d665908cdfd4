/**
 * The outbound proxy's (./proxy.ts) types and small pieces: options, limits and their
 * defaults, the log entry, its error type and the answers it maps upstream failures to, the
 * hop-by-hop header set, the loggable path (query names only), how to reach a proxy
 * address, and the per-proxy core its request forwarding (./forward.ts) and CONNECT
 * tunnelling (./tunnel.ts) share.
 */
import { timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import {
  normalizeHost,
  type EgressLookup,
  type EgressPolicy,
  type ResolvedAddress,
} from '../policy.js';
import type { PolicyDecision, ProxyPolicy, ProxyRequestContext } from './policy.js';
import type { ProxyInterception } from './intercept.js';
import type { PlaceholderSubstitution } from '../injection/placeholders.js';

/**
 * Per-host credential lookup. Returns headers to set on the forwarded request (replacing any
 * the sandbox sent under the same names), or null to pass through unchanged.
 */
export type CredentialHook = (
  host: string,
  ctx: ProxyRequestContext,
) => Promise<Record<string, string> | null>;

/** One credential for a host: the header to set and its value (e.g. the vault's lookup). */
export type CredentialLookup = (
  host: string,
  ctx: ProxyRequestContext,
) => Promise<{ header: string; value: string } | null>;

/** A CredentialHook from a one-header CredentialLookup. */
export const credentialHookFrom =
  (lookup: CredentialLookup): CredentialHook =>
  async (host, ctx) => {
    const c = await lookup(host, ctx);
    return c ? { [c.header.toLowerCase()]: c.value } : null;
  };

/**
 * What the proxy changes in one outbound request: headers it sets (replacing the sandbox's
 * under the same names) and placeholders it replaces by their secrets (../injection/placeholders.ts).
 */
export interface EgressInjection {
  headers: Record<string, string>;
  substitutions: PlaceholderSubstitution[];
  /**
   * Intercept this host's HTTPS even with nothing to inject at CONNECT time (a repository
   * host: its requests are matched by path inside, and upstream TLS is verified here under
   * EGRESS_CA_CERTS rather than by the sandbox).
   */
  intercept?: boolean;
}

/** Per-request credential lookup with placeholder substitution (the session's vaults). */
export type EgressCredentials = (
  host: string,
  ctx: ProxyRequestContext,
) => Promise<EgressInjection | null>;

/** Whether an injection changes anything. */
export const injects = (i: EgressInjection | null | undefined): i is EgressInjection =>
  !!i && (i.intercept === true || Object.keys(i.headers).length > 0 || i.substitutions.length > 0);

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
  /** A unix socket, or a TCP address (127.0.0.1, or a host a Nomad client reaches). */
  listen: { socketPath: string } | { host: string; port: number };
  /**
   * The `Proxy-Authorization` value every request and CONNECT must carry (e.g. `Basic …`);
   * anything else is answered 407 before any policy or lookup. For a proxy on a TCP address
   * other sandboxes could reach (the Nomad driver's); absent: no check (a socket bound into
   * one sandbox only).
   */
  proxyAuthorization?: string;
  policy: ProxyPolicy;
  credentialHook?: CredentialHook;
  /**
   * Headers and placeholder substitutions per request (the session's vaults,
   * ../injection/vaultInjection.ts); when given, used instead of `credentialHook`.
   */
  egressCredentials?: EgressCredentials;
  log: (entry: ProxyLogEntry) => void;
  context: { tenantId: string; sessionId: string };
  limits?: ProxyLimits;
  /**
   * The platform's egress policy (private addresses refused unless the operator opened them).
   * Default: nothing private opened, system resolver.
   */
  egress?: EgressPolicy;
  /** Name resolution for the default egress policy; tests inject their own. Ignored with `egress`. */
  lookup?: EgressLookup;
  /**
   * TLS interception of CONNECT tunnels to hosts the credential hook has something for
   * (./intercept.ts). Absent: every tunnel is byte-for-byte and the hook is not asked.
   */
  intercept?: ProxyInterception;
}

export interface OutboundProxy {
  /** `http://127.0.0.1:<port>` or `unix:<socket path>` (see `proxyRequestTarget`). */
  address: string;
  close(): Promise<void>;
}

/** What one proxy's request forwarding and CONNECT tunnelling share (built in proxy.ts). */
export interface ProxyCore {
  tenantId: string;
  sessionId: string;
  limits: Required<ProxyLimits>;
  /** Keep-alive agent for forwarded requests. */
  agent: http.Agent;
  /** Open client sockets, destroyed on close. */
  sockets: Set<Duplex>;
  /** Logs one entry; a failing logger never breaks the request. */
  emit: (entry: ProxyLogEntry) => void;
  /** The session's network policy; a throwing policy refuses. */
  decide: (ctx: ProxyRequestContext) => PolicyDecision;
  /** Resolves once and checks every address (egress policy): the address to connect to. */
  resolve: (host: string, port: number) => Promise<ResolvedAddress>;
  /** What the credential hook injects into this request, or null. */
  credentials: (ctx: ProxyRequestContext) => Promise<EgressInjection | null>;
  /** TLS interception for tunnels (null: none). */
  intercept: ProxyInterception | null;
  /** Whether the request carries the proxy's `Proxy-Authorization` (always, when none is set). */
  authorized: (req: http.IncomingMessage) => boolean;
}

/** The proxy's answer to a missing or wrong `Proxy-Authorization`. */
export const proxyAuthError = () =>
  new ProxyError(
    407,
    'proxy_auth_required',
    'http_request_denied',
    'proxy authentication required',
  );
export const PROXY_AUTHENTICATE = 'Basic realm="agentfleet-session"';

/** A constant-time check of the request's Proxy-Authorization against `expected`. */
export function proxyAuthChecker(expected: string | undefined) {
  if (expected === undefined) return () => true;
  const want = Buffer.from(expected);
  return (req: http.IncomingMessage) => {
    const got = Buffer.from(String(req.headers['proxy-authorization'] ?? ''));
    return got.length === want.length && timingSafeEqual(got, want);
  };
}

export const DEFAULTS: Required<ProxyLimits> = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxHeaderBytes: 16 * 1024,
  maxConnections: 256,
  headersTimeoutMs: 30_000,
};

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1, plus proxy ones). */
export const HOP_BY_HOP = new Set([
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

/** Header names a message's `Connection` header lists: hop-by-hop for that message too. */
const connectionListed = (headers: http.IncomingHttpHeaders) =>
  new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );

/**
 * The headers forwarded upstream for a sandbox's request (plain HTTP and intercepted HTTPS):
 * without hop-by-hop ones, with `host` set, and the injected credentials replacing whatever
 * the sandbox sent under the same names.
 */
export function upstreamRequestHeaders(
  req: http.IncomingMessage,
  host: string,
  extra: Record<string, string> | null | undefined,
): Record<string, string | string[]> {
  const listed = connectionListed(req.headers);
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || listed.has(k) || k === 'host') continue;
    headers[k] = v;
  }
  headers.host = host;
  for (const [k, v] of Object.entries(extra ?? {})) headers[k.toLowerCase()] = v;
  return headers;
}

/** The upstream response's raw headers passed back to the sandbox, without hop-by-hop ones. */
export function downstreamResponseHeaders(ur: http.IncomingMessage): string[] {
  const listed = connectionListed(ur.headers);
  const out: string[] = [];
  for (let i = 0; i + 1 < ur.rawHeaders.length; i += 2) {
    const k = ur.rawHeaders[i]!.toLowerCase();
    if (HOP_BY_HOP.has(k) || listed.has(k)) continue;
    out.push(ur.rawHeaders[i]!, ur.rawHeaders[i + 1]!);
  }
  return out;
}

export class ProxyError extends Error {
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
export function loggablePath(pathname: string, search: string): string {
  let out = pathname.length > 256 ? `${pathname.slice(0, 256)}…` : pathname;
  if (search.length > 1) {
    const names = [...new URLSearchParams(search).keys()].map((k) =>
      k.length > 64 ? `${k.slice(0, 64)}…` : k,
    );
    out += `?${names.slice(0, 32).join('&')}`;
  }
  return out;
}

export function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export function upstreamError(err: unknown): ProxyError {
  if (err instanceof ProxyError) return err;
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA')
    return new ProxyError(
      502,
      'dns_error',
      'dns_error',
      'the destination host could not be resolved',
    );
  if (code === 'ECONNREFUSED')
    return new ProxyError(
      502,
      'connection_refused',
      'connection_refused',
      'the destination refused the connection',
    );
  if (code === 'ETIMEDOUT') return connectTimeoutError();
  if (code === 'HPE_HEADER_OVERFLOW')
    return new ProxyError(
      502,
      'response_header_too_large',
      'http_response_header_section_size',
      'the destination sent too large a header',
    );
  return new ProxyError(
    502,
    'upstream_error',
    'proxy_internal_error',
    'the request to the destination failed',
  );
}

export const refusalText = (host: string) =>
  `outbound request to ${host} refused by the network policy\n`;

/**
 * How to reach a proxy `address` with `http.request`: `{ socketPath }` for `unix:<path>`,
 * `{ host, port }` for `http://host:port`.
 */
export function proxyRequestTarget(
  address: string,
): { socketPath: string } | { host: string; port: number } {
  if (address.startsWith('unix:')) return { socketPath: address.slice('unix:'.length) };
  if (address.startsWith('/')) return { socketPath: address };
  const u = new URL(address);
  if (u.protocol !== 'http:') throw new Error(`unsupported proxy address ${address}`);
  return { host: normalizeHost(u.hostname), port: Number(u.port || 80) };
}

/** The answer when the destination did not connect in time (resolve, connect, or ETIMEDOUT). */
/** The destination stopped sending during a forwarded exchange. */
export const idleTimeoutError = () =>
  new ProxyError(
    504,
    'idle_timeout',
    'http_response_timeout',
    'the destination stopped responding',
  );

export const connectTimeoutError = () =>
  new ProxyError(
    504,
    'connect_timeout',
    'connection_timeout',
    'timed out connecting to the destination',
  );

/** The answer when the session's policy refuses the host (forwarded requests and CONNECT alike). */
export const deniedError = (reason: string | undefined, host: string) =>
  new ProxyError(403, reason ?? 'policy', 'http_request_denied', refusalText(host));
