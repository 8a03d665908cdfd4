import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { BlockList, isIP, type Socket } from 'node:net';
import type { HttpConfig } from '@agentfleet/core';

/**
 * What an HTTP server of this platform does with connections, before any request is parsed.
 * Guarantees, each tested in test/e2e/api/connection-limits.test.ts:
 * - a connection that has not sent a whole request head within HTTP_HEADERS_TIMEOUT_MS (or the
 *   whole request within HTTP_REQUEST_TIMEOUT_MS) gets 408 and is closed, checked at least every
 *   second ("header timeout"); the request timeout covers receiving the request only, so a
 *   long-lived event stream is never cut by it, nor by the keep-alive timeout, which only
 *   applies between requests ("streams outlive the timeouts");
 * - an idle keep-alive connection is closed after HTTP_KEEP_ALIVE_TIMEOUT_MS;
 * - a connection past HTTP_MAX_CONNECTIONS_PER_ADDRESS open connections of its peer address is
 *   destroyed as it is accepted, unread; other addresses are not affected ("per-address cap");
 *   a TRUST_PROXY peer is exempt, its clients are counted by address per request instead
 *   (ProxiedClients, "behind a trusted proxy");
 * - past HTTP_MAX_CONNECTIONS open connections in all, a new one is destroyed as it is accepted
 *   (net.Server maxConnections). Its default, maxConnectionsFor(), keeps half the process's
 *   descriptors for what it opens itself.
 */

/** The process's soft RLIMIT_NOFILE (`ulimit -n`) from /proc/self/limits; null when unknown or unlimited. */
export function descriptorLimit(limits?: string): number | null {
  let text = limits;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return null;
    }
  }
  const m = /^Max open files\s+(\S+)/m.exec(text);
  const n = m ? Number(m[1]) : NaN;
  return Number.isInteger(n) && n > 0 ? n : null;
}

/** When the descriptor limit cannot be read (no /proc) and HTTP_MAX_CONNECTIONS is unset. */
export const FALLBACK_MAX_CONNECTIONS = 4096;

/**
 * The global connection cap: HTTP_MAX_CONNECTIONS, else max(64, floor(nofile / 2)) where nofile
 * is the soft descriptor limit: the other half stays for the workers' model, MCP and webhook
 * connections, the store's files and sockets, sandboxes and the data dir.
 */
export function maxConnectionsFor(h: HttpConfig, nofile = descriptorLimit()): number {
  if (h.maxConnections) return h.maxConnections;
  return nofile === null ? FALLBACK_MAX_CONNECTIONS : Math.max(64, Math.floor(nofile / 2));
}

const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 address; others unchanged. */
const unmapped = (addr: string) => /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(addr)?.[1] ?? addr;

/**
 * The trust function of TRUST_PROXY's entries (validated by core's parseTrustProxy): true for
 * an address in one of them. Null when none is configured (X-Forwarded-For is then never read).
 */
export function trustedProxies(entries: string[]): ((addr: string | undefined) => boolean) | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries.flatMap((e) => NAMED_RANGES[e] ?? [e])) {
    const [addr, prefix] = entry.split('/') as [string, string | undefined];
    const family = isIP(addr) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(addr, family);
    else list.addSubnet(addr, Number(prefix), family);
  }
  return (addr) => {
    if (!addr) return false;
    const a = unmapped(addr);
    const family = isIP(a);
    return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** Node's server options for the timeouts (fastify passes `http` to http.createServer). */
export function serverTimeouts(h: HttpConfig) {
  return {
    // No socket inactivity timeout: a quiet event stream stays open (its pings are 15 s apart).
    connectionTimeout: 0,
    keepAliveTimeout: h.keepAliveTimeoutMs,
    requestTimeout: h.requestTimeoutMs,
    http: {
      headersTimeout: h.headersTimeoutMs,
      requestTimeout: h.requestTimeoutMs,
      // How often Node checks those two timeouts (its default is 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(h.headersTimeoutMs / 2))),
    },
  };
}

/** Counts connections per peer address and destroys those over the caps as they are accepted. */
export function guardConnections(
  server: Server,
  o: {
    maxConnections: number;
    perAddress: number;
    trusted: ((addr: string | undefined) => boolean) | null;
  },
): void {
  server.maxConnections = o.maxConnections;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const addr = socket.remoteAddress;
    if (!addr || o.trusted?.(addr)) return;
    const n = (open.get(addr) ?? 0) + 1;
    if (n > o.perAddress) {
      socket.destroy();
      return;
    }
    open.set(addr, n);
    socket.once('close', () => {
      const left = (open.get(addr) ?? 1) - 1;
      if (left <= 0) open.delete(addr);
      else open.set(addr, left);
    });
  });
}

/**
 * Behind a trusted proxy the proxy's connections carry many clients: each request in flight
 * (an open stream included) takes one of its client's HTTP_MAX_CONNECTIONS_PER_ADDRESS slots,
 * given back when its response is done. take() returns null when the client has none left.
 */
export class ProxiedClients {
  private readonly inFlight = new Map<string, number>();
  constructor(readonly perAddress: number) {}

  take(addr: string): (() => void) | null {
    const n = (this.inFlight.get(addr) ?? 0) + 1;
    if (n > this.perAddress) return null;
    this.inFlight.set(addr, n);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.inFlight.get(addr) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(addr);
      else this.inFlight.set(addr, left);
    };
  }
}
