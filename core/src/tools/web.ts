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
 * The agent's per-tool settings apply on top (validated at agent create by ./webToolConfig.ts):
 * allowed_domains / blocked_domains (./webDomains.ts; web_fetch checks every redirect hop,
 * web_search drops hits), max_content_tokens (web_fetch), user_location (web_search backend),
 * url_sources (./webUrlSources.ts, checked by the worker's tool executor against the log).
 *
 * Tested in core/test/tools.web.test.ts (including "egress policy"),
 * core/test/tools.webOptions.test.ts and test/e2e/sandbox/web-tool-options.test.ts.
 *
 * Both functions always resolve to a tool result; failures are `is_error` results with a short
 * explanation, never exceptions.
 */
export { decodeEntities, htmlToText } from './webText.js';
export type { WebToolResult } from './webHttp.js';
export { webFetch, CHARS_PER_TOKEN, type WebFetchInput, type WebFetchOptions } from './webFetch.js';
export { domainRefusal, urlPassesFilter, type DomainFilter } from './webDomains.js';
export {
  webSearch,
  WEB_SEARCH_NOT_CONFIGURED,
  type WebSearchBackend,
  type WebSearchOptions,
  type UserLocation,
} from './webSearch.js';
