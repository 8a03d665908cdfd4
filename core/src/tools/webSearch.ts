/**
 * The `web_search` tool: queries the configured JSON search backend (Brave or a generic API)
 * through the session proxy when given one, else directly under the egress policy, and returns
 * the hits as text. Guarantees: hits outside the tool config's allowed_domains or inside its
 * blocked_domains are dropped (webDomains.ts); user_location reaches the backend as described
 * on WebSearchBackend; without a configured backend it answers
 * WEB_SEARCH_NOT_CONFIGURED as an error result; the API key travels only in the backend
 * request's auth header; always resolves to a tool result, never throws.
 * Tested in core/test/tools.web.test.ts.
 */
import type { EgressPolicy } from '../egress/policy.js';
import { htmlToText } from './webText.js';
import { urlPassesFilter } from './webDomains.js';
import {
  DIRECT_EGRESS,
  FetchError,
  fetchFollowing,
  result,
  timeoutSignal,
  USER_AGENT,
  type FetchedResponse,
  type TrustedCa,
  type WebToolResult,
} from './webHttp.js';

/**
 * A configured search backend: a JSON HTTP GET API.
 *
 * - `brave` (the default when the URL's host is `api.search.brave.com`): Brave Search API.
 *   Request `GET <url>?q=<query>&count=<n>` with `X-Subscription-Token: <apiKey>`; results are
 *   read from `web.results[]` (`title`, `url`, `description`). user_location: `country` query
 *   parameter and Brave's location headers `X-Loc-Country`, `X-Loc-State-Name`, `X-Loc-City`,
 *   `X-Loc-Timezone` (a value outside Latin-1 is left out; how far Brave localises depends on
 *   the plan).
 * - `generic`: request `GET <url>?q=<query>&count=<n>` with `Authorization: Bearer <apiKey>`;
 *   user_location as the query parameters `country`, `region`, `city`, `timezone` (honoured
 *   only if that backend reads them);
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
  ca?: TrustedCa;
  /** The tool config's domain filter: hits outside it are dropped before the model sees them. */
  allowedDomains?: readonly string[];
  blockedDomains?: readonly string[];
  /** The tool config's user_location, passed to the backend (see WebSearchBackend). */
  userLocation?: UserLocation | null;
}

/** The SDK's BetaManagedAgentsUserLocation (validated at agent create). */
export interface UserLocation {
  type: 'approximate';
  city?: string | null;
  country?: string | null;
  region?: string | null;
  timezone?: string | null;
}

/** Header values must be Latin-1; a value outside it is left out rather than mangled. */
const headerSafe = (v: string | null | undefined): v is string =>
  typeof v === 'string' && /^[\x20-\x7e\u00a0-\u00ff]+$/.test(v);

/** Puts user_location on the backend request, the way each flavour reads it. */
function applyUserLocation(
  url: URL,
  headers: Record<string, string>,
  flavor: 'brave' | 'generic',
  loc: UserLocation | null | undefined,
): void {
  if (!loc) return;
  if (flavor === 'generic') {
    for (const k of ['country', 'region', 'city', 'timezone'] as const)
      if (loc[k]) url.searchParams.set(k, loc[k]!);
    return;
  }
  if (loc.country) url.searchParams.set('country', loc.country);
  const h: Array<[string, string | null | undefined]> = [
    ['x-loc-country', loc.country],
    ['x-loc-state-name', loc.region],
    ['x-loc-city', loc.city],
    ['x-loc-timezone', loc.timezone],
  ];
  for (const [name, v] of h) if (headerSafe(v)) headers[name] = v;
}

export const WEB_SEARCH_NOT_CONFIGURED =
  'web_search is not configured: set WEB_SEARCH_URL and WEB_SEARCH_API_KEY';

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
    const filter = { allowedDomains: opts.allowedDomains, blockedDomains: opts.blockedDomains };
    const filtered = !!(filter.allowedDomains?.length || filter.blockedDomains?.length);
    url.searchParams.set('q', query);
    // With a domain filter, ask for the most results, so filtering still leaves `count`.
    url.searchParams.set('count', String(filtered ? 20 : count));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (flavor === 'brave') headers['x-subscription-token'] = backend.apiKey;
    else headers.authorization = `Bearer ${backend.apiKey}`;
    applyUserLocation(url, headers, flavor, opts.userLocation);

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
    const all = extractHits(json, flavor);
    const hits = all && all.filter((h) => urlPassesFilter(h.url, filter));
    if (!hits)
      return result(
        'web_search failed: unrecognised response from the search backend (no results array)',
        true,
      );
    if (hits.length === 0)
      return result(
        all!.length
          ? `No results for "${query}" within this tool's ${filter.allowedDomains?.length ? 'allowed_domains' : 'blocked_domains'} filter.`
          : `No results for "${query}".`,
      );
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
