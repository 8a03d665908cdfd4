/**
 * The MCP proxy: `forward` sends one MCP transport request (Streamable HTTP or SSE) of a
 * session to one of its agent's `url` MCP servers, with the bearer injected here, so the worker,
 * the sandbox and the model never hold it. Guarantees:
 * - the session is tenant-scoped (another tenant's session id is a 404 like a missing one); the
 *   server is the session's agent snapshot's `mcp_servers` entry of that name, type `url` only
 *   (unknown server or stdio: 404); every such answer is a Response, never a throw;
 * - auth: the entry's inline `authorization_token` (opened from its seal), else the session's
 *   vaults read LIVE on every call (nothing cached): the `static_bearer` or `mcp_oauth`
 *   credential whose mcp_server_url host is the server url's host; else none;
 * - the request goes through the egress policy (private/loopback/metadata refused unless the
 *   operator opened them with EGRESS_ALLOW_PRIVATE_HOSTS), TLS trusting the system store plus
 *   EGRESS_CA_CERTS. A refused destination (message naming EGRESS_ALLOW_PRIVATE_HOSTS, details
 *   reason `egress_refused`) or an unreachable one (`upstream_unreachable`) is a 502 Bad
 *   Gateway: the MCP client reports a connection failure, not an authentication one. Redirects
 *   are not followed (the bearer never goes to another URL);
 * - the caller's own credentials never go upstream, the injected bearer never comes back
 *   (./proxyHttp.ts); the response body streams through (text/event-stream included);
 * - body: a string or null (spec limit), at most MCP_PROXY_MAX_BODY_BYTES (413);
 * - `path` (HTTP+SSE servers' message endpoint): forwarded only on the configured url's own
 *   origin, else 400 naming `path`; with `endpointBase`, the `endpoint` event of an SSE answer
 *   to a GET is rewritten to the caller's proxy path (./sseEndpoint.ts), so the SDK's
 *   SSEClientTransport POSTs its messages back through the proxy;
 * - `mcp_oauth`: on 401, and on 403, the spec's refresh flow (./oauthRefresh.ts), one retry; a
 *   failed refresh answers the ORIGINAL 401/403;
 * - one structured log line per call: op `mcp_proxy.forward`, caller, tenant_id, session_id,
 *   server, host, method, status, refreshed (the call was retried with a renewed bearer), ms.
 * Proved by test/e2e/mcp/mcp-proxy.test.ts, test/e2e/mcp/mcp-proxy-oauth.test.ts and test/e2e/mcp/mcp-proxy-sse.test.ts.
 */
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import type { VaultService } from '../vaults/vaults.js';
import { upstreamTrust } from '../egress/ca.js';
import { egressFetch, type HttpFetch } from '../egress/dispatcher.js';
import { egressRefusalIn, type EgressPolicy } from '../egress/policy.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../coordination/port.js';
import { OAuthRefresher, type OAuthRefresherOptions } from './oauthRefresh.js';
import { downstreamHeaders, errorResponse, upstreamHeaders } from './proxyHttp.js';
import { resolveForwardPath, rewriteEndpointEvents } from './sseEndpoint.js';

export type McpCaller = 'http' | 'rpc-mcp' | 'rpc-outbound';
export interface McpForwardRequest {
  tenantId: string;
  sessionId: string;
  /** The agent's mcp_servers[].name (type 'url' only). */
  server: string;
  /** HTTP method of the MCP transport request. */
  method: string;
  /** The caller's headers; authorization, cookie, host and hop-by-hop ones are dropped. */
  headers: Record<string, string>;
  /** Spec limit: a string or null. */
  body: string | null;
  caller: McpCaller;
  signal?: AbortSignal;
  /** Put in error answers' `request_id` (the gateway's request id). */
  requestId?: string;
  /**
   * A path plus query relative to the server url's ORIGIN (an SSE server's message endpoint,
   * e.g. `/messages?sessionId=abc`); absent: the configured url. Another origin → 400 `path`.
   */
  path?: string;
  /**
   * The path at which the caller reaches this server through the proxy (e.g.
   * `/v1/svc/mcp-proxy/<sid>/<server>`); when set, the `endpoint` events of an SSE answer to a
   * GET are rewritten to `<endpointBase><upstream path>` (./sseEndpoint.ts).
   */
  endpointBase?: string;
}

export interface McpProxyDeps {
  collections: Collections;
  secrets: SecretBox;
  vaults: VaultService;
  leases: LeaseStore;
  policy: EgressPolicy;
  /** EGRESS_CA_CERTS (read on first use; unreadable → 502 naming the setting). */
  caCertsFile: string | null;
  maxBodyBytes: number;
  log: Logger;
  refresh?: OAuthRefresherOptions;
}

type Auth =
  | { kind: 'none' }
  | { kind: 'inline' | 'static_bearer'; token: string }
  | { kind: 'mcp_oauth'; token: string; credentialId: string };
interface Target {
  url: string;
  host: string;
  auth: Auth;
}

const NULL_BODY = new Set([101, 204, 205, 304]);
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export class McpProxy {
  readonly refresher: OAuthRefresher;
  private upstream: Promise<HttpFetch & { close(): Promise<void> }> | null = null;

  constructor(private readonly d: McpProxyDeps) {
    this.refresher = new OAuthRefresher(
      d.vaults,
      d.leases,
      () => this.upstreamFetch(),
      d.log,
      d.refresh,
    );
  }

  /** fetch under the egress policy whose TLS trusts the system store plus EGRESS_CA_CERTS. */
  upstreamFetch(): Promise<HttpFetch> {
    this.upstream ??= upstreamTrust(this.d.caCertsFile)
      .then((secureContext) => egressFetch(this.d.policy, { secureContext }))
      .catch((err) => {
        this.upstream = null;
        throw err;
      });
    return this.upstream;
  }

  /** The tenant of session `sessionId` (ids are unique across tenants), for the operator route. */
  async sessionTenant(sessionId: string): Promise<string | null> {
    const [s] = await this.d.collections.sessions.scanAll({ _id: sessionId }, { limit: 1 });
    return s && !s.deleted_at ? s.tenant_id : null;
  }

  private async target(req: McpForwardRequest): Promise<Target | Response> {
    const notFound = (message: string) =>
      errorResponse(404, 'not_found', message, undefined, req.requestId);
    const s = await this.d.collections.sessions.get(req.tenantId, req.sessionId);
    if (!s || s.deleted_at) return notFound(`session ${req.sessionId} not found`);
    const srv = ((s.agent?.mcp_servers ?? []) as any[]).find((x) => x?.name === req.server);
    if (!srv) return notFound(`mcp server ${req.server} not found on session ${req.sessionId}`);
    if (srv.type !== 'url')
      return notFound(
        `mcp server ${req.server} is a ${String(srv.type)} server; the MCP proxy serves url servers only`,
      );
    const url = new URL(String(srv.url));
    const host = url.hostname;
    if (srv.authorization_token_sealed)
      return {
        url: url.href,
        host,
        auth: {
          kind: 'inline',
          token: this.d.secrets.open(srv.authorization_token_sealed, 'mcp-server-token'),
        },
      };
    const cred = await this.d.vaults.credentialForHost(req.tenantId, s.vault_ids ?? [], host);
    if (cred?.type === 'static_bearer' && cred.secrets.token)
      return { url: url.href, host, auth: { kind: 'static_bearer', token: cred.secrets.token } };
    if (cred?.type === 'mcp_oauth' && cred.secrets.access_token)
      return {
        url: url.href,
        host,
        auth: {
          kind: 'mcp_oauth',
          token: cred.secrets.access_token,
          credentialId: cred.credential_id,
        },
      };
    return { url: url.href, host, auth: { kind: 'none' } };
  }

  async forward(req: McpForwardRequest): Promise<Response> {
    const t0 = performance.now();
    const seen = { host: '', refreshed: false };
    let out: Response | undefined;
    try {
      return (out = await this.forwardOnce(req, seen));
    } finally {
      this.d.log.info('mcp_proxy.forward', {
        op: 'mcp_proxy.forward',
        caller: req.caller,
        tenant_id: req.tenantId,
        session_id: req.sessionId,
        server: req.server,
        host: seen.host,
        method: req.method.toUpperCase(),
        status: out?.status ?? 0,
        refreshed: seen.refreshed,
        ms: Math.round(performance.now() - t0),
      });
    }
  }

  private async forwardOnce(
    req: McpForwardRequest,
    seen: { host: string; refreshed: boolean },
  ): Promise<Response> {
    const fail = (code: number, type: string, message: string, details?: Record<string, unknown>) =>
      errorResponse(code, type, message, details, req.requestId);
    try {
      if (!METHODS.has(req.method.toUpperCase()))
        return fail(400, 'invalid_request', `method: ${req.method.slice(0, 20)} is not proxied`, {
          field: 'method',
        });
      if (req.body !== null && typeof req.body !== 'string')
        return fail(400, 'invalid_request', 'body: must be a string or null', { field: 'body' });
      if (req.body !== null && Buffer.byteLength(req.body) > this.d.maxBodyBytes)
        return fail(
          413,
          'invalid_request',
          `body: exceeds the MCP proxy's limit of ${this.d.maxBodyBytes} bytes`,
          { field: 'body', limit: this.d.maxBodyBytes },
        );
      const t = await this.target(req);
      if (t instanceof Response) return t;
      seen.host = t.host;
      let url = t.url;
      if (req.path !== undefined) {
        const resolved = resolveForwardPath(req.path, t.url);
        if (!resolved)
          return fail(
            400,
            'invalid_request',
            "path: must be a path (and query) on the mcp server url's own origin",
            { field: 'path' },
          );
        url = resolved.href;
      }
      const fetch = await this.upstreamFetch().catch((err) => {
        throw Object.assign(new Error(String((err as Error).message)), { trust: true });
      });
      const method = req.method.toUpperCase();
      const headers = upstreamHeaders(req.headers);
      const send = (token: string | null) =>
        fetch(url, {
          method,
          headers: token ? { ...headers, authorization: `Bearer ${token}` } : headers,
          body: method === 'GET' || method === 'HEAD' ? undefined : (req.body ?? undefined),
          redirect: 'manual',
          signal: req.signal,
        });
      const used: string[] = [];
      const token = t.auth.kind === 'none' ? null : t.auth.token;
      if (token) used.push(token);
      let res = await send(token);
      if (t.auth.kind === 'mcp_oauth' && (res.status === 401 || res.status === 403)) {
        const renewed = await this.refresher.renew(req.tenantId, t.auth.credentialId, t.auth.token);
        if (renewed.ok) {
          await res.body?.cancel().catch(() => {});
          used.push(renewed.accessToken);
          res = await send(renewed.accessToken);
          seen.refreshed = true;
        }
      }
      const sse =
        method === 'GET' &&
        req.endpointBase !== undefined &&
        res.ok &&
        res.body &&
        /^text\/event-stream/i.test(res.headers.get('content-type') ?? '');
      const body = sse ? rewriteEndpointEvents(res.body!, url, req.endpointBase!) : res.body;
      return new Response(NULL_BODY.has(res.status) ? null : body, {
        status: res.status,
        statusText: res.statusText,
        headers: downstreamHeaders(res.headers, used),
      });
    } catch (err) {
      const refused = egressRefusalIn(err);
      const r = refused
        ? fail(
            502,
            'internal_error',
            `mcp server ${req.server}: ${refused.host} is refused by the egress policy (a private, loopback or metadata address; the operator opens such hosts with EGRESS_ALLOW_PRIVATE_HOSTS)`,
            { reason: 'egress_refused' },
          )
        : req.signal?.aborted
          ? fail(499, 'invalid_request', 'the caller cancelled the request')
          : (err as { trust?: boolean }).trust
            ? fail(
                502,
                'internal_error',
                `mcp proxy: upstream TLS trust: ${(err as Error).message}`,
              )
            : fail(
                502,
                'internal_error',
                `mcp server ${req.server}: ${seen.host} unreachable (${describe(err)})`,
                { reason: 'upstream_unreachable' },
              );
      return r;
    }
  }

  async close(): Promise<void> {
    const u = this.upstream;
    this.upstream = null;
    if (u) await (await u.catch(() => null))?.close().catch(() => {});
  }
}

/** A network failure's cause, without addresses or anything the caller sent. */
function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return String(cause?.code ?? cause?.message ?? (err as Error)?.message ?? err).slice(0, 200);
}
