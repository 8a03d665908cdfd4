/**
 * The `web_fetch` tool (also the transport of HTTP-executed custom tools): fetches one URL
 * through the session's outbound proxy, following redirects through it, and returns the body as
 * text (HTML converted to readable text) capped at max_bytes. Guarantees: always resolves to a
 * tool result; failures are `is_error` results with a short explanation, never exceptions; a URL
 * outside the config's allowed_domains or inside its blocked_domains (the first URL or any
 * redirect target) is never requested, and the result names its domain; max_content_tokens cuts
 * the text at CHARS_PER_TOKEN characters a token. Tested in core/test/tools.web.test.ts and
 * test/e2e/sandbox/web-tool-options.test.ts.
 */
import { capUtf8, contentKind, decodeText, htmlToText } from './webText.js';
import { domainRefusal } from './webDomains.js';
import {
  DIRECT_EGRESS,
  FetchError,
  fetchFollowing,
  RefusedUrlError,
  result,
  timeoutSignal,
  USER_AGENT,
  type FetchedResponse,
  type TrustedCa,
  type WebToolResult,
} from './webHttp.js';

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
  ca?: TrustedCa;
  /** The tool config's domain filter, checked on the URL and on every redirect target. */
  allowedDomains?: readonly string[];
  blockedDomains?: readonly string[];
  /** The tool config's max_content_tokens: text cut at CHARS_PER_TOKEN characters a token. */
  maxContentTokens?: number | null;
}

/** The token estimate max_content_tokens uses: 4 characters of text a token. */
export const CHARS_PER_TOKEN = 4;

/** Cuts `s` to at most `max` UTF-16 code units without splitting a surrogate pair. */
function capChars(s: string, max: number): { text: string; cut: boolean } {
  if (s.length <= max) return { text: s, cut: false };
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { text: s.slice(0, end), cut: true };
}

// ---------------------------------------------------------------------------------------------
// web_fetch

const DEFAULT_MAX_TEXT = 100_000;
const MAX_TEXT = 1_000_000;

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
        (u) =>
          domainRefusal(u, {
            allowedDomains: opts.allowedDomains,
            blockedDomains: opts.blockedDomains,
          }),
      );
    } catch (err) {
      if (err instanceof RefusedUrlError)
        return result(`web_fetch ${url.href} ${err.message}; nothing was fetched`, true);
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
    const tokens = opts.maxContentTokens;
    const byTokens = tokens ? capChars(capped.text, tokens * CHARS_PER_TOKEN) : null;
    lines.push('', byTokens ? byTokens.text : capped.text);
    if (byTokens?.cut)
      lines.push(
        '',
        `[truncated: content exceeded max_content_tokens (${tokens} tokens, estimated at ${CHARS_PER_TOKEN} characters a token)]`,
      );
    else if (capped.cut || res.truncated)
      lines.push(
        '',
        `[truncated: content exceeded ${capped.cut ? `${maxText} bytes of text` : `${maxRaw} bytes`}]`,
      );
    return result(lines.join('\n'), res.status >= 400);
  } catch (err) {
    return result(`web_fetch failed: ${(err as Error)?.message ?? String(err)}`, true);
  }
}
