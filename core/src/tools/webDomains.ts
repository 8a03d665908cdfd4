/**
 * Domain filters of the web tools (the SDK's `allowed_domains` / `blocked_domains` on the
 * web_fetch and web_search configs). Guarantees: a host matches an entry when it is the entry
 * or a subdomain of it (`docs.example.com` matches `docs.example.com` and `a.docs.example.com`,
 * never `evil-docs.example.com` or `example.com`), compared without case and without a
 * trailing dot; an IP literal matches only itself; a web_search entry may carry a path suffix
 * (`example.com/blog`), which then also has to prefix the result's path on a segment boundary.
 * Tested in core/test/tools.webOptions.test.ts and test/e2e/sandbox/web-tool-options.test.ts.
 */

/** The filter one tool applies: at most one of the two lists is set (validated at agent create). */
export interface DomainFilter {
  allowedDomains?: readonly string[];
  blockedDomains?: readonly string[];
}

const cleanHost = (h: string) =>
  h
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();

function entryMatches(entry: string, url: URL): boolean {
  const slash = entry.indexOf('/');
  const host = cleanHost(slash < 0 ? entry : entry.slice(0, slash));
  const path = slash < 0 ? '' : entry.slice(slash).replace(/\/+$/, '');
  const h = cleanHost(url.hostname);
  if (h !== host && !h.endsWith(`.${host}`)) return false;
  if (!path) return true;
  return url.pathname === path || url.pathname.startsWith(`${path}/`);
}

/**
 * Why `url` may not be used under `filter`, or null when it may. The reason names the host,
 * so a tool result can tell the model which domain was refused.
 */
export function domainRefusal(url: URL, filter: DomainFilter | undefined): string | null {
  if (!filter) return null;
  const host = cleanHost(url.hostname);
  if (filter.blockedDomains?.length && filter.blockedDomains.some((d) => entryMatches(d, url)))
    return `the domain ${host} is blocked by this tool's blocked_domains`;
  if (filter.allowedDomains?.length && !filter.allowedDomains.some((d) => entryMatches(d, url)))
    return `the domain ${host} is not in this tool's allowed_domains`;
  return null;
}

/** True when `url` (a string from a search backend) parses and passes the filter. */
export function urlPassesFilter(url: string, filter: DomainFilter | undefined): boolean {
  if (!filter) return true;
  try {
    return domainRefusal(new URL(url), filter) === null;
  } catch {
    return false;
  }
}
