/**
 * The HTTP front door's settings (a section of core/src/config/config.ts): connection timeouts
 * and caps, the per-tenant cap on open event streams, the trusted reverse proxies and the SSE
 * slow-consumer bound. The connection cap's default depends on the process's descriptor limit,
 * which is read where the server is built (gateway/src/connectionGuard.ts), so here it stays
 * null when unset. Validation proved by test/e2e/api/connection-limits.test.ts ('the settings
 * are validated: every problem is listed').
 */
import { isIP } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { custom, int, notLargerThan, nullable, section } from './schema.js';

export type { Env } from './schema.js';

const TRUST_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

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

export const HttpSchema = section({
  headersTimeoutMs: int('HTTP_HEADERS_TIMEOUT_MS', {
    default: 5_000,
    min: 100,
    max: 600_000,
    check: notLargerThan('HTTP_REQUEST_TIMEOUT_MS'),
    description:
      'a connection that has not sent a whole request head by then gets 408 and is closed (checked every ≤ 1 s)',
  }),
  requestTimeoutMs: int('HTTP_REQUEST_TIMEOUT_MS', {
    default: 30_000,
    min: 100,
    max: 3_600_000,
    description:
      'the same for the whole request, body included (bounds slow uploads: 32 MiB needs ≥ 1.1 MB/s); never applies to a response, so event streams are not cut. Not lower than the header timeout',
  }),
  keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', {
    default: 5_000,
    min: 100,
    max: 600_000,
    description:
      "an idle keep-alive connection is closed after this long without a request (a reverse proxy's upstream idle timeout should be shorter)",
  }),
  maxConnections: nullable(
    int('HTTP_MAX_CONNECTIONS', {
      min: 1,
      max: 10_000_000,
      docDefault: '`max(64, floor(nofile / 2))`',
      description:
        "open connections of the server in all; a new one past it is closed as it is accepted. `nofile` is the process's soft `RLIMIT_NOFILE` (`ulimit -n`, from `/proc/self/limits`; 4096 connections where unreadable): the other half of the descriptors stays for the workers' model, MCP and webhook connections, the store, sandboxes and the data dir",
    }),
  ),
  maxConnectionsPerAddress: int('HTTP_MAX_CONNECTIONS_PER_ADDRESS', {
    default: 256,
    min: 1,
    max: 10_000_000,
    check: notLargerThan('HTTP_MAX_CONNECTIONS'),
    description:
      'open connections per client address; past it a new one is closed as it is accepted, unread. A `TRUST_PROXY` peer is exempt; each of its clients gets this many requests in flight (streams included), then 429',
  }),
  maxStreamsPerTenant: int('SSE_MAX_STREAMS_PER_TENANT', {
    default: 256,
    min: 1,
    max: 10_000_000,
    description:
      'open event streams per tenant per gateway process (session SSE, `GET …/events` as a stream, `POST …/messages`, graphql-sse); past it, 429 `rate_limited` naming the cap',
  }),
  trustProxy: custom(
    Type.Array(Type.String()),
    'TRUST_PROXY',
    (raw, ctx) => parseTrustProxy(raw, ctx.problems),
    {
      default: [],
      description:
        'comma-separated addresses or CIDRs (`10.0.0.0/8`, `fd00::/8`) or `loopback`, `linklocal`, `uniquelocal`: the reverse proxies whose `X-Forwarded-For` names the client. The client address of the per-address limits is then the last untrusted hop; from any other peer `X-Forwarded-For` is ignored. Empty: the TCP peer is the client',
    },
  ),
});

/** Connection timeouts and caps, open streams per tenant, trusted proxies. */
export type HttpConfig = Static<typeof HttpSchema>;

export const HttpSection = section({
  http: HttpSchema,
  sseMaxBufferedBytes: int('SSE_MAX_BUFFERED_BYTES', {
    default: 8 * 1024 * 1024,
    min: 16 * 1024,
    max: 1024 ** 3,
    docDefault: '`8388608` (8 MiB)',
    description:
      'bytes an SSE stream may have waiting for a client that stopped reading (after its socket refused more) before it is cut; the client resumes with `Last-Event-ID`. A history replay is paced to the client instead',
  }),
});
