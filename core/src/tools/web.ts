/**
 * The `web_fetch` and `web_search` tools. They run on the worker, but their traffic goes
 * through the session's outbound proxy (`createOutboundProxy`), so the environment's network
 * policy, the platform's egress policy (private addresses refused unless the operator opened
 * them, core/src/egress) and the outbound request log apply to them exactly as to the sandbox
 * itself: `http://` URLs as absolute-URI requests, `https://` URLs through a CONNECT tunnel
 * with TLS verified end to end by this client. Every redirect hop goes through the proxy
 * again, so each is checked. Without a proxy (web_search only), the request still goes
 * through the egress policy: resolved once, checked, connected to the checked address.
 *
 * Tested in core/test/tools.web.test.ts (including "egress policy").
 *
 * Both functions always resolve to a tool result; failures are `is_error` results with a short
 * explanation, never exceptions.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import type { Readable } from 'node:stream';
import { proxyRequestTarget } from '../sandbox/proxyHelpers.js';
import { createEgressPolicy, type EgressPolicy } from '../egress/policy.js';
import { capUtf8, contentKind, decodeText, htmlToText } from './webText.js';

export { decodeEntities, htmlToText } from './webText.js';

/** Same shape as the worker's tool result. */
export interface WebToolResult {
  content: Array<{ type: 'text'; text: string }>;
  is_error: boolean;
}

export interface WebFetchInput {
  url: string;
  /** Max bytes of text returned (UTF-8). Default 100 000, at most 1 000 000. */
  max_bytes?: number;
  /** For HTTP-executed custom tools; default GET. */
  method?: string;
  body?: string;
  headers?: Record<string, string>;
}

export interface WebFetchOptions {
  /** The session proxy's address (`http://127.0.0.1:<port>` or `unix:<socket path>`). */
  proxy: string;
  /** Whole fetch, redirects included. Default 30 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Default 5. */
  maxRedirects?: number;
  /** Extra trusted CA certificates (PEM) for https destinations, e.g. a private CA. */
  ca?: string | Buffer | Array<string | Buffer>;
}

/**
 * A configured search backend: a JSON HTTP GET API.
 *
 * - `brave` (the default when the URL's host is `api.search.brave.com`): Brave Search API.
 *   Request `GET <url>?q=<query>&count=<n>` with `X-Subscription-Token: <apiKey>`; results are
 *   read from `web.results[]` (`title`, `url`, `description`).
 * - `generic`: request `GET <url>?q=<query>&count=<n>` with `Authorization: Bearer <apiKey>`;
 *   results are read from the first array among `results`, `web.results`, `items`,
 *   `organic_results`, `data`, each item giving `title`|`name`, `url`|`link`|`href` and
 *   `snippet`|`description`|`content`|`text`.
 */
export interface WebSearchBackend {
  url: string;
  apiKey: string;
  flavor?: 'brave' | 'generic';
}

export interface WebSearchOptions {
  backend?: WebSearchBackend | null;
  /** When set, the search request goes through this proxy (policy + log) like web_fetch. */
  proxy?: string;
  /** Without a proxy: the egress policy for the direct request (default: nothing private opened). */
  egress?: EgressPolicy;
  /** Default 5, at most 20. */
  maxResults?: number;
  /** Default 20 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  ca?: string | Buffer | Array<string | Buffer>;
}

export const WEB_SEARCH_NOT_CONFIGURED =
  'web_search is not configured: set WEB_SEARCH_URL and WEB_SEARCH_API_KEY';

/** Direct requests without an explicit policy: nothing private is opened. */
const DIRECT_EGRESS = createEgressPolicy();

const result = (text: string, isError = false): WebToolResult => ({
  content: [{ type: 'text', text }],
  is_error: isError,
});
const USER_AGENT = 'agentfleet-web/0.1';

// ---------------------------------------------------------------------------------------------
// HTTP through the proxy

interface FetchedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
  /** The proxy (not the destination) answered: refused or could not connect. */
  fromProxy: boolean;
}

class FetchError extends Error {}

interface Transport {
  proxy?: string;
  /** For direct requests (no proxy). */
  egress?: EgressPolicy;
  ca?: WebFetchOptions['ca'];
  signal: AbortSignal;
}

/** Reads a (possibly compressed) body, keeping at most `maxBytes` decoded bytes. */
function readBody(
  res: http.IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const enc = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  let stream: Readable = res;
  if (enc === 'gzip' || enc === 'x-gzip') stream = res.pipe(zlib.createGunzip());
  else if (enc === 'deflate') stream = res.pipe(zlib.createInflate());
  else if (enc === 'br') stream = res.pipe(zlib.createBrotliDecompress());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      resolve({ body: Buffer.concat(chunks), truncated });
    };
    stream.on('data', (c: Buffer) => {
      if (done) return;
      const room = maxBytes - size;
      if (c.length > room) {
        chunks.push(c.subarray(0, room));
        size = maxBytes;
        finish(true);
        res.destroy();
        if (stream !== res) stream.destroy();
        return;
      }
      chunks.push(c);
      size += c.length;
    });
    stream.on('end', () => finish(false));
    const onError = (err: Error) => {
      if (!done) {
        done = true;
        reject(new FetchError(`reading the response failed: ${err.message}`));
      }
    };
    stream.on('error', onError);
    if (stream !== res) res.on('error', onError);
    res.on('aborted', () => {
      if (!done) {
        done = true;
        reject(new FetchError('the connection closed before the response was complete'));
      }
    });
  });
}

/** One request (no redirects) through the proxy, or direct when no proxy is given. */
async function requestOnce(
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: Buffer },
  t: Transport,
  maxBytes: number,
): Promise<FetchedResponse> {
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    'accept-encoding': 'gzip, deflate, br',
    ...init.headers,
    host: url.host,
  };
  if (init.body) headers['content-length'] = String(init.body.length);
  const path = `${url.pathname}${url.search}`;
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const cleanup: Array<() => void> = [];
  const onAbort = () => cleanup.forEach((f) => f());
  t.signal.addEventListener('abort', onAbort, { once: true });

  const send = (req: http.ClientRequest) =>
    new Promise<FetchedResponse>((resolve, reject) => {
      cleanup.push(() => req.destroy(new FetchError('timed out')));
      req.on('error', (err) =>
        reject(err instanceof FetchError ? err : new FetchError(err.message)),
      );
      req.on('response', (res) => {
        readBody(res, maxBytes).then(
          ({ body, truncated }) =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body,
              truncated,
              fromProxy:
                !!t.proxy && /^agentfleet\s*;/.test(String(res.headers['proxy-status'] ?? '')),
            }),
          reject,
        );
      });
      req.end(init.body);
    });

  try {
    if (t.signal.aborted) throw new FetchError('timed out');
    if (!t.proxy) {
      // Resolved once and checked by the egress policy; the connection goes to that address,
      // TLS is verified against the host name.
      const dest = await (t.egress ?? DIRECT_EGRESS).resolve(hostname, port);
      const mod = url.protocol === 'https:' ? https : http;
      const tlsOpts =
        url.protocol === 'https:'
          ? {
              ...(net.isIP(hostname) ? {} : { servername: hostname }),
              ...(t.ca ? { ca: t.ca } : {}),
            }
          : {};
      return await send(
        mod.request({
          host: dest.address,
          family: dest.family,
          port,
          method: init.method,
          path,
          headers,
          setHost: false,
          agent: false,
          ...tlsOpts,
        }),
      );
    }
    const target = proxyRequestTarget(t.proxy);
    if (url.protocol === 'http:') {
      return await send(
        http.request({
          ...target,
          method: init.method,
          path: url.href.replace(/#.*$/, ''),
          headers,
          setHost: false,
          agent: false,
        }),
      );
    }
    // https: a CONNECT tunnel through the proxy, then TLS to the destination inside it.
    const authority = `${net.isIPv6(hostname) ? `[${hostname}]` : hostname}:${port}`;
    const tunnel = await new Promise<{ socket: net.Socket } | FetchedResponse>(
      (resolve, reject) => {
        const req = http.request({
          ...target,
          method: 'CONNECT',
          path: authority,
          headers: { host: authority, 'user-agent': USER_AGENT },
          agent: false,
        });
        cleanup.push(() => req.destroy(new FetchError('timed out')));
        req.on('error', (err) =>
          reject(err instanceof FetchError ? err : new FetchError(`proxy: ${err.message}`)),
        );
        req.on('connect', (res, socket: net.Socket, head: Buffer) => {
          if (res.statusCode === 200) {
            if (head.length) socket.unshift(head);
            cleanup.push(() => socket.destroy());
            return resolve({ socket });
          }
          // The refusal body arrives with (or right after) the status line.
          const chunks: Buffer[] = head.length ? [head] : [];
          const timer = setTimeout(() => socket.destroy(), 2000);
          socket.on('data', (c: Buffer) => chunks.push(c));
          socket.on('error', () => {});
          socket.on('close', () => {
            clearTimeout(timer);
            resolve({
              status: res.statusCode ?? 502,
              headers: res.headers,
              body: Buffer.concat(chunks).subarray(0, 4096),
              truncated: false,
              fromProxy: true,
            });
          });
        });
        req.end();
      },
    );
    if (!('socket' in tunnel)) return tunnel;
    const secure = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({
        socket: tunnel.socket,
        host: hostname,
        ...(net.isIP(hostname) ? {} : { servername: hostname }),
        ALPNProtocols: ['http/1.1'],
        ...(t.ca ? { ca: t.ca } : {}),
      });
      cleanup.push(() => s.destroy());
      s.once('secureConnect', () => resolve(s));
      s.once('error', (err: NodeJS.ErrnoException) => {
        // OpenSSL's own messages are long and cryptic; certificate errors read well as they are.
        const detail =
          err.code && /^ERR_SSL_/.test(err.code) ? err.code : err.message.split('\n')[0];
        reject(new FetchError(`TLS handshake with ${hostname} failed: ${detail}`));
      });
    });
    return await send(
      http.request({
        host: hostname,
        port,
        method: init.method,
        path,
        headers,
        setHost: false,
        createConnection: () => secure,
      }),
    );
  } finally {
    t.signal.removeEventListener('abort', onAbort);
    // Sockets of a finished exchange are not reused.
    for (const f of cleanup) f();
  }
}

/** Follows redirects (each hop through the proxy, so each hop is checked by the policy). */
async function fetchFollowing(
  start: URL,
  init: { method: string; headers: Record<string, string>; body?: Buffer },
  t: Transport,
  maxBytes: number,
  maxRedirects: number,
): Promise<{ url: URL; res: FetchedResponse }> {
  let url = start;
  let req = init;
  for (let hop = 0; ; hop++) {
    const res = await requestOnce(url, req, t, maxBytes);
    const loc = res.headers.location;
    if (res.fromProxy || ![301, 302, 303, 307, 308].includes(res.status) || !loc)
      return { url, res };
    if (hop >= maxRedirects) throw new FetchError(`too many redirects (more than ${maxRedirects})`);
    const next = new URL(loc, url);
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new FetchError(`redirect to an unsupported URL scheme (${next.protocol})`);
    if (
      res.status === 303 ||
      ((res.status === 301 || res.status === 302) && req.method === 'POST')
    ) {
      const { 'content-type': _ct, ...rest } = req.headers;
      req = { method: 'GET', headers: rest };
    }
    url = next;
  }
}

// ---------------------------------------------------------------------------------------------
// web_fetch

const DEFAULT_MAX_TEXT = 100_000;
const MAX_TEXT = 1_000_000;

function timeoutSignal(ms: number, outer?: AbortSignal): AbortSignal {
  const t = AbortSignal.timeout(ms);
  return outer ? AbortSignal.any([t, outer]) : t;
}

export async function webFetch(
  input: WebFetchInput,
  opts: WebFetchOptions,
): Promise<WebToolResult> {
  try {
    if (!input || typeof input.url !== 'string' || !input.url.trim())
      return result('web_fetch: url is required', true);
    let url: URL;
    try {
      url = new URL(input.url.trim());
    } catch {
      return result(`web_fetch: not a valid URL: ${input.url.slice(0, 200)}`, true);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return result(
        `web_fetch: only http and https URLs can be fetched (got ${url.protocol})`,
        true,
      );
    if (url.username || url.password)
      return result('web_fetch: URLs with embedded credentials are not fetched', true);
    url.hash = '';
    const requested = Number(input.max_bytes);
    const maxText =
      Number.isFinite(requested) && requested > 0
        ? Math.min(Math.floor(requested), MAX_TEXT)
        : DEFAULT_MAX_TEXT;
    // HTML shrinks a lot when stripped: read more than the text cap, within a hard bound.
    const maxRaw = Math.min(Math.max(maxText * 4, 256 * 1024), 10 * 1024 * 1024);
    const method = (input.method ?? 'GET').toUpperCase();
    if (!/^[A-Z]{1,16}$/.test(method))
      return result(`web_fetch: invalid method ${method.slice(0, 20)}`, true);
    const headers: Record<string, string> = {
      accept: 'text/html, text/plain, application/json, application/xml;q=0.9, */*;q=0.5',
    };
    for (const [k, v] of Object.entries(input.headers ?? {}))
      if (typeof v === 'string') headers[k.toLowerCase()] = v;
    const body = input.body != null ? Buffer.from(String(input.body)) : undefined;
    if (body && !headers['content-type']) headers['content-type'] = 'application/json';

    const timeoutMs = opts.timeoutMs ?? 30_000;
    const signal = timeoutSignal(timeoutMs, opts.signal);
    let fetched: { url: URL; res: FetchedResponse };
    try {
      fetched = await fetchFollowing(
        url,
        { method, headers, body },
        { proxy: opts.proxy, ca: opts.ca, signal },
        maxRaw,
        opts.maxRedirects ?? 5,
      );
    } catch (err) {
      const msg =
        signal.aborted && !opts.signal?.aborted
          ? `timed out after ${timeoutMs} ms`
          : (err as Error).message;
      return result(`web_fetch ${url.href} failed: ${msg}`, true);
    }
    const { res } = fetched;
    if (res.fromProxy) {
      const why = res.body.toString('utf8').trim() || `status ${res.status}`;
      return result(
        res.status === 403 ? `web_fetch refused: ${why}` : `web_fetch ${url.href} failed: ${why}`,
        true,
      );
    }

    const contentType = String(res.headers['content-type'] ?? '');
    const kind = contentKind(contentType, res.body);
    const lines = [`URL: ${fetched.url.href}`, `Status: ${res.status}`];
    if (contentType) lines.push(`Content-Type: ${contentType.slice(0, 200)}`);
    let text: string;
    if (kind === 'binary') {
      lines.push(
        '',
        `(binary content, ${res.body.length}${res.truncated ? '+' : ''} bytes, not shown)`,
      );
      return result(lines.join('\n'), true);
    }
    if (kind === 'html') {
      const h = htmlToText(decodeText(res.body, contentType, kind));
      if (h.title) lines.push(`Title: ${h.title}`);
      text = h.text;
    } else {
      text = decodeText(res.body, contentType, kind);
    }
    const capped = capUtf8(text, maxText);
    lines.push('', capped.text);
    if (capped.cut || res.truncated)
      lines.push(
        '',
        `[truncated: content exceeded ${capped.cut ? `${maxText} bytes of text` : `${maxRaw} bytes`}]`,
      );
    return result(lines.join('\n'), res.status >= 400);
  } catch (err) {
    return result(`web_fetch failed: ${(err as Error)?.message ?? String(err)}`, true);
  }
}

// ---------------------------------------------------------------------------------------------
// web_search

interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

const firstString = (o: Record<string, unknown>, keys: string[]): string => {
  for (const k of keys) if (typeof o[k] === 'string' && o[k]) return o[k] as string;
  return '';
};

function extractHits(json: unknown, flavor: 'brave' | 'generic'): SearchHit[] | null {
  if (!json || typeof json !== 'object') return null;
  const o = json as Record<string, any>;
  const candidates =
    flavor === 'brave'
      ? [o.web?.results]
      : [o.results, o.web?.results, o.items, o.organic_results, o.data];
  const list = candidates.find((c) => Array.isArray(c)) as unknown[] | undefined;
  if (!list) return null;
  const hits: SearchHit[] = [];
  for (const item of list) {
    if (!item || typeof item !== 'object') continue;
    const it = item as Record<string, unknown>;
    const url = firstString(it, ['url', 'link', 'href']);
    if (!url) continue;
    const clean = (s: string) => htmlToText(s).text.replace(/\s+/g, ' ').trim();
    hits.push({
      title: clean(firstString(it, ['title', 'name'])) || url,
      url,
      snippet: clean(firstString(it, ['snippet', 'description', 'content', 'text'])).slice(0, 500),
    });
  }
  return hits;
}

export async function webSearch(
  input: { query: string },
  opts: WebSearchOptions,
): Promise<WebToolResult> {
  try {
    const backend = opts.backend;
    if (!backend || !backend.url || !backend.apiKey) return result(WEB_SEARCH_NOT_CONFIGURED, true);
    const query = typeof input?.query === 'string' ? input.query.trim() : '';
    if (!query) return result('web_search: query is required', true);
    if (query.length > 400)
      return result('web_search: query is too long (at most 400 characters)', true);
    let url: URL;
    try {
      url = new URL(backend.url);
    } catch {
      return result('web_search is misconfigured: WEB_SEARCH_URL is not a valid URL', true);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return result('web_search is misconfigured: WEB_SEARCH_URL must be http(s)', true);
    const flavor =
      backend.flavor ?? (url.hostname === 'api.search.brave.com' ? 'brave' : 'generic');
    const count = Math.min(Math.max(Math.floor(opts.maxResults ?? 5), 1), 20);
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(count));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (flavor === 'brave') headers['x-subscription-token'] = backend.apiKey;
    else headers.authorization = `Bearer ${backend.apiKey}`;

    const timeoutMs = opts.timeoutMs ?? 20_000;
    const signal = timeoutSignal(timeoutMs, opts.signal);
    let res: FetchedResponse;
    try {
      res = (
        await fetchFollowing(
          url,
          { method: 'GET', headers },
          { proxy: opts.proxy, egress: opts.egress, ca: opts.ca, signal },
          2 * 1024 * 1024,
          2,
        )
      ).res;
    } catch (err) {
      const msg =
        signal.aborted && !opts.signal?.aborted
          ? `timed out after ${timeoutMs} ms`
          : (err as Error).message;
      return result(`web_search failed: ${msg}`, true);
    }
    if (res.fromProxy)
      return result(
        `web_search failed: ${res.body.toString('utf8').trim() || `proxy status ${res.status}`}`,
        true,
      );
    if (res.status === 401 || res.status === 403)
      return result(
        `web_search failed: the search backend rejected the API key (status ${res.status})`,
        true,
      );
    if (res.status === 429)
      return result(
        'web_search failed: the search backend is rate limiting requests (status 429); try again later',
        true,
      );
    if (res.status < 200 || res.status >= 300)
      return result(`web_search failed: the search backend answered status ${res.status}`, true);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      return result('web_search failed: the search backend did not return JSON', true);
    }
    const hits = extractHits(json, flavor);
    if (!hits)
      return result(
        'web_search failed: unrecognised response from the search backend (no results array)',
        true,
      );
    if (hits.length === 0) return result(`No results for "${query}".`);
    const lines = [`Search results for "${query}":`, ''];
    hits.slice(0, count).forEach((h, i) => {
      lines.push(`${i + 1}. ${h.title}`, `   ${h.url}`);
      if (h.snippet) lines.push(`   ${h.snippet}`);
      lines.push('');
    });
    return result(lines.join('\n').trimEnd());
  } catch (err) {
    return result(`web_search failed: ${(err as Error)?.message ?? String(err)}`, true);
  }
}
