/**
 * The HTTP front door's settings, for core/src/config/config.ts (kept apart to keep config.ts under
 * 500 lines): connection timeouts and caps, the per-tenant cap on open event streams, the
 * trusted reverse proxies and the global failed-authentication budget. Every problem is pushed
 * to `problems` (config.ts prints them all, then exits 1). Pure: reads only the given env. The
 * connection cap's default depends on the process's descriptor limit, which is read where the
 * server is built (gateway/src/connectionGuard.ts), so here it stays null when unset.
 */
import { isIP } from 'node:net';

export type Env = Record<string, string | undefined>;

export interface HttpConfig {
  /** HTTP_HEADERS_TIMEOUT_MS: a connection that has not sent a whole request head by then gets 408 and is closed. */
  headersTimeoutMs: number;
  /** HTTP_REQUEST_TIMEOUT_MS: the same for the whole request, body included (never the response: streams are not cut). */
  requestTimeoutMs: number;
  /** HTTP_KEEP_ALIVE_TIMEOUT_MS: an idle keep-alive connection is closed after this long without a request. */
  keepAliveTimeoutMs: number;
  /** HTTP_MAX_CONNECTIONS: open connections of the whole server; null = derived from RLIMIT_NOFILE at start. */
  maxConnections: number | null;
  /** HTTP_MAX_CONNECTIONS_PER_ADDRESS: open connections (or, through a trusted proxy, requests in flight) per client address. */
  maxConnectionsPerAddress: number;
  /** SSE_MAX_STREAMS_PER_TENANT: open event streams (SSE and graphql-sse) per tenant, per gateway process. */
  maxStreamsPerTenant: number;
  /**
   * TRUST_PROXY: addresses, CIDRs or the names loopback, linklocal, uniquelocal of the reverse
   * proxies whose X-Forwarded-For names the client; empty = the TCP peer is the client.
   */
  trustProxy: string[];
}

const TRUST_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An integer setting in [min, max]; unset or empty: `def`; anything else is a problem. */
export function int(
  env: Env,
  name: string,
  def: number,
  problems: string[],
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name} must be an integer between ${min} and ${max} (got '${raw}')`);
    return def;
  }
  return n;
}

/** TRUST_PROXY entries: `ip`, `ip/prefix` (IPv4 0-32, IPv6 0-128) or a proxy-addr range name. */
export function parseTrustProxy(raw: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const entry of raw.split(',').map((s) => s.trim())) {
    if (entry === '') continue;
    if (TRUST_NAMES.has(entry)) {
      out.push(entry);
      continue;
    }
    const [addr, prefix, extra] = entry.split('/');
    const family = isIP(addr ?? '');
    const bits = family === 4 ? 32 : 128;
    const okPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (!family || !okPrefix || extra !== undefined) {
      problems.push(
        `TRUST_PROXY: '${entry}' is not an IP address, a CIDR (ip/prefix) or one of loopback, linklocal, uniquelocal`,
      );
      continue;
    }
    out.push(entry);
  }
  return out;
}

export function parseHttpConfig(env: Env, problems: string[]): HttpConfig {
  const headersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 5_000, problems, 100, 600_000);
  const requestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, problems, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs)
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS');
  const keepAliveTimeoutMs = int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, problems, 100, 600_000);
  const maxConnections = env.HTTP_MAX_CONNECTIONS
    ? int(env, 'HTTP_MAX_CONNECTIONS', 0, problems, 1, 10_000_000)
    : null;
  const maxConnectionsPerAddress = int(
    env,
    'HTTP_MAX_CONNECTIONS_PER_ADDRESS',
    256,
    problems,
    1,
    10_000_000,
  );
  if (maxConnections && maxConnectionsPerAddress > maxConnections)
    problems.push('HTTP_MAX_CONNECTIONS_PER_ADDRESS must not be larger than HTTP_MAX_CONNECTIONS');
  const maxStreamsPerTenant = int(env, 'SSE_MAX_STREAMS_PER_TENANT', 256, problems, 1, 10_000_000);
  const trustProxy = parseTrustProxy(env.TRUST_PROXY ?? '', problems);
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs,
    maxConnections: maxConnections || null,
    maxConnectionsPerAddress,
    maxStreamsPerTenant,
    trustProxy,
  };
}
