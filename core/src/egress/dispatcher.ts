/**
 * Server-side HTTP to tenant-supplied URLs under the egress policy: an undici Agent whose
 * connector asks the policy for the address (resolve once, check every address) and connects
 * to exactly that address, with TLS still verified against the requested host name (SNI and
 * certificate check use the name, not the IP). Redirects open new connections through the
 * same connector, so every hop is checked.
 *
 * Use `egressFetch(policy)` for a fetch bound to such an agent; a refused destination fails
 * the fetch with a TypeError whose cause is the EgressRefusedError (see `egressRefusalIn`),
 * before any connection is made.
 *
 * Tested in core/test/egress.test.ts ("egressFetch") and test/e2e/models/model-cards-egress.test.ts.
 */
import net from 'node:net';
import type tls from 'node:tls';
import { Agent, buildConnector, fetch as undiciFetch, type Dispatcher } from 'undici';
import type { EgressPolicy } from './policy.js';

/** The fetch signature the platform's HTTP clients use (WHATWG fetch). */
export type HttpFetch = (url: string, init?: RequestInit) => Promise<Response>;

export interface EgressDispatcherOptions {
  /** TCP (+TLS) connect timeout. Default 10 s. */
  connectTimeoutMs?: number;
  /** Extra trusted CA certificates (PEM), e.g. a private CA for an opened private host. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** What upstream TLS trusts, as a whole (e.g. `upstreamTrust(EGRESS_CA_CERTS)` of ./ca.ts). */
  secureContext?: tls.SecureContext;
}

/** An undici dispatcher that only ever connects to addresses the policy checked. */
export function egressDispatcher(
  policy: EgressPolicy,
  opts: EgressDispatcherOptions = {},
): Dispatcher {
  const base = buildConnector({
    timeout: opts.connectTimeoutMs ?? 10_000,
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.secureContext ? { secureContext: opts.secureContext } : {}),
  });
  const connect: buildConnector.connector = (o, callback) => {
    const port = Number(o.port) || (o.protocol === 'https:' ? 443 : 80);
    const requested = o.hostname;
    policy.resolve(requested, port).then(
      (dest) => {
        base(
          {
            ...o,
            hostname: dest.address,
            servername: o.servername || (net.isIP(requested) ? undefined : requested),
          },
          callback,
        );
      },
      (err: Error) => callback(err, null),
    );
  };
  return new Agent({ connect });
}

/** `fetch` through `egressDispatcher(policy)`; `close()` ends its pooled connections. */
export function egressFetch(
  policy: EgressPolicy,
  opts: EgressDispatcherOptions = {},
): HttpFetch & { dispatcher: Dispatcher; close(): Promise<void> } {
  const dispatcher = egressDispatcher(policy, opts);
  const f = ((url: string, init?: RequestInit) =>
    undiciFetch(url, { ...(init as object), dispatcher } as Parameters<
      typeof undiciFetch
    >[1]) as unknown as Promise<Response>) as HttpFetch & {
    dispatcher: Dispatcher;
    close(): Promise<void>;
  };
  f.dispatcher = dispatcher;
  f.close = () => dispatcher.close();
  return f;
}
