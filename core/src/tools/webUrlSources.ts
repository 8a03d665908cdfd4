/**
 * web_fetch's `url_sources` (SDK BetaManagedAgentsWebFetchURLSources). When the tool config sets
 * it (not null), web_fetch fetches only URLs the conversation has already shown the model, from
 * the sources it allows: the text of `user.message` events (`user_input`), the results of
 * client-executed custom tools (`user.custom_tool_result`, by the name of the matching
 * `agent.custom_tool_use`; `client_tool_results`), and the results of earlier web_search and
 * web_fetch calls (`agent.tool_result` of a web_search/web_fetch `agent.tool_use`;
 * `server_tool_results`). Each key that is null allows its whole source; other tools' results
 * (bash, MCP, …) never contribute. Null url_sources: no such limit (any URL, subject to the
 * domain filters and the egress policy). URLs compare without their fragment and trailing
 * slash. Only the first URL is checked against the conversation; redirects are followed
 * (each hop still passes the domain filters and the egress policy).
 * Tested in test/e2e/sandbox/web-tool-options.test.ts ("url_sources").
 */

type Filter = { type: 'all' | 'none' | 'only' | 'except'; tools?: Array<{ name: string }> };

export interface UrlSources {
  client_tool_results: Filter | 'all' | 'none' | null;
  server_tool_results: Filter | 'all' | 'none' | null;
  user_input: Filter | 'all' | 'none' | null;
}

/** The events this needs: the stored log (`_id`, `type`, `payload`). */
export interface ConversationEvent {
  _id: string;
  type: string;
  payload: Record<string, unknown>;
}

const URL_IN_TEXT = /https?:\/\/[^\s<>"'`]+/gi;

/** The comparable form of a URL, or null if it is not one. */
function urlKey(raw: string): string | null {
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    u.hash = '';
    return u.href.replace(/\/+$/, '');
  } catch {
    return null;
  }
}

function urlsIn(content: unknown, into: Set<string>): void {
  if (!Array.isArray(content)) return;
  for (const b of content) {
    const text = (b as { type?: unknown; text?: unknown } | null)?.text;
    if ((b as { type?: unknown } | null)?.type !== 'text' || typeof text !== 'string') continue;
    for (const m of text.matchAll(URL_IN_TEXT)) {
      // Sentence punctuation and closing brackets after a URL are not part of it.
      const key = urlKey(m[0].replace(/[.,;:!?)\]}]+$/, ''));
      if (key) into.add(key);
    }
  }
}

const admits = (raw: Filter | 'all' | 'none' | null, tool?: string): boolean => {
  // Agents stored before url_sources was normalised may hold the string shorthands.
  const f = typeof raw === 'string' ? { type: raw } : raw;
  if (!f || f.type === 'all') return true;
  if (f.type === 'none') return false;
  const listed = (f.tools ?? []).some((t) => t.name === tool);
  return f.type === 'only' ? listed : !listed;
};

/** The URLs the conversation so far has shown the model from the sources `s` allows. */
export function allowedConversationUrls(
  s: UrlSources,
  events: readonly ConversationEvent[],
): Set<string> {
  const toolNames = new Map<string, string>();
  const urls = new Set<string>();
  for (const e of events) {
    const p = e.payload ?? {};
    if (e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use')
      toolNames.set(e._id, String(p.name));
    else if (e.type === 'user.message') {
      if (admits(s.user_input)) urlsIn(p.content, urls);
    } else if (e.type === 'user.custom_tool_result') {
      const name = toolNames.get(String(p.custom_tool_use_id));
      if (name !== undefined && admits(s.client_tool_results, name)) urlsIn(p.content, urls);
    } else if (e.type === 'agent.tool_result') {
      const name = toolNames.get(String(p.tool_use_id));
      if (
        (name === 'web_search' || name === 'web_fetch') &&
        admits(s.server_tool_results, name) &&
        p.is_error !== true
      )
        urlsIn(p.content, urls);
    }
  }
  return urls;
}

/** Why `url` may not be fetched under url_sources, or null when it may. */
export function urlSourceRefusal(
  url: string,
  sources: UrlSources | null | undefined,
  events: readonly ConversationEvent[],
): string | null {
  if (!sources) return null;
  const key = urlKey(url.trim());
  if (key && allowedConversationUrls(sources, events).has(key)) return null;
  return `${url.slice(0, 200)} has not appeared in the conversation from a source this tool's url_sources allows (user messages, custom tool results, web_search/web_fetch results); only such URLs are fetched`;
}
