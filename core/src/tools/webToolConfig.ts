/**
 * Validation and normal form of the built-in toolset's per-tool settings (agent create and
 * update, session `agent_with_overrides`), as the SDK types them
 * (BetaManagedAgentsWebFetchToolConfigParams, BetaManagedAgentsWebSearchToolConfigParams).
 * Guarantees: every setting the web tools do not honour is a 400 naming the field (`max_uses`,
 * `citations` and any other unknown key, on every built-in tool's config); `allowed_domains`
 * and `blocked_domains` are 1..64 plain hostnames (web_search: an optional path suffix), and
 * not both; `max_content_tokens` is a positive integer or null; `user_location` is
 * `{type: 'approximate'}` with an uppercase ISO country code and a real IANA time zone;
 * `url_sources` accepts the SDK's shorthands and is stored (and served) in the object form,
 * every tool it names checked, all three sources "none" refused.
 * Tested in test/e2e/sandbox/web-tool-options.test.ts ("validation") and
 * test/e2e/sdk/sdk_suite/test_web_options.py.
 */
import { invalid } from '../errors.js';

const COMMON_KEYS = ['name', 'type', 'enabled', 'permission_policy'];
const KEYS: Record<string, string[]> = {
  web_fetch: [
    ...COMMON_KEYS,
    'allowed_domains',
    'blocked_domains',
    'max_content_tokens',
    'url_sources',
  ],
  web_search: [...COMMON_KEYS, 'allowed_domains', 'blocked_domains', 'user_location'],
};

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`, 'i');
const PATH_SUFFIX = /^\/[^\s?#]{0,1024}$/;
const MAX_DOMAINS = 64;

function checkDomains(value: unknown, field: string, allowPath: boolean): void {
  if (!Array.isArray(value)) throw invalid(field, 'must be an array of hostnames');
  if (value.length === 0) throw invalid(field, 'an empty list is rejected; omit the field instead');
  if (value.length > MAX_DOMAINS) throw invalid(field, `at most ${MAX_DOMAINS} entries`);
  value.forEach((d, i) => {
    const at = `${field}[${i}]`;
    if (typeof d !== 'string') throw invalid(at, 'must be a string');
    const slash = d.indexOf('/');
    const host = slash < 0 ? d : d.slice(0, slash);
    if (slash >= 0 && !allowPath)
      throw invalid(at, `must be a plain hostname (no scheme, port or path): ${d.slice(0, 100)}`);
    if (!HOSTNAME.test(host) || (slash >= 0 && !PATH_SUFFIX.test(d.slice(slash))))
      throw invalid(
        at,
        `must be a plain hostname like docs.example.com (no scheme or port${allowPath ? '' : ' or path'}): ${d.slice(0, 100)}`,
      );
  });
}

function checkUserLocation(v: unknown, field: string): void {
  if (v === null || v === undefined) return;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'must be an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!['type', 'city', 'country', 'region', 'timezone'].includes(k))
      throw invalid(`${field}.${k}`, 'is not a user_location setting');
  if (o.type !== 'approximate')
    throw invalid(`${field}.type`, 'must be "approximate" (the only supported precision)');
  for (const k of ['city', 'region', 'country', 'timezone']) {
    const s = o[k];
    if (s === null || s === undefined) continue;
    if (typeof s !== 'string' || !s.trim() || s.length > 255)
      throw invalid(`${field}.${k}`, 'must be a non-empty string of at most 255 characters');
  }
  if (typeof o.country === 'string' && !/^[A-Z]{2}$/.test(o.country))
    throw invalid(`${field}.country`, 'must be a two-letter uppercase ISO 3166-1 country code');
  if (typeof o.timezone === 'string') {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: o.timezone });
    } catch {
      throw invalid(`${field}.timezone`, `not an IANA time zone: ${o.timezone.slice(0, 64)}`);
    }
  }
}

type Filter =
  | { type: 'all' }
  | { type: 'none' }
  | { type: 'only' | 'except'; tools: Array<{ type: 'tool_reference'; name: string }> };

/** One url_sources key to its object form (null when not set). */
function sourceFilter(
  v: unknown,
  field: string,
  lists: boolean,
  knownTool: (name: string) => string | null,
): Filter | null {
  if (v === null || v === undefined) return null;
  if (v === 'all' || v === 'none') return { type: v };
  if (typeof v !== 'object' || Array.isArray(v))
    throw invalid(field, `must be "all", "none"${lists ? ' or an only/except object' : ''}`);
  const o = v as Record<string, unknown>;
  const types = lists ? ['all', 'none', 'only', 'except'] : ['all', 'none'];
  if (typeof o.type !== 'string' || !types.includes(o.type))
    throw invalid(`${field}.type`, `must be one of ${types.join(', ')}`);
  for (const k of Object.keys(o))
    if (k !== 'type' && !(k === 'tools' && (o.type === 'only' || o.type === 'except')))
      throw invalid(`${field}.${k}`, `is not a setting of a "${o.type}" source`);
  if (o.type === 'all' || o.type === 'none') return { type: o.type };
  const tools = o.tools;
  if (!Array.isArray(tools) || tools.length < 1 || tools.length > 128)
    throw invalid(
      `${field}.tools`,
      `must list 1 to 128 tools (use "${o.type === 'only' ? 'none' : 'all'}" instead of an empty list)`,
    );
  const seen = new Set<string>();
  const out = tools.map((t, i) => {
    const at = `${field}.tools[${i}]`;
    const r = t as Record<string, unknown> | null;
    if (!r || typeof r !== 'object' || typeof r.name !== 'string' || !r.name)
      throw invalid(`${at}.name`, 'is required');
    if (r.type !== undefined && r.type !== 'tool_reference')
      throw invalid(`${at}.type`, 'must be "tool_reference"');
    for (const k of Object.keys(r))
      if (k !== 'type' && k !== 'name')
        throw invalid(`${at}.${k}`, 'is not a tool_reference setting');
    if (seen.has(r.name)) throw invalid(`${at}.name`, `${r.name} is listed twice`);
    seen.add(r.name);
    const why = knownTool(r.name);
    if (why) throw invalid(`${at}.name`, why);
    return { type: 'tool_reference' as const, name: r.name };
  });
  return { type: o.type as 'only' | 'except', tools: out };
}

/** url_sources in the object form, or null when not set. `customTools`: the agent's custom tools. */
function normalizeUrlSources(v: unknown, field: string, customTools: ReadonlySet<string>) {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'must be an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!['client_tool_results', 'server_tool_results', 'user_input'].includes(k))
      throw invalid(`${field}.${k}`, 'is not a url_sources key');
  const out = {
    client_tool_results: sourceFilter(
      o.client_tool_results,
      `${field}.client_tool_results`,
      true,
      (n) => (customTools.has(n) ? null : `${n} is not a custom tool of this agent`),
    ),
    server_tool_results: sourceFilter(
      o.server_tool_results,
      `${field}.server_tool_results`,
      true,
      (n) =>
        n === 'web_search' || n === 'web_fetch' ? null : 'must be "web_search" or "web_fetch"',
    ),
    user_input: sourceFilter(o.user_input, `${field}.user_input`, false, () => null),
  };
  if (Object.values(out).every((f) => f?.type === 'none'))
    throw invalid(
      field,
      'setting all three sources to "none" is rejected (disable web_fetch instead)',
    );
  return out;
}

/**
 * Checks one built-in tool config of a toolset and returns its stored form (the settings the
 * client sent, url_sources in object form). Throws a 400 naming the field otherwise.
 */
export function normalizeBuiltinToolSettings(
  c: Record<string, any>,
  field: string,
  customTools: ReadonlySet<string>,
): Record<string, any> {
  const allowed = KEYS[c.name] ?? COMMON_KEYS;
  for (const k of Object.keys(c))
    if (!allowed.includes(k))
      throw invalid(
        `${field}.${k}`,
        `is not a setting of the ${c.name} tool${k === 'max_uses' || k === 'citations' ? ' (not supported)' : ''}`,
      );
  if (c.type !== undefined && c.type !== c.name)
    throw invalid(`${field}.type`, `must be "${c.name}"`);
  if (c.name !== 'web_fetch' && c.name !== 'web_search') return { ...c };
  const out: Record<string, any> = { ...c };
  const search = c.name === 'web_search';
  if (c.allowed_domains !== undefined)
    checkDomains(c.allowed_domains, `${field}.allowed_domains`, search);
  if (c.blocked_domains !== undefined)
    checkDomains(c.blocked_domains, `${field}.blocked_domains`, search);
  if (c.allowed_domains !== undefined && c.blocked_domains !== undefined)
    throw invalid(`${field}.blocked_domains`, 'cannot be combined with allowed_domains');
  if (search) {
    checkUserLocation(c.user_location, `${field}.user_location`);
  } else {
    const m = c.max_content_tokens;
    if (m !== undefined && m !== null && (!Number.isInteger(m) || m < 1))
      throw invalid(`${field}.max_content_tokens`, 'must be a positive integer or null');
    out.url_sources = normalizeUrlSources(c.url_sources, `${field}.url_sources`, customTools);
  }
  return out;
}
